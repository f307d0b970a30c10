package cpu

import (
	"cmp"
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

// convFitCases are the sizes of the ConvFit tests: every dimension differs,
// and n ranges from one node to more than the Nv = Fi·Ni·Nk components.
var convFitCases = []struct {
	b, fi, ni, fo, nk int
	n                 []int
}{
	{b: 2, fi: 3, ni: 4, fo: 2, nk: 3, n: []int{1, 2, 5, 17, 36, 40}},
	{b: 1, fi: 1, ni: 1, fo: 3, nk: 1, n: []int{1, 3}}, // Nv = 1: a single leaf
	{b: 3, fi: 2, ni: 7, fo: 2, nk: 5, n: []int{4, 32}},
}

// convFitCase is a case of convFitCases in 2D or 3D with its inputs.
type convFitCase struct {
	name   string     // "2D case 0", for messages
	rng    *rand.Rand // drew the inputs; the test may draw more
	lx, lk mixture.Layout
	x, k   []float64
	nv     int                    // Fi·Ni·Nk, the components of each of Conv's output mixtures
	sel    []device.ConvFitSelect // the fit sizes to test, each with both convFitNegatives
}

// convFitNegatives are the priority factors of negative nodes the tests
// select with: both signs alike, and the models' default.
var convFitNegatives = []float64{1, device.DefaultConvFitNegative}

// fitSelect returns the selection of n nodes with the priority factor neg
// of negative nodes.
func fitSelect(n int, neg float64) device.ConvFitSelect {
	return device.ConvFitSelect{N: n, Negative: neg}
}

// forConvFitCases calls f with every case of convFitCases in 2D and 3D,
// its inputs drawn by a generator seeded from seed, D and the case.
func forConvFitCases(seed uint64, f func(c convFitCase)) {
	for _, d := range []int{2, 3} {
		for ci, tc := range convFitCases {
			rng := rand.New(rand.NewPCG(seed, uint64(10*d+ci)))
			lx, lk, x, k := convInputs(rng, d, tc.b, tc.fi, tc.ni, tc.fo, tc.nk)
			var sel []device.ConvFitSelect
			for _, n := range tc.n {
				for _, neg := range convFitNegatives {
					sel = append(sel, fitSelect(n, neg))
				}
			}
			f(convFitCase{fmt.Sprintf("%dD case %d", d, ci), rng, lx, lk, x, k, tc.fi * tc.ni * tc.nk, sel})
		}
	}
}

// convFitRun returns ConvFit's output for x and k and its layout.
func convFitRun(x, k []float64, lx, lk mixture.Layout, s device.ConvFitSelect) ([]float64, mixture.Layout) {
	ly := device.ConvFitLayout(lx, lk, s.N)
	y := make([]float64, ly.Len())
	ConvFit(y, x, k, lx, lk, s)
	return y, ly
}

// convFitFrozen is ConvFit of x and k with the order, tree and selection
// that ConvFit takes for x0 and k0: the function whose derivative
// ConvFitBackward computes, evaluated away from x0, k0 by the gradient check.
func convFitFrozen(x, k, x0, k0 []float64, lx, lk mixture.Layout, s device.ConvFitSelect) []float64 {
	ly := device.ConvFitLayout(lx, lk, s.N)
	y := make([]float64, ly.Len())
	at, ref := newConvFit(x, k, lx, lk), newConvFit(x0, k0, lx, lk)
	for m := range ly.Mixtures() {
		ref.selectNodes(m, s)
		at.b, at.o, at.sel = m/lk.B, m%lk.B, ref.sel
		copy(at.perm, ref.perm)
		at.gather(m)
		writeNodes(mixture.Mixture(y, ly, m), at.moments(nil), lx.D)
	}
	return y
}

// TestConvFitGradient checks ConvFitBackward against central differences of
// L = Σ y·r with the decisions frozen at the unperturbed input, in float64,
// 2D and 3D, for every n of the cases.
func TestConvFitGradient(t *testing.T) {
	forConvFitCases(31, func(c convFitCase) {
		x, k, lx, lk := c.x, c.k, c.lx, c.lk
		x0, k0 := slices.Clone(x), slices.Clone(k)
		for _, s := range c.sel {
			r := gmtest.Normal(c.rng, device.ConvFitLayout(lx, lk, s.N).Len())
			loss := func() float64 { return gmtest.Dot(convFitFrozen(x, k, x0, k0, lx, lk, s), r) }
			dx, dk := make([]float64, len(x)), make([]float64, len(k))
			ConvFitBackward(dx, dk, r, x, k, lx, lk, s)
			gmtest.WantGrad(t, fmt.Sprintf("%s %v: data gradient", c.name, s), dx, x, loss)
			gmtest.WantGrad(t, fmt.Sprintf("%s %v: kernel gradient", c.name, s), dk, k, loss)
			// One destination alone gives the same values.
			dx1 := make([]float64, len(x))
			ConvFitBackward(dx1, nil, r, x, k, lx, lk, s)
			if !slices.Equal(dx1, dx) {
				t.Errorf("%s %v: data gradient without the kernel gradient differs", c.name, s)
			}
		}
	})
}

// TestConvFitAllLeaves checks that with n ≥ Nv the output is Conv's output
// up to component order, followed by {0, 0, I} padding.
func TestConvFitAllLeaves(t *testing.T) {
	forConvFitCases(32, func(c convFitCase) {
		nv := c.nv
		conv, ly := convRun(c.x, c.k, c.lx, c.lk)
		for _, n := range []int{nv, nv + 3} {
			y, lf := convFitRun(c.x, c.k, c.lx, c.lk, fitSelect(n, device.DefaultConvFitNegative))
			s := lf.Stride()
			for m := range lf.Mixtures() {
				got := mixture.Mixture(y, lf, m)
				want := sortedGaussians(mixture.Mixture(conv, ly, m), s)
				if g := sortedGaussians(got[:nv*s], s); !gaussiansClose(g, want, 1e-12) {
					t.Fatalf("%s n=%d mixture %d: not Conv's components", c.name, n, m)
				}
				pad := make([]float64, (n-nv)*s)
				padIdentity(lf.D, pad)
				if !slices.Equal(got[nv*s:], pad) {
					t.Fatalf("%s n=%d mixture %d: padding %v, want {0, 0, I}", c.name, n, m, got[nv*s:])
				}
			}
		}
	})
}

// sortedGaussians returns the packed Gaussians of mx as a sorted list.
func sortedGaussians(mx []float64, s int) [][]float64 {
	var gs [][]float64
	for g := 0; g < len(mx); g += s {
		gs = append(gs, mx[g:g+s])
	}
	slices.SortFunc(gs, slices.Compare)
	return gs
}

func gaussiansClose(a, b [][]float64, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		for j := range a[i] {
			if math.Abs(a[i][j]-b[i][j]) > tol*math.Max(1, math.Abs(b[i][j])) {
				return false
			}
		}
	}
	return true
}

// TestConvFitSignIntegrals checks that for n ≥ 2 every output Gaussian is
// single-signed, so the positive and the negative integral of Conv's output
// are each preserved.
func TestConvFitSignIntegrals(t *testing.T) {
	forConvFitCases(33, func(c convFitCase) {
		conv, ly := convRun(c.x, c.k, c.lx, c.lk)
		for _, s := range c.sel {
			if s.N < 2 {
				continue
			}
			y, lf := convFitRun(c.x, c.k, c.lx, c.lk, s)
			for m := range lf.Mixtures() {
				wantPos, wantNeg := signSums(mixture.Mixture(conv, ly, m), ly.Stride())
				gotPos, gotNeg := signSums(mixture.Mixture(y, lf, m), lf.Stride())
				if math.Abs(gotPos-wantPos) > 1e-12*max(1, wantPos) || math.Abs(gotNeg-wantNeg) > 1e-12*max(1, -wantNeg) {
					t.Errorf("%s %v mixture %d: sign integrals (%g, %g), want (%g, %g)", c.name, s, m, gotPos, gotNeg, wantPos, wantNeg)
				}
			}
		}
	})
}

func signSums(mx []float64, s int) (pos, neg float64) {
	for g := 0; g < len(mx); g += s {
		if w := mx[g]; w > 0 {
			pos += w
		} else {
			neg += w
		}
	}
	return pos, neg
}

// TestConvFitSingleNode checks that n = 1 gives the moment match of the
// whole of Conv's output mixture, computed here from Conv's output: for
// same-signed weights the classic one (weights w), and with |w| for mixed
// signs.
func TestConvFitSingleNode(t *testing.T) {
	for _, d := range []int{2, 3} {
		for _, positive := range []bool{true, false} {
			rng := rand.New(rand.NewPCG(34, uint64(d)))
			lx, lk, x, k := convInputs(rng, d, 2, 3, 4, 2, 3)
			if positive {
				for _, a := range [][]float64{x, k} {
					for g := 0; g < len(a); g += lx.Stride() {
						a[g] = math.Abs(a[g])
					}
				}
			}
			conv, ly := convRun(x, k, lx, lk)
			y, lf := convFitRun(x, k, lx, lk, fitSelect(1, device.DefaultConvFitNegative))
			for m := range ly.Mixtures() {
				want := momentMatch(mixture.Mixture(conv, ly, m), d, positive)
				got := mixture.Mixture(y, lf, m)
				for i := range want {
					if math.Abs(got[i]-want[i]) > 1e-12*math.Max(1, math.Abs(want[i])) {
						t.Fatalf("%dD positive=%v mixture %d: %v, want the moment match %v", d, positive, m, got, want)
					}
				}
			}
		}
	}
}

// momentMatch returns the packed moment match of mx, weighting by w
// (signed) or by |w|, with the total signed weight.
func momentMatch(mx []float64, d int, signed bool) []float64 {
	s := 1 + d + d*d
	out := make([]float64, s)
	var a float64
	share := func(w float64) float64 {
		if signed {
			return w
		}
		return math.Abs(w)
	}
	for g := 0; g < len(mx); g += s {
		out[0] += mx[g]
		a += share(mx[g])
		for j := range d {
			out[1+j] += share(mx[g]) * mx[g+1+j]
		}
	}
	for j := range d {
		out[1+j] /= a
	}
	for g := 0; g < len(mx); g += s {
		for r := range d {
			for c := range d {
				dr, dc := mx[g+1+r]-out[1+r], mx[g+1+c]-out[1+c]
				out[1+d+r*d+c] += share(mx[g]) * (mx[g+1+d+r*d+c] + dr*dc) / a
			}
		}
	}
	return out
}

// TestConvFitFloat32 runs forward and backward in float32 and float64 on
// inputs that float32 represents exactly: the keys and masses are formed in
// float64 from the same values, so both take the same decisions, and the
// results agree to float32 rounding of sums over at most Nv terms.
func TestConvFitFloat32(t *testing.T) {
	for _, d := range []int{2, 3} {
		rng := rand.New(rand.NewPCG(35, uint64(d)))
		lx, lk, x, k := convInputs(rng, d, 3, 4, 5, 6, 3)
		x32, k32 := gmtest.To32(x), gmtest.To32(k)
		x, k = gmtest.To64(x32), gmtest.To64(k32)
		for _, s := range []device.ConvFitSelect{fitSelect(1, 1), fitSelect(7, 1), fitSelect(7, 0.5), fitSelect(30, 0.5)} {
			ly := device.ConvFitLayout(lx, lk, s.N)
			g := gmtest.Normal(rng, ly.Len())
			g32 := gmtest.To32(g)
			g = gmtest.To64(g32)
			y, y32 := make([]float64, ly.Len()), make([]float32, ly.Len())
			ConvFit(y, x, k, lx, lk, s)
			ConvFit(y32, x32, k32, lx, lk, s)
			gmtest.WantClose(t, fmt.Sprintf("%dD %v forward", d, s), y32, y, 1e-5)
			dx, dk := make([]float64, len(x)), make([]float64, len(k))
			dx32, dk32 := make([]float32, len(x)), make([]float32, len(k))
			ConvFitBackward(dx, dk, g, x, k, lx, lk, s)
			ConvFitBackward(dx32, dk32, g32, x32, k32, lx, lk, s)
			gmtest.WantClose(t, fmt.Sprintf("%dD %v data gradient", d, s), dx32, dx, 1e-5)
			gmtest.WantClose(t, fmt.Sprintf("%dD %v kernel gradient", d, s), dk32, dk, 1e-5)
		}
	}
}

// TestConvFitSelection checks the greedy selection on a case small enough
// to follow, for both priority factors of negative nodes: the selected
// nodes partition the components, every one is single-signed for n ≥ 2,
// and the selection of n+1 nodes splits the internal node of highest
// priority of the selection of n.
func TestConvFitSelection(t *testing.T) {
	rng := rand.New(rand.NewPCG(36, 0))
	lx, lk, x, k := convInputs(rng, 2, 1, 2, 6, 1, 5)
	cf := newConvFit(x, k, lx, lk)
	for _, neg := range convFitNegatives {
		for n := 2; n <= cf.nv; n++ {
			cf.selectNodes(0, fitSelect(n, neg))
			if len(cf.sel) != n {
				t.Fatalf("n=%d: selected %d nodes", n, len(cf.sel))
			}
			// The leaves below the selected nodes partition the sorted
			// components, and no node mixes signs.
			covered := make([]int, cf.nv)
			for _, sp := range cf.sel {
				for j := sp.first; j <= sp.last; j++ {
					covered[j]++
				}
				// Bit 52 of a 2D key is the sign; nothing is above it.
				if cf.keys[sp.first]>>52 != cf.keys[sp.last]>>52 {
					t.Errorf("n=%d: node %v covers both signs", n, sp)
				}
			}
			if slices.ContainsFunc(covered, func(c int) bool { return c != 1 }) {
				t.Fatalf("n=%d: selection does not partition the components: %v", n, covered)
			}
		}
		priority := func(sp span) float64 {
			m := cf.prefix[sp.last+1] - cf.prefix[sp.first]
			if m > 0 {
				return m
			}
			return -neg * m
		}
		for n := 2; n < 9; n++ {
			cf.selectNodes(0, fitSelect(n, neg))
			prev := slices.Clone(cf.sel)
			cf.selectNodes(0, fitSelect(n+1, neg))
			inner := slices.DeleteFunc(slices.Clone(prev), func(sp span) bool { return sp.first == sp.last })
			first := slices.MaxFunc(inner, func(a, b span) int { return cmp.Compare(priority(a), priority(b)) })
			if slices.Contains(cf.sel, first) {
				t.Errorf("negative %g: the internal node %v of highest priority of the %d-node selection was not split for %d", neg, first, n, n+1)
			}
		}
	}
	// Halving the negative nodes' priority changes the selection here: the
	// check above then covers both rules.
	cf.selectNodes(0, fitSelect(8, 1))
	one := slices.Clone(cf.sel)
	cf.selectNodes(0, fitSelect(8, 0.5))
	if slices.Equal(one, cf.sel) {
		t.Errorf("the selections of 8 nodes with negative factors 1 and 0.5 are the same")
	}
}

// TestConvFitSaved checks that ConvFitSaving writes ConvFit's output and that
// the backward pass with its selection writes bitwise what the recomputing
// one does, for both destinations, in 2D and 3D and both float types, and
// that a selection made for another n is refused.
func TestConvFitSaved(t *testing.T) {
	for _, d := range []int{2, 3} {
		lx := mixture.Layout{B: 2, C: 3, N: 4, D: d}
		lk := mixture.Layout{B: 2, C: 3, N: 3, D: d}
		rng := rand.New(rand.NewPCG(7, uint64(d)))
		x, k := relufitRandom(rng, lx, 0.1, 2), relufitRandom(rng, lk, 0.1, 1)
		for _, s := range []device.ConvFitSelect{fitSelect(1, 1), fitSelect(5, 1), fitSelect(5, 0.5), fitSelect(40, 0.5)} {
			g := relufitRandom(rng, device.ConvFitLayout(lx, lk, s.N), 0, 1)
			checkConvFitSaved(t, x, k, g, lx, lk, s)
			checkConvFitSaved(t, gmtest.To32(x), gmtest.To32(k), gmtest.To32(g), lx, lk, s)
		}
	}
	// Through the device methods a mismatch is an error, not a panic.
	lx := mixture.Layout{B: 1, C: 1, N: 2, D: 2}
	x := relufitRandom(rand.New(rand.NewPCG(1, 9)), lx, 0.1, 1)
	saved, err := Kernels[float64]{}.ConvFitSaving(make([]float64, device.ConvFitLayout(lx, lx, 2).Len()), x, x, lx, lx, fitSelect(2, 1))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []device.ConvFitSelect{fitSelect(3, 1), fitSelect(2, 0.5)} {
		g := make([]float64, device.ConvFitLayout(lx, lx, s.N).Len())
		err = Kernels[float64]{}.ConvFitBackward(make([]float64, len(x)), nil, g, x, x, lx, lx, s, saved)
		if err == nil || !strings.Contains(err.Error(), "(n=2 negative=1), used for") || !strings.Contains(err.Error(), s.String()) {
			t.Errorf("selection for n=2 negative=1 used for %v: error %v, want one naming both", s, err)
		}
	}
}

func checkConvFitSaved[T Float](t *testing.T, x, k, g []T, lx, lk mixture.Layout, s device.ConvFitSelect) {
	t.Helper()
	ly := device.ConvFitLayout(lx, lk, s.N)
	y, want := make([]T, ly.Len()), make([]T, ly.Len())
	ConvFit(want, x, k, lx, lk, s)
	sel := ConvFitSaving(y, x, k, lx, lk, s)
	if !slices.Equal(y, want) {
		t.Errorf("%dD %T %v: ConvFitSaving's output differs from ConvFit's", lx.D, y[0], s)
	}
	dx, dk := make([]T, len(x)), make([]T, len(k))
	dxs, dks := make([]T, len(x)), make([]T, len(k))
	ConvFitBackward(dx, dk, g, x, k, lx, lk, s)
	ConvFitBackwardSaved(dxs, dks, g, x, k, lx, lk, s, sel)
	if !slices.Equal(dx, dxs) || !slices.Equal(dk, dks) {
		t.Errorf("%dD %T %v: the backward pass with the saved selection differs from the recomputing one", lx.D, y[0], s)
	}
	other := fitSelect(s.N+1, s.Negative)
	defer func() {
		if recover() == nil {
			t.Errorf("%dD %T: a selection for %v used for %v did not panic", lx.D, y[0], s, other)
		}
	}()
	ConvFitBackwardSaved(dxs, dks, make([]T, device.ConvFitLayout(lx, lk, other.N).Len()), x, k, lx, lk, other, sel)
}

// TestConvFitReleased checks that a selection whose storage served another
// call, with other inputs, a backward pass and kept terms, gives what a new
// one gives: ConvFitSaving takes over released selections (Release), and
// ConvFit and its backward must overwrite everything they read.
func TestConvFitReleased(t *testing.T) {
	for _, d := range []int{2, 3} {
		lx := mixture.Layout{B: 2, C: 3, N: 4, D: d}
		lk := mixture.Layout{B: 3, C: 3, N: 2, D: d}
		rng := rand.New(rand.NewPCG(13, uint64(d)))
		sa, sb := fitSelect(7, 1), fitSelect(7, device.DefaultConvFitNegative)
		ly := device.ConvFitLayout(lx, lk, 7)
		xa, ka, ga := relufitRandom(rng, lx, 0.1, 2), relufitRandom(rng, lk, 0.1, 1), relufitRandom(rng, ly, 0, 1)
		xb, kb, gb := relufitRandom(rng, lx, 0.1, 2), relufitRandom(rng, lk, 0.1, 1), relufitRandom(rng, ly, 0, 1)
		// The reference for xb: a selection that never held anything else.
		want := make([]float64, ly.Len())
		fresh := ConvFitSaving(want, xb, kb, lx, lk, sb)
		wdx, wdk := make([]float64, len(xb)), make([]float64, len(kb))
		ConvFitBackwardSaved(wdx, wdk, gb, xb, kb, lx, lk, sb, fresh)

		used := ConvFitSaving(make([]float64, ly.Len()), xa, ka, lx, lk, sa)
		ConvFitBackwardSaved(make([]float64, len(xa)), nil, ga, xa, ka, lx, lk, sa, used) // keeps terms
		used.Release()
		used.s = sb // what newConvFitSelection does when it takes used over
		y := make([]float64, ly.Len())
		convFitInto(y, xb, kb, lx, lk, sb, used)
		if !slices.Equal(y, want) {
			t.Errorf("%dD: ConvFit into a released selection differs from a new one's output", d)
		}
		dx, dk := make([]float64, len(xb)), make([]float64, len(kb))
		ConvFitBackwardSaved(dx, nil, gb, xb, kb, lx, lk, sb, used)
		ConvFitBackwardSaved(nil, dk, gb, xb, kb, lx, lk, sb, used)
		if !slices.Equal(dx, wdx) || !slices.Equal(dk, wdk) {
			t.Errorf("%dD: the backward pass with a released selection differs from a new one's", d)
		}
	}
}

// TestConvFitBackwardKept checks the virtual components' gradients that a
// one-destination backward leaves in the selection: the next call takes
// them only for bitwise the same incoming gradient, and then releases them.
func TestConvFitBackwardKept(t *testing.T) {
	for _, d := range []int{2, 3} {
		lx := mixture.Layout{B: 2, C: 3, N: 4, D: d}
		lk := mixture.Layout{B: 3, C: 3, N: 2, D: d}
		rng := rand.New(rand.NewPCG(11, uint64(d)))
		x, k := relufitRandom(rng, lx, 0.1, 2), relufitRandom(rng, lk, 0.1, 1)
		n := fitSelect(7, device.DefaultConvFitNegative)
		ly := device.ConvFitLayout(lx, lk, n.N)
		g1, g2 := relufitRandom(rng, ly, 0, 1), relufitRandom(rng, ly, 0, 1)
		want := func(g []float64) (dx, dk []float64) {
			dx, dk = make([]float64, len(x)), make([]float64, len(k))
			ConvFitBackward(dx, dk, g, x, k, lx, lk, n)
			return dx, dk
		}
		dx1, dk1 := want(g1)
		_, dk2 := want(g2)
		sel := ConvFitSaving(make([]float64, ly.Len()), x, k, lx, lk, n)
		dx, dk := make([]float64, len(x)), make([]float64, len(k))
		ConvFitBackwardSaved(dx, nil, g1, x, k, lx, lk, n, sel)
		if !slices.Equal(dx, dx1) || sel.kept == nil {
			t.Fatalf("%dD: ∂L/∂x alone differs from the two-destination pass, or kept nothing", d)
		}
		ConvFitBackwardSaved(nil, dk, g2, x, k, lx, lk, n, sel) // another g: computed anew
		if !slices.Equal(dk, dk2) {
			t.Errorf("%dD: ∂L/∂k for another incoming gradient used the kept terms", d)
		}
		ConvFitBackwardSaved(nil, dk, g1, x, k, lx, lk, n, sel)
		if !slices.Equal(dk, dk1) {
			t.Errorf("%dD: ∂L/∂k after ∂L/∂x for the same incoming gradient differs", d)
		}
		ConvFitBackwardSaved(dx, nil, g1, x, k, lx, lk, n, sel)
		if !slices.Equal(dx, dx1) {
			t.Errorf("%dD: ∂L/∂x from kept terms differs", d)
		}
		if sel.kept != nil {
			t.Errorf("%dD: the kept terms were not released after their use", d)
		}
	}
}
