//go:build goexperiment.simd && amd64

package cpu

import (
	"math"
	"testing"

	"simd/archsimd"
)

// TestReLUFitExp8 compares the vector exponential expVec8 with math.Exp over the
// clamped range and checks the underflow to exactly 0, as
// TestReLUFitExpSlice32 does for the scalar twin.
func TestReLUFitExp8(t *testing.T) {
	if !reluSIMD {
		t.Skip("CPU without AVX2 and FMA")
	}
	const (
		maxRel  = 3e-7
		minNorm = 0x1p-126
	)
	c := newExpVec8()
	var in, out [8]float32
	var worst float64
	for i := 0; i <= 1_000_000; i += 8 {
		for l := range in {
			in[l] = float32(-88 + 176*float64(min(i+l, 1_000_000))/1e6)
		}
		c.exp(archsimd.LoadFloat32x8(&in)).Store(&out)
		for l, got := range out {
			want := math.Exp(float64(in[l]))
			if want < minNorm {
				if math.Abs(float64(got)-want) > minNorm {
					t.Fatalf("expVec8(%v) = %g, want %g (subnormal range)", in[l], got, want)
				}
				continue
			}
			worst = max(worst, math.Abs(float64(got)-want)/want)
		}
	}
	if worst > maxRel {
		t.Errorf("worst relative error %.3g > %g", worst, maxRel)
	}
	in = [8]float32{-88, -88.5, -100, -1e4, -1e30, float32(math.Inf(-1)), 0, 1}
	c.exp(archsimd.LoadFloat32x8(&in)).Store(&out)
	want := [8]float32{0, 0, 0, 0, 0, 0, 1, float32(math.E)}
	if out != want {
		t.Errorf("expVec8(%v) = %v, want %v", in, out, want)
	}
}
