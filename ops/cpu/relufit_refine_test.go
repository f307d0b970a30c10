package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

var refined = device.ReLUFitOptions{Refine: true}

// TestReLUFitRefinedError checks what the refinement is for: on mixtures of
// both signs, in 2D and 3D and for both variants, the refined fit is closer
// to the positive part than the heuristic at independent sample points
// (the benchmark's measure, docs/fitting-error.md), by at least a quarter.
func TestReLUFitRefinedError(t *testing.T) {
	for _, c := range []struct {
		l    mixture.Layout
		opts device.ReLUFitOptions
	}{
		{mixture.Layout{B: 3, C: 2, N: 40, D: 2}, refined},
		{mixture.Layout{B: 2, C: 2, N: 60, D: 3}, refined},
		{mixture.Layout{B: 3, C: 2, N: 40, D: 2}, device.ReLUFitOptions{Variant: device.ReLUFitPaper, Refine: true}},
	} {
		x := relufitRandom(rand.New(rand.NewPCG(uint64(c.l.D), 9)), c.l, 0.1, 2)
		heur := make([]float64, len(x))
		ref := make([]float64, len(x))
		unrefined := c.opts
		unrefined.Refine = false
		if err := ReLUFit(heur, x, nil, nil, c.l, unrefined); err != nil {
			t.Fatal(err)
		}
		if err := ReLUFit(ref, x, nil, nil, c.l, c.opts); err != nil {
			t.Fatal(err)
		}
		if err := mixture.Validate(ref, c.l); err != nil {
			t.Fatalf("%v: refined output: %v", c.l.Shape(), err)
		}
		eh, err := mixture.FitErrorsOf(evaluator[float64], x, heur, heur, c.l, c.l, 2000, 5)
		if err != nil {
			t.Fatal(err)
		}
		er, err := mixture.FitErrorsOf(evaluator[float64], x, ref, ref, c.l, c.l, 2000, 5)
		if err != nil {
			t.Fatal(err)
		}
		if er.ReLU.NRMSE > 0.75*eh.ReLU.NRMSE {
			t.Errorf("%v %+v: refined NRMSE %.4f, heuristic %.4f: want at most 75 %%", c.l.Shape(), c.opts, er.ReLU.NRMSE, eh.ReLU.NRMSE)
		}
		t.Logf("%dD %+v: NRMSE heuristic %.4f refined %.4f", c.l.D, c.opts, eh.ReLU.NRMSE, er.ReLU.NRMSE)
	}
}

// TestReLUFitRefinedProperties checks that the refined fit is deterministic,
// keeps the reference variant's positive weights, moves with the input
// (translation), agrees between float32 and float64, and reports a
// positive constant, in the forward and the backward pass, and more
// components than it accepts.
func TestReLUFitRefinedProperties(t *testing.T) {
	for _, l := range []mixture.Layout{{B: 2, C: 2, N: 30, D: 2}, {B: 2, C: 1, N: 30, D: 3}} {
		x := relufitRandom(rand.New(rand.NewPCG(7, uint64(l.D))), l, 0.1, 2)
		y := make([]float64, len(x))
		if err := ReLUFit(y, x, nil, nil, l, refined); err != nil {
			t.Fatal(err)
		}
		again := make([]float64, len(x))
		if err := ReLUFit(again, x, nil, nil, l, refined); err != nil {
			t.Fatal(err)
		}
		if d := gmtest.MaxAbsDiff(y, again); d != 0 {
			t.Errorf("%dD: two runs differ by %g", l.D, d)
		}
		for i := 0; i < len(y); i += l.Stride() {
			if !(y[i] > 0) {
				t.Fatalf("%dD: weight %d is %g, want > 0", l.D, i/l.Stride(), y[i])
			}
		}
		shifted := append([]float64(nil), x...)
		for i := 0; i < len(x); i += l.Stride() {
			for j := range l.D {
				shifted[i+1+j] += 0.5 * float64(j+1)
			}
		}
		ys := make([]float64, len(x))
		if err := ReLUFit(ys, shifted, nil, nil, l, refined); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(y); i += l.Stride() {
			for j := range l.D {
				ys[i+1+j] -= 0.5 * float64(j+1)
			}
		}
		gmtest.WantClose(t, "translated fit", ys, y, 1e-9)
		y32 := make([]float32, len(x))
		if err := ReLUFit(y32, gmtest.To32(x), nil, nil, l, refined); err != nil {
			t.Fatal(err)
		}
		gmtest.WantClose(t, "float32 fit", y32, y, 2e-3)
	}
	// A negative constant shifts the target; a positive one is refused.
	l := mixture.Layout{B: 1, C: 2, N: 20, D: 2}
	x := relufitRandom(rand.New(rand.NewPCG(2, 2)), l, 0.1, 2)
	y := make([]float64, len(x))
	if err := ReLUFit(y, x, []float64{-0.05, 0}, nil, l, refined); err != nil {
		t.Fatal(err)
	}
	if err := mixture.Validate(y, l); err != nil {
		t.Errorf("refined fit with κ < 0: %v", err)
	}
	gmtest.WantErr(t, ReLUFit(y, x, []float64{0, 0.1}, nil, l, refined), "κ ≤ 0", "0.1", "mixture")
	gmtest.WantErr(t, ReLUFitBackward(make([]float64, len(x)), make([]float64, 2), nil, x, []float64{0, 0.1}, nil, x, l, refined), "κ ≤ 0", "0.1", "mixture")
	l = mixture.Layout{B: 1, C: 1, N: RefineMaxN + 1, D: 2}
	x = relufitRandom(rand.New(rand.NewPCG(1, 1)), l, 0.1, 20)
	gmtest.WantErr(t, ReLUFit(make([]float64, len(x)), x, nil, nil, l, refined), "at most 4096 components", "got 4097", "mixture")
}

// TestReLUFitRefinedGradient checks the refined fit's exact backward
// against central differences of L = Σ r·ReLUFit(x, κ) for every input
// value and constant (relufitCheckGrad, which also holds the refinement's
// decisions fixed: refineDecisions), in 2D and 3D, for both variants and
// the constants the refinement accepts, and that the saved-sums backward
// gives the same gradient.
func TestReLUFitRefinedGradient(t *testing.T) {
	paper := device.ReLUFitOptions{Variant: device.ReLUFitPaper, Refine: true}
	for _, c := range []struct {
		opts device.ReLUFitOptions
		kind string
	}{{refined, "none"}, {refined, "negative"}, {paper, "none"}} {
		for _, d := range []int{2, 3} {
			for _, n := range []int{1, 5, 9} {
				l := mixture.Layout{B: 1, C: 2, N: n, D: d}
				x, kappa := relufitGradCase(t, uint64(10+n), l, c.opts, c.kind)
				name := fmt.Sprintf("refined %+v κ %s D=%d N=%d", c.opts, c.kind, d, n)
				relufitCheckGrad(t, name, x, kappa, nil, l, c.opts)
				g := relufitRandom(rand.New(rand.NewPCG(4, uint64(n))), l, 0, 1)
				want := make([]float64, len(x))
				if err := ReLUFitBackward(want, nil, nil, x, kappa, nil, g, l, c.opts); err != nil {
					t.Fatal(err)
				}
				sums, err := ReLUFitSaving(make([]float64, len(x)), x, kappa, nil, l, c.opts)
				if err != nil {
					t.Fatal(err)
				}
				saved := make([]float64, len(x))
				if err := ReLUFitBackwardSaved(saved, nil, nil, x, kappa, nil, g, l, c.opts, sums); err != nil {
					t.Fatal(err)
				}
				if diff := gmtest.MaxAbsDiff(saved, want); diff != 0 {
					t.Errorf("%s: saved-sums backward differs by %g", name, diff)
				}
			}
		}
	}
}

// refineDecisions lists the refinement's discrete decisions for every
// mixture of x: which sigma points count (f + κ > 0), which components
// receive EM mass and the signs of the targets at the new centroids.
func refineDecisions(x, kappa []float64, l mixture.Layout, opts device.ReLUFitOptions) []bool {
	p, err := opts.Resolve()
	if err != nil {
		panic(err)
	}
	var dec []bool
	y := make([]float64, len(x))
	copy(y, x)
	decs := make([][]bool, l.Mixtures())
	err = reluEach(x, kappa, nil, false, l, p, false, nil, func(s *reluWork[float64], m int) error {
		out := mixture.Mixture(y, l, m)
		s.heuristicWeights(out, p.Off)
		var md []bool
		st := l.Stride()
		var pt [3]float64
		for c := range l.N {
			var ch [9]float64
			cholesky(l.D, out[c*st+1+l.D:], ch[:])
			for i := range 2*l.D + 1 {
				// Only f decides; the weights given for g do not matter.
				md = append(md, s.sigmaPoint(&pt, out[c*st+1:c*st+1+l.D], ch[:], i, s.nrm).f > 0)
			}
		}
		if err := s.refine(out, p); err != nil {
			return err
		}
		md = append(md, s.ref.alive...)
		for _, tau := range s.ref.tau {
			md = append(md, tau > 0)
		}
		decs[m] = md
		return nil
	})
	if err != nil {
		panic(err)
	}
	for _, md := range decs {
		dec = append(dec, md...)
	}
	return dec
}
