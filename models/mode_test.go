package models

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// modeFixture is a small model's "trained" state, with BatchNorm statistics
// and CovScaleNorm averages far from their initial values, and one batch of
// input mixtures.
type modeFixture struct {
	cfg   Config
	state State
	input *tensor.Dense
}

func newModeFixture(t *testing.T) modeFixture {
	t.Helper()
	l, err := ParseLayout("1/8 -> 4/4 -> 3")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Layout: l, D: 2, Classes: 3, Batch: 4, Seed: 7}
	m, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	s := m.State()
	for i := range s.BNMean {
		s.BNMean[i] = 0.3 + rng.Float64()
		s.BNVar[i] = 0.05 + 0.1*rng.Float64()
	}
	for _, c := range s.CovNorms {
		for i := range c {
			c[i] = 0.5 + 3*rng.Float64()
		}
	}
	// The model keeps float32 statistics: round s to what it holds.
	if err := m.SetState(s); err != nil {
		t.Fatal(err)
	}
	x := gmtest.Mixtures[float32](rng, gmtest.StandardSpec(), 4, 1, 8, 2)
	return modeFixture{cfg: cfg, state: m.State(), input: tensor.New(tensor.WithShape(4, 1, 8, 7), tensor.WithBacking(x))}
}

// run runs vm over the fixture's batch and returns the log-probabilities
// and the integrals BatchNorm read.
func (f modeFixture) run(t *testing.T, m *Model, vm G.VM) (logProb, integral []float64) {
	t.Helper()
	if err := G.Let(m.Input, f.input); err != nil {
		t.Fatal(err)
	}
	if err := G.Let(m.Target, tensor.New(tensor.WithShape(m.Target.Shape()...), tensor.Of(tensor.Float32))); err != nil {
		t.Fatal(err)
	}
	vm.Reset()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	return Float64s(m.LogProbValue().(*tensor.Dense)), Float64s(m.IntegralValue().(*tensor.Dense))
}

// TestEvalModeAnyOrder loads a state, makes a machine and switches to
// evaluation in every order, with and without Gorgonia's EvalMode, and
// requires the same predictions each time, twice in a row: BatchNorm
// normalises with the loaded statistics (checked against the formula on the
// integrals), and nothing the prediction reads changes while it runs.
func TestEvalModeAnyOrder(t *testing.T) {
	f := newModeFixture(t)
	steps := map[string]func(*Model, *G.VM) error{
		"load":    func(m *Model, _ *G.VM) error { return m.SetState(f.state) },
		"eval":    func(m *Model, _ *G.VM) error { return m.SetTraining(false) },
		"machine": func(m *Model, vm *G.VM) error { *vm = G.NewTapeMachine(m.Graph); return nil },
	}
	orders := [][]string{
		{"load", "eval", "machine"}, {"load", "machine", "eval"}, {"eval", "load", "machine"},
		{"eval", "machine", "load"}, {"machine", "load", "eval"}, {"machine", "eval", "load"},
	}
	var want []float64
	for _, evalMode := range []bool{false, true} {
		for _, order := range orders {
			m, err := Build(f.cfg)
			if err != nil {
				t.Fatal(err)
			}
			var vm G.VM
			for _, s := range order {
				if s == "machine" && evalMode {
					vm = G.NewTapeMachine(m.Graph, G.EvalMode())
					continue
				}
				if err := steps[s](m, &vm); err != nil {
					t.Fatalf("%v: %s: %v", order, s, err)
				}
			}
			for run := range 2 {
				lp, integral := f.run(t, m, vm)
				if want == nil {
					want = lp
					wantBatchNorm(t, f.state, integral, lp)
				}
				if !slices.Equal(lp, want) {
					t.Errorf("%v (EvalMode %v) run %d: log-probabilities\n%v\nwant %v", order, evalMode, run+1, lp, want)
				}
			}
			if got := m.State(); !slices.Equal(got.BNMean, f.state.BNMean) || !slices.Equal(got.CovNorms[0], f.state.CovNorms[0]) {
				t.Errorf("%v (EvalMode %v): evaluation changed the running statistics", order, evalMode)
			}
			vm.Close()
		}
	}
}

// wantBatchNorm checks that lp is the log-softmax of the integrals
// normalised with the statistics of s (the fixture's scale is 1, bias 0).
func wantBatchNorm(t *testing.T, s State, integral, lp []float64) {
	t.Helper()
	c := len(s.BNMean)
	for b := range len(integral) / c {
		z := make([]float64, c)
		sum := 0.0
		for j := range c {
			z[j] = (integral[b*c+j] - s.BNMean[j]) / math.Sqrt(s.BNVar[j]+1e-5)
			sum += math.Exp(z[j])
		}
		for j := range c {
			if want := z[j] - math.Log(sum); math.Abs(lp[b*c+j]-want) > 1e-4*(1+math.Abs(want)) {
				t.Fatalf("sample %d class %d: log-probability %g, BatchNorm with the loaded statistics gives %g", b, j, lp[b*c+j], want)
			}
		}
	}
}

// TestTrainingStatsSurviveMachine loads a state into a model in training
// mode and only then makes its machine, which resets Gorgonia's BatchNorm
// statistics; one training-mode run must still update the loaded running
// mean by the momentum rule, and the model's state must show it.
func TestTrainingStatsSurviveMachine(t *testing.T) {
	f := newModeFixture(t)
	m, err := Build(f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SetState(f.state); err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(m.Graph)
	defer vm.Close()
	_, integral := f.run(t, m, vm)
	c := len(f.state.BNMean)
	got := m.State().BNMean
	for j := range c {
		mean := 0.0
		for b := range f.cfg.Batch {
			mean += integral[b*c+j] / float64(f.cfg.Batch)
		}
		if want := 0.9*f.state.BNMean[j] + 0.1*mean; math.Abs(got[j]-want) > 1e-5 {
			t.Errorf("channel %d: running mean %g after one training run, want 0.9·%g + 0.1·%g = %g", j, got[j], f.state.BNMean[j], mean, want)
		}
	}
	if !m.Training() {
		t.Error("a new model is not in training mode")
	}
}
