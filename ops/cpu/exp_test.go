package cpu

import (
	"math"
	"slices"
	"testing"
)

// TestReLUFitExpSlice32 compares the float32 polynomial exponential with
// math.Exp over the whole argument range the clamping allows, on a fine grid
// plus the edges, and checks the underflow to exactly 0.
func TestReLUFitExpSlice32(t *testing.T) {
	checkExpGrid(t, -88, 88, func(v []float32) { expSlice32(v) }, math.Exp, 3e-7, 0x1p-126)
	edges := []float32{-88, -88.5, -100, -1e4, -1e30, float32(math.Inf(-1)), 0, 1, -1, float32(math.NaN())}
	got := append([]float32(nil), edges...)
	expSlice32(got)
	for i, x := range edges {
		want := float32(math.Exp(float64(x)))
		if x <= -88 {
			want = 0
		}
		if got[i] != want && !(math.IsNaN(float64(x)) && math.IsNaN(float64(got[i]))) {
			t.Errorf("e^%v = %v, want %v", x, got[i], want)
		}
	}
}

// checkExpGrid applies exp, which overwrites a slice of float32 arguments
// with their exponentials, to a grid of about a million arguments in
// [lo, hi] (the length a multiple of 16, for vector versions) and compares
// the results with want: the relative error of normal results must stay
// within maxRel, the absolute error of subnormal ones within subTol.
func checkExpGrid(t *testing.T, lo, hi float32, exp func(v []float32), want func(float64) float64, maxRel, subTol float64) {
	t.Helper()
	const steps = 1 << 20
	in := make([]float32, steps+16)
	for i := range in {
		in[i] = lo + (hi-lo)*float32(min(i, steps))/steps
	}
	got := slices.Clone(in)
	exp(got)
	var worst float64
	for i, g := range got {
		w := want(float64(in[i]))
		if w < 0x1p-126 {
			if math.Abs(float64(g)-w) > subTol {
				t.Fatalf("exp(%v) = %g, want %g (subnormal range)", in[i], g, w)
			}
			continue
		}
		worst = max(worst, math.Abs(float64(g)-w)/w)
	}
	if worst > maxRel {
		t.Errorf("worst relative error %.3g > %g", worst, maxRel)
	}
}

// TestReLUFitExpRow checks the dispatch: float64 keeps the exact
// exponential, float32 takes the polynomial.
func TestReLUFitExpRow(t *testing.T) {
	x := []float64{-700, -20.3, -1e-3, 0, 0.5, 30}
	v, v32 := append([]float64(nil), x...), make([]float32, len(x))
	for i := range x {
		v32[i] = float32(x[i])
	}
	w32 := append([]float32(nil), v32...)
	expRow(v)
	expRow(v32)
	expSlice32(w32)
	for i := range x {
		if v[i] != math.Exp(x[i]) {
			t.Errorf("expRow(float64 %v) = %v, want math.Exp = %v", x[i], v[i], math.Exp(x[i]))
		}
		if v32[i] != w32[i] {
			t.Errorf("expRow(float32 %v) = %v, want expSlice32 %v", x[i], v32[i], w32[i])
		}
	}
}
