package mixture

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	l := Layout{B: 2, C: 2, N: 2, D: 2}
	valid := func() []float64 {
		x := make([]float64, l.Len())
		for i := 0; i < len(x); i += 7 {
			copy(x[i:], []float64{1, 0, 0, 2, 0.5, 0.5, 1})
		}
		return x
	}
	// Component (b=1, c=0, n=1) is component index 5, at offset 35.
	const at = 35
	cases := []struct {
		name string
		edit func([]float64)
		want string
	}{
		{"valid", func([]float64) {}, ""},
		{"NaN weight", func(x []float64) { x[at] = math.NaN() }, "non-finite value NaN at packed index 0"},
		{"Inf position", func(x []float64) { x[at+2] = math.Inf(-1) }, "packed index 2"},
		{"asymmetric", func(x []float64) { x[at+4] = 0.7 }, "not symmetric"},
		{"negative variance", func(x []float64) { x[at+3] = -2 }, "not positive definite"},
		{"singular", func(x []float64) { x[at+3], x[at+4], x[at+5], x[at+6] = 1, 1, 1, 1 }, "not positive definite"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := valid()
			c.edit(x)
			err := Validate(x, l)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "(b=1, c=0, n=1)") {
				t.Errorf("error %v, want one naming (b=1, c=0, n=1) and %q", err, c.want)
			}
		})
	}
	if err := Validate(make([]float64, 3), l); err == nil || !strings.Contains(err.Error(), "3 values") {
		t.Errorf("short data: error %v", err)
	}
}

func TestPositiveDefinite3D(t *testing.T) {
	cases := []struct {
		m    []float64
		want bool
	}{
		{[]float64{1, 0, 0, 0, 1, 0, 0, 0, 1}, true},
		{[]float64{2, 1, 0, 1, 2, 1, 0, 1, 2}, true},
		// Leading minors 1, 1 positive but det = −1: only the 3×3 test catches it.
		{[]float64{1, 0, 1, 0, 1, 1, 1, 1, 1}, false},
		{[]float64{1, 2, 0, 2, 1, 0, 0, 0, 1}, false},
		{[]float64{0, 0, 0, 0, 1, 0, 0, 0, 1}, false},
		{[]float64{math.NaN(), 0, 0, 0, 1, 0, 0, 0, 1}, false},
	}
	for _, c := range cases {
		if got := PositiveDefinite(c.m, 3); got != c.want {
			t.Errorf("PositiveDefinite(%v) = %v, want %v", c.m, got, c.want)
		}
	}
	if d := Det3([]float64{2, 1, 0, 1, 2, 1, 0, 1, 2}); d != 4 {
		t.Errorf("Det3 = %g, want 4", d)
	}
}

// TestCheckFinite puts NaN, ±Inf and extreme finite values at every
// position of slices of every length up to 9 (the vector sums run in groups
// of four), in both float types, and into slices checked in parallel parts:
// at the start, the end and either side of a part's edge, and in two parts
// at once, where the error must name the first.
func TestCheckFinite(t *testing.T) {
	checkFiniteShort[float32](t)
	checkFiniteShort[float64](t)
	checkFiniteLong[float32](t)
	checkFiniteLong[float64](t)
}

func checkFiniteLong[T Float](t *testing.T) {
	t.Helper()
	n := 3*finiteChunk + 5
	v := make([]T, n)
	if err := CheckFinite(v); err != nil {
		t.Fatalf("%T zeros of length %d: %v", v[0], n, err)
	}
	for _, at := range [][]int{{0}, {n - 1}, {finiteChunk - 1}, {finiteChunk}, {2*finiteChunk + 3, finiteChunk + 1}} {
		w := slices.Clone(v)
		for _, i := range at {
			w[i] = T(math.NaN())
		}
		first := slices.Min(at)
		err := CheckFinite(w)
		if want := fmt.Sprintf("flat index %d", first); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%T NaN at %v of %d: error %v, want one naming %s", v[0], at, n, err, want)
		}
	}
}

func checkFiniteShort[T Float](t *testing.T) {
	t.Helper()
	big := T(math.MaxFloat32)
	for n := 1; n <= 9; n++ {
		ok := make([]T, n)
		for i := range ok {
			ok[i] = big * T(1-2*(i%2))
		}
		ok[0] = T(math.Copysign(0, -1))
		if err := CheckFinite(ok); err != nil {
			t.Errorf("%T %v: %v", ok[0], ok, err)
		}
		for i := range n {
			for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
				v := append([]T(nil), ok...)
				v[i] = T(bad)
				err := CheckFinite(v)
				if want := fmt.Sprintf("flat index %d", i); err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("%T %v: error %v, want one naming %s", v[0], v, err, want)
				}
			}
		}
	}
}

// BenchmarkValidate checks a float32 batch of the paper model's convolution
// outputs, [8, 16, 1280] valid Gaussians, in 2D and 3D.
func BenchmarkValidate(b *testing.B) {
	for _, d := range []int{2, 3} {
		l := Layout{B: 8, C: 16, N: 1280, D: d}
		b.Run(fmt.Sprintf("%dD_B%d_C%d_N%d", d, l.B, l.C, l.N), func(b *testing.B) {
			x := make([]float32, l.Len())
			s := l.Stride()
			for i := 0; i < len(x); i += s {
				x[i], x[i+1] = float32(i%7)-3, float32(i%5)
				for r := range d {
					x[i+1+d+r*d+r] = 1 + float32(r)
				}
				x[i+1+d+1] = 0.25 // Σ01
				x[i+1+d+d] = 0.25 // Σ10
			}
			for b.Loop() {
				if err := Validate(x, l); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
