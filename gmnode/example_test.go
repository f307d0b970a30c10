package gmnode_test

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gmcn-go/gmcn/gmnode"
	"github.com/gmcn-go/gmcn/ops/mixture"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// ExampleConv builds mixture → Conv → Integrate → BatchNorm → LogSoftMax →
// NLL in one Gorgonia graph, differentiates it with Grad and trains the
// kernel and BatchNorm parameters with Gorgonia's Adam on a generated
// two-class problem (the classes differ in the sign of the mixtures' total
// weight, which the integral of the convolution sees).
func ExampleConv() {
	rng := rand.New(rand.NewPCG(1, 2))
	m, err := newExampleModel(rng, gorgoniaBatchNorm)
	if err != nil {
		fmt.Println(err)
		return
	}
	step, _, err := gmnode.Grad(m.loss, m.learnables...)
	if err != nil {
		fmt.Println(err)
		return
	}
	vm := G.NewTapeMachine(step, G.BindDualValues(m.learnables...))
	defer vm.Close()
	run := func() error {
		vm.Reset()
		return vm.RunAll()
	}
	first, last, err := m.train(run, rng, 30)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("loss went down: %v\n", last < first/2)
	// Output: loss went down: true
}

// exampleModel is the graph of ExampleConv without its gradient nodes.
type exampleModel struct {
	g          *G.ExprGraph
	l          mixture.Layout
	x, target  *G.Node
	loss       *G.Node
	learnables G.Nodes
}

// norm normalises the [B, 2] logits over the batch with learnable
// scale and bias [1, 2].
type norm func(y, scale, bias *G.Node) (*G.Node, error)

func gorgoniaBatchNorm(y, scale, bias *G.Node) (*G.Node, error) {
	y, _, _, _, err := G.BatchNorm(y, scale, bias, 0.1, 1e-5)
	return y, err
}

func newExampleModel(rng *rand.Rand, normalise norm) (*exampleModel, error) {
	const batch, n, d = 16, 6, 2
	m := &exampleModel{g: G.NewGraph(), l: mixture.Layout{B: batch, C: 1, N: n, D: d}}
	m.x = G.NewTensor(m.g, tensor.Float64, 4, G.WithShape(m.l.Shape()...), G.WithName("x"))
	m.target = G.NewMatrix(m.g, tensor.Float64, G.WithShape(batch, 2), G.WithName("target"))

	kernel, err := gmnode.NewKernel(m.g, 2, 1, 5, d, 2.5, rng, tensor.Float64, "conv")
	if err != nil {
		return nil, err
	}
	y := G.Must(gmnode.Conv(m.x, kernel.Node()))
	y = G.Must(gmnode.Integrate(y))
	scale := G.NewMatrix(m.g, tensor.Float64, G.WithShape(1, 2), G.WithName("bn_scale"), G.WithInit(G.Ones()))
	bias := G.NewMatrix(m.g, tensor.Float64, G.WithShape(1, 2), G.WithName("bn_bias"), G.WithInit(G.Zeroes()))
	if y, err = normalise(y, scale, bias); err != nil {
		return nil, err
	}
	logp := G.Must(G.LogSoftMax(y))
	m.loss = G.Must(G.Neg(G.Must(G.Mean(G.Must(G.Sum(G.Must(G.HadamardProd(logp, m.target)), 1))))))
	m.learnables = append(kernel.Learnables(), scale, bias)
	return m, nil
}

// let binds a fresh batch to the inputs.
func (m *exampleModel) let(rng *rand.Rand) error {
	xs, ts := twoClassBatch(rng, m.l)
	if err := G.Let(m.x, xs); err != nil {
		return err
	}
	return G.Let(m.target, ts)
}

// train runs steps Adam steps on fresh batches, running the graph
// (forward and backward) with run, and returns the first and the last loss.
func (m *exampleModel) train(run func() error, rng *rand.Rand, steps int) (first, last float64, err error) {
	solver := G.NewAdamSolver(G.WithLearnRate(0.05))
	for step := range steps {
		if err := m.let(rng); err != nil {
			return 0, 0, err
		}
		if err := run(); err != nil {
			return 0, 0, err
		}
		if err := solver.Step(G.NodesToValueGrads(m.learnables)); err != nil {
			return 0, 0, err
		}
		last = m.loss.Value().Data().(float64)
		if step == 0 {
			first = last
		}
	}
	return first, last, nil
}

// twoClassBatch returns mixtures whose weights are all positive (class 0) or
// all negative (class 1), with random positions and covariances, and the
// one-hot targets.
func twoClassBatch(rng *rand.Rand, l mixture.Layout) (*tensor.Dense, *tensor.Dense) {
	gs := make([]mixture.Gaussian, 0, l.B*l.N)
	t := make([]float64, l.B*2)
	for b := range l.B {
		class := b % 2
		t[2*b+class] = 1
		sign := 1 - 2*float64(class)
		for range l.N {
			s := 0.5 + rng.Float64()
			gs = append(gs, mixture.Gaussian{
				Weight:     sign * (0.2 + rng.Float64()),
				Position:   []float64{4*rng.Float64() - 2, 4*rng.Float64() - 2},
				Covariance: []float64{s, 0.1, 0.1, s},
			})
		}
	}
	data, _ := mixture.Pack[float64](l, gs)
	return tensor.New(tensor.WithShape(l.Shape()...), tensor.WithBacking(data)),
		tensor.New(tensor.WithShape(l.B, 2), tensor.WithBacking(t))
}

// ExampleScaleAxes augments a batch with per-sample random scalings inside
// a graph: the factors are an input node [B, D] bound to fresh draws every
// step, so one graph serves every step and gradients still reach the
// mixtures (and the factors, if they were learnable). Each sample gets a
// zoom in [0.8, 1.25] (log-uniform) times a stretch in [0.9, 1.1] per axis,
// and half the samples are mirrored along x. Positions and covariances
// follow; the weights (integrals) do not change.
func ExampleScaleAxes() {
	const batch = 3
	l := mixture.Layout{B: batch, C: 1, N: 1, D: 2}
	g := G.NewGraph()
	x := G.NewTensor(g, tensor.Float64, 4, G.WithShape(l.Shape()...), G.WithName("x"))
	s := G.NewMatrix(g, tensor.Float64, G.WithShape(batch, l.D), G.WithName("scales"))
	y, err := gmnode.ScaleAxes(x, s)
	if err != nil {
		fmt.Println(err)
		return
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()

	// Every sample is the same Gaussian, w = 1 at (1, 1) with correlated
	// axes, so the printout shows only the augmentation; a mirror flips the
	// sign of the correlation.
	gs := make([]mixture.Gaussian, batch)
	for b := range gs {
		gs[b] = mixture.Gaussian{Weight: 1, Position: []float64{1, 1}, Covariance: []float64{1, 0.5, 0.5, 1}}
	}
	data, _ := mixture.Pack[float64](l, gs)
	rng := rand.New(rand.NewPCG(3, 4))
	for step := range 2 {
		factors := make([]float64, batch*l.D)
		for b := range batch {
			zoom := math.Exp(math.Log(0.8) + (math.Log(1.25)-math.Log(0.8))*rng.Float64())
			for d := range l.D {
				factors[b*l.D+d] = zoom * (0.9 + 0.2*rng.Float64())
			}
			if rng.IntN(2) == 0 {
				factors[b*l.D] = -factors[b*l.D]
			}
		}
		if err := G.Let(x, tensor.New(tensor.WithShape(l.Shape()...), tensor.WithBacking(data))); err != nil {
			fmt.Println(err)
			return
		}
		if err := G.Let(s, tensor.New(tensor.WithShape(batch, l.D), tensor.WithBacking(factors))); err != nil {
			fmt.Println(err)
			return
		}
		vm.Reset()
		if err := vm.RunAll(); err != nil {
			fmt.Println(err)
			return
		}
		out := y.Value().Data().([]float64)
		for b := range batch {
			v := out[b*l.Stride():]
			fmt.Printf("step %d sample %d: w %.0f  μ (%+.2f, %+.2f)  Σ [[%.2f, %+.2f], [%+.2f, %.2f]]\n", step, b, v[0], v[1], v[2], v[3], v[4], v[5], v[6])
		}
	}
	// Output:
	// step 0 sample 0: w 1  μ (+1.02, +1.05)  Σ [[1.04, +0.54], [+0.54, 1.11]]
	// step 0 sample 1: w 1  μ (+0.82, +0.80)  Σ [[0.68, +0.33], [+0.33, 0.64]]
	// step 0 sample 2: w 1  μ (-1.16, +1.00)  Σ [[1.34, -0.58], [-0.58, 1.00]]
	// step 1 sample 0: w 1  μ (+0.85, +0.82)  Σ [[0.72, +0.35], [+0.35, 0.68]]
	// step 1 sample 1: w 1  μ (-1.01, +1.02)  Σ [[1.03, -0.52], [-0.52, 1.04]]
	// step 1 sample 2: w 1  μ (-0.82, +0.91)  Σ [[0.67, -0.37], [-0.37, 0.83]]
}

// ExampleConvFit fits the convolution of two data channels of six
// Gaussians with kernels of three Gaussians of either sign (36 convolved
// Gaussians) to 8 Gaussians while convolving, under the default split rule
// (negative groups at half priority) and with both signs alike
// (ConvFitNegative(1)). Both keep the convolution's integral, as every
// fused fit with at least two groups does; the default spends more of the
// groups on positive weight, which a ReLU after it keeps.
func ExampleConvFit() {
	rng := rand.New(rand.NewPCG(5, 6))
	lx := mixture.Layout{B: 1, C: 2, N: 6, D: 2}
	lk := mixture.Layout{B: 1, C: 2, N: 3, D: 2}
	random := func(l mixture.Layout, signed bool) *tensor.Dense {
		gs := make([]mixture.Gaussian, l.Mixtures()*l.N)
		for i := range gs {
			w := 0.2 + rng.Float64()
			if signed && i%3 != 0 {
				w = -w
			}
			s := 0.2 + 0.3*rng.Float64()
			gs[i] = mixture.Gaussian{Weight: w, Position: []float64{4*rng.Float64() - 2, 4*rng.Float64() - 2}, Covariance: []float64{s, 0, 0, s}}
		}
		data, _ := mixture.Pack[float64](l, gs)
		return tensor.New(tensor.WithShape(l.Shape()...), tensor.WithBacking(data))
	}
	g := G.NewGraph()
	x := G.NewTensor(g, tensor.Float64, 4, G.WithShape(lx.Shape()...), G.WithValue(random(lx, false)), G.WithName("x"))
	k := G.NewTensor(g, tensor.Float64, 4, G.WithShape(lk.Shape()...), G.WithValue(random(lk, true)), G.WithName("k"))
	full, err := gmnode.Conv(x, k)
	if err != nil {
		fmt.Println(err)
		return
	}
	half, err := gmnode.ConvFit(x, k, 8)
	if err != nil {
		fmt.Println(err)
		return
	}
	alike, err := gmnode.ConvFit(x, k, 8, gmnode.ConvFitNegative(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	var integrals [3]*G.Node
	for i, y := range []*G.Node{full, half, alike} {
		if integrals[i], err = gmnode.Integrate(y); err != nil {
			fmt.Println(err)
			return
		}
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		fmt.Println(err)
		return
	}
	positive := func(y *G.Node) (n int) {
		v := y.Value().Data().([]float64)
		for i := 0; i < len(v); i += lx.Stride() {
			if v[i] > 0 {
				n++
			}
		}
		return n
	}
	for i, name := range []string{"Conv", "ConvFit, default", "ConvFit, signs alike"} {
		y := []*G.Node{full, half, alike}[i]
		fmt.Printf("%-21s %2d Gaussians, %2d positive, integral %.4f\n", name+":", y.Shape()[2], positive(y), integrals[i].Value().Data().([]float64)[0])
	}
	// Output:
	// Conv:                 36 Gaussians, 12 positive, integral -1.0063
	// ConvFit, default:      8 Gaussians,  5 positive, integral -1.0063
	// ConvFit, signs alike:  8 Gaussians,  4 positive, integral -1.0063
}
