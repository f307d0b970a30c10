package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// covscaleBatch returns a random packed batch with covariances
// size·(A·Aᵀ + 0.3·I), size ∈ [0.2, 3.2) drawn per mixture, so that the mean
// traces differ between mixtures.
func covscaleBatch[T Float](rng *rand.Rand, l mixture.Layout) []T {
	x := make([]T, 0, l.Len())
	for range l.Mixtures() {
		size := 0.2 + 3*rng.Float64()
		s := gmtest.StandardSpec()
		s.CovScale, s.CovDiag = size, 0.3*size
		x = append(x, gmtest.Mixtures[T](rng, s, 1, 1, l.N, l.D)...)
	}
	return x
}

// covscalePerSample runs the per-sample CovScaleNorm forward into y and
// returns the factors and mean traces it used.
func covscalePerSample[T Float](t *testing.T, y, x []T, l mixture.Layout) ([]T, []float64) {
	t.Helper()
	tau := make([]float64, l.Mixtures())
	MeanTraces(tau, x, l)
	s := make([]T, len(tau))
	for m, v := range tau {
		f, ok := device.CovScaleFactor(l.D, v)
		if !ok {
			t.Fatalf("mixture %d: mean trace %g has no scale factor", m, v)
		}
		s[m] = T(f)
	}
	ScaleMixtures(y, x, l, s)
	return s, tau
}

// TestCovScaleBackward checks CovScaleBackward (the per-sample factors
// depend on x) and ScaleMixturesBackward (detached factors, constants)
// against central differences of L = Σ y·r.
func TestCovScaleBackward(t *testing.T) {
	cases := []struct {
		name    string
		seed    uint64
		b, c, n int
		// prepare returns the forward y = f(x) and the backward dx = ∂L/∂x
		// for the incoming gradient r.
		prepare func(t *testing.T, rng *rand.Rand, x []float64, l mixture.Layout) (fwd func(y []float64), bwd func(dx, r []float64))
	}{
		{"per sample", 11, 2, 3, 4, func(t *testing.T, _ *rand.Rand, x []float64, l mixture.Layout) (func([]float64), func(dx, r []float64)) {
			return func(y []float64) { covscalePerSample(t, y, x, l) }, func(dx, r []float64) {
				s, tau := covscalePerSample(t, make([]float64, len(x)), x, l)
				CovScaleBackward(dx, r, x, l, s, tau)
			}
		}},
		{"detached", 12, 2, 2, 3, func(_ *testing.T, rng *rand.Rand, x []float64, l mixture.Layout) (func([]float64), func(dx, r []float64)) {
			s := gmtest.Uniform[float64](rng, l.Mixtures(), 0.5, 1.5)
			return func(y []float64) { ScaleMixtures(y, x, l, s) }, func(dx, r []float64) { ScaleMixturesBackward(dx, r, l, s) }
		}},
	}
	for _, c := range cases {
		for _, d := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/%dD", c.name, d), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(c.seed, uint64(d)))
				l := mixture.Layout{B: c.b, C: c.c, N: c.n, D: d}
				x := covscaleBatch[float64](rng, l)
				fwd, bwd := c.prepare(t, rng, x, l)
				r := gmtest.Normal(rng, l.Len())
				y := make([]float64, l.Len())
				loss := func() float64 {
					fwd(y)
					return gmtest.Dot(y, r)
				}
				dx := make([]float64, l.Len())
				bwd(dx, r)
				gmtest.WantGrad(t, "gradient", dx, x, loss)
			})
		}
	}
}

// TestCovScaleProperties checks the defining property (mean trace D after
// scaling) on hand-made and random mixtures, and that weights, the ratio
// μ/sqrt(tr Σ) and positive definiteness survive.
func TestCovScaleProperties(t *testing.T) {
	single := func(cov ...float64) (mixture.Layout, []float64) {
		d := int(math.Sqrt(float64(len(cov))))
		l := mixture.Layout{B: 1, C: 1, N: 1, D: d}
		x := make([]float64, l.Len())
		x[0] = 0.7
		for j := range d {
			x[1+j] = float64(j + 1)
		}
		copy(x[1+d:], cov)
		return l, x
	}
	cases := []struct {
		name      string
		cov       []float64
		wantScale float64
	}{
		{"identity 2D unchanged", []float64{1, 0, 0, 1}, 1},
		{"identity 3D unchanged", []float64{1, 0, 0, 0, 1, 0, 0, 0, 1}, 1},
		{"diag(4,4)", []float64{4, 0, 0, 4}, 0.5},
		{"diag(4,9)", []float64{4, 0, 0, 9}, math.Sqrt(2.0 / 13)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, x := single(c.cov...)
			y := make([]float64, len(x))
			s, _ := covscalePerSample(t, y, x, l)
			if math.Abs(s[0]-c.wantScale) > 1e-15 {
				t.Errorf("scale %g, want %g", s[0], c.wantScale)
			}
			tau := make([]float64, 1)
			MeanTraces(tau, y, l)
			if math.Abs(tau[0]-float64(l.D)) > 1e-14 {
				t.Errorf("trace after scaling %g, want %d", tau[0], l.D)
			}
			if y[0] != x[0] {
				t.Errorf("weight changed from %g to %g", x[0], y[0])
			}
			for j := range l.D {
				if want := c.wantScale * x[1+j]; math.Abs(y[1+j]-want) > 1e-14 {
					t.Errorf("position %d: %g, want %g", j, y[1+j], want)
				}
			}
		})
	}
	t.Run("random 3D [20,10,30]", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(13, 3))
		l := mixture.Layout{B: 20, C: 10, N: 30, D: 3}
		x := covscaleBatch[float64](rng, l)
		y := make([]float64, len(x))
		covscalePerSample(t, y, x, l)
		if err := mixture.Validate(y, l); err != nil {
			t.Fatalf("scaled batch is not a valid mixture: %v", err)
		}
		tau := make([]float64, l.Mixtures())
		MeanTraces(tau, y, l)
		for m, v := range tau {
			if math.Abs(v-3) > 1e-12 {
				t.Fatalf("mixture %d: mean trace %g after scaling, want 3", m, v)
			}
		}
		for i := 0; i < len(x); i += l.Stride() {
			if y[i] != x[i] {
				t.Fatalf("weight at %d changed from %g to %g", i, x[i], y[i])
			}
		}
	})
}

func TestCovScaleFactorRejects(t *testing.T) {
	for _, tau := range []float64{0, -1, math.NaN(), math.Inf(1), math.Inf(-1)} {
		if s, ok := device.CovScaleFactor(2, tau); ok {
			t.Errorf("τ = %g gave factor %g, want rejection", tau, s)
		}
	}
}

// TestCovScaleFloat32 checks that the float32 kernels match float64 within
// float32 precision, forward and backward.
func TestCovScaleFloat32(t *testing.T) {
	for _, d := range []int{2, 3} {
		rng := rand.New(rand.NewPCG(14, uint64(d)))
		l := mixture.Layout{B: 3, C: 4, N: 50, D: d}
		x64 := covscaleBatch[float64](rng, l)
		g64 := gmtest.Normal(rng, l.Len())
		x32, g32 := gmtest.To32(x64), gmtest.To32(g64)
		y64, y32 := make([]float64, l.Len()), make([]float32, l.Len())
		s64, tau64 := covscalePerSample(t, y64, x64, l)
		s32, tau32 := covscalePerSample(t, y32, x32, l)
		dx64, dx32 := make([]float64, l.Len()), make([]float32, l.Len())
		CovScaleBackward(dx64, g64, x64, l, s64, tau64)
		CovScaleBackward(dx32, g32, x32, l, s32, tau32)
		gmtest.WantClose(t, fmt.Sprintf("%dD float32 forward", d), y32, y64, 1e-5)
		gmtest.WantClose(t, fmt.Sprintf("%dD float32 backward", d), dx32, dx64, 1e-5)
	}
}

// BenchmarkCovScaleKernel measures the CovScaleNorm kernels alone (no input
// validation, no allocation) on a float32 batch of a ModelNet layer's size.
func BenchmarkCovScaleKernel(b *testing.B) {
	l := mixture.Layout{B: 21, C: 16, N: 2560, D: 2}
	x := covscaleBatch[float32](rand.New(rand.NewPCG(15, 0)), l)
	y, dx := make([]float32, l.Len()), make([]float32, l.Len())
	tau := make([]float64, l.Mixtures())
	s := make([]float32, l.Mixtures())
	size := fmt.Sprintf("2D_B%d_C%d_N%d_f32", l.B, l.C, l.N)
	b.Run("Forward/"+size, func(b *testing.B) {
		for b.Loop() {
			MeanTraces(tau, x, l)
			for m, v := range tau {
				f, _ := device.CovScaleFactor(l.D, v)
				s[m] = float32(f)
			}
			ScaleMixtures(y, x, l, s)
		}
	})
	b.Run("BackwardPerSample/"+size, func(b *testing.B) {
		for b.Loop() {
			CovScaleBackward(dx, y, x, l, s, tau)
		}
	})
	b.Run("BackwardDetached/"+size, func(b *testing.B) {
		for b.Loop() {
			ScaleMixturesBackward(dx, y, l, s)
		}
	})
}
