package cpu

import (
	"math"
	"testing"
)

// TestReLUFitExpPoly32 compares the float32 polynomial exponential with math.Exp
// over the whole argument range the clamping allows, on a fine grid plus the
// edges, and checks the underflow to exactly 0.
func TestReLUFitExpPoly32(t *testing.T) {
	const (
		maxRel  = 3e-7 // ≈ 2.5 ulp of float32
		minNorm = 0x1p-126
	)
	var worst float64
	for i := 0; i <= 1_000_000; i++ {
		x := float32(-88 + 176*float64(i)/1e6)
		got, want := float64(expPoly32(x)), math.Exp(float64(x))
		if want < minNorm {
			// Subnormal range: only the absolute error matters.
			if math.Abs(got-want) > minNorm {
				t.Fatalf("expPoly32(%v) = %g, want %g (subnormal range)", x, got, want)
			}
			continue
		}
		worst = max(worst, math.Abs(got-want)/want)
	}
	if worst > maxRel {
		t.Errorf("expPoly32: worst relative error %.3g > %g", worst, maxRel)
	}
	for _, x := range []float32{-88, -88.5, -100, -1e4, -1e30, float32(math.Inf(-1))} {
		if got := expPoly32(x); got != 0 {
			t.Errorf("expPoly32(%v) = %g, want 0", x, got)
		}
	}
	for _, x := range []float32{0, 1, -1} {
		if got, want := expPoly32(x), float32(math.Exp(float64(x))); got != want {
			t.Errorf("expPoly32(%v) = %v, want %v", x, got, want)
		}
	}
	if got := expPoly32(float32(math.NaN())); !math.IsNaN(float64(got)) {
		t.Errorf("expPoly32(NaN) = %v, want NaN", got)
	}
}

// TestReLUFitExpTFloat64 checks that float64 keeps the exact exponential.
func TestReLUFitExpTFloat64(t *testing.T) {
	for _, x := range []float64{-700, -20.3, -1e-3, 0, 0.5, 30} {
		if got, want := expT(x), math.Exp(x); got != want {
			t.Errorf("expT(%v) = %v, want math.Exp = %v", x, got, want)
		}
	}
}
