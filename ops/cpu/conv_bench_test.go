package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gmcn-go/gmcn/ops/mixture"
)

// convBenchSizes are the paper's layer sizes: B = 21, Fi = 8, Ni = 32,
// Fo = 16, Nk = 5, giving 21·16 output mixtures of 1280 Gaussians each.
var convBenchSizes = []struct{ d, b, fi, ni, fo, nk int }{
	{2, 21, 8, 32, 16, 5},
	{3, 21, 8, 32, 16, 5},
}

// convBench runs f in float32 on the operands of each size: data, kernels
// and an incoming gradient of the output's layout.
func convBench(b *testing.B, f func(x, k, g []float32, lx, lk mixture.Layout)) {
	for _, s := range convBenchSizes {
		name := fmt.Sprintf("%dD_B%d_Fi%d_Ni%d_Fo%d_Nk%d", s.d, s.b, s.fi, s.ni, s.fo, s.nk)
		b.Run(name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(17, uint64(s.d)))
			lx, lk := convLayouts(s.d, s.b, s.fi, s.ni, s.fo, s.nk)
			x, k := convTo32(convRandom(rng, lx)), convTo32(convRandom(rng, lk))
			g := make([]float32, ConvLayout(lx, lk).Len())
			for i := range g {
				g[i] = float32(rng.NormFloat64())
			}
			b.SetBytes(int64(4 * len(g)))
			for b.Loop() {
				f(x, k, g, lx, lk)
			}
		})
	}
}

func BenchmarkConvForward(b *testing.B) {
	var y []float32
	convBench(b, func(x, k, g []float32, lx, lk mixture.Layout) {
		if len(y) != len(g) {
			y = make([]float32, len(g))
		}
		Conv(y, x, k, lx, lk)
	})
}

func BenchmarkConvBackwardData(b *testing.B) {
	var dx []float32
	convBench(b, func(x, k, g []float32, lx, lk mixture.Layout) {
		if len(dx) != len(x) {
			dx = make([]float32, len(x))
		}
		ConvBackwardData(dx, g, k, lx, lk)
	})
}

func BenchmarkConvBackwardKernels(b *testing.B) {
	var dk []float32
	convBench(b, func(x, k, g []float32, lx, lk mixture.Layout) {
		if len(dk) != len(k) {
			dk = make([]float32, len(k))
		}
		ConvBackwardKernels(dk, g, x, lx, lk)
	})
}
