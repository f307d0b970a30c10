package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/internal/parallel"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// relufitBenchLayouts is the paper's benchmark, 800 mixtures × 256
// Gaussians, as [B=50, C=16, N=256] in 2D and 3D.
func relufitBenchLayouts() []mixture.Layout {
	return []mixture.Layout{{B: 50, C: 16, N: 256, D: 2}, {B: 50, C: 16, N: 256, D: 3}}
}

func relufitBenchName(l mixture.Layout) string {
	return fmt.Sprintf("%dD_B%d_C%d_N%d", l.D, l.B, l.C, l.N)
}

func BenchmarkReLUFitForward(b *testing.B) { benchReLUFitForward(b, device.ReLUFitOptions{}) }

// BenchmarkReLUFitRefined is the forward of the refined fit.
func BenchmarkReLUFitRefined(b *testing.B) {
	benchReLUFitForward(b, device.ReLUFitOptions{Refine: true})
}

func benchReLUFitForward(b *testing.B, opts device.ReLUFitOptions) {
	for _, l := range relufitBenchLayouts() {
		x := gmtest.To32(relufitRandom(rand.New(rand.NewPCG(1, 2)), l, 0, 4))
		y := make([]float32, len(x))
		b.Run(relufitBenchName(l), func(b *testing.B) {
			for b.Loop() {
				if err := ReLUFit(y, x, nil, nil, l, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkReLUFitBackward(b *testing.B) { benchReLUFitBackward(b, device.ReLUFitOptions{}) }

// BenchmarkReLUFitRefinedBackward is the backward of the refined fit, which
// refits every mixture to rebuild the refinement's tape.
func BenchmarkReLUFitRefinedBackward(b *testing.B) {
	benchReLUFitBackward(b, device.ReLUFitOptions{Refine: true})
}

func benchReLUFitBackward(b *testing.B, opts device.ReLUFitOptions) {
	for _, l := range relufitBenchLayouts() {
		rng := rand.New(rand.NewPCG(1, 2))
		x := gmtest.To32(relufitRandom(rng, l, 0, 4))
		g := gmtest.To32(relufitRandom(rng, l, 0, 1))
		dx := make([]float32, len(x))
		b.Run(relufitBenchName(l), func(b *testing.B) {
			for b.Loop() {
				if err := ReLUFitBackward(dx, nil, nil, x, nil, nil, g, l, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReLUFitNaive is the baseline the SoA kernel is measured against:
// the same forward over Prepared Gaussians with math.Exp, in float32, one
// pass per sum, parallel over mixtures.
func BenchmarkReLUFitNaive(b *testing.B) {
	for _, l := range relufitBenchLayouts() {
		x := gmtest.To32(relufitRandom(rand.New(rand.NewPCG(1, 2)), l, 0, 4))
		y := make([]float32, len(x))
		b.Run(relufitBenchName(l), func(b *testing.B) {
			ps := make([][]mixture.Prepared[float32], parallel.Workers(l.Mixtures()))
			for i := range ps {
				ps[i] = make([]mixture.Prepared[float32], l.N)
			}
			st := l.Stride()
			for b.Loop() {
				parallel.ForWorker(l.Mixtures(), func(w, m int) {
					mx, out := mixture.Mixture(x, l, m), mixture.Mixture(y, l, m)
					mixture.PrepareMixture(l.D, mx, ps[w])
					for k := range l.N {
						mu := mx[k*st+1 : k*st+1+l.D]
						tk := mixture.EvalMixture(l.D, ps[w], mu)
						var ek float32
						for j := range ps[w] {
							ek += (max(mx[j*st], 0) + 0.1) * ps[w][j].Norm * float32(math.Exp(float64(ps[w][j].Exponent(l.D, mu))))
						}
						out[k*st] = (max(mx[k*st], 0) + 0.1) * (max(tk, 0) + 0.05) / (ek + 0.05)
					}
				})
			}
		})
	}
}
