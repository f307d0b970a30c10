package mixture

import (
	"strings"
	"testing"
)

func TestLayoutOf(t *testing.T) {
	cases := []struct {
		shape []int
		want  Layout
		err   string
	}{
		{[]int{2, 3, 4, 7}, Layout{2, 3, 4, 2}, ""},
		{[]int{1, 1, 1, 13}, Layout{1, 1, 1, 3}, ""},
		{[]int{2, 3, 7}, Layout{}, "rank 4"},
		{[]int{2, 3, 4, 7, 1}, Layout{}, "rank 5"},
		{[]int{2, 3, 4, 8}, Layout{}, "length 8"},
		{[]int{2, 3, 4, 4}, Layout{}, "length 4"},
		{[]int{0, 3, 4, 7}, Layout{}, "batch and channel sizes must be ≥ 1"},
		{[]int{2, 0, 4, 7}, Layout{}, "batch and channel sizes must be ≥ 1"},
		{[]int{2, 3, 0, 7}, Layout{}, "N = 0"},
	}
	for _, c := range cases {
		l, err := LayoutOf(c.shape)
		if c.err == "" {
			if err != nil || l != c.want {
				t.Errorf("LayoutOf(%v) = %+v, %v; want %+v", c.shape, l, err, c.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("LayoutOf(%v): error %v, want one mentioning %q", c.shape, err, c.err)
		}
	}
}

func TestLayoutIndexing(t *testing.T) {
	l := Layout{B: 2, C: 3, N: 4, D: 3}
	if l.Stride() != 13 || l.Mixtures() != 6 || l.Len() != 2*3*4*13 {
		t.Fatalf("stride %d, mixtures %d, len %d", l.Stride(), l.Mixtures(), l.Len())
	}
	if s := l.Shape(); len(s) != 4 || s[0] != 2 || s[1] != 3 || s[2] != 4 || s[3] != 13 {
		t.Fatalf("shape %v", s)
	}
	data := make([]float64, l.Len())
	for i := range data {
		data[i] = float64(i)
	}
	for b := range l.B {
		for c := range l.C {
			m := Mixture(data, l, b*l.C+c)
			if len(m) != l.N*l.Stride() || cap(m) != len(m) {
				t.Fatalf("mixture (%d,%d): len %d cap %d", b, c, len(m), cap(m))
			}
			for n := range l.N {
				if off := l.Offset(b, c, n); m[n*l.Stride()] != data[off] {
					t.Fatalf("Offset(%d,%d,%d) = %d disagrees with Mixture", b, c, n, off)
				}
			}
		}
	}
	if l.Offset(1, 2, 3) != l.Len()-l.Stride() {
		t.Errorf("last component offset %d, want %d", l.Offset(1, 2, 3), l.Len()-l.Stride())
	}
}
