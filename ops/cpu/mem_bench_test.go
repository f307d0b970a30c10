package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// memBenchSizes are the reduction of the paper's second ModelNet layer:
// B = 21, C = 16 mixtures of N = 2560 dense-fitted Gaussians to Np = 32.
var memBenchSizes = []struct{ d, b, c, n, np int }{
	{2, 21, 16, 2560, 32},
	{3, 21, 16, 2560, 32},
}

// memBench runs f on float32 operands of each size: positive weights (as
// after the ReLU fit) summing to about 1 per mixture, positions in a cube of
// side 16, unit-scale covariances, and a random incoming gradient.
func memBench(b *testing.B, f func(y, x, g, dx []float32, l mixture.Layout, np int)) {
	for _, s := range memBenchSizes {
		b.Run(fmt.Sprintf("%dD_B%d_C%d_N%d_Np%d", s.d, s.b, s.c, s.n, s.np), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(60, uint64(s.d)))
			l := mixture.Layout{B: s.b, C: s.c, N: s.n, D: s.d}
			lo := withN(l, s.np)
			x := gmtest.To32(memMixture(rng, l, 8, 1/float64(s.n), 1, true))
			g := make([]float32, lo.Len())
			for i := range g {
				g[i] = float32(rng.NormFloat64())
			}
			y, dx := make([]float32, lo.Len()), make([]float32, l.Len())
			for b.Loop() {
				f(y, x, g, dx, l, s.np)
			}
		})
	}
}

func BenchmarkMEMForward(b *testing.B) {
	memBench(b, func(y, x, _, _ []float32, l mixture.Layout, np int) { MEM(y, x, l, np) })
}

func BenchmarkMEMBackward(b *testing.B) {
	memBench(b, func(_, x, g, dx []float32, l mixture.Layout, np int) { MEMBackward(dx, x, g, l, np) })
}
