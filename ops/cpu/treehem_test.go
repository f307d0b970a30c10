package cpu

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// treehemMixture returns a float64 batch of layout l with weights in
// [wlo, wlo+1), positions uniform in [−3, 3)^D and covariances
// 0.3·A·Aᵀ + 0.3·I with A uniform in [−½, ½).
func treehemMixture(rng *rand.Rand, l mixture.Layout, wlo float64) []float64 {
	return treehemMixtureIn(rng, l, wlo, 3)
}

// treehemMixtureIn is treehemMixture with positions in [−r, r)^D; a small r
// makes the components overlap, so that targets may be assigned to several
// components (KL mask with more than one bit) and the likelihood matters.
func treehemMixtureIn(rng *rand.Rand, l mixture.Layout, wlo, r float64) []float64 {
	s := gmtest.Spec{WeightMin: wlo, WeightMax: wlo + 1, Spread: r, CovScale: 0.3, CovDiag: 0.3}
	return gmtest.Mixtures[float64](rng, s, l.B, l.C, l.N, l.D)
}

func treehemOut(l mixture.Layout, np int) []float64 {
	return make([]float64, l.Mixtures()*np*l.Stride())
}

// TestTreeHEMGradient checks TreeHEMBackwardSaved against central differences of
// TreeHEMFrozen with the decisions of the unperturbed input, for the loss
// L = Σ y·r. The Np values cover plain splits, splits of leaves and the
// final refit of a node to the missing count.
func TestTreeHEMGradient(t *testing.T) {
	cases := []struct {
		d, n, t, np int
		under       bool
		spread      float64
	}{
		{2, 11, 2, 2, false, 3}, {2, 11, 2, 4, false, 0.5}, {2, 13, 2, 5, false, 3}, {2, 13, 2, 6, true, 0.5},
		{3, 11, 2, 3, false, 0.5}, {3, 13, 2, 6, false, 3}, {3, 12, 2, 6, true, 0.5},
		{2, 13, 4, 4, false, 0.6}, {2, 17, 4, 6, false, 3}, {2, 17, 4, 8, true, 0.6},
		{3, 13, 4, 4, false, 0.6}, {3, 17, 4, 7, false, 0.6},
		{2, 21, 8, 8, false, 0.8}, {3, 19, 8, 9, false, 0.8},
		// Spread 30 with covariances ≈ 0.5: far pairs clip the likelihood at
		// 1e−13, which must pass no gradient.
		{2, 13, 2, 4, false, 30}, {3, 13, 2, 4, false, 30},
	}
	for i, c := range cases {
		t.Run(fmt.Sprintf("%dD_N%d_T%d_Np%d_under%v_r%v", c.d, c.n, c.t, c.np, c.under, c.spread), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, uint64(i)))
			l := mixture.Layout{B: 2, C: 1, N: c.n, D: c.d}
			o := device.TreeHEMOptions{Reduction: c.t, UnderFill: c.under}
			x := treehemMixtureIn(rng, l, 0.5, c.spread)
			y := treehemOut(l, c.np)
			dec, err := TreeHEMSaving(y, x, l, c.np, o)
			if err != nil {
				t.Fatal(err)
			}
			fitted, refit, soft := 0, 0, 0
			for m := range dec.mix {
				dm := &dec.mix[m]
				for x, nd := range dm.nodes {
					if nd.fit {
						fitted++
						for _, mask := range dm.em(int32(x), c.t).mask {
							if bits.OnesCount16(mask) > 1 {
								soft++
							}
						}
					}
				}
				if dec.mix[m].refit >= 0 && dec.mix[m].refitK > c.t {
					refit++
				}
			}
			if fitted == 0 {
				t.Fatalf("no EM step ran; the case does not test the EM gradient")
			}
			if c.spread < 1 && soft == 0 {
				t.Fatalf("no target has a soft assignment; the case does not test the likelihood gradient")
			}
			r := gmtest.Normal(rng, len(y))
			yf := treehemOut(l, c.np)
			loss := func() float64 {
				if err := TreeHEMFrozen(yf, x, dec); err != nil {
					t.Fatal(err)
				}
				return gmtest.Dot(yf, r)
			}
			if loss() != gmtest.Dot(y, r) {
				t.Fatalf("frozen forward differs from the recording forward")
			}
			dx := make([]float64, len(x))
			if err := TreeHEMBackwardSaved(dx, x, r, dec); err != nil {
				t.Fatal(err)
			}
			gmtest.WantGrad(t, fmt.Sprintf("%d fitted nodes, %d refits", fitted, refit), dx, x, loss)
			dx2 := make([]float64, len(x))
			if err := TreeHEMBackward(dx2, x, r, l, c.np, o); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(dx, dx2) {
				t.Errorf("TreeHEMBackward (recomputed decisions) differs from TreeHEMBackwardSaved")
			}
		})
	}
}

// TestTreeHEMBackwardKept checks TreeHEMBackwardSaved with the decisions of
// TreeHEMSaving, which keep the forward's node caches, against TreeHEMBackward, which
// recomputes everything: the results must be identical, also with UnderFill,
// whose padding gradient both take from the output gradient. For an input
// other than the forward's the backward must replay the forward instead
// (identical to decisions that kept nothing), and invalid input must give an
// error.
func TestTreeHEMBackwardKept(t *testing.T) {
	for _, d := range []int{2, 3} {
		for _, o := range []device.TreeHEMOptions{{Reduction: 2}, {Reduction: 4}, {Reduction: 2, UnderFill: true}} {
			l := mixture.Layout{B: 3, C: 2, N: 150, D: d}
			x := treehemMixtureIn(rand.New(rand.NewPCG(17, uint64(d*o.Reduction))), l, 0.1, 1)
			name := fmt.Sprintf("%dD_T%d_under%v", d, o.Reduction, o.UnderFill)
			t.Run(name+"/float64", func(t *testing.T) { treehemBackwardKept(t, x, l, 13, o) })
			x32 := gmtest.To32(x)
			t.Run(name+"/float32", func(t *testing.T) { treehemBackwardKept(t, x32, l, 13, o) })
		}
	}
}

func treehemBackwardKept[T Float](t *testing.T, x []T, l mixture.Layout, np int, o device.TreeHEMOptions) {
	rng := rand.New(rand.NewPCG(19, uint64(l.D)))
	y := make([]T, l.Mixtures()*np*l.Stride())
	g := make([]T, len(y))
	for i := range g {
		g[i] = T(rng.NormFloat64())
	}
	dec, err := TreeHEMSaving(y, x, l, np, o)
	if err != nil {
		t.Fatal(err)
	}
	kept := dec.kept.(*hemKept[T])
	want := checkBackwardSaved(t, x, g, dec, "the kept caches")
	dx := make([]T, len(x))
	// Scaled caches change the result only if the backward reads them.
	scaled := *dec
	scaled.kept = &hemKept[T]{x: kept.x, cache: slices.Clone(kept.cache)}
	for i := range kept.cache {
		scaled.kept.(*hemKept[T]).cache[i] *= 1.5
	}
	if err := TreeHEMBackwardSaved(dx, x, g, &scaled); err != nil {
		t.Fatal(err)
	}
	if slices.Equal(dx, want) {
		t.Errorf("TreeHEMBackward does not use the kept caches")
	}

	// Another input: mixture 1 moved, the others as recorded.
	xp := slices.Clone(x)
	mp := mixture.Mixture(xp, l, 1)
	for k := 0; k < len(mp); k += l.Stride() {
		mp[k] *= 1.01
		mp[k+1] += 0.01
	}
	bare := *dec
	bare.kept = nil
	if err := TreeHEMBackwardSaved(dx, xp, g, dec); err != nil {
		t.Fatal(err)
	}
	if err := TreeHEMBackwardSaved(want, xp, g, &bare); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dx, want) {
		t.Errorf("TreeHEMBackward on another input differs from the replay")
	}
	if slices.Equal(mixture.Mixture(dx, l, 1), mixture.Mixture(dx, l, 2)) {
		t.Errorf("TreeHEMBackward ignored the moved mixture")
	}
	xp[l.N*l.Stride()+1] = T(math.NaN())
	if err := TreeHEMBackwardSaved(dx, xp, g, dec); err == nil || !containsFold(err.Error(), "non-finite") {
		t.Errorf("TreeHEMBackward on invalid input: got error %v, want one about a non-finite value", err)
	}
}

// TestTreeHEMReleased checks that decisions whose storage served another
// input, its forward and backward passes, give what new ones give: the
// output and the backward pass of the input recorded into them again, as
// TreeHEMSaving does with released decisions (Release).
func TestTreeHEMReleased(t *testing.T) {
	for _, d := range []int{2, 3} {
		for _, o := range []device.TreeHEMOptions{{Reduction: 2}, {Reduction: 4}, {Reduction: 2, UnderFill: true}} {
			l := mixture.Layout{B: 3, C: 2, N: 150, D: d}
			rng := rand.New(rand.NewPCG(23, uint64(d*o.Reduction)))
			xa, xb := treehemMixtureIn(rng, l, 0.1, 1), treehemMixtureIn(rng, l, 0.1, 1)
			t.Run(fmt.Sprintf("%dD_T%d_under%v", d, o.Reduction, o.UnderFill), func(t *testing.T) {
				treehemReleased(t, gmtest.To32(xa), gmtest.To32(xb), l, 13, o)
			})
		}
	}
}

func treehemReleased[T Float](t *testing.T, xa, xb []T, l mixture.Layout, np int, o device.TreeHEMOptions) {
	rng := rand.New(rand.NewPCG(29, uint64(l.D)))
	y, want := make([]T, l.Mixtures()*np*l.Stride()), make([]T, l.Mixtures()*np*l.Stride())
	g := make([]T, len(y))
	for i := range g {
		g[i] = T(rng.NormFloat64())
	}
	used, err := TreeHEMSaving(y, xa, l, np, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := TreeHEMBackwardSaved(make([]T, len(xa)), xa, g, used); err != nil {
		t.Fatal(err)
	}
	used.Release()
	if err := runTreeHEM(hemRecord, y, nil, xb, nil, used); err != nil { // TreeHEMSaving's forward
		t.Fatal(err)
	}
	if err := TreeHEM(want, xb, l, np, o); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(y, want) {
		t.Errorf("TreeHEM into released decisions differs from TreeHEM")
	}
	checkBackwardSaved(t, xb, g, used, "released decisions")
}

// checkBackwardSaved checks that TreeHEMBackwardSaved with dec at x gives
// bitwise what TreeHEMBackward, which recomputes everything, gives; it
// returns the latter.
func checkBackwardSaved[T Float](t *testing.T, x, g []T, dec *Decisions, with string) []T {
	t.Helper()
	dx, want := make([]T, len(x)), make([]T, len(x))
	if err := TreeHEMBackwardSaved(dx, x, g, dec); err != nil {
		t.Fatal(err)
	}
	if err := TreeHEMBackward(want, x, g, dec.l, dec.np, dec.o); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dx, want) {
		t.Errorf("TreeHEMBackwardSaved with %s differs from TreeHEMBackward", with)
	}
	return want
}

// TestTreeHEMRefitCovered makes sure the fill-all refit path (a split that
// would overshoot Np replaced by a fit to the missing count) occurs in the
// gradient cases above: with T = 4 and Np = 6 the root split adds up to 4.
func TestTreeHEMRefitCovered(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	l := mixture.Layout{B: 2, C: 1, N: 17, D: 2}
	x := treehemMixture(rng, l, 0.5)
	dec, err := TreeHEMSaving(treehemOut(l, 6), x, l, 6, device.TreeHEMOptions{Reduction: 4})
	if err != nil {
		t.Fatal(err)
	}
	for m := range dec.mix {
		if dec.mix[m].refit < 0 || dec.mix[m].refitK != 6 {
			t.Errorf("mixture %d: refit slot %d with K = %d, want a refit of the root to 6", m, dec.mix[m].refit, dec.mix[m].refitK)
		}
	}
}

// treehemCheck runs TreeHEM and checks the invariants every result must
// satisfy: finite, SPD covariances, total integral preserved.
func treehemCheck(t *testing.T, x []float64, l mixture.Layout, np int, o device.TreeHEMOptions) []mixture.Gaussian {
	t.Helper()
	y := treehemOut(l, np)
	if _, err := TreeHEMSaving(y, x, l, np, o); err != nil {
		t.Fatal(err)
	}
	lo := mixture.Layout{B: l.B, C: l.C, N: np, D: l.D}
	if err := mixture.Validate(y, lo); err != nil {
		t.Fatalf("output invalid: %v", err)
	}
	for m := range l.Mixtures() {
		var in, out float64
		xm, ym := mixture.Mixture(x, l, m), mixture.Mixture(y, lo, m)
		for k := 0; k < len(xm); k += l.Stride() {
			in += xm[k]
		}
		for k := 0; k < len(ym); k += l.Stride() {
			out += ym[k]
		}
		if math.Abs(in-out) > 1e-9*math.Max(1, math.Abs(in)) {
			t.Errorf("mixture %d: integral %v in, %v out", m, in, out)
		}
	}
	gs, _ := mixture.Unpack(y, lo)
	return gs
}

func treehemNonZero(gs []mixture.Gaussian, from, to int) int {
	n := 0
	for _, g := range gs[from:to] {
		if g.Weight != 0 {
			n++
		}
	}
	return n
}

// TestTreeHEMFillsAll checks that the default fills every slot with a
// non-zero component, and that UnderFill leaves between 1 and T slots empty
// as the reference does.
func TestTreeHEMFillsAll(t *testing.T) {
	for _, d := range []int{2, 3} {
		for _, tt := range []int{2, 4, 8} {
			for _, n := range []int{33, 100, 257} {
				for _, np := range []int{tt, tt + 1, 16, 32} {
					l := mixture.Layout{B: 2, C: 2, N: n, D: d}
					x := treehemMixture(rand.New(rand.NewPCG(uint64(n), uint64(np))), l, 0.1)
					gs := treehemCheck(t, x, l, np, device.TreeHEMOptions{Reduction: tt})
					for m := range l.Mixtures() {
						if nz := treehemNonZero(gs, m*np, (m+1)*np); nz != np {
							t.Errorf("%dD T=%d N=%d Np=%d mixture %d: %d non-zero components, want %d", d, tt, n, np, m, nz, np)
						}
					}
					if np%tt != 0 || np == tt {
						continue
					}
					gs = treehemCheck(t, x, l, np, device.TreeHEMOptions{Reduction: tt, UnderFill: true})
					for m := range l.Mixtures() {
						if nz := treehemNonZero(gs, m*np, (m+1)*np); nz < np-tt || nz >= np {
							t.Errorf("under-fill %dD T=%d N=%d Np=%d mixture %d: %d non-zero components, want [%d, %d)", d, tt, n, np, m, nz, np-tt, np)
						}
					}
				}
			}
		}
	}
}

// TestTreeHEMPassThrough: with N ≤ Np the input is copied and padded with
// {0, 0, I}; N = 1 is such a case.
func TestTreeHEMPassThrough(t *testing.T) {
	for _, c := range []struct{ d, n, np int }{{2, 1, 2}, {3, 1, 4}, {2, 5, 8}, {3, 8, 8}} {
		l := mixture.Layout{B: 2, C: 3, N: c.n, D: c.d}
		x := treehemMixture(rand.New(rand.NewPCG(3, uint64(c.n))), l, 0.5)
		y := treehemOut(l, c.np)
		if _, err := TreeHEMSaving(y, x, l, c.np, device.TreeHEMOptions{Reduction: 2}); err != nil {
			t.Fatal(err)
		}
		pad := make([]float64, (c.np-c.n)*l.Stride())
		padIdentity(c.d, pad)
		for m := range l.Mixtures() {
			ym := y[m*c.np*l.Stride() : (m+1)*c.np*l.Stride()]
			xm := mixture.Mixture(x, l, m)
			if !slices.Equal(ym[:len(xm)], xm) || !slices.Equal(ym[len(xm):], pad) {
				t.Errorf("%+v mixture %d: not passed through and padded:\n%v", c, m, ym)
			}
		}
	}
}

// TestTreeHEMUnderFillPadding checks the padding of UnderFill, the
// reference's identity of the pre-scaled space scaled back: every empty slot
// is {0, 0, s·I} with s = mean_k tr(Σ_k)/D of the input mixture, in float64
// and float32, through the tree and the N ≤ Np pass-through. Its gradient
// reaches every input covariance through s: the finite-difference check of a
// loss on the padding alone (decisions frozen) fails without that term, whose
// absence would leave the analytic gradient zero.
func TestTreeHEMUnderFillPadding(t *testing.T) {
	for i, c := range []struct{ d, n, t, np int }{
		{2, 13, 2, 6}, {3, 12, 2, 6}, {2, 17, 4, 8}, {3, 17, 4, 8}, // reduced
		{2, 5, 2, 8}, {3, 3, 4, 6}, // passed through
	} {
		t.Run(fmt.Sprintf("%dD_N%d_T%d_Np%d", c.d, c.n, c.t, c.np), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(31, uint64(i)))
			l := mixture.Layout{B: 2, C: 2, N: c.n, D: c.d}
			o := device.TreeHEMOptions{Reduction: c.t, UnderFill: true}
			x := treehemMixtureIn(rng, l, 0.5, 0.5)
			y := treehemOut(l, c.np)
			dec, err := TreeHEMSaving(y, x, l, c.np, o)
			if err != nil {
				t.Fatal(err)
			}
			pad := treehemPadding(t, y, x, l, c.np, 1e-15)
			x32 := gmtest.To32(x)
			y32 := make([]float32, len(y))
			if err := TreeHEM(y32, x32, l, c.np, o); err != nil {
				t.Fatal(err)
			}
			treehemPadding(t, y32, x32, l, c.np, 1e-6)

			// r weighs the padding's covariances only.
			r := make([]float64, len(y))
			s := l.Stride()
			for m, p := range pad {
				for k := c.np - p; k < c.np; k++ {
					copy(r[(m*c.np+k)*s+1+c.d:(m*c.np+k+1)*s], gmtest.Normal(rng, c.d*c.d))
				}
			}
			yf := treehemOut(l, c.np)
			loss := func() float64 {
				if err := TreeHEMFrozen(yf, x, dec); err != nil {
					t.Fatal(err)
				}
				return gmtest.Dot(yf, r)
			}
			dx := make([]float64, len(x))
			if err := TreeHEMBackwardSaved(dx, x, r, dec); err != nil {
				t.Fatal(err)
			}
			gmtest.WantGrad(t, "padding loss", dx, x, loss)
		})
	}
}

// treehemPadding checks that the trailing zero-weight slots of every mixture
// of y (np components, reduced from x of layout l) are {0, 0, s·I}, s the
// mean covariance trace per dimension of the mixture of x, within relative
// tolerance tol, and returns their count per mixture; there must be at least
// one.
func treehemPadding[T Float](t *testing.T, y, x []T, l mixture.Layout, np int, tol float64) []int {
	t.Helper()
	s, d := l.Stride(), l.D
	counts := make([]int, l.Mixtures())
	for m := range counts {
		xm, ym := mixture.Mixture(x, l, m), y[m*np*s:(m+1)*np*s]
		var tr float64
		for k := 0; k < len(xm); k += s {
			for c := range d {
				tr += float64(xm[k+1+d+c*(d+1)])
			}
		}
		sc := tr / float64(l.N*d)
		for k := np - 1; k >= 0 && ym[k*s] == 0; k-- {
			counts[m]++
			for j, v := range ym[k*s : (k+1)*s] {
				want := 0.0
				if c := j - 1 - d; c >= 0 && c%(d+1) == 0 {
					want = sc
				}
				if math.Abs(float64(v)-want) > tol*sc {
					t.Fatalf("mixture %d slot %d: padding %v, want {0, 0, %g·I}", m, k, ym[k*s:(k+1)*s], sc)
				}
			}
		}
		if counts[m] == 0 {
			t.Fatalf("mixture %d has no padding; the case does not test it", m)
		}
	}
	return counts
}

// TestTreeHEMDegenerate covers zero weights, duplicate positions and all
// positions equal (zero Morton extent on every axis).
func TestTreeHEMDegenerate(t *testing.T) {
	for _, d := range []int{2, 3} {
		l := mixture.Layout{B: 1, C: 4, N: 40, D: d}
		rng := rand.New(rand.NewPCG(5, uint64(d)))
		x := treehemMixture(rng, l, 0.5)
		s := l.Stride()
		for k := range l.N {
			mx := mixture.Mixture(x, l, 0)
			if k%3 == 0 {
				mx[k*s] = 0 // zero weights
			}
			my := mixture.Mixture(x, l, 1)
			copy(my[k*s+1:k*s+1+d], my[(k/4)*s+1:(k/4)*s+1+d]) // duplicates
			mz := mixture.Mixture(x, l, 2)
			for c := range d {
				mz[k*s+1+c] = 1.5 // all equal
			}
		}
		all := mixture.Mixture(x, l, 3)
		for k := range l.N {
			all[k*s] = 0
		}
		for _, tt := range []int{2, 4} {
			gs := treehemCheck(t, x, l, 8, device.TreeHEMOptions{Reduction: tt})
			for m := range 3 {
				if nz := treehemNonZero(gs, m*8, (m+1)*8); nz != 8 {
					t.Errorf("%dD T=%d mixture %d: %d non-zero components, want 8", d, tt, m, nz)
				}
			}
			if nz := treehemNonZero(gs, 24, 32); nz != 0 {
				t.Errorf("%dD T=%d all-zero mixture: %d non-zero components", d, tt, nz)
			}
		}
	}
}

// TestTreeHEMLarge runs the largest supported mixture, N = 65534.
func TestTreeHEMLarge(t *testing.T) {
	l := mixture.Layout{B: 1, C: 1, N: device.TreeHEMMaxN, D: 3}
	x := treehemMixture(rand.New(rand.NewPCG(1, 1)), l, 0.1)
	gs := treehemCheck(t, x, l, 32, device.TreeHEMOptions{Reduction: 2})
	if nz := treehemNonZero(gs, 0, 32); nz != 32 {
		t.Errorf("%d non-zero components, want 32", nz)
	}
}

// TestTreeHEMPermutation: permuting the input components of a mixture with
// distinct positions permutes nothing but the Morton tie-breaks, which
// distinct positions never need, so the output set is the same.
func TestTreeHEMPermutation(t *testing.T) {
	for _, d := range []int{2, 3} {
		for _, tt := range []int{2, 4} {
			l := mixture.Layout{B: 1, C: 1, N: 50, D: d}
			rng := rand.New(rand.NewPCG(11, uint64(d*tt)))
			x := treehemMixture(rng, l, 0.5)
			s := l.Stride()
			p := make([]float64, len(x))
			for i, j := range rng.Perm(l.N) {
				copy(p[j*s:(j+1)*s], x[i*s:(i+1)*s])
			}
			a := treehemCheck(t, x, l, 12, device.TreeHEMOptions{Reduction: tt})
			b := treehemCheck(t, p, l, 12, device.TreeHEMOptions{Reduction: tt})
			key := func(g mixture.Gaussian) string { return fmt.Sprintf("%.9f %.9f", g.Weight, g.Position) }
			ka, kb := make([]string, len(a)), make([]string, len(b))
			for i := range a {
				ka[i], kb[i] = key(a[i]), key(b[i])
			}
			slices.Sort(ka)
			slices.Sort(kb)
			if !slices.Equal(ka, kb) {
				t.Errorf("%dD T=%d: outputs differ under permutation:\n%v\n%v", d, tt, ka, kb)
			}
		}
	}
}

// TestTreeHEMFloat32 compares float32 with float64 on the same input.
func TestTreeHEMFloat32(t *testing.T) {
	for _, d := range []int{2, 3} {
		l := mixture.Layout{B: 2, C: 2, N: 60, D: d}
		rng := rand.New(rand.NewPCG(13, uint64(d)))
		x := treehemMixture(rng, l, 0.5)
		x32 := gmtest.To32(x)
		x = gmtest.To64(x32)
		np := 8
		y, y32 := treehemOut(l, np), make([]float32, l.Mixtures()*np*l.Stride())
		o := device.TreeHEMOptions{Reduction: 2}
		if _, err := TreeHEMSaving(y, x, l, np, o); err != nil {
			t.Fatal(err)
		}
		if _, err := TreeHEMSaving(y32, x32, l, np, o); err != nil {
			t.Fatal(err)
		}
		var e float64
		for i := range y {
			e = math.Max(e, math.Abs(float64(y32[i])-y[i])/math.Max(1, math.Abs(y[i])))
		}
		if e > 1e-4 {
			t.Errorf("%dD forward: float32 deviates by %.3g", d, e)
		}
		g32 := gmtest.To32(gmtest.Normal(rng, len(y)))
		g := gmtest.To64(g32)
		dx, dx32 := make([]float64, len(x)), make([]float32, len(x))
		if err := TreeHEMBackward(dx, x, g, l, np, o); err != nil {
			t.Fatal(err)
		}
		if err := TreeHEMBackward(dx32, x32, g32, l, np, o); err != nil {
			t.Fatal(err)
		}
		gmtest.WantClose(t, fmt.Sprintf("%dD float32 backward", d), dx32, dx, 1e-3)
	}
}

// TestTreeHEMRejects checks the parameter and value errors.
func TestTreeHEMRejects(t *testing.T) {
	good := mixture.Layout{B: 1, C: 2, N: 10, D: 2}
	nan := treehemMixture(rand.New(rand.NewPCG(1, 2)), good, 0.5)
	nan[good.Stride()+2] = math.NaN()
	nonSPD := treehemMixture(rand.New(rand.NewPCG(1, 3)), good, 0.5)
	nonSPD[1+2] = -1
	cases := []struct {
		name string
		l    mixture.Layout
		np   int
		o    device.TreeHEMOptions
		x    []float64
		want string
	}{
		{"Np=0", good, 0, device.TreeHEMOptions{Reduction: 2}, nil, "Np = 0"},
		{"Np>1024", good, 1025, device.TreeHEMOptions{Reduction: 2}, nil, "Np = 1025"},
		{"Np<T", good, 3, device.TreeHEMOptions{Reduction: 4}, nil, "smaller than the reduction"},
		{"T=3", good, 4, device.TreeHEMOptions{Reduction: 3}, nil, "T = 3"},
		{"T=16", good, 16, device.TreeHEMOptions{Reduction: 16}, nil, "T = 16"},
		{"N=65535", mixture.Layout{B: 1, C: 1, N: 65535, D: 2}, 4, device.TreeHEMOptions{Reduction: 2}, nil, "N = 65535"},
		{"D=4", mixture.Layout{B: 1, C: 1, N: 4, D: 4}, 4, device.TreeHEMOptions{Reduction: 2}, nil, "D = 4"},
		{"NaN", good, 4, device.TreeHEMOptions{Reduction: 2}, nan, "non-finite"},
		{"non-SPD", good, 4, device.TreeHEMOptions{Reduction: 2}, nonSPD, "positive definite"},
	}
	for _, c := range cases {
		x := c.x
		if x == nil {
			x = make([]float64, max(0, c.l.Len()))
		}
		y := make([]float64, max(0, c.l.Mixtures()*c.np*c.l.Stride()))
		_, err := TreeHEMSaving(y, x, c.l, c.np, c.o)
		if err == nil || !containsFold(err.Error(), c.want) {
			t.Errorf("%s: got error %v, want one mentioning %q", c.name, err, c.want)
		}
	}
}

func containsFold(s, sub string) bool {
	return len(sub) == 0 || slices.ContainsFunc([]string{s}, func(v string) bool {
		for i := 0; i+len(sub) <= len(v); i++ {
			if v[i:i+len(sub)] == sub {
				return true
			}
		}
		return false
	})
}

// TestLBVH checks the Karras tree on random and adversarial key sets: every
// leaf is reached exactly once and every internal node covers a contiguous
// range of sorted keys split at a common-prefix boundary.
func TestLBVH(t *testing.T) {
	for _, n := range []int{2, 3, 5, 17, 64, 1000} {
		rng := rand.New(rand.NewPCG(2, uint64(n)))
		x := make([]float64, n*7)
		for k := range n {
			x[k*7+1], x[k*7+2] = float64(rng.IntN(4)), rng.Float64() // many equal x
		}
		keys, buf := make([]uint64, n), make([]uint64, n)
		mortonKeys(2, x, n, keys, buf)
		if !slices.IsSorted(keys) {
			t.Fatalf("n=%d: keys not sorted", n)
		}
		tr := lbvh{left: make([]int32, n-1), right: make([]int32, n-1)}
		tr.build(keys)
		seen := make([]int, 2*n-1)
		var walk func(x int32) (lo, hi int)
		walk = func(x int32) (int, int) {
			seen[x]++
			if int(x) >= n-1 {
				j := int(x) - (n - 1)
				return j, j
			}
			l0, l1 := walk(tr.left[x])
			r0, r1 := walk(tr.right[x])
			if l1+1 != r0 {
				t.Errorf("n=%d node %d: children cover [%d,%d] and [%d,%d]", n, x, l0, l1, r0, r1)
			}
			return l0, r1
		}
		if lo, hi := walk(0); lo != 0 || hi != n-1 {
			t.Errorf("n=%d: root covers [%d,%d]", n, lo, hi)
		}
		for i, c := range seen {
			if c != 1 {
				t.Errorf("n=%d: node %d reached %d times", n, i, c)
			}
		}
	}
}

// TestMortonZeroExtent: with all positions equal every Morton code is 0 and
// the keys are the component indices.
func TestMortonZeroExtent(t *testing.T) {
	n := 5
	x := make([]float64, n*13)
	for k := range n {
		x[k*13+1], x[k*13+2], x[k*13+3] = 2, -1, 7
	}
	keys, buf := make([]uint64, n), make([]uint64, n)
	mortonKeys(3, x, n, keys, buf)
	for k, v := range keys {
		if v != uint64(k) {
			t.Errorf("key %d = %#x, want %d", k, v, k)
		}
	}
	if expandBits(0x3FF) != 0x09249249 {
		t.Errorf("expandBits(0x3FF) = %#x", expandBits(0x3FF))
	}
}

// TestLog32 checks TreeHEM's float32 logarithm against math.Log: within 2
// ulp over normal and subnormal arguments, and math.Log's special values.
func TestLog32(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 29))
	ulps := func(a, b float32) int64 {
		d := int64(math.Float32bits(a)) - int64(math.Float32bits(b))
		if math.Signbit(float64(a)) != math.Signbit(float64(b)) {
			d = int64(math.Float32bits(a)&0x7FFFFFFF) + int64(math.Float32bits(b)&0x7FFFFFFF)
		}
		return max(d, -d)
	}
	worst := int64(0)
	for i := range 1 << 20 {
		x := math.Float32frombits(rng.Uint32() & 0x7F7FFFFF) // positive, finite
		if i%4 == 0 {
			x = float32(1 + math.Ldexp(rng.Float64()-0.5, -rng.IntN(20))) // near 1
		}
		if x == 0 {
			continue
		}
		got, want := log32(x), float32(math.Log(float64(x)))
		if u := ulps(got, want); u > worst {
			worst = u
			if u > 2 {
				t.Errorf("log32(%g) = %g, want %g (%d ulp)", x, got, want, u)
			}
		}
	}
	t.Logf("worst error %d ulp", worst)
	for _, x := range []float32{0, -1, float32(math.Inf(1)), float32(math.NaN()), 1} {
		got, want := log32(x), float32(math.Log(float64(x)))
		if got != want && !(got != got && want != want) {
			t.Errorf("log32(%g) = %g, want %g", x, got, want)
		}
	}
}

// TestHEMExp checks the likelihood exponential of the EM in float32, with
// the vector path where the build and CPU have it: close to math.Exp, NaN
// stays NaN and arguments above expMaxArg give +Inf.
func TestHEMExp(t *testing.T) {
	nan := float32(math.NaN())
	v := []float32{-100, -87.5, -30, -1, 0, 0.5, 10, 87.9, nan, 88.5, 200, -0.25}
	got := slices.Clone(v)
	hemExp(got)
	for i, x := range v {
		g, want := float64(got[i]), math.Exp(float64(x))
		switch {
		case x != x:
			if !math.IsNaN(g) {
				t.Errorf("e^NaN = %v, want NaN", g)
			}
		case x > expMaxArg:
			if !math.IsInf(g, 1) {
				t.Errorf("e^%v = %v, want +Inf", x, g)
			}
		case math.Abs(g-want) > 1e-6*want+1e-37:
			t.Errorf("e^%v = %v, want %v", x, g, want)
		}
	}
}
