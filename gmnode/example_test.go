package gmnode_test

import (
	"fmt"
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
	const batch, n, d = 16, 6, 2
	rng := rand.New(rand.NewPCG(1, 2))
	g := G.NewGraph()

	l := mixture.Layout{B: batch, C: 1, N: n, D: d}
	x := G.NewTensor(g, tensor.Float64, 4, G.WithShape(l.Shape()...), G.WithName("x"))
	target := G.NewMatrix(g, tensor.Float64, G.WithShape(batch, 2), G.WithName("target"))

	kernel, err := gmnode.NewKernel(g, 2, 1, 5, d, 2.5, rng, tensor.Float64, "conv")
	if err != nil {
		fmt.Println(err)
		return
	}
	y := G.Must(gmnode.Conv(x, kernel.Node()))
	y = G.Must(gmnode.Integrate(y))
	scale := G.NewMatrix(g, tensor.Float64, G.WithShape(1, 2), G.WithName("bn_scale"), G.WithInit(G.Ones()))
	bias := G.NewMatrix(g, tensor.Float64, G.WithShape(1, 2), G.WithName("bn_bias"), G.WithInit(G.Zeroes()))
	y, _, _, _, err = G.BatchNorm(y, scale, bias, 0.1, 1e-5)
	if err != nil {
		fmt.Println(err)
		return
	}
	logp := G.Must(G.LogSoftMax(y))
	loss := G.Must(G.Neg(G.Must(G.Mean(G.Must(G.Sum(G.Must(G.HadamardProd(logp, target)), 1))))))

	learnables := append(kernel.Learnables(), scale, bias)
	if _, err := G.Grad(loss, learnables...); err != nil {
		fmt.Println(err)
		return
	}
	vm := G.NewTapeMachine(g, G.BindDualValues(learnables...))
	defer vm.Close()
	solver := G.NewAdamSolver(G.WithLearnRate(0.05))

	first, last := 0.0, 0.0
	for step := range 30 {
		xs, ts := twoClassBatch(rng, l)
		G.Let(x, xs)
		G.Let(target, ts)
		vm.Reset()
		if err := vm.RunAll(); err != nil {
			fmt.Println(err)
			return
		}
		if err := solver.Step(G.NodesToValueGrads(learnables)); err != nil {
			fmt.Println(err)
			return
		}
		last = loss.Value().Data().(float64)
		if step == 0 {
			first = last
		}
	}
	fmt.Printf("loss went down: %v\n", last < first/2)
	// Output: loss went down: true
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
