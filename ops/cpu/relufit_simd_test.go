//go:build goexperiment.simd && amd64

package cpu

import (
	"math"
	"slices"
	"testing"

	"simd/archsimd"
)

// TestReLUFitExpVec compares the vector exponentials with math.Exp over the
// clamped range and checks their underflow to exactly 0, as
// TestReLUFitExpSlice32 does for the scalar twin.
func TestReLUFitExpVec(t *testing.T) {
	c8, c16 := newExpVec8(), newExpVec16()
	for _, tc := range []struct {
		name string
		ok   bool
		lo   float32 // smallest argument with a non-zero result
		w    int     // lanes
		exp  func(in, out []float32)
	}{
		{"expVec8", reluSIMD, -87.3, 8, func(in, out []float32) {
			c8.exp(archsimd.LoadFloat32x8Slice(in)).StoreSlice(out)
		}},
		{"expVec16", archsimd.X86.AVX512(), -103.9, 16, func(in, out []float32) {
			c16.exp(archsimd.LoadFloat32x16Slice(in)).StoreSlice(out)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.ok {
				t.Skip("CPU lacks the instructions")
			}
			checkVecExp(t, tc.lo, tc.w, tc.exp)
		})
	}
}

// TestExp2Vec16 compares exp2Vec16 with math.Exp2 over its range, the
// subnormal results included, and checks the clamping at both ends.
func TestExp2Vec16(t *testing.T) {
	if !archsimd.X86.AVX512() {
		t.Skip("CPU without AVX-512")
	}
	const (
		maxRel = 2.4e-7 // 2 ulp
		steps  = 1 << 20
	)
	c := newExp2Vec16()
	var in, out [16]float32
	var worst float64
	for i := 0; i <= steps; i += 16 {
		for l := range in {
			in[l] = float32(-150 + 277*float64(min(i+l, steps))/steps)
		}
		c.exp2(archsimd.LoadFloat32x16(&in)).Store(&out)
		for l, got := range out {
			want := math.Exp2(float64(in[l]))
			if want < 0x1p-126 {
				if math.Abs(float64(got)-want) > 0x1p-148 { // 2 ulp
					t.Fatalf("2^%v = %g, want %g (subnormal range)", in[l], got, want)
				}
				continue
			}
			worst = max(worst, math.Abs(float64(got)-want)/want)
		}
	}
	t.Logf("worst relative error %.3g", worst)
	if worst > maxRel {
		t.Errorf("worst relative error %.3g > %g", worst, maxRel)
	}
	in = [16]float32{-151, -1e4, float32(math.Inf(-1)), 0, 1, -1, 0.5, 10, 1e4, float32(math.Inf(1))}
	c.exp2(archsimd.LoadFloat32x16(&in)).Store(&out)
	want := [16]float32{0, 0, 0, 1, 2, 0.5, float32(math.Sqrt2), 1024, 0x1p127, 0x1p127, 1, 1, 1, 1, 1, 1}
	for l := range out {
		if math.Abs(float64(out[l]-want[l])) > 2.4e-7*float64(want[l]) {
			t.Errorf("2^%v = %v, want %v", in[l], out[l], want[l])
		}
	}
}

// checkVecExp checks an exponential of w lanes on a grid of [lo, 88] and
// at the edges.
func checkVecExp(t *testing.T, lo float32, w int, exp func(in, out []float32)) {
	const (
		maxRel  = 3e-7
		minNorm = 0x1p-126
		steps   = 1_000_000
	)
	lanes := func(in []float32) []float32 {
		out := make([]float32, len(in))
		for i := 0; i < len(in); i += w {
			exp(in[i:i+w], out[i:i+w])
		}
		return out
	}
	in := make([]float32, (steps+16)/16*16)
	for i := range in {
		in[i] = lo + (88-lo)*float32(min(i, steps))/steps
	}
	var worst float64
	for i, got := range lanes(in) {
		want := math.Exp(float64(in[i]))
		if want < minNorm {
			if math.Abs(float64(got)-want) > minNorm {
				t.Fatalf("e^%v = %g, want %g (subnormal range)", in[i], got, want)
			}
			continue
		}
		worst = max(worst, math.Abs(float64(got)-want)/want)
	}
	if worst > maxRel {
		t.Errorf("worst relative error %.3g > %g", worst, maxRel)
	}
	edges := []float32{lo - 0.5, -110, -1e4, -1e30, float32(math.Inf(-1)), 0, 1, -1, 0, 0, 0, 0, 0, 0, 0, 0}
	want := []float32{0, 0, 0, 0, 0, 1, float32(math.E), float32(1 / math.E), 1, 1, 1, 1, 1, 1, 1, 1}
	if got := lanes(edges); !slices.Equal(got, want) {
		t.Errorf("e^%v = %v, want %v", edges, got, want)
	}
}
