package cpu

import (
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
		if err := ReLUFit(heur, x, nil, c.l, unrefined); err != nil {
			t.Fatal(err)
		}
		if err := ReLUFit(ref, x, nil, c.l, c.opts); err != nil {
			t.Fatal(err)
		}
		if err := mixture.Validate(ref, c.l); err != nil {
			t.Fatalf("%v: refined output: %v", c.l.Shape(), err)
		}
		eh, err := FitErrorsOf(x, heur, heur, c.l, c.l, 2000, 5)
		if err != nil {
			t.Fatal(err)
		}
		er, err := FitErrorsOf(x, ref, ref, c.l, c.l, 2000, 5)
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
// (translation), agrees between float32 and float64, and reports more
// components than it accepts.
func TestReLUFitRefinedProperties(t *testing.T) {
	for _, l := range []mixture.Layout{{B: 2, C: 2, N: 30, D: 2}, {B: 2, C: 1, N: 30, D: 3}} {
		x := relufitRandom(rand.New(rand.NewPCG(7, uint64(l.D))), l, 0.1, 2)
		y := make([]float64, len(x))
		if err := ReLUFit(y, x, nil, l, refined); err != nil {
			t.Fatal(err)
		}
		again := make([]float64, len(x))
		if err := ReLUFit(again, x, nil, l, refined); err != nil {
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
		if err := ReLUFit(ys, shifted, nil, l, refined); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(y); i += l.Stride() {
			for j := range l.D {
				ys[i+1+j] -= 0.5 * float64(j+1)
			}
		}
		gmtest.WantClose(t, "translated fit", ys, y, 1e-9)
		y32 := make([]float32, len(x))
		if err := ReLUFit(y32, gmtest.To32(x), nil, l, refined); err != nil {
			t.Fatal(err)
		}
		gmtest.WantClose(t, "float32 fit", y32, y, 2e-3)
	}
	// A negative constant shifts the target; a positive one is refused.
	l := mixture.Layout{B: 1, C: 2, N: 20, D: 2}
	x := relufitRandom(rand.New(rand.NewPCG(2, 2)), l, 0.1, 2)
	y := make([]float64, len(x))
	if err := ReLUFit(y, x, []float64{-0.05, 0}, l, refined); err != nil {
		t.Fatal(err)
	}
	if err := mixture.Validate(y, l); err != nil {
		t.Errorf("refined fit with κ < 0: %v", err)
	}
	gmtest.WantErr(t, ReLUFit(y, x, []float64{0, 0.1}, l, refined), "κ ≤ 0", "0.1", "mixture")
	l = mixture.Layout{B: 1, C: 1, N: RefineMaxN + 1, D: 2}
	x = relufitRandom(rand.New(rand.NewPCG(1, 1)), l, 0.1, 20)
	gmtest.WantErr(t, ReLUFit(make([]float64, len(x)), x, nil, l, refined), "at most 4096 components", "got 4097", "mixture")
}

// TestReLUFitRefinedBackward checks the documented straight-through
// gradient: the refined fit's backward is the heuristic's (whose finite
// difference checks are in relufit_test.go), bit for bit, recomputed or
// from saved sums.
func TestReLUFitRefinedBackward(t *testing.T) {
	for _, l := range []mixture.Layout{{B: 2, C: 2, N: 20, D: 2}, {B: 1, C: 2, N: 20, D: 3}} {
		rng := rand.New(rand.NewPCG(3, uint64(l.D)))
		x := relufitRandom(rng, l, 0.1, 2)
		g := relufitRandom(rng, l, 0, 1)
		want := make([]float64, len(x))
		if err := ReLUFitBackward(want, nil, x, nil, g, l, device.ReLUFitOptions{}); err != nil {
			t.Fatal(err)
		}
		got := make([]float64, len(x))
		if err := ReLUFitBackward(got, nil, x, nil, g, l, refined); err != nil {
			t.Fatal(err)
		}
		sums, err := ReLUFitSaving(make([]float64, len(x)), x, nil, l, refined)
		if err != nil {
			t.Fatal(err)
		}
		saved := make([]float64, len(x))
		if err := ReLUFitBackwardSaved(saved, nil, x, nil, g, l, refined, sums); err != nil {
			t.Fatal(err)
		}
		if gmtest.MaxAbsDiff(got, want) != 0 || gmtest.MaxAbsDiff(saved, want) != 0 {
			t.Errorf("%dD: refined backward differs from the heuristic's by %g (saved %g)", l.D, gmtest.MaxAbsDiff(got, want), gmtest.MaxAbsDiff(saved, want))
		}
	}
}
