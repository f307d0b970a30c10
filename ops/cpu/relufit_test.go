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
// on Prepared Gaussians with math.Exp, for the constants kappa (nil: 0): it
// returns the fitted batch and the target t (κ included) at every centroid.
func relufitNaive(x, kappa []float64, l mixture.Layout, opts device.ReLUFitOptions) (y, t []float64) {
	p, err := opts.Resolve()
	if err != nil {
		panic(err)
	}
	y = append([]float64(nil), x...)
	t = make([]float64, l.Mixtures()*l.N)
	st := l.Stride()
	ps := make([]mixture.Prepared[float64], l.N)
	for m := range l.Mixtures() {
		mx := mixture.Mixture(x, l, m)
		kappa := relufitKappa(kappa, m)
		mixture.PrepareMixture(l.D, mx, ps)
		for k := range l.N {
			mu := mx[k*st+1 : k*st+1+l.D]
			tk, ek := kappa, 0.0
			for j := range ps {
				v := ps[j].Norm * math.Exp(ps[j].Exponent(l.D, mu))
				tk += mx[j*st] * v
				ek += device.CoarseWeight(p, mx[j*st], kappa) * v
			}
			t[m*l.N+k] = tk
			y[(m*l.N+k)*st] = device.CoarseWeight(p, mx[k*st], kappa) * (max(tk, 0) - max(kappa, 0) + p.Off) / (ek + p.Off)
		}
	}
	return y, t
}

// relufitKappa returns the constant of mixture m: kappa[m], 0 for nil.
func relufitKappa(kappa []float64, m int) float64 {
	if kappa == nil {
		return 0
	}
	return kappa[m]
}

// relufitConstants are the kinds of constants the tests draw, one value per
// mixture: none (nil, the fit without a constant), exact zeros, both signs
// at least 0.2 away from 0, and a mixture of all three.
var relufitConstants = []string{"none", "zero", "positive", "negative", "mixed"}

// relufitConstant draws the constants of kind for the mixtures of l.
func relufitConstant(rng *rand.Rand, kind string, l mixture.Layout) []float64 {
	if kind == "none" {
		return nil
	}
	kappa := make([]float64, l.Mixtures())
	for m := range kappa {
		sign := map[string]int{"zero": 0, "positive": 1, "negative": -1, "mixed": m%3 - 1}[kind]
		kappa[m] = float64(sign) * (0.2 + 0.4*rng.Float64())
	}
	return kappa
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
// formula-by-formula reference, for sizes around the vector width and every
// kind of constant.
func TestReLUFitMatchesNaive(t *testing.T) {
	for _, v := range relufitVariants {
		for _, kind := range relufitConstants {
			for _, d := range []int{2, 3} {
				for _, n := range []int{1, 7, 8, 9, 33} {
					rng := rand.New(rand.NewPCG(uint64(n), uint64(d)))
					l := mixture.Layout{B: 2, C: 3, N: n, D: d}
					x := relufitRandom(rng, l, 0, 1.5)
					kappa := relufitConstant(rng, kind, l)
					want, _ := relufitNaive(x, kappa, l, v.opts)
					got := make([]float64, len(x))
					if err := ReLUFit(got, x, kappa, nil, l, v.opts); err != nil {
						t.Fatal(err)
					}
					for i := range got {
						if math.Abs(got[i]-want[i]) > 1e-12*math.Max(1, math.Abs(want[i])) {
							t.Errorf("%s κ %s D=%d N=%d: y[%d] = %v, naive %v", v.name, kind, d, n, i, got[i], want[i])
							break
						}
					}
				}
			}
		}
	}
}

// relufitDecisions lists every discrete decision of the fit of x with the
// constants kappa: the signs of t_k, a_j + κ, a_j and κ.
func relufitDecisions(x, kappa []float64, l mixture.Layout, opts device.ReLUFitOptions) []bool {
	_, tk := relufitNaive(x, kappa, l, opts)
	var dec []bool
	for _, v := range tk {
		dec = append(dec, v > 0)
	}
	for m := range l.Mixtures() {
		k := relufitKappa(kappa, m)
		dec = append(dec, k > 0)
		for j := range l.N {
			a := x[(m*l.N+j)*l.Stride()]
			dec = append(dec, a+k > 0, a > 0)
		}
	}
	if opts.Refine {
		dec = append(dec, refineDecisions(x, kappa, l, opts)...)
	}
	return dec
}

// relufitGradCase draws inputs and constants of kind whose discrete
// decisions (relufitDecisions) are at least a margin away from flipping:
// |t_k|, |a_j| and |a_j + κ| > 1e-3, so that finite differences see one
// smooth branch; relufitCheckGrad asserts that.
func relufitGradCase(t *testing.T, seed uint64, l mixture.Layout, opts device.ReLUFitOptions, kind string) (x, kappa []float64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, uint64(l.D)))
	for range 100 {
		x, kappa = relufitRandom(rng, l, 0.2, 1.5), relufitConstant(rng, kind, l)
		_, tk := relufitNaive(x, kappa, l, opts)
		ok := true
		for _, v := range tk {
			ok = ok && math.Abs(v) > 1e-3
		}
		for i := 0; i < len(x); i += l.Stride() {
			ok = ok && math.Abs(x[i]+relufitKappa(kappa, i/l.Stride()/l.N)) > 1e-3
		}
		if ok {
			return x, kappa
		}
	}
	t.Fatalf("no input with stable decisions for %v, κ %s", l.Shape(), kind)
	return nil, nil
}

// TestReLUFitGradient checks ReLUFitBackward against finite differences of
// L = Σ r·ReLUFit(x, κ) for every input value (weights, positions and both
// triangles of every covariance) and every constant, for every kind of
// constant, and that the cases reach both branches the constant adds to
// the coarse rule: a negative weight kept (a + κ > 0) and one replaced by
// κ⁺ > 0.
func TestReLUFitGradient(t *testing.T) {
	var keptNegative, clampedToKappa int
	for _, v := range relufitVariants {
		for _, kind := range relufitConstants {
			for _, d := range []int{2, 3} {
				for _, n := range []int{1, 6, 11} {
					l := mixture.Layout{B: 2, C: 3, N: n, D: d}
					x, kappa := relufitGradCase(t, uint64(n), l, v.opts, kind)
					relufitCheckGrad(t, fmt.Sprintf("%s κ %s D=%d N=%d", v.name, kind, d, n), x, kappa, nil, l, v.opts)
					for i := 0; i < len(x); i += l.Stride() {
						da, dk := device.CoarseSlopes(x[i], relufitKappa(kappa, i/l.Stride()/l.N))
						keptNegative += max(int(-da), 0)
						clampedToKappa += int(dk)
					}
				}
			}
		}
	}
	if keptNegative == 0 || clampedToKappa == 0 {
		t.Errorf("%d negative weights kept, %d replaced by κ⁺: the cases miss a branch of the coarse rule", keptNegative, clampedToKappa)
	}
}

// TestReLUFitGradientDuplicates repeats the check with every position
// duplicated (two Gaussians at one centroid, different covariances), where
// the self and cross terms of the position gradient meet.
func TestReLUFitGradientDuplicates(t *testing.T) {
	for _, d := range []int{2, 3} {
		l := mixture.Layout{B: 1, C: 2, N: 6, D: d}
		x, _ := relufitGradCase(t, 7, l, device.ReLUFitOptions{}, "none")
		st := l.Stride()
		for m := range l.Mixtures() {
			mx := mixture.Mixture(x, l, m)
			for k := 1; k < l.N; k += 2 {
				copy(mx[k*st+1:k*st+1+d], mx[(k-1)*st+1:])
			}
		}
		_, tk := relufitNaive(x, nil, l, device.ReLUFitOptions{})
		for _, v := range tk {
			if math.Abs(v) < 1e-3 {
				t.Fatalf("D=%d: target %v too close to 0 after duplicating positions", d, v)
			}
		}
		relufitCheckGrad(t, fmt.Sprintf("duplicates D=%d", d), x, nil, nil, l, device.ReLUFitOptions{})
	}
}

// relufitCheckGrad compares ∂L/∂x, ∂L/∂κ and, for given targets tg (nil:
// none), ∂L/∂t of L = Σ r·ReLUFit(x, κ, t) with central differences, except
// for a constant that is exactly 0: there the fit has a kink, and the
// analytic derivative, taken with [κ > 0] = 0, is the one from the left
// (gmtest.Left). Every decision must stay as it is over the steps the
// differences take.
func relufitCheckGrad(t *testing.T, name string, x, kappa, tg []float64, l mixture.Layout, opts device.ReLUFitOptions) {
	t.Helper()
	rng := rand.New(rand.NewPCG(99, uint64(len(x))))
	r := gmtest.Normal(rng, len(x))
	y := make([]float64, len(x))
	loss := func() float64 {
		if err := ReLUFit(y, x, kappa, tg, l, opts); err != nil {
			t.Fatal(err)
		}
		return gmtest.Dot(y, r)
	}
	decisions := func() []bool {
		if tg != nil {
			return relufitTargetDecisions(x, kappa, tg, l)
		}
		return relufitDecisions(x, kappa, l, opts)
	}
	d0 := decisions()
	stable := func(v []float64, i int, steps ...float64) {
		for _, h := range steps {
			v[i] += h
			dh := decisions()
			v[i] -= h
			if !slices.Equal(dh, d0) {
				t.Fatalf("%s: a decision flips when input %d moves by %g", name, i, h)
			}
		}
	}
	for i := range x {
		stable(x, i, -gmtest.Step, gmtest.Step)
	}
	for i := range tg {
		stable(tg, i, -gmtest.Step, gmtest.Step)
	}
	dx := make([]float64, len(x))
	var dkappa, dt []float64
	if kappa != nil {
		dkappa = make([]float64, len(kappa))
	}
	if tg != nil {
		dt = make([]float64, len(tg))
	}
	if err := ReLUFitBackward(dx, dkappa, dt, x, kappa, tg, r, l, opts); err != nil {
		t.Fatal(err)
	}
	central := gmtest.Central
	if opts.Refine {
		// The refinement's ten weight iterations curve the loss enough for
		// the central difference's truncation error to reach the tolerance.
		central = gmtest.Richardson
	}
	if e := gmtest.RelErr(dx, central(loss, x, gmtest.Step)); !(e <= gmtest.GradTol) {
		t.Errorf("%s ∂L/∂x: relative gradient error %.3g > %g", name, e, gmtest.GradTol)
	}
	if tg != nil {
		if e := gmtest.RelErr(dt, central(loss, tg, gmtest.Step)); !(e <= gmtest.GradTol) {
			t.Errorf("%s ∂L/∂t: relative gradient error %.3g > %g", name, e, gmtest.GradTol)
		}
	}
	if kappa == nil {
		return
	}
	numeric := central(loss, kappa, gmtest.Step)
	left := gmtest.Left(loss, kappa, gmtest.Step)
	for m, k := range kappa {
		if k == 0 {
			numeric[m] = left[m]
			stable(kappa, m, -gmtest.Step, -2*gmtest.Step)
		} else {
			stable(kappa, m, -gmtest.Step, gmtest.Step)
		}
	}
	if e := gmtest.RelErr(dkappa, numeric); !(e <= gmtest.GradTol) {
		t.Errorf("%s ∂L/∂κ: relative gradient error %.3g > %g\nanalytic %v\nnumeric  %v", name, e, gmtest.GradTol, dkappa, numeric)
	}
}

// TestReLUFitProperties checks positive output weights (reference variant)
// and non-negative ones (paper variant) where κ ≤ 0, and that positions and
// covariances pass through bit for bit, in both precisions, for every kind
// of constant. With κ > 0 a weight may be negative: where 0 < f + κ < κ the
// fitted function max(f + κ, 0) − κ⁺ is f itself, which is negative there.
func TestReLUFitProperties(t *testing.T) {
	for _, v := range relufitVariants {
		for _, kind := range relufitConstants {
			for _, d := range []int{2, 3} {
				relufitCheckProperties(t, fmt.Sprintf("%s κ %s D=%d", v.name, kind, d), d, v.opts, kind)
			}
		}
	}
}

func relufitCheckProperties(t *testing.T, name string, d int, opts device.ReLUFitOptions, kind string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, uint64(d)))
	l := mixture.Layout{B: 3, C: 2, N: 37, D: d}
	x := relufitRandom(rng, l, 0, 2)
	kappa := relufitConstant(rng, kind, l)
	y := make([]float64, len(x))
	if err := ReLUFit(y, x, kappa, nil, l, opts); err != nil {
		t.Fatal(err)
	}
	x32 := gmtest.To32(x)
	y32 := make([]float32, len(x))
	if err := ReLUFit(y32, x32, gmtest.To32(kappa), nil, l, opts); err != nil {
		t.Fatal(err)
	}
	paper := opts.Variant == device.ReLUFitPaper
	var zeros int
	for i := range y {
		if i%l.Stride() != 0 {
			if y[i] != x[i] || y32[i] != x32[i] {
				t.Fatalf("%s: value %d changed: %v → %v (float32 %v → %v)", name, i, x[i], y[i], x32[i], y32[i])
			}
			continue
		}
		if relufitKappa(kappa, i/l.Stride()/l.N) > 0 {
			continue
		}
		if !(y[i] > 0) && !(paper && y[i] == 0) || !(y32[i] > 0) && !(paper && y32[i] == 0) {
			t.Fatalf("%s: weight %d = %v (float32 %v)", name, i, y[i], y32[i])
		}
		if y[i] == 0 {
			zeros++
		}
	}
	if paper && kind != "positive" && zeros == 0 {
		t.Errorf("%s: no centroid with non-positive target; the input does not exercise the clamp", name)
	}
}

// TestReLUFitConstantZero checks that constants of exactly 0 give the fit
// without a constant bit for bit, forward and backward, with and without
// saved sums, in both precisions.
func TestReLUFitConstantZero(t *testing.T) {
	for _, v := range relufitVariants {
		for _, d := range []int{2, 3} {
			l := mixture.Layout{B: 2, C: 3, N: 19, D: d}
			rng := rand.New(rand.NewPCG(8, uint64(d)))
			x, g := relufitRandom(rng, l, 0, 2), relufitRandom(rng, l, 0, 1)
			name := fmt.Sprintf("%s D=%d", v.name, d)
			checkReLUFitConstantZero(t, name, x, g, l, v.opts)
			checkReLUFitConstantZero(t, name, gmtest.To32(x), gmtest.To32(g), l, v.opts)
		}
	}
}

func checkReLUFitConstantZero[T Float](t *testing.T, name string, x, g []T, l mixture.Layout, opts device.ReLUFitOptions) {
	t.Helper()
	zero := make([]T, l.Mixtures())
	var outs [2][3][]T // per κ (nil, zeros): y, ∂L/∂x recomputed, ∂L/∂x from saved sums
	for i, kappa := range [][]T{nil, zero} {
		y, dx, dxSaved := make([]T, len(x)), make([]T, len(x)), make([]T, len(x))
		sums, err := ReLUFitSaving(y, x, kappa, nil, l, opts)
		if err == nil {
			err = ReLUFitBackward(dx, nil, nil, x, kappa, nil, g, l, opts)
		}
		if err == nil {
			err = ReLUFitBackwardSaved(dxSaved, nil, nil, x, kappa, nil, g, l, opts, sums)
		}
		if err != nil {
			t.Fatal(err)
		}
		outs[i] = [3][]T{y, dx, dxSaved}
	}
	for i, what := range []string{"output", "∂L/∂x", "∂L/∂x from saved sums"} {
		if !slices.Equal(outs[0][i], outs[1][i]) {
			t.Errorf("%s %T: the %s with κ = 0 differs from the one without a constant", name, x[0], what)
		}
	}
}

// TestReLUFitLargeConstant checks the limits of a constant that dominates
// the mixture, against the closed forms from EvalMixture. For κ ≫ |f|,
// max(f + κ, 0) − κ⁺ = f: b_k is the target without κ, every weight is kept
// (x = |a| + coarse, or |a| in the paper variant), and ∂L/∂κ vanishes. For
// κ ≪ −|f| the fitted function is 0: b_k = 0, every coarse weight is the
// floor (coarse, or ε), a″_k = x_k·off/(e_k + off), and ∂L/∂κ = 0 exactly.
func TestReLUFitLargeConstant(t *testing.T) {
	for _, v := range relufitVariants {
		p, _ := v.opts.Resolve()
		for _, d := range []int{2, 3} {
			for _, big := range []float64{1e3, -1e3} {
				l := mixture.Layout{B: 2, C: 2, N: 9, D: d}
				rng := rand.New(rand.NewPCG(13, uint64(d)))
				x, g := relufitRandom(rng, l, 0.1, 1.5), relufitRandom(rng, l, 0, 1)
				kappa := []float64{big, 1.5 * big, 2 * big, 0.5 * big}
				y, dk := make([]float64, len(x)), make([]float64, len(kappa))
				if err := ReLUFit(y, x, kappa, nil, l, v.opts); err != nil {
					t.Fatal(err)
				}
				if err := ReLUFitBackward(make([]float64, len(x)), dk, nil, x, kappa, nil, g, l, v.opts); err != nil {
					t.Fatal(err)
				}
				st := l.Stride()
				want := slices.Clone(x)
				ps, coarse := make([]mixture.Prepared[float64], l.N), slices.Clone(x)
				for i := 0; i < len(x); i += st {
					switch {
					case big < 0 && p.Paper:
						coarse[i] = p.Floor
					case big < 0:
						coarse[i] = p.Coarse
					default:
						coarse[i] = math.Abs(x[i]) + p.Coarse
					}
				}
				var gbSum float64
				for m := range l.Mixtures() {
					mx, cx := mixture.Mixture(x, l, m), mixture.Mixture(coarse, l, m)
					for k := range l.N {
						mu := mx[k*st+1 : k*st+1+d]
						mixture.PrepareMixture(d, mx, ps)
						b := 0.0
						if big > 0 {
							b = mixture.EvalMixture(d, ps, mu)
						}
						mixture.PrepareMixture(d, cx, ps)
						e := mixture.EvalMixture(d, ps, mu)
						want[(m*l.N+k)*st] = cx[k*st] * (b + p.Off) / (e + p.Off)
						gbSum += math.Abs(g[(m*l.N+k)*st] * cx[k*st] / (e + p.Off))
					}
				}
				name := fmt.Sprintf("%s D=%d κ=%g", v.name, d, big)
				gmtest.WantClose(t, name+" output", y, want, 1e-10)
				if (big < 0 && gmtest.MaxAbs(dk) != 0) || gmtest.MaxAbs(dk) > 1e-12*gbSum {
					t.Errorf("%s: ∂L/∂κ = %v, want 0", name, dk)
				}
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
					if err := ReLUFit(y, x, nil, nil, l, c.opts); err != nil {
						t.Fatal(err)
					}
					y32 := make([]float32, len(x))
					if err := ReLUFit(y32, gmtest.To32(x), nil, nil, l, c.opts); err != nil {
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

// TestReLUFitFloat32 compares float32 with float64 on random inputs,
// without and with constants, forward and both gradients.
func TestReLUFitFloat32(t *testing.T) {
	for _, v := range relufitVariants {
		for _, kind := range []string{"none", "mixed"} {
			for _, d := range []int{2, 3} {
				rng := rand.New(rand.NewPCG(21, uint64(d)))
				l := mixture.Layout{B: 2, C: 3, N: 45, D: d}
				x := relufitRandom(rng, l, 0, 2)
				g := relufitRandom(rng, l, 0, 1)
				kappa := relufitConstant(rng, kind, l)
				x32, g32, kappa32 := gmtest.To32(x), gmtest.To32(g), gmtest.To32(kappa)
				y, dx, dk := make([]float64, len(x)), make([]float64, len(x)), make([]float64, l.Mixtures())
				y32, dx32, dk32 := make([]float32, len(x)), make([]float32, len(x)), make([]float32, l.Mixtures())
				for _, err := range []error{
					ReLUFit(y, x, kappa, nil, l, v.opts), ReLUFit(y32, x32, kappa32, nil, l, v.opts),
					ReLUFitBackward(dx, dk, nil, x, kappa, nil, g, l, v.opts), ReLUFitBackward(dx32, dk32, nil, x32, kappa32, nil, g32, l, v.opts),
				} {
					if err != nil {
						t.Fatal(err)
					}
				}
				name := fmt.Sprintf("%s κ %s D=%d float32", v.name, kind, d)
				gmtest.WantClose(t, name+" forward", y32, y, 1e-5)
				gmtest.WantClose(t, name+" ∂L/∂x", dx32, dx, 1e-4)
				gmtest.WantClose(t, name+" ∂L/∂κ", dk32, dk, 1e-4)
			}
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
				if err := s.load(x, 0, p); err != nil {
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
		err := ReLUFit(y, x, nil, nil, l, c.opts)
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
// ReLUFitSaving returns bitwise what the recomputing one does, ∂L/∂x and
// ∂L/∂κ, in 2D and 3D, both float types, without and with constants, that
// ReLUFitSaving's output is ReLUFit's, and that sums of another layout, or
// saved state of another kind through Kernels, are errors.
func TestReLUFitSaved(t *testing.T) {
	for _, d := range []int{2, 3} {
		for _, kind := range []string{"none", "mixed"} {
			l := mixture.Layout{B: 2, C: 3, N: 21, D: d}
			rng := rand.New(rand.NewPCG(3, uint64(d)))
			x, g := relufitRandom(rng, l, 0, 2), relufitRandom(rng, l, 0, 1)
			kappa := relufitConstant(rng, kind, l)
			checkReLUFitSaved(t, x, kappa, g, l)
			checkReLUFitSaved(t, gmtest.To32(x), gmtest.To32(kappa), gmtest.To32(g), l)
		}
	}
	l := mixture.Layout{B: 1, C: 2, N: 5, D: 2}
	x := relufitRandom(rand.New(rand.NewPCG(1, 1)), l, 0, 2)
	y, dx := make([]float64, len(x)), make([]float64, len(x))
	sums, err := ReLUFitSaving(y, x, nil, nil, l, device.ReLUFitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other := mixture.Layout{B: 2, C: 1, N: 5, D: 2}
	if err := ReLUFitBackwardSaved(dx, nil, nil, x, nil, nil, x, other, device.ReLUFitOptions{}, sums); err == nil || !strings.Contains(err.Error(), "layout") {
		t.Errorf("sums of another layout: error %v, want one naming the layouts", err)
	}
	err = Kernels[float64]{}.ReLUFitBackward(dx, nil, nil, x, nil, nil, x, l, device.ReLUFitOptions{}, &Decisions{})
	if err == nil || !strings.Contains(err.Error(), "*cpu.Decisions") {
		t.Errorf("TreeHEM decisions as ReLU sums: error %v, want one naming the type", err)
	}
}

func checkReLUFitSaved[T Float](t *testing.T, x, kappa, g []T, l mixture.Layout) {
	t.Helper()
	name := fmt.Sprintf("%dD %T κ=%v", l.D, x[0], kappa != nil)
	y, want := make([]T, len(x)), make([]T, len(x))
	if err := ReLUFit(want, x, kappa, nil, l, device.ReLUFitOptions{}); err != nil {
		t.Fatal(err)
	}
	sums, err := ReLUFitSaving(y, x, kappa, nil, l, device.ReLUFitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(y, want) {
		t.Errorf("%s: ReLUFitSaving's output differs from ReLUFit's", name)
	}
	dx, dxSaved := make([]T, len(x)), make([]T, len(x))
	dk, dkSaved := make([]T, l.Mixtures()), make([]T, l.Mixtures())
	if err := ReLUFitBackward(dx, dk, nil, x, kappa, nil, g, l, device.ReLUFitOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := ReLUFitBackwardSaved(dxSaved, dkSaved, nil, x, kappa, nil, g, l, device.ReLUFitOptions{}, sums); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dx, dxSaved) || !slices.Equal(dk, dkSaved) {
		t.Errorf("%s: the backward pass with saved sums differs from the recomputing one", name)
	}
}
