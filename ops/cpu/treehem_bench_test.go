package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// treehemBenchInput returns a float32 batch like a ModelNet10 layer-2
// convolution output after dense fitting: positive weights, positions in
// [−3, 3)^D.
func treehemBenchInput(l mixture.Layout) []float32 {
	return gmtest.To32(treehemMixture(rand.New(rand.NewPCG(1, uint64(l.D))), l, 0.1))
}

// BenchmarkTreeHEM measures the paper's reduction [21, 16, 2560] → 32 with
// T = 2 in float32: the forward pass, and the backward pass (which recomputes
// the decisions and the forward caches, then runs reverse mode).
func BenchmarkTreeHEM(b *testing.B) {
	const B, C, N, np = 21, 16, 2560, 32
	o := device.TreeHEMOptions{Reduction: 2}
	for _, d := range []int{2, 3} {
		l := mixture.Layout{B: B, C: C, N: N, D: d}
		x := treehemBenchInput(l)
		y := make([]float32, B*C*np*l.Stride())
		name := fmt.Sprintf("%dD_B%d_C%d_N%d_Np%d_T2", d, B, C, N, np)
		b.Run("Forward/"+name, func(b *testing.B) {
			for b.Loop() {
				if err := TreeHEM(y, x, l, np, o); err != nil {
					b.Fatal(err)
				}
			}
		})
		g := make([]float32, len(y))
		for i := range g {
			g[i] = float32(i%7) - 3
		}
		dx := make([]float32, len(x))
		b.Run("Backward/"+name, func(b *testing.B) {
			for b.Loop() {
				if err := TreeHEMBackward(dx, x, g, l, np, o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	benchmarkTreeHEMFwdBwd(b)
}

// benchmarkTreeHEMFwdBwd measures one training step of the reduction
// [21, 16, 1280] → 16 with T = 2 in float32 as the ops run it: TreeHEMSaving
// keeping its decisions, then TreeHEMBackwardSaved with them.
func benchmarkTreeHEMFwdBwd(b *testing.B) {
	const B, C, N, np = 21, 16, 1280, 16
	o := device.TreeHEMOptions{Reduction: 2}
	for _, d := range []int{2, 3} {
		l := mixture.Layout{B: B, C: C, N: N, D: d}
		x := treehemBenchInput(l)
		y := make([]float32, B*C*np*l.Stride())
		g := make([]float32, len(y))
		for i := range g {
			g[i] = float32(i%7) - 3
		}
		dx := make([]float32, len(x))
		b.Run(fmt.Sprintf("FwdBwd/%dD_B%d_C%d_N%d_Np%d_T2", d, B, C, N, np), func(b *testing.B) {
			for b.Loop() {
				dec, err := TreeHEMSaving(y, x, l, np, o)
				if err != nil {
					b.Fatal(err)
				}
				if err := TreeHEMBackwardSaved(dx, x, g, dec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
