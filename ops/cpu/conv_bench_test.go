package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// convBenchSizes are the paper's layer sizes: B = 21, Fi = 8, Ni = 32,
// Fo = 16, Nk = 5, giving 21·16 output mixtures of 1280 Gaussians each.
var convBenchSizes = []struct{ d, b, fi, ni, fo, nk int }{
	{2, 21, 8, 32, 16, 5},
	{3, 21, 8, 32, 16, 5},
}

// convOperands are the float32 buffers of one benchmark size: the forward
// inputs x and k, an incoming gradient g of the output's layout, and outputs
// y, dx and dk allocated once outside the timed loop.
type convOperands struct {
	lx, lk    mixture.Layout
	x, k, g   []float32
	y, dx, dk []float32
}

// convBench runs f on the operands of each size. SetBytes counts one pass
// over the output-sized tensor (written by the forward, read by both
// backward kernels), which dominates the memory traffic.
func convBench(b *testing.B, f func(o *convOperands)) {
	for _, s := range convBenchSizes {
		name := fmt.Sprintf("%dD_B%d_Fi%d_Ni%d_Fo%d_Nk%d", s.d, s.b, s.fi, s.ni, s.fo, s.nk)
		b.Run(name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(17, uint64(s.d)))
			o := convOperands{}
			var x, k []float64
			o.lx, o.lk, x, k = convInputs(rng, s.d, s.b, s.fi, s.ni, s.fo, s.nk)
			o.x, o.k = gmtest.To32(x), gmtest.To32(k)
			o.g = make([]float32, device.ConvLayout(o.lx, o.lk).Len())
			for i := range o.g {
				o.g[i] = float32(rng.NormFloat64())
			}
			o.y, o.dx, o.dk = make([]float32, len(o.g)), make([]float32, len(o.x)), make([]float32, len(o.k))
			b.SetBytes(int64(4 * len(o.g)))
			for b.Loop() {
				f(&o)
			}
		})
	}
}

func BenchmarkConvForward(b *testing.B) {
	convBench(b, func(o *convOperands) { Conv(o.y, o.x, o.k, o.lx, o.lk) })
}

func BenchmarkConvBackwardData(b *testing.B) {
	convBench(b, func(o *convOperands) { ConvBackwardData(o.dx, o.g, o.k, o.lx, o.lk) })
}

func BenchmarkConvBackwardKernels(b *testing.B) {
	convBench(b, func(o *convOperands) { ConvBackwardKernels(o.dk, o.g, o.x, o.lx, o.lk) })
}
