package mixture

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestPackUnpack(t *testing.T) {
	for _, d := range []int{2, 3} {
		l := Layout{B: 2, C: 3, N: 2, D: d}
		gs := plyRandom(rand.New(rand.NewPCG(65, uint64(d))), 12, d)
		x, err := Pack[float64](l, gs)
		if err != nil {
			t.Fatal(err)
		}
		if err := Validate(x, l); err != nil {
			t.Fatal(err)
		}
		// Component (b=1, c=2, n=1) is gs[11] and sits at Offset(1, 2, 1).
		if o := l.Offset(1, 2, 1); x[o] != gs[11].Weight || x[o+1] != gs[11].Position[0] || x[o+1+d] != gs[11].Covariance[0] {
			t.Fatalf("%dD: packed component at %d is %v, want %+v", d, o, x[o:o+l.Stride()], gs[11])
		}
		back, err := Unpack(x, l)
		if err != nil {
			t.Fatal(err)
		}
		plyEqual(t, back, gs, 0, "pack→unpack")
	}
}

func TestPackErrors(t *testing.T) {
	l := Layout{B: 1, C: 1, N: 2, D: 2}
	g := Gaussian{Weight: 1, Position: []float64{0, 0}, Covariance: []float64{1, 0, 0, 1}}
	if _, err := Pack[float64](l, []Gaussian{g}); err == nil || !strings.Contains(err.Error(), "needs 2 Gaussians, got 1") {
		t.Errorf("count mismatch: %v", err)
	}
	bad := Gaussian{Weight: 1, Position: []float64{0, 0, 0}, Covariance: make([]float64, 9)}
	if _, err := Pack[float64](l, []Gaussian{g, bad}); err == nil || !strings.Contains(err.Error(), "Gaussian 1") {
		t.Errorf("dimension mismatch: %v", err)
	}
	if _, err := Unpack(make([]float32, 5), l); err == nil || !strings.Contains(err.Error(), "got 5") {
		t.Errorf("short data: %v", err)
	}
}
