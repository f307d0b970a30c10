package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
)

// BenchmarkWeightDecayFactorsBackward is the factors' part of the weight
// decay's gradient for the paper MNIST model's largest kernel (64·32·5
// factors) in 2D and its ModelNet10 twin in 3D, float32: the trainer
// applies it to every kernel once per step.
func BenchmarkWeightDecayFactorsBackward(b *testing.B) {
	for _, d := range []int{2, 3} {
		n := 64 * 32 * 5
		rng := rand.New(rand.NewPCG(3, 4))
		a := gmtest.Uniform[float32](rng, n*d*d, -1, 1)
		da := make([]float32, len(a))
		b.Run(fmt.Sprintf("%dD_N%d", d, n), func(b *testing.B) {
			for b.Loop() {
				WeightDecayFactorsBackward(da, a, d, 1)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/factor")
		})
	}
}
