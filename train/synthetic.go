package train

import (
	"math/rand/v2"

	"github.com/gmcn-go/gmcn/ops/mixture"

	"github.com/gmcn-go/gmcn/dataset"
)

// SyntheticLines returns n labelled 2D mixtures of k Gaussians for a
// two-class problem that needs spatial structure to solve: the components of
// class 0 lie along a horizontal line, those of class 1 along a vertical one,
// with random centre, spacing, jitter and weights. Every mixture has the
// same total weight, so integration alone cannot tell the classes apart.
func SyntheticLines(n, k int, seed uint64) *dataset.Inputs {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	l := mixture.Layout{B: n, C: 1, N: k, D: 2}
	s := &dataset.Inputs{Mixtures: make([]float32, l.Len()), Layout: l, Labels: make([]int, n), Classes: 2}
	st := l.Stride()
	for i := range n {
		label := i % 2
		s.Labels[i] = label
		cx, cy := 4*rng.Float64()-2, 4*rng.Float64()-2
		step := 0.8 + 0.4*rng.Float64()
		for j := range k {
			g := s.Mixtures[(i*k+j)*st : (i*k+j+1)*st]
			along := (float64(j) - float64(k-1)/2) * step
			across := 0.15 * rng.NormFloat64()
			x, y := cx+along, cy+across
			if label == 1 {
				x, y = cx+across, cy+along
			}
			g[0] = float32(1 / float64(k) * (0.5 + rng.Float64()))
			g[1], g[2] = float32(x), float32(y)
			g[3], g[4], g[5], g[6] = 0.3, 0, 0, 0.3
		}
	}
	return s
}
