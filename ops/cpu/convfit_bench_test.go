package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops/device"
)

// convFitBenchSizes are the paper's MNIST blocks 2 and 4 at batch 8 with the
// fused presets' F = 16: Fi·Ni·Nk = 1280 virtual components per output
// mixture, fitted to n = 256 and 64.
var convFitBenchSizes = []struct{ d, b, fi, ni, fo, nk, n int }{
	{2, 8, 8, 32, 16, 5, 256},
	{2, 8, 32, 8, 64, 5, 64},
	{3, 8, 8, 32, 16, 5, 256},
}

// convFitBench runs f on float32 operands of each size: the inputs, the
// selection of one ConvFitSaving and an incoming gradient.
func convFitBench(b *testing.B, f func(o *convOperands, s device.ConvFitSelect, sel *ConvFitSelection)) {
	for _, s := range convFitBenchSizes {
		name := fmt.Sprintf("%dD_B%d_Fi%d_Ni%d_Fo%d_Nk%d_n%d", s.d, s.b, s.fi, s.ni, s.fo, s.nk, s.n)
		b.Run(name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(19, uint64(s.d)))
			o := convOperands{}
			var x, k []float64
			o.lx, o.lk, x, k = convInputs(rng, s.d, s.b, s.fi, s.ni, s.fo, s.nk)
			o.x, o.k = gmtest.To32(x), gmtest.To32(k)
			ly := device.ConvFitLayout(o.lx, o.lk, s.n)
			o.y, o.g = make([]float32, ly.Len()), make([]float32, ly.Len())
			for i := range o.g {
				o.g[i] = float32(rng.NormFloat64())
			}
			o.dx, o.dk = make([]float32, len(o.x)), make([]float32, len(o.k))
			sel := ConvFitSaving(o.y, o.x, o.k, o.lx, o.lk, device.ConvFitSelect{N: s.n, Negative: device.DefaultConvFitNegative})
			for b.Loop() {
				f(&o, sel.s, sel)
			}
		})
	}
}

func BenchmarkConvFitForward(b *testing.B) {
	convFitBench(b, func(o *convOperands, s device.ConvFitSelect, _ *ConvFitSelection) {
		ConvFitSaving(o.y, o.x, o.k, o.lx, o.lk, s)
	})
}

// BenchmarkConvFitBackward computes ∂L/∂x and then ∂L/∂k with the saved
// selection, one call each, as the graph's two grad ops do.
func BenchmarkConvFitBackward(b *testing.B) {
	convFitBench(b, func(o *convOperands, s device.ConvFitSelect, sel *ConvFitSelection) {
		ConvFitBackwardSaved(o.dx, nil, o.g, o.x, o.k, o.lx, o.lk, s, sel)
		ConvFitBackwardSaved(nil, o.dk, o.g, o.x, o.k, o.lx, o.lk, s, sel)
	})
}

// nearBenchRadii are the radii of the near-group benchmarks: 1, and ∞,
// where the corrections make the exact targets (the convolution at every
// centroid).
var nearBenchRadii = []float64{1, math.Inf(1)}

// BenchmarkConvFitNear computes the near-group corrections at each of
// nearBenchRadii on ConvFit's output (convFitBench's sizes).
func BenchmarkConvFitNear(b *testing.B) {
	for _, r := range nearBenchRadii {
		b.Run(fmt.Sprintf("r%g", r), func(b *testing.B) {
			convFitBench(b, func(o *convOperands, _ device.ConvFitSelect, sel *ConvFitSelection) {
				ConvFitNear(o.g, o.x, o.k, o.y, o.lx, o.lk, sel, r, 0.125)
			})
		})
	}
}

// BenchmarkConvFitNearBackward computes the corrections' gradients at each
// of nearBenchRadii: data, kernels and ConvFit's output in one call.
func BenchmarkConvFitNearBackward(b *testing.B) {
	for _, r := range nearBenchRadii {
		b.Run(fmt.Sprintf("r%g", r), func(b *testing.B) {
			var df []float32
			convFitBench(b, func(o *convOperands, _ device.ConvFitSelect, sel *ConvFitSelection) {
				if len(df) != len(o.y) {
					df = make([]float32, len(o.y))
				}
				ConvFitNearBackward(o.dx, o.dk, df, o.g, o.x, o.k, o.y, o.lx, o.lk, sel, r, 0.125)
			})
		})
	}
}
