package ops

import (
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestIntegrateGrad(t *testing.T) {
	for _, d := range []int{2, 3} {
		rng := rand.New(rand.NewPCG(1, uint64(d)))
		x := randomMixture(rng, 2, 3, 4, d)
		checkGraphGrad(t, rng, []*tensor.Dense{x}, func(in []*G.Node) (*G.Node, error) {
			return G.ApplyOp(NewIntegrate(), in[0])
		}, 0)
	}
}
