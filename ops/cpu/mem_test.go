package cpu

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// memMixture returns a packed float64 batch with weights in [w/2, 3w/2) of
// random sign (or positive only), positions in [-spread, spread) and
// covariances cs·(A·Aᵀ + 0.3·I).
func memMixture(rng *rand.Rand, l mixture.Layout, spread, w, cs float64, positive bool) []float64 {
	return gmtest.Mixtures[float64](rng, gmtest.ScaledSpec(spread, w, cs, positive), l.B, l.C, l.N, l.D)
}

// withN returns l with N components per mixture: the output layout of a
// reduction of l to n.
func withN(l mixture.Layout, n int) mixture.Layout {
	l.N = n
	return l
}

// memRun returns MEM's reduction of x to np components and its layout.
func memRun(x []float64, l mixture.Layout, np int) ([]float64, mixture.Layout) {
	lo := withN(l, np)
	y := make([]float64, lo.Len())
	MEM(y, x, l, np)
	return y, lo
}

type memCase struct {
	name     string
	n, np    int
	spread   float64 // position range
	w        float64 // weight scale
	cs       float64 // covariance scale
	positive bool
	step     float64 // central-difference step
}

// memCases exercise the regimes of MEM: overlapping targets with both signs,
// N < Np padding, a single (narrow, hence unclamped) component, and the
// clamps: Σ|w| < 0.05 makes S and V constant, far-apart targets push
// Σ_s q_is under 1e-5. The small-mass case needs a step far below its
// weights (≈ 0.005), else the truncation error (h/w)² exceeds the tolerance.
var memCases = []memCase{
	{"overlapping", 9, 3, 1.5, 1, 1, false, gmtest.Step},
	{"positive", 8, 4, 1.5, 0.4, 1, true, gmtest.Step},
	{"padding", 3, 5, 1, 1, 1, false, gmtest.Step},
	{"single", 1, 2, 1, 1, 0.1, true, gmtest.Step},
	{"small-mass", 6, 2, 1, 0.003, 1, true, 1e-7},
	{"far-apart", 6, 2, 12, 2, 1, true, gmtest.Step},
}

// TestMEMFrozenGrad checks MEMBackwardSaved against central differences of
// MEMFrozen with the selection and likelihoods held fixed (they carry no
// gradient by design), for every case in 2D and 3D.
func TestMEMFrozenGrad(t *testing.T) {
	for _, d := range []int{2, 3} {
		for ci, tc := range memCases {
			t.Run(fmt.Sprintf("%dD/%s", d, tc.name), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(d), uint64(ci)))
				l := mixture.Layout{B: 2, C: 2, N: tc.n, D: d}
				lo := withN(l, tc.np)
				x := memMixture(rng, l, tc.spread, tc.w, tc.cs, tc.positive)
				sel, lik := MEMDecisions(x, l, tc.np)
				r := gmtest.Normal(rng, lo.Len())
				y := make([]float64, lo.Len())
				loss := func() float64 {
					MEMFrozen(y, x, lik, sel, l, tc.np)
					return gmtest.Dot(y, r)
				}
				dx := make([]float64, l.Len())
				MEMBackwardSaved(dx, x, r, lik, sel, l, tc.np)
				num := gmtest.Central(loss, x, tc.step)
				if e := gmtest.RelErr(dx, num); e > 1e-6 {
					t.Errorf("relative gradient error %.3g > 1e-6\nanalytic %v\nnumeric  %v", e, dx, num)
				}
			})
		}
	}
}

// TestMEMMatchesReference compares MEM with a direct float64 transcription
// of the reference's modified EM (docs/algorithms.md, "Modified EM"), with
// the power of the likelihood base and no log space, and checks that
// MEM and MEMBackward equal their frozen forms under MEMDecisions.
func TestMEMMatchesReference(t *testing.T) {
	for _, d := range []int{2, 3} {
		for ci, tc := range memCases {
			t.Run(fmt.Sprintf("%dD/%s", d, tc.name), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(10+d), uint64(ci)))
				l := mixture.Layout{B: 2, C: 3, N: tc.n, D: d}
				x := memMixture(rng, l, tc.spread, tc.w, tc.cs, tc.positive)
				y, lo := memRun(x, l, tc.np)
				want := memReference(x, l, tc.np)
				if e := gmtest.MaxAbsDiff(y, want); e > 1e-12*max(1, gmtest.MaxAbs(want)) {
					t.Errorf("MEM differs from the reference transcription by %.3g\ngot  %v\nwant %v", e, y, want)
				}
				sel, lik := MEMDecisions(x, l, tc.np)
				yf := make([]float64, lo.Len())
				MEMFrozen(yf, x, lik, sel, l, tc.np)
				if e := gmtest.MaxAbsDiff(y, yf); e != 0 {
					t.Errorf("MEM and MEMFrozen differ by %.3g", e)
				}
				g := gmtest.Normal(rng, lo.Len())
				dx, dxf := make([]float64, l.Len()), make([]float64, l.Len())
				MEMBackward(dx, x, g, l, tc.np)
				MEMBackwardSaved(dxf, x, g, lik, sel, l, tc.np)
				if e := gmtest.MaxAbsDiff(dx, dxf); e != 0 {
					t.Errorf("MEMBackward and MEMBackwardSaved differ by %.3g", e)
				}
			})
		}
	}
}

// memReference is the reference's modified EM written out naively, one
// mixture at a time (docs/algorithms.md, "Modified EM").
func memReference(x []float64, l mixture.Layout, np int) []float64 {
	lo := withN(l, np)
	y := make([]float64, lo.Len())
	gs, _ := mixture.Unpack(x, l)
	d := l.D
	for m := range l.Mixtures() {
		tg := gs[m*l.N : (m+1)*l.N]
		order := make([]int, l.N)
		for i := range order {
			order[i] = i
		}
		// Insertion sort: stable, descending |w|.
		for i := 1; i < len(order); i++ {
			for j := i; j > 0 && math.Abs(tg[order[j]].Weight) > math.Abs(tg[order[j-1]].Weight); j-- {
				order[j], order[j-1] = order[j-1], order[j]
			}
		}
		k := min(l.N, np)
		fit := order[:k]
		var st, sv float64
		for _, g := range tg {
			st += math.Abs(g.Weight)
		}
		for _, j := range fit {
			sv += math.Abs(tg[j].Weight)
		}
		st, sv = math.Max(st, 0.05), math.Max(sv, 0.05)
		rho := make([][]float64, l.N)
		for i, g := range tg {
			rho[i] = make([]float64, k)
			var qs float64
			for s, j := range fit {
				f := tg[j]
				inv := memInverse(f.Covariance, d)
				var m2, tr float64
				for r := range d {
					for c := range d {
						m2 += (g.Position[r] - f.Position[r]) * inv[r*d+c] * (g.Position[c] - f.Position[c])
						tr += inv[r*d+c] * g.Covariance[c*d+r]
					}
				}
				norm := math.Pow(2*math.Pi, -float64(d)/2) / math.Sqrt(mixture.Det(f.Covariance, d))
				base := norm * math.Exp(-m2/2) * math.Exp(-tr/2)
				lik := math.Pow(base, 20*math.Abs(g.Weight)/st)
				rho[i][s] = lik * math.Abs(f.Weight) / sv
				qs += rho[i][s]
			}
			for s := range k {
				rho[i][s] = rho[i][s] / math.Max(qs, 1e-5) * math.Abs(g.Weight) / st
			}
		}
		for s, j := range fit {
			var pi float64
			for i := range tg {
				pi += rho[i][s]
			}
			p := math.Max(pi, 1e-5)
			mu := make([]float64, d)
			for i, g := range tg {
				for r := range d {
					mu[r] += rho[i][s] / p * g.Position[r]
				}
			}
			cov := make([]float64, d*d)
			for i, g := range tg {
				for r := range d {
					for c := range d {
						cov[r*d+c] += rho[i][s] / p * (g.Covariance[r*d+c] + (g.Position[r]-mu[r])*(g.Position[c]-mu[c]))
					}
				}
			}
			if pi < 1e-4 {
				for r := range d {
					cov[r*d+r] += 1e-4
				}
			}
			o := y[lo.Offset(m/l.C, m%l.C, s):]
			o[0] = pi * memSign(tg[j].Weight) * st
			copy(o[1:], mu)
			copy(o[1+d:], cov)
		}
		for s := k; s < np; s++ {
			o := y[lo.Offset(m/l.C, m%l.C, s):]
			for r := range d {
				o[1+d+r*d+r] = 1
			}
		}
	}
	return y
}

func memInverse(m []float64, d int) []float64 {
	inv := make([]float64, d*d)
	mixture.InvDet(d, m, inv)
	return inv
}

// memIntegrals returns Σ_k w_k of every mixture.
func memIntegrals(x []float64, l mixture.Layout) []float64 {
	y := make([]float64, l.Mixtures())
	Integrate(y, x, l)
	return y
}

// TestMEMIntegral checks when MEM preserves the integral. Σ_s w'_s =
// S·Σ_s sign(v_s)·π_s = Σ_i |w_i|·Σ_s sign(v_s)·r_is: the clamp
// S = max(Σ|w|, 0.05) cancels, and Σ_s r_is = min(1, Q_i/1e-5) with
// Q_i = Σ_s L_is·|v̂_s|. So the integral is preserved exactly when every
// target's responsibilities go to fitting components of its own sign (all
// weights ≥ 0, MEM's use after the ReLU fit) and Q_i ≥ 1e-5 for every
// target with w_i ≠ 0. Otherwise mass is lost: with positive weights the
// output integral is Σ_i w_i·min(1, Q_i/1e-5), which the test checks for
// every mixture. Q_i < 1e-5 happens when a target is far from every fitting
// component, when the mass is tiny, or when a target holds a large share a_i
// of it: L_is = base^(20·a_i) with base ≈ (2π)^(−D/2) det(Σ)^(−½)·e^(−D/2)
// is ≈ 1e-19 for a lone unit-covariance component in 2D.
func TestMEMIntegral(t *testing.T) {
	cases := []struct {
		name      string
		tc        memCase
		preserved bool // every mixture meets Q_i ≥ 1e-5; else some lose > 0.1 %
	}{
		{"many components", memCase{n: 40, np: 6, spread: 1.5, w: 1, cs: 1, positive: true}, true},
		{"Σ|w| < 0.05", memCase{n: 40, np: 6, spread: 1.5, w: 0.0005, cs: 1, positive: true}, true},
		{"N < Np, narrow", memCase{n: 3, np: 5, spread: 0.3, w: 1, cs: 0.05, positive: true}, true},
		{"N = 1, narrow", memCase{n: 1, np: 2, spread: 1, w: 1, cs: 0.05, positive: true}, true},
		{"N = 1, wide", memCase{n: 1, np: 2, spread: 1, w: 1, cs: 1, positive: true}, false},
		{"Σ|w| ≈ 1e-7", memCase{n: 12, np: 4, spread: 2, w: 1e-8, cs: 1, positive: true}, false},
		{"far apart", memCase{n: 12, np: 2, spread: 40, w: 1, cs: 1, positive: true}, false},
	}
	for _, d := range []int{2, 3} {
		for ci, c := range cases {
			t.Run(fmt.Sprintf("%dD/%s", d, c.name), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(20+d), uint64(ci)))
				l := mixture.Layout{B: 3, C: 2, N: c.tc.n, D: d}
				x := memMixture(rng, l, c.tc.spread, c.tc.w, c.tc.cs, c.tc.positive)
				y, lo := memRun(x, l, c.tc.np)
				k := memComponents(l.N, c.tc.np)
				sel, lik := MEMDecisions(x, l, c.tc.np)
				in, out := memIntegrals(x, l), memIntegrals(y, lo)
				var worst float64
				for m := range in {
					mx := mixture.Mixture(x, l, m)
					s := sel[m*k : (m+1)*k]
					var vsum float64
					for _, j := range s {
						vsum += mx[j*l.Stride()]
					}
					var want float64
					for i := range l.N {
						var q float64
						for si, j := range s {
							q += lik[(m*l.N+i)*k+si] * mx[j*l.Stride()] / math.Max(vsum, 0.05)
						}
						want += mx[i*l.Stride()] * math.Min(1, q/1e-5)
					}
					if e := math.Abs(out[m] - want); e > 1e-12*in[m] {
						t.Errorf("mixture %d: integral %.15g, predicted Σ_i w_i·min(1, Q_i/1e-5) = %.15g", m, out[m], want)
					}
					worst = math.Max(worst, math.Abs(in[m]-out[m])/in[m])
				}
				if c.preserved && worst > 1e-12 {
					t.Errorf("integral changed by a relative %.3g: in %v out %v", worst, in, out)
				}
				if !c.preserved && worst < 1e-3 {
					t.Errorf("case meant to hit the Q_i clamp loses at most a relative %.3g of the integral", worst)
				}
			})
		}
	}
}

// TestMEMProperties checks the structural guarantees: exactly Np outputs,
// symmetric positive-definite finite covariances, padding {0, 0, I} when
// N < Np, and well-defined results for zero weights, a single component and
// duplicated positions.
func TestMEMProperties(t *testing.T) {
	type setup func(x []float64, l mixture.Layout)
	zeroAll := func(x []float64, l mixture.Layout) {
		for i := 0; i < len(x); i += l.Stride() {
			x[i] = 0
		}
	}
	zeroSome := func(x []float64, l mixture.Layout) {
		for i := 0; i < len(x); i += 3 * l.Stride() {
			x[i] = 0
		}
	}
	duplicate := func(x []float64, l mixture.Layout) {
		s := l.Stride()
		for m := range l.Mixtures() {
			mx := mixture.Mixture(x, l, m)
			for n := 1; n < l.N; n++ {
				copy(mx[n*s+1:(n+1)*s], mx[1:s])
			}
		}
	}
	cases := []struct {
		name  string
		n, np int
		prep  setup
	}{
		{"N > Np", 10, 4, nil},
		{"N = Np", 4, 4, nil},
		{"N < Np", 2, 6, nil},
		{"N = 1", 1, 3, nil},
		{"Np = 1", 7, 1, nil},
		{"all weights zero", 6, 3, zeroAll},
		{"some weights zero", 9, 5, zeroSome},
		{"duplicate positions and covariances", 6, 3, duplicate},
	}
	for _, d := range []int{2, 3} {
		for ci, c := range cases {
			t.Run(fmt.Sprintf("%dD/%s", d, c.name), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(30+d), uint64(ci)))
				l := mixture.Layout{B: 2, C: 2, N: c.n, D: d}
				x := memMixture(rng, l, 2, 1, 1, true)
				if c.prep != nil {
					c.prep(x, l)
				}
				y, lo := memRun(x, l, c.np)
				if err := mixture.Validate(y, lo); err != nil {
					t.Fatalf("output is not a valid mixture: %v", err)
				}
				s := lo.Stride()
				k := memComponents(c.n, c.np)
				for m := range l.Mixtures() {
					my := mixture.Mixture(y, lo, m)
					for n := k; n < c.np; n++ {
						g := my[n*s : (n+1)*s]
						for j, v := range g {
							want := 0.0
							if j > d && (j-1-d)%(d+1) == 0 {
								want = 1
							}
							if v != want {
								t.Fatalf("mixture %d padding slot %d = %v, want {0, 0, I}", m, n, g)
							}
						}
					}
				}
				dx := make([]float64, l.Len())
				gy := gmtest.Normal(rng, lo.Len())
				MEMBackward(dx, x, gy, l, c.np)
				if err := mixture.CheckFinite(dx); err != nil {
					t.Fatalf("gradient: %v", err)
				}
			})
		}
	}
}

// TestMEMSelect checks the frozen initial selection: descending |w|, ties
// broken by index, the first K of a stable sort; on a fixed case and on
// random weights with many ties, for every K.
func TestMEMSelect(t *testing.T) {
	w := []float64{0.5, -2, 1, 2, -0.5, 0}
	mx := make([]float64, len(w)*7)
	for i, v := range w {
		mx[i*7] = v
	}
	sel := make([]int, 5)
	memSelect(sel, mx, 2)
	if want := []int{1, 3, 2, 0, 4}; !slices.Equal(sel, want) {
		t.Fatalf("selection %v, want %v", sel, want)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 1; n <= 40; n++ {
		mx := make([]float64, n*7)
		for i := range n {
			mx[i*7] = float64(rng.IntN(7)-3) / 2 // |w| ∈ {0, 0.5, 1, 1.5}: ties
		}
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(math.Abs(mx[b*7]), math.Abs(mx[a*7])) })
		for k := 1; k <= n; k++ {
			sel := make([]int, k)
			memSelect(sel, mx, 2)
			if !slices.Equal(sel, order[:k]) {
				t.Fatalf("N %d, K %d: selection %v, want the stable sort's %v", n, k, sel, order[:k])
			}
		}
	}
}

// TestMEMFloat32 checks that the float32 instantiation follows float64
// within float32 accuracy, forward and backward.
func TestMEMFloat32(t *testing.T) {
	for _, d := range []int{2, 3} {
		rng := rand.New(rand.NewPCG(40, uint64(d)))
		l := mixture.Layout{B: 2, C: 3, N: 40, D: d}
		lo := withN(l, 6)
		x := memMixture(rng, l, 2, 0.2, 1, true)
		gy := gmtest.Normal(rng, lo.Len())
		y := make([]float64, lo.Len())
		dx := make([]float64, l.Len())
		MEM(y, x, l, lo.N)
		MEMBackward(dx, x, gy, l, lo.N)
		x32, gy32 := gmtest.To32(x), gmtest.To32(gy)
		y32 := make([]float32, lo.Len())
		dx32 := make([]float32, l.Len())
		MEM(y32, x32, l, lo.N)
		MEMBackward(dx32, x32, gy32, l, lo.N)
		gmtest.WantClose(t, fmt.Sprintf("%dD float32 forward", d), y32, y, 1e-4)
		gmtest.WantClose(t, fmt.Sprintf("%dD float32 backward", d), dx32, dx, 1e-4)
	}
}
