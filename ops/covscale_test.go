package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops/cpu"
	"github.com/gmcn-go/gmcn/ops/mixture"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestCovScaleNormGradEval checks the running variant's gradient with the
// factors frozen: in evaluation mode the running average is a constant, so
// central differences of the whole graph see exactly the detached scaling.
// checkGraphGrad builds its machine without gorgonia.EvalMode, which would
// switch a TrainModeOp to training; the graph therefore gets the op's inner
// adapter, which shares the kernel and state but not SetTraining.
func TestCovScaleNormGradEval(t *testing.T) {
	for _, d := range []int{2, 3} {
		t.Run(fmt.Sprintf("%dD", d), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(32, uint64(d)))
			x := randomMixture(rng, 2, 3, 4, d)
			op, err := NewCovScaleNorm(testDev, 3)
			if err != nil {
				t.Fatal(err)
			}
			if err := op.SetRunning([]float64{0.5, 2, 7}); err != nil {
				t.Fatal(err)
			}
			checkGraphGrad(t, rng, []*tensor.Dense{x}, func(in []*G.Node) (*G.Node, error) {
				return G.ApplyOp(op.op, in[0])
			}, 0)
			if op.Training() {
				t.Error("the gradient check switched the op to training")
			}
		})
	}
}

// TestCovScaleNormMachineMode checks Gorgonia's convention that a machine
// sets the mode of every TrainModeOp when it is built: training unless
// built with gorgonia.EvalMode().
func TestCovScaleNormMachineMode(t *testing.T) {
	for _, eval := range []bool{false, true} {
		op, _ := NewCovScaleNorm(testDev, 1)
		op.SetTraining(eval)
		g := G.NewGraph()
		x := G.NewTensor(g, tensor.Float64, 4, G.WithShape(1, 1, 1, 7), G.WithName("x"))
		if _, err := G.ApplyOp(op, x); err != nil {
			t.Fatal(err)
		}
		var opts []G.VMOpt
		if eval {
			opts = append(opts, G.EvalMode())
		}
		vm := G.NewTapeMachine(g, opts...)
		if op.Training() == eval {
			t.Errorf("machine with EvalMode = %v left Training() = %v", eval, op.Training())
		}
		vm.Close()
	}
}

// covscaleRun builds x → CovScaleNorm → L = Σ y·r with its gradient and
// returns a function that runs the tape once and gives y and ∂L/∂x.
func covscaleRun(t *testing.T, op *CovScaleNorm, x, r *tensor.Dense) func() (y, dx []float64) {
	t.Helper()
	g := G.NewGraph()
	xn := G.NewTensor(g, tensor.Float64, 4, G.WithShape(x.Shape()...), G.WithName("x"), G.WithValue(x))
	rn := G.NewTensor(g, tensor.Float64, 4, G.WithShape(r.Shape()...), G.WithName("r"), G.WithValue(r))
	y, err := G.ApplyOp(op, xn)
	if err != nil {
		t.Fatal(err)
	}
	cost := G.Must(G.Sum(G.Must(G.HadamardProd(y, rn))))
	grads, err := G.Grad(cost, xn)
	if err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(g)
	t.Cleanup(func() { vm.Close() })
	return func() ([]float64, []float64) {
		vm.Reset()
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		return append([]float64(nil), y.Value().Data().([]float64)...), append([]float64(nil), grads[0].Value().Data().([]float64)...)
	}
}

// TestCovScaleNormRunning follows the running average over several training
// steps of a graph with its gradient (the update must happen exactly once
// per step), then checks that evaluation uses the average without changing it
// and that each step's output and gradient use that step's updated average.
func TestCovScaleNormRunning(t *testing.T) {
	const b, c, n, d = 50, 2, 3, 2
	rng := rand.New(rand.NewPCG(33, 0))
	x := randomMixture(rng, b, c, n, d)
	l := mixture.Layout{B: b, C: c, N: n, D: d}
	r := randomMixture(rng, b, c, n, d)
	op, err := NewCovScaleNorm(testDev, c)
	if err != nil {
		t.Fatal(err)
	}
	run := covscaleRun(t, op, x, r)
	xd, rd := x.Data().([]float64), r.Data().([]float64)

	tau := make([]float64, l.Mixtures())
	cpu.MeanTraces(tau, xd, l)
	batch := make([]float64, c)
	for m, v := range tau {
		batch[m%c] += v / b
	}
	const alpha = b / 1000.0
	want := []float64{1, 1}
	// check compares y and ∂L/∂x with the scaling by the running average want.
	check := func(step string, y, dx []float64) {
		t.Helper()
		s := make([]float64, l.Mixtures())
		for m := range s {
			s[m] = math.Sqrt(d / want[m%c])
		}
		wy, wdx := make([]float64, len(y)), make([]float64, len(y))
		cpu.ScaleMixtures(wy, xd, l, s)
		cpu.ScaleMixturesBackward(wdx, rd, l, s)
		if e := gmtest.MaxAbsDiff(y, wy); e > 1e-12 {
			t.Errorf("%s: output differs from scaling by the running average by %g", step, e)
		}
		if e := gmtest.MaxAbsDiff(dx, wdx); e > 1e-12 {
			t.Errorf("%s: gradient differs from the detached scaling by %g", step, e)
		}
	}
	if err := op.SetTraining(true); err != nil {
		t.Fatal(err)
	}
	for step := range 4 {
		y, dx := run()
		for i := range want {
			want[i] = (1-alpha)*want[i] + alpha*batch[i]
		}
		got := op.Running()
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-12 {
				t.Fatalf("training step %d, channel %d: running mean trace %.15g, want %.15g", step, i, got[i], want[i])
			}
		}
		check(fmt.Sprintf("training step %d", step), y, dx)
	}
	op.SetTraining(false)
	want = op.Running()
	for step := range 2 {
		y, dx := run()
		got := op.Running()
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("evaluation step %d changed the running average of channel %d to %g from %g", step, i, got[i], want[i])
			}
		}
		check(fmt.Sprintf("evaluation step %d", step), y, dx)
	}
}

// TestCovScaleNormAlpha checks the update weight α = min(B/1000, 0.2) at a
// batch beyond the cap, and that SetRunning/Running round-trip.
func TestCovScaleNormAlpha(t *testing.T) {
	l := mixture.Layout{B: 400, C: 1, N: 1, D: 3}
	x := make([]float64, l.Len())
	for i := 0; i < len(x); i += l.Stride() {
		x[i] = 1
		copy(x[i+4:i+13], []float64{2, 0, 0, 0, 2, 0, 0, 0, 2})
	}
	op, err := NewCovScaleNorm(testDev, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := op.SetRunning([]float64{4}); err != nil {
		t.Fatal(err)
	}
	op.SetTraining(true)
	if !op.Training() {
		t.Fatal("Training() = false after SetTraining(true)")
	}
	if _, err := op.Do(tensor.New(tensor.WithShape(l.Shape()...), tensor.WithBacking(x))); err != nil {
		t.Fatal(err)
	}
	// τ_batch = 6, α = 0.2 (B/1000 = 0.4 is capped).
	if got, want := op.Running()[0], 0.8*4+0.2*6; math.Abs(got-want) > 1e-14 {
		t.Errorf("running mean trace %g, want %g", got, want)
	}
}

// TestCovScaleFloat32Op checks that the float32 ops match float64.
func TestCovScaleFloat32Op(t *testing.T) {
	rng := rand.New(rand.NewPCG(34, 0))
	x := randomMixture(rng, 3, 2, 20, 3)
	for _, mk := range []func() G.Op{on(NewCovScale), func() G.Op { op, _ := NewCovScaleNorm(testDev, 2); op.SetRunning([]float64{3, 0.4}); return op }} {
		wantFloat32Op(t, mk(), x)
	}
}

// covscaleMixture returns a valid one-component 2D batch [1, c, 1, 7] with
// Σ = I whose first component is then changed by edit.
func covscaleMixture(c int, edit func([]float64)) *tensor.Dense {
	x := make([]float64, 7*c)
	for i := 0; i < len(x); i += 7 {
		copy(x[i:], []float64{1, 0, 0, 1, 0, 0, 1})
	}
	if edit != nil {
		edit(x)
	}
	return tensor.New(tensor.WithShape(1, c, 1, 7), tensor.WithBacking(x))
}

func TestCovScaleBadInput(t *testing.T) {
	norm := func() G.Op { op, _ := NewCovScaleNorm(testDev, 2); return op }
	cases := []struct {
		name string
		op   G.Op
		in   *tensor.Dense
		want []string
	}{
		{"rank 3", NewCovScale(testDev), tensor.New(tensor.WithShape(1, 1, 7), tensor.Of(tensor.Float64)), []string{"gm.CovScale", `"mixture"`, "rank 4", "rank 3"}},
		{"packed length 8", NewCovScale(testDev), tensor.New(tensor.WithShape(1, 1, 1, 8), tensor.Of(tensor.Float64)), []string{"gm.CovScale", `"mixture"`, "length 8"}},
		{"NaN weight", NewCovScale(testDev), covscaleMixture(2, func(x []float64) { x[0] = math.NaN() }), []string{"gm.CovScale", `"mixture"`, "non-finite"}},
		{"Inf position", NewCovScale(testDev), covscaleMixture(2, func(x []float64) { x[8] = math.Inf(1) }), []string{"gm.CovScale", `"mixture"`, "c=1", "non-finite"}},
		{"non-SPD covariance", NewCovScale(testDev), covscaleMixture(2, func(x []float64) { x[3] = -1 }), []string{"gm.CovScale", `"mixture"`, "positive definite"}},
		{"trace overflows", NewCovScale(testDev), covscaleMixture(1, func(x []float64) { x[3], x[6] = 1e308, 1e308 }), []string{"gm.CovScale", `"mixture"`, "mean covariance trace +Inf"}},
		{"running: wrong channels", norm(), covscaleMixture(3, nil), []string{"gm.CovScaleNorm", `"mixture"`, "expected 2 channels, got 3"}},
		{"running: NaN", norm(), covscaleMixture(2, func(x []float64) { x[12] = math.NaN() }), []string{"gm.CovScaleNorm", `"mixture"`, "non-finite"}},
		{"running: non-SPD", norm(), covscaleMixture(2, func(x []float64) { x[4], x[5] = 2, 2 }), []string{"gm.CovScaleNorm", `"mixture"`, "positive definite"}},
		{"running: trace overflows", norm(), covscaleMixture(2, func(x []float64) { x[3], x[6] = 1e308, 1e308 }), []string{"gm.CovScaleNorm", `"mixture"`, "channel 0", "+Inf"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "running: trace overflows" {
				c.op.(*CovScaleNorm).SetTraining(true)
			}
			_, err := c.op.Do(c.in)
			gmtest.WantErr(t, err, c.want...)
		})
	}
	t.Run("zero components", func(t *testing.T) {
		g := G.NewGraph()
		x := G.NewTensor(g, tensor.Float64, 4, G.WithShape(1, 2, 0, 7), G.WithName("x"))
		_, err := G.ApplyOp(NewCovScale(testDev), x)
		gmtest.WantErr(t, err, "gm.CovScale", `"mixture"`, "N = 0")
	})
	t.Run("bad running state", func(t *testing.T) {
		_, err := NewCovScaleNorm(testDev, 0)
		gmtest.WantErr(t, err, "gm.CovScaleNorm", "channels", "got 0")
		op, _ := NewCovScaleNorm(testDev, 2)
		gmtest.WantErr(t, op.SetRunning([]float64{1}), "gm.CovScaleNorm", "needs 2 values", "got 1")
		gmtest.WantErr(t, op.SetRunning([]float64{1, 0}), "gm.CovScaleNorm", "channel 1", "0")
		gmtest.WantErr(t, op.SetRunning([]float64{math.NaN(), 1}), "gm.CovScaleNorm", "channel 0", "NaN")
		if got := op.Running(); got[0] != 1 || got[1] != 1 {
			t.Errorf("rejected SetRunning changed the state to %v", got)
		}
	})
	t.Run("failed training step keeps the state", func(t *testing.T) {
		op, _ := NewCovScaleNorm(testDev, 2)
		op.SetTraining(true)
		if _, err := op.Do(covscaleMixture(2, func(x []float64) { x[3], x[6] = 1e308, 1e308 })); err == nil {
			t.Fatal("no error for an overflowing trace")
		}
		if got := op.Running(); got[0] != 1 || got[1] != 1 {
			t.Errorf("failed step changed the running average to %v", got)
		}
	})
}

// TestIntegrateIgnoresCovScaleNorm checks what lets a model's last block
// integrate its own mixtures without CovScaleNorm: CovScaleNorm (training,
// so its factors come from the batch) scales positions and covariances
// only, so the integrals and their gradient with respect to the mixtures
// are the same with and without it (bitwise on the CPU), 2D and 3D,
// float64 and float32.
func TestIntegrateIgnoresCovScaleNorm(t *testing.T) {
	for _, d := range []int{2, 3} {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			t.Run(fmt.Sprintf("%dD/%v", d, dt), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(41, uint64(d)))
				x := randomMixture(rng, 3, 2, 5, d)
				if dt == tensor.Float32 {
					x = as32(x)
				}
				r := gmtest.Normal(rng, 3*2)
				with := integrateGraph(t, x, r, true)
				without := integrateGraph(t, x, r, false)
				for i, what := range []string{"integrals", "∂L/∂x"} {
					if same, e := gmtest.SameAsCPU(testDev.Name, with[i], without[i]); !same {
						t.Errorf("%s with and without CovScaleNorm differ by %g", what, e)
					}
				}
			})
		}
	}
}

// integrateGraph runs y = Integrate(x), after a CovScaleNorm in training if
// norm, with the gradient of L = Σ y·r, and returns y and ∂L/∂x.
func integrateGraph(t *testing.T, x *tensor.Dense, r []float64, norm bool) [2][]float64 {
	t.Helper()
	g := G.NewGraph()
	dt := x.Dtype()
	xn := G.NewTensor(g, dt, 4, G.WithShape(x.Shape()...), G.WithValue(x.Clone()), G.WithName("x"))
	in := xn
	if norm {
		op, err := NewCovScaleNorm(testDev, x.Shape()[1])
		if err != nil {
			t.Fatal(err)
		}
		if in, err = G.ApplyOp(op, xn); err != nil {
			t.Fatal(err)
		}
	}
	y, err := G.ApplyOp(NewIntegrate(testDev), in)
	if err != nil {
		t.Fatal(err)
	}
	rt := tensor.New(tensor.WithShape(y.Shape()...), tensor.WithBacking(append([]float64(nil), r...)))
	if dt == tensor.Float32 {
		rt = as32(rt)
	}
	rn := G.NewTensor(g, dt, 2, G.WithShape(y.Shape()...), G.WithValue(rt), G.WithName("r"))
	if _, err := G.Grad(G.Must(G.Sum(G.Must(G.HadamardProd(y, rn)))), xn); err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	gx, err := xn.Grad()
	if err != nil {
		t.Fatal(err)
	}
	return [2][]float64{float64s(y.Value()), float64s(gx)}
}
