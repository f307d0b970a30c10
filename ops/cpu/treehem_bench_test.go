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

// treehemBench holds the float32 buffers of one reduction benchmark
// [B, C, N] → np with T = 2: the input x of layout l, the output y, an
// incoming gradient g and the input's gradient dx.
type treehemBench struct {
	name        string
	l           mixture.Layout
	np          int
	x, y, g, dx []float32
}

func newTreeHEMBench(d, bs, c, n, np int) treehemBench {
	l := mixture.Layout{B: bs, C: c, N: n, D: d}
	x := treehemBenchInput(l)
	y := make([]float32, bs*c*np*l.Stride())
	g := make([]float32, len(y))
	for i := range g {
		g[i] = float32(i%7) - 3
	}
	name := fmt.Sprintf("%dD_B%d_C%d_N%d_Np%d_T2", d, bs, c, n, np)
	return treehemBench{name: name, l: l, np: np, x: x, y: y, g: g, dx: make([]float32, len(x))}
}

// BenchmarkTreeHEM measures in float32 with T = 2 the paper's reduction
// [21, 16, 2560] → 32, forward and backward (which recomputes the decisions
// and the forward caches, then runs reverse mode), and one training step of
// the reduction [21, 16, 1280] → 16 as the ops run it (FwdBwd):
// TreeHEMSaving keeping its decisions, then TreeHEMBackwardSaved with them.
func BenchmarkTreeHEM(b *testing.B) {
	o := device.TreeHEMOptions{Reduction: 2}
	for _, s := range []struct {
		what  string
		n, np int
		step  func(t treehemBench) error
	}{
		{"Forward", 2560, 32, func(t treehemBench) error { return TreeHEM(t.y, t.x, t.l, t.np, o) }},
		{"Backward", 2560, 32, func(t treehemBench) error { return TreeHEMBackward(t.dx, t.x, t.g, t.l, t.np, o) }},
		{"FwdBwd", 1280, 16, func(t treehemBench) error {
			dec, err := TreeHEMSaving(t.y, t.x, t.l, t.np, o)
			if err != nil {
				return err
			}
			return TreeHEMBackwardSaved(t.dx, t.x, t.g, dec)
		}},
	} {
		for _, d := range []int{2, 3} {
			t := newTreeHEMBench(d, 21, 16, s.n, s.np)
			b.Run(s.what+"/"+t.name, func(b *testing.B) {
				for b.Loop() {
					if err := s.step(t); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
