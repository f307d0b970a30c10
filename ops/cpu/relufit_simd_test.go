//go:build goexperiment.simd && amd64

package cpu

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"simd/archsimd"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
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
		{"expVec8", cpuAVX2FMA, expFlushE + 0.01, 8, func(in, out []float32) {
			c8.exp(archsimd.LoadFloat32x8Slice(in)).StoreSlice(out)
		}},
		{"expVec16", cpuAVX512, expFlushE + 0.01, 16, func(in, out []float32) {
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

// TestExp2Vec compares the vector 2^x with math.Exp2 over their range and
// checks the flush to 0 below expFlush2 and the clamping above, within 2 ulp.
func TestExp2Vec(t *testing.T) {
	c8, c16 := newExp2Vec8(), newExp2Vec16()
	inf := float32(math.Inf(1))
	for _, tc := range []struct {
		name   string
		ok     bool
		lo     float32 // lower end of the checked grid
		w      int     // lanes
		exp2   func(v []float32)
		in, at []float32 // edge arguments and their results
	}{
		{"exp2Vec8", cpuAVX2FMA, expFlush2 + 0.01, 8, func(v []float32) { c8.exp2(archsimd.LoadFloat32x8Slice(v)).StoreSlice(v) },
			[]float32{expFlush2, -126.6, -1e4, -inf, 0.5, -1, 1e4, expFlush2 + 1},
			[]float32{0, 0, 0, 0, float32(math.Sqrt2), 0.5, 0x1p127, 0x1p-99}},
		{"exp2Vec16", cpuAVX512, expFlush2 + 0.01, 16, func(v []float32) { c16.exp2(archsimd.LoadFloat32x16Slice(v)).StoreSlice(v) },
			[]float32{expFlush2, -151, -1e4, -inf, 0, 1, -1, 0.5, 10, 1e4, inf, expFlush2 + 1, 0, 0, 0, 0},
			[]float32{0, 0, 0, 0, 1, 2, 0.5, float32(math.Sqrt2), 1024, 0x1p127, 0x1p127, 0x1p-99, 1, 1, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.ok {
				t.Skip("CPU lacks the instructions")
			}
			checkExpGrid(t, tc.lo, 127, func(v []float32) {
				for i := 0; i < len(v); i += tc.w {
					tc.exp2(v[i:])
				}
			}, math.Exp2, 2.4e-7, 0x1p-148)
			out := slices.Clone(tc.in)
			tc.exp2(out)
			for l := range out {
				if math.Abs(float64(out[l]-tc.at[l])) > 2.4e-7*float64(tc.at[l]) {
					t.Errorf("2^%v = %v, want %v", tc.in[l], out[l], tc.at[l])
				}
			}
		})
	}
}

// checkVecExp checks an exponential of w lanes on a grid of [lo, 88] and
// at the edges.
func checkVecExp(t *testing.T, lo float32, w int, exp func(in, out []float32)) {
	lanes := func(in []float32) []float32 {
		out := make([]float32, len(in))
		for i := 0; i < len(in); i += w {
			exp(in[i:i+w], out[i:i+w])
		}
		return out
	}
	checkExpGrid(t, lo, 88, func(v []float32) { copy(v, lanes(v)) }, math.Exp, 3e-7, 0x1p-126)
	edges := []float32{lo - 0.5, -110, -1e4, -1e30, float32(math.Inf(-1)), 0, 1, -1, 0, 0, 0, 0, 0, 0, 0, 0}
	want := []float32{0, 0, 0, 0, 0, 1, float32(math.E), float32(1 / math.E), 1, 1, 1, 1, 1, 1, 1, 1}
	if got := lanes(edges); !slices.Equal(got, want) {
		t.Errorf("e^%v = %v, want %v", edges, got, want)
	}
}

// TestReLUFitFast8 runs the ReLU fit's eight-lane AVX2 loops, which AVX-512
// machines would otherwise never take, forward and backward in 2D and 3D,
// against the scalar loops on the same float32 input.
func TestReLUFitFast8(t *testing.T) {
	if !cpuAVX2FMA {
		t.Skip("CPU lacks AVX2 and FMA")
	}
	defer func(w, f bool) { reluWide, cpuAVX2FMA = w, f }(reluWide, cpuAVX2FMA)
	for _, d := range []int{2, 3} {
		l := mixture.Layout{B: 2, C: 3, N: 37, D: d} // 37: a partial block of lanes
		rng := rand.New(rand.NewPCG(8, uint64(d)))
		x := gmtest.To32(relufitRandom(rng, l, 0, 3))
		g := gmtest.To32(relufitRandom(rng, l, 0, 1))
		run := func(wide, simd bool) (y, dx []float32) {
			reluWide, cpuAVX2FMA = wide, simd
			y, dx = make([]float32, len(x)), make([]float32, len(x))
			if err := ReLUFit(y, x, nil, nil, l, device.ReLUFitOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := ReLUFitBackward(dx, nil, nil, x, nil, nil, g, l, device.ReLUFitOptions{}); err != nil {
				t.Fatal(err)
			}
			return y, dx
		}
		y8, dx8 := run(false, true)
		ys, dxs := run(false, false)
		for _, c := range []struct {
			name      string
			got, want []float32
		}{{"forward", y8, ys}, {"backward", dx8, dxs}} {
			if e, m := gmtest.MaxAbsDiff(gmtest.To64(c.got), gmtest.To64(c.want)), gmtest.MaxAbs(gmtest.To64(c.want)); !(e <= 2e-5*m) {
				t.Errorf("%dD %s: eight lanes differ from the scalar loops by %g (max |value| %g)", d, c.name, e, m)
			}
		}
	}
}

// TestLaneSums checks that laneSums8 and laneSums16 give in each lane
// bitwise what hsum8 and hsum16 give for that vector, on values whose sums
// depend on the order of the additions.
func TestLaneSums(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	val := func() float32 { return float32(rng.NormFloat64() * math.Exp(8*rng.NormFloat64())) }
	for range 50 {
		if cpuAVX2FMA {
			v := make([][8]float32, 8)
			for i := range v {
				for l := range v[i] {
					v[i][l] = val()
				}
			}
			var got [8]float32
			laneSums8(v).Store(&got)
			for i := range v {
				if want := hsum8(archsimd.LoadFloat32x8(&v[i])); math.Float32bits(got[i]) != math.Float32bits(want) {
					t.Fatalf("laneSums8 lane %d = %g, hsum8 = %g", i, got[i], want)
				}
			}
		}
		if cpuAVX512 {
			v := make([][16]float32, 16)
			for i := range v {
				for l := range v[i] {
					v[i][l] = val()
				}
			}
			var got [16]float32
			laneSums16(v).Store(&got)
			for i := range v {
				if want := hsum16(archsimd.LoadFloat32x16(&v[i])); math.Float32bits(got[i]) != math.Float32bits(want) {
					t.Fatalf("laneSums16 lane %d = %g, hsum16 = %g", i, got[i], want)
				}
			}
		}
	}
}
