package ops

import (
	"math/rand/v2"

	"github.com/gmcn-go/gmcn/ops/mixture"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// randomMixture returns a float64 batch [B, C, N, 1+D+D·D] with weights in
// [-1, 1), positions in [-2, 2) and well-conditioned covariances A·Aᵀ + 0.5·I.
func randomMixture(rng *rand.Rand, b, c, n, d int) *tensor.Dense {
	l := mixture.Layout{B: b, C: c, N: n, D: d}
	data := make([]float64, l.Len())
	s := l.Stride()
	for i := 0; i < len(data); i += s {
		fillGaussian(rng, data[i:i+s], d)
	}
	return tensor.New(tensor.WithShape(l.Shape()...), tensor.WithBacking(data))
}

func fillGaussian(rng *rand.Rand, g []float64, d int) {
	g[0] = 2*rng.Float64() - 1
	for j := range d {
		g[1+j] = 4*rng.Float64() - 2
	}
	a := make([]float64, d*d)
	for j := range a {
		a[j] = rng.Float64() - 0.5
	}
	cov := g[1+d:]
	for r := range d {
		for c := range d {
			var s float64
			for k := range d {
				s += a[r*d+k] * a[c*d+k]
			}
			if r == c {
				s += 0.5
			}
			cov[r*d+c] = s
		}
	}
}

// asOp returns the adapter behind an op of the package.
func asOp(o G.Op) *op {
	if c, ok := o.(*CovScaleNorm); ok {
		return c.op
	}
	return o.(*op)
}

// gradOf returns the grad op of input i of a forward op built by one of the
// package's constructors.
func gradOf(o G.Op, i int) *op { return asOp(o).gradOp(i) }
