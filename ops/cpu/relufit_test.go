package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// relufitRandom returns a float64 batch with weights of magnitude in
// [minAbs, 1) and random sign, positions in [−spread, spread)^D and
// covariances 0.3·A·Aᵀ + 0.2·I, so neighbouring Gaussians overlap and the
// target takes both signs at the centroids.
func relufitRandom(rng *rand.Rand, l mixture.Layout, minAbs, spread float64) []float64 {
	s := gmtest.Spec{WeightMin: minAbs, WeightMax: 1, NegativeOneIn: 2, Spread: spread, CovScale: 0.3, CovDiag: 0.2}
	return gmtest.Mixtures[float64](rng, s, l.B, l.C, l.N, l.D)
}

// relufitNaive is the reference implementation straight from the formulas,
// on Prepared Gaussians with math.Exp: it returns the fitted batch and the
// target t at every centroid.
func relufitNaive(x []float64, l mixture.Layout, opts device.ReLUFitOptions) (y, t []float64) {
	p, err := opts.Resolve()
	if err != nil {
		panic(err)
	}
	y = append([]float64(nil), x...)
	t = make([]float64, l.Mixtures()*l.N)
	st := l.Stride()
	ps := make([]Prepared[float64], l.N)
	for m := range l.Mixtures() {
		mx := mixture.Mixture(x, l, m)
		PrepareMixture(l.D, mx, ps)
		for k := range l.N {
			mu := mx[k*st+1 : k*st+1+l.D]
			var tk, ek float64
			for j := range ps {
				v := ps[j].Norm * math.Exp(ps[j].Exponent(l.D, mu))
				tk += mx[j*st] * v
				ek += device.CoarseWeight(p, mx[j*st]) * v
			}
			t[m*l.N+k] = tk
			y[(m*l.N+k)*st] = device.CoarseWeight(p, mx[k*st]) * (max(tk, 0) + p.Off) / (ek + p.Off)
		}
	}
	return y, t
}

// relufitNorm0 returns N(0; 0, Σ) = (2π)^(−D/2) det(Σ)^(−½) for a packed
// covariance, computed independently of the kernels.
func relufitNorm0(d int, cov []float64) float64 {
	det := cov[0]*cov[3] - cov[1]*cov[2]
	if d == 3 {
		det = mixture.Det3(cov)
	}
	return math.Pow(2*math.Pi, -float64(d)/2) / math.Sqrt(det)
}

var relufitVariants = []struct {
	name string
	opts device.ReLUFitOptions
}{
	{"reference", device.ReLUFitOptions{}},
	{"paper", device.ReLUFitOptions{Variant: device.ReLUFitPaper}},
	{"custom", device.ReLUFitOptions{CoarseOffset: 0.3, Offset: 0.02}},
}

// TestReLUFitMatchesNaive compares the SoA kernel in float64 with the
// formula-by-formula reference, for sizes around the vector width.
func TestReLUFitMatchesNaive(t *testing.T) {
	for _, v := range relufitVariants {
		for _, d := range []int{2, 3} {
			for _, n := range []int{1, 7, 8, 9, 33} {
				rng := rand.New(rand.NewPCG(uint64(n), uint64(d)))
				l := mixture.Layout{B: 2, C: 3, N: n, D: d}
				x := relufitRandom(rng, l, 0, 1.5)
				want, _ := relufitNaive(x, l, v.opts)
				got := make([]float64, len(x))
				if err := ReLUFit(got, x, l, v.opts); err != nil {
					t.Fatal(err)
				}
				for i := range got {
					if math.Abs(got[i]-want[i]) > 1e-12*math.Max(1, math.Abs(want[i])) {
						t.Errorf("%s D=%d N=%d: y[%d] = %v, naive %v", v.name, d, n, i, got[i], want[i])
						break
					}
				}
			}
		}
	}
}

// relufitGradCase draws inputs whose discrete decisions (a_j > 0 and
// t_k > 0) are at least a margin away from flipping, so that central
// differences see one smooth branch; the check below asserts that.
func relufitGradCase(t *testing.T, seed uint64, l mixture.Layout, opts device.ReLUFitOptions) []float64 {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, uint64(l.D)))
	for range 100 {
		x := relufitRandom(rng, l, 0.2, 1.5)
		_, tk := relufitNaive(x, l, opts)
		ok := true
		for _, v := range tk {
			ok = ok && math.Abs(v) > 1e-3
		}
		if ok {
			return x
		}
	}
	t.Fatalf("no input with stable masks for %v", l.Shape())
	return nil
}

// TestReLUFitGradient checks ReLUFitBackward against central differences of
// L = Σ r·ReLUFit(x) for every input value: weights, positions and both
// triangles of every covariance.
func TestReLUFitGradient(t *testing.T) {
	for _, v := range relufitVariants {
		for _, d := range []int{2, 3} {
			for _, n := range []int{1, 6, 11} {
				l := mixture.Layout{B: 2, C: 2, N: n, D: d}
				x := relufitGradCase(t, uint64(n), l, v.opts)
				relufitCheckGrad(t, fmt.Sprintf("%s D=%d N=%d", v.name, d, n), x, l, v.opts)
			}
		}
	}
}

// TestReLUFitGradientDuplicates repeats the check with every position
// duplicated (two Gaussians at one centroid, different covariances), where
// the self and cross terms of the position gradient meet.
func TestReLUFitGradientDuplicates(t *testing.T) {
	for _, d := range []int{2, 3} {
		l := mixture.Layout{B: 1, C: 2, N: 6, D: d}
		x := relufitGradCase(t, 7, l, device.ReLUFitOptions{})
		st := l.Stride()
		for m := range l.Mixtures() {
			mx := mixture.Mixture(x, l, m)
			for k := 1; k < l.N; k += 2 {
				copy(mx[k*st+1:k*st+1+d], mx[(k-1)*st+1:])
			}
		}
		_, tk := relufitNaive(x, l, device.ReLUFitOptions{})
		for _, v := range tk {
			if math.Abs(v) < 1e-3 {
				t.Fatalf("D=%d: target %v too close to 0 after duplicating positions", d, v)
			}
		}
		relufitCheckGrad(t, fmt.Sprintf("duplicates D=%d", d), x, l, device.ReLUFitOptions{})
	}
}

func relufitCheckGrad(t *testing.T, name string, x []float64, l mixture.Layout, opts device.ReLUFitOptions) {
	t.Helper()
	rng := rand.New(rand.NewPCG(99, uint64(len(x))))
	r := gmtest.Normal(rng, len(x))
	y := make([]float64, len(x))
	loss := func() float64 {
		if err := ReLUFit(y, x, l, opts); err != nil {
			t.Fatal(err)
		}
		return gmtest.Dot(y, r)
	}
	_, t0 := relufitNaive(x, l, opts)
	numeric := gmtest.Central(loss, x, gmtest.Step)
	// The decisions must not have flipped anywhere along the differences.
	for i := range x {
		for _, h := range []float64{-gmtest.Step, gmtest.Step} {
			x[i] += h
			_, th := relufitNaive(x, l, opts)
			x[i] -= h
			for k := range th {
				if (th[k] > 0) != (t0[k] > 0) {
					t.Fatalf("%s: mask of t[%d] flips when x[%d] moves by %g", name, k, i, h)
				}
			}
		}
		if i%l.Stride() == 0 && math.Abs(x[i]) < 10*gmtest.Step {
			t.Fatalf("%s: weight %d = %v too close to 0", name, i, x[i])
		}
	}
	analytic := make([]float64, len(x))
	if err := ReLUFitBackward(analytic, x, r, l, opts); err != nil {
		t.Fatal(err)
	}
	if e := gmtest.RelErr(analytic, numeric); e > 1e-6 {
		t.Errorf("%s: relative gradient error %.3g > 1e-6\nanalytic %v\nnumeric  %v", name, e, analytic, numeric)
	}
}

// TestReLUFitProperties checks positive output weights (reference variant),
// non-negative ones (paper variant) and that positions and covariances pass
// through bit for bit, in both precisions.
func TestReLUFitProperties(t *testing.T) {
	for _, v := range relufitVariants {
		for _, d := range []int{2, 3} {
			rng := rand.New(rand.NewPCG(5, uint64(d)))
			l := mixture.Layout{B: 3, C: 2, N: 37, D: d}
			x := relufitRandom(rng, l, 0, 2)
			y := make([]float64, len(x))
			if err := ReLUFit(y, x, l, v.opts); err != nil {
				t.Fatal(err)
			}
			x32 := gmtest.To32(x)
			y32 := make([]float32, len(x))
			if err := ReLUFit(y32, x32, l, v.opts); err != nil {
				t.Fatal(err)
			}
			var zeros int
			for i := range y {
				if i%l.Stride() != 0 {
					if y[i] != x[i] || y32[i] != x32[i] {
						t.Fatalf("%s D=%d: value %d changed: %v → %v (float32 %v → %v)", v.name, d, i, x[i], y[i], x32[i], y32[i])
					}
					continue
				}
				paper := v.opts.Variant == device.ReLUFitPaper
				if !(y[i] > 0) && !(paper && y[i] == 0) || !(y32[i] > 0) && !(paper && y32[i] == 0) {
					t.Fatalf("%s D=%d: weight %d = %v (float32 %v)", v.name, d, i, y[i], y32[i])
				}
				if y[i] == 0 {
					zeros++
				}
			}
			if v.opts.Variant == device.ReLUFitPaper && zeros == 0 {
				t.Errorf("paper D=%d: no centroid with non-positive target; the input does not exercise the clamp", d)
			}
		}
	}
}

// TestReLUFitClosedForm checks single Gaussians and duplicated ones against
// the closed forms: with n0 = N(0; 0, Σ), m copies of one Gaussian of weight
// a give x = max(a,0)+0.1, b = max(m·a·n0, 0), e = m·x·n0 and
// a″ = x(b+0.05)/(e+0.05); the paper variant reproduces a positive Gaussian
// exactly and removes a negative one.
func TestReLUFitClosedForm(t *testing.T) {
	for _, d := range []int{2, 3} {
		rng := rand.New(rand.NewPCG(11, uint64(d)))
		for _, a := range []float64{0.7, 2.5, 0, -0.4} {
			for _, copies := range []int{1, 2, 3} {
				l := mixture.Layout{B: 1, C: 1, N: copies, D: d}
				g := relufitRandom(rng, mixture.Layout{B: 1, C: 1, N: 1, D: d}, 0, 1)
				g[0] = a
				x := make([]float64, 0, l.Len())
				for range copies {
					x = append(x, g...)
				}
				n0 := relufitNorm0(d, g[1+d:])
				xc := max(a, 0) + 0.1
				b := max(float64(copies)*a*n0, 0)
				e := float64(copies) * xc * n0
				cases := []struct {
					opts device.ReLUFitOptions
					want float64
				}{
					{device.ReLUFitOptions{}, xc * (b + 0.05) / (e + 0.05)},
					{device.ReLUFitOptions{Variant: device.ReLUFitPaper}, max(a, 0)},
				}
				for _, c := range cases {
					if c.opts.Variant == device.ReLUFitPaper && a == 0 {
						continue // ε·0/e: covered by the reference rows
					}
					y := make([]float64, len(x))
					if err := ReLUFit(y, x, l, c.opts); err != nil {
						t.Fatal(err)
					}
					y32 := make([]float32, len(x))
					if err := ReLUFit(y32, gmtest.To32(x), l, c.opts); err != nil {
						t.Fatal(err)
					}
					for k := range copies {
						got, got32 := y[k*l.Stride()], float64(y32[k*l.Stride()])
						if math.Abs(got-c.want) > 1e-14*math.Max(1, c.want) || math.Abs(got32-c.want) > 1e-6*math.Max(1, c.want) {
							t.Errorf("D=%d a=%v copies=%d variant=%d: a″[%d] = %v (float32 %v), want %v", d, a, copies, c.opts.Variant, k, got, got32, c.want)
						}
					}
				}
			}
		}
	}
}

// TestReLUFitFloat32 compares float32 with float64 on random inputs.
func TestReLUFitFloat32(t *testing.T) {
	for _, v := range relufitVariants {
		for _, d := range []int{2, 3} {
			rng := rand.New(rand.NewPCG(21, uint64(d)))
			l := mixture.Layout{B: 2, C: 3, N: 45, D: d}
			x := relufitRandom(rng, l, 0, 2)
			g := relufitRandom(rng, l, 0, 1)
			y := make([]float64, len(x))
			dx := make([]float64, len(x))
			y32 := make([]float32, len(x))
			dx32 := make([]float32, len(x))
			for _, err := range []error{
				ReLUFit(y, x, l, v.opts), ReLUFit(y32, gmtest.To32(x), l, v.opts),
				ReLUFitBackward(dx, x, g, l, v.opts), ReLUFitBackward(dx32, gmtest.To32(x), gmtest.To32(g), l, v.opts),
			} {
				if err != nil {
					t.Fatal(err)
				}
			}
			gmtest.WantClose(t, fmt.Sprintf("%s D=%d float32 forward", v.name, d), y32, y, 1e-5)
			gmtest.WantClose(t, fmt.Sprintf("%s D=%d float32 backward", v.name, d), dx32, dx, 1e-4)
		}
	}
}

// TestReLUFitFastPath compares the vectorised float32 loops with the scalar
// float32 loops on the same work buffers; it is skipped where no vectorised
// path exists (plain builds, CPUs without AVX2 and FMA).
func TestReLUFitFastPath(t *testing.T) {
	for _, d := range []int{2, 3} {
		for _, n := range []int{1, 8, 13, 64} {
			rng := rand.New(rand.NewPCG(31, uint64(n)))
			l := mixture.Layout{B: 1, C: 1, N: n, D: d}
			x := gmtest.To32(relufitRandom(rng, l, 0, 2))
			p, _ := device.ReLUFitOptions{}.Resolve()
			fast, slow := newReLUWork[float32](n, d, true), newReLUWork[float32](n, d, true)
			g := gmtest.To32(relufitRandom(rng, l, 0, 1))
			dxFast, dxSlow := append([]float32(nil), g...), append([]float32(nil), g...)
			for _, s := range []*reluWork[float32]{fast, slow} {
				if err := s.load(x, p); err != nil {
					t.Fatal(err)
				}
			}
			if !reluForwardFast(fast) {
				t.Skip("no vectorised path in this build or on this CPU")
			}
			slow.forwardSums()
			relufitSameSums(t, fmt.Sprintf("forward D=%d N=%d t", d, n), fast.t[:n], slow.t[:n])
			relufitSameSums(t, fmt.Sprintf("forward D=%d N=%d e", d, n), fast.e[:n], slow.e[:n])
			fast.backward(dxFast, p)
			slow.sensitivities(dxSlow, p)
			slow.backwardSums()
			slow.gather(dxSlow)
			relufitSameSums(t, fmt.Sprintf("backward D=%d N=%d", d, n), dxFast, dxSlow)
		}
	}
}

// TestReLUFitSIMDBackward makes sure the vectorised backward really ran in
// TestReLUFitFastPath's comparison, not the scalar loop on both sides.
func TestReLUFitSIMDBackward(t *testing.T) {
	s := newReLUWork[float32](3, 2, true)
	if !reluForwardFast(s) {
		t.Skip("no vectorised path in this build or on this CPU")
	}
	if !reluBackwardFast(s) {
		t.Error("vectorised forward without vectorised backward")
	}
}

func relufitSameSums(t *testing.T, what string, a, b []float32) {
	t.Helper()
	var diff, scale float64
	for i := range a {
		diff = math.Max(diff, math.Abs(float64(a[i]-b[i])))
		scale = math.Max(scale, math.Abs(float64(b[i])))
	}
	if diff > 1e-5*scale {
		t.Errorf("%s: vectorised and scalar differ by %.3g (scale %.3g)", what, diff, scale)
	}
}

// TestReLUFitErrors checks that bad options and inputs that break float32
// are reported, not turned into NaN.
func TestReLUFitErrors(t *testing.T) {
	l := mixture.Layout{B: 1, C: 2, N: 3, D: 2}
	base := gmtest.To32(relufitRandom(rand.New(rand.NewPCG(1, 2)), l, 0.1, 1))
	cases := []struct {
		name string
		opts device.ReLUFitOptions
		edit func(x []float32)
		want string
	}{
		{"negative offset", device.ReLUFitOptions{Offset: -1}, nil, "ReLUFitOptions.Offset"},
		{"NaN coarse offset", device.ReLUFitOptions{CoarseOffset: math.NaN()}, nil, "ReLUFitOptions.CoarseOffset"},
		{"infinite epsilon", device.ReLUFitOptions{Variant: device.ReLUFitPaper, Epsilon: math.Inf(1)}, nil, "ReLUFitOptions.Epsilon"},
		{"unknown variant", device.ReLUFitOptions{Variant: 7}, nil, "Variant 7"},
		{"covariance singular in float32", device.ReLUFitOptions{}, func(x []float32) {
			c := x[l.Offset(0, 1, 2)+3:]
			c[0], c[1], c[2], c[3] = 1e-30, 0, 0, 1e-30
		}, "mixture (b=0, c=1): component 2: covariance"},
		{"overflowing weights", device.ReLUFitOptions{}, func(x []float32) {
			for n := range 3 {
				x[l.Offset(0, 0, n)] = 3e38
			}
		}, "non-finite output weight"},
	}
	for _, c := range cases {
		x := append([]float32(nil), base...)
		if c.edit != nil {
			c.edit(x)
		}
		y := make([]float32, len(x))
		err := ReLUFit(y, x, l, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
		if c.edit == nil {
			if _, err := c.opts.Resolve(); err == nil {
				t.Errorf("%s: Resolve accepted the options", c.name)
			}
		}
	}
}

// TestReLUFitSaved checks that the backward pass with the sums saved by
// ReLUFitSaving returns bitwise what the recomputing one does, in 2D and 3D
// and both float types, that ReLUFitSaving's output is ReLUFit's, and that
// sums of another layout, or saved state of another kind through Kernels,
// are errors.
func TestReLUFitSaved(t *testing.T) {
	for _, d := range []int{2, 3} {
		l := mixture.Layout{B: 2, C: 3, N: 21, D: d}
		rng := rand.New(rand.NewPCG(3, uint64(d)))
		x, g := relufitRandom(rng, l, 0, 2), relufitRandom(rng, l, 0, 1)
		checkReLUFitSaved(t, x, g, l)
		checkReLUFitSaved(t, gmtest.To32(x), gmtest.To32(g), l)
	}
	l := mixture.Layout{B: 1, C: 2, N: 5, D: 2}
	x := relufitRandom(rand.New(rand.NewPCG(1, 1)), l, 0, 2)
	y, dx := make([]float64, len(x)), make([]float64, len(x))
	sums, err := ReLUFitSaving(y, x, l, device.ReLUFitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other := mixture.Layout{B: 2, C: 1, N: 5, D: 2}
	if err := ReLUFitBackwardSaved(dx, x, x, other, device.ReLUFitOptions{}, sums); err == nil || !strings.Contains(err.Error(), "layout") {
		t.Errorf("sums of another layout: error %v, want one naming the layouts", err)
	}
	err = Kernels[float64]{}.ReLUFitBackward(dx, x, x, l, device.ReLUFitOptions{}, &Decisions{})
	if err == nil || !strings.Contains(err.Error(), "*cpu.Decisions") {
		t.Errorf("TreeHEM decisions as ReLU sums: error %v, want one naming the type", err)
	}
}

func checkReLUFitSaved[T Float](t *testing.T, x, g []T, l mixture.Layout) {
	t.Helper()
	y, want := make([]T, len(x)), make([]T, len(x))
	if err := ReLUFit(want, x, l, device.ReLUFitOptions{}); err != nil {
		t.Fatal(err)
	}
	sums, err := ReLUFitSaving(y, x, l, device.ReLUFitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(y, want) {
		t.Errorf("%dD %T: ReLUFitSaving's output differs from ReLUFit's", l.D, y[0])
	}
	dx, dxSaved := make([]T, len(x)), make([]T, len(x))
	if err := ReLUFitBackward(dx, x, g, l, device.ReLUFitOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := ReLUFitBackwardSaved(dxSaved, x, g, l, device.ReLUFitOptions{}, sums); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dx, dxSaved) {
		t.Errorf("%dD %T: the backward pass with saved sums differs from the recomputing one", l.D, y[0])
	}
}
