package ops

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestGraphGrads checks the gradients of the ops through a whole graph, 2D
// and 3D (checkGraphGrad), on inputs from randomMixture or kernelRawTensors.
// The ops that need inputs of their own or frozen parts (Evaluate's point
// broadcasts, ReLUFit, TreeHEM, MEM, AssembleKernel, CovScaleNorm,
// Standardise's mixture input) have their tests next to the op.
func TestGraphGrads(t *testing.T) {
	mixtures := func(shapes ...[3]int) func(rng *rand.Rand, d int) []*tensor.Dense {
		return func(rng *rand.Rand, d int) []*tensor.Dense {
			in := make([]*tensor.Dense, len(shapes))
			for i, s := range shapes {
				in[i] = randomMixture(rng, s[0], s[1], s[2], d)
			}
			return in
		}
	}
	apply := func(op func() G.Op) func(in []*G.Node) (*G.Node, error) {
		return func(in []*G.Node) (*G.Node, error) { return G.ApplyOp(op(), in...) }
	}
	// scaled applies the convolution op and ScaleWeights(1/Fi) with Fi = 3.
	scaled := func(conv func() G.Op) func(in []*G.Node) (*G.Node, error) {
		return func(in []*G.Node) (*G.Node, error) {
			y, err := G.ApplyOp(conv(), in[0], in[1])
			if err != nil {
				return nil, err
			}
			return G.ApplyOp(NewScaleWeights(testDev, 1.0/3), y)
		}
	}
	convFitScaled := func(n int) func(in []*G.Node) (*G.Node, error) {
		return scaled(func() G.Op { return NewConvFit(testDev, fitN(n)) })
	}
	cases := []struct {
		name   string
		seed   uint64
		inputs func(rng *rand.Rand, d int) []*tensor.Dense
		build  func(in []*G.Node) (*G.Node, error)
		wrt    []int
	}{
		// Every dimension of a distinct size.
		{"Conv", 21, mixtures([3]int{2, 3, 4}, [3]int{2, 3, 3}), apply(on(NewConv)), []int{0, 1}},
		// The reference layer's Conv → ScaleWeights(1/Fi) chain, where both
		// grad ops meet.
		{"Conv+ScaleWeights", 22, mixtures([3]int{2, 3, 2}, [3]int{3, 3, 2}), scaled(on(NewConv)), []int{0, 1}},
		// ConvFit (scaled as in the reference layer) for an n that groups
		// components, one that keeps them all (Fi·Ni·Nk = 36) and one that
		// pads. The seeded inputs keep their tree and selection under the
		// difference step; a changed decision would show as a large error,
		// not hide one.
		{"ConvFit n=5", 41, mixtures([3]int{2, 3, 4}, [3]int{2, 3, 3}), convFitScaled(5), []int{0, 1}},
		{"ConvFit n=36", 41, mixtures([3]int{2, 3, 4}, [3]int{2, 3, 3}), convFitScaled(36), []int{0, 1}},
		{"ConvFit n=40", 41, mixtures([3]int{2, 3, 4}, [3]int{2, 3, 3}), convFitScaled(40), []int{0, 1}},
		// The weights of randomMixture are distinct, so the kept set does not
		// change under the difference step.
		{"KeepLargest", 43, mixtures([3]int{2, 3, 7}), apply(func() G.Op { return NewKeepLargest(testDev, 3) }), []int{0}},
		{"CovScale", 31, mixtures([3]int{2, 3, 4}), apply(on(NewCovScale)), []int{0}},
		{"ScaleWeights", 31, mixtures([3]int{2, 3, 4}), apply(func() G.Op { return NewScaleWeights(testDev, -0.7) }), []int{0}},
		{"Integrate", 1, mixtures([3]int{2, 3, 4}), apply(on(NewIntegrate)), []int{0}},
		// Every form of the factors; the shared ones sum their gradient over
		// the mixtures (and samples) that read them.
		{"ScaleAxes [D]", 33, scalesOf(), apply(func() G.Op { return mustScaleAxes(1) }), []int{0, 1}},
		{"ScaleAxes [B, D]", 34, scalesOf(2), apply(func() G.Op { return mustScaleAxes(2) }), []int{0, 1}},
		{"ScaleAxes [B, C, D]", 35, scalesOf(2, 3), apply(func() G.Op { return mustScaleAxes(3) }), []int{0, 1}},
		{"WeightDecay", 42, func(rng *rand.Rand, d int) []*tensor.Dense {
			w, _, a := kernelRawTensors(rng, 2, 3, 4, d, 1.2)
			return []*tensor.Dense{w, a}
		}, apply(on(NewWeightDecay)), []int{0, 1}},
		// ∂L/∂gain only: sd does not depend on the gain, so nothing needs
		// freezing.
		{"Standardise gain", 7, func(rng *rand.Rand, d int) []*tensor.Dense {
			return []*tensor.Dense{randomMixture(rng, 2, 2, 3, d), tensor.New(tensor.WithShape(1), tensor.WithBacking([]float64{1.3}))}
		}, apply(on(NewStandardise)), []int{1}},
	}
	for _, c := range cases {
		for _, d := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/%dD", c.name, d), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(c.seed, uint64(d)))
				checkGraphGrad(t, rng, c.inputs(rng, d), c.build, c.wrt...)
			})
		}
	}
}

// checkGraphGrad is gmtest.GraphGrad, the graph gradient check that the
// op tests of this package and the gmnode and models tests share.
var checkGraphGrad = gmtest.GraphGrad
