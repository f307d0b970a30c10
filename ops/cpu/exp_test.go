package cpu

import (
	"math"
	"testing"
)

// TestReLUFitExpSlice32 compares the float32 polynomial exponential with
// math.Exp over the whole argument range the clamping allows, on a fine grid
// plus the edges, and checks the underflow to exactly 0.
func TestReLUFitExpSlice32(t *testing.T) {
	const (
		maxRel  = 3e-7 // ≈ 2.5 ulp of float32
		minNorm = 0x1p-126
	)
	v := make([]float32, 1_000_001)
	for i := range v {
		v[i] = float32(-88 + 176*float64(i)/float64(len(v)-1))
	}
	x := append([]float32(nil), v...)
	expSlice32(v)
	var worst float64
	for i, got := range v {
		want := math.Exp(float64(x[i]))
		if want < minNorm {
			// Subnormal range: only the absolute error matters.
			if math.Abs(float64(got)-want) > minNorm {
				t.Fatalf("e^%v = %g, want %g (subnormal range)", x[i], got, want)
			}
			continue
		}
		worst = max(worst, math.Abs(float64(got)-want)/want)
	}
	if worst > maxRel {
		t.Errorf("worst relative error %.3g > %g", worst, maxRel)
	}
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
