package cpu

import (
	"github.com/gmcn-go/gmcn/internal/parallel"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// Integrate writes y[b,c] = Σ_k w[b,c,k] for the packed batch x of layout l
// into y [B·C]; components are normalised, so a weight is its integral.
func Integrate[T Float](y, x []T, l mixture.Layout) {
	s := l.Stride()
	parallel.For(l.Mixtures(), func(m int) {
		mx := mixture.Mixture(x, l, m)
		var sum T
		for k := 0; k < len(mx); k += s {
			sum += mx[k]
		}
		y[m] = sum
	})
}

// IntegrateBackward writes ∂L/∂x for Integrate: ∂L/∂w[b,c,k] = g[b,c] and
// zero for positions and covariances.
func IntegrateBackward[T Float](dx, g []T, l mixture.Layout) {
	s := l.Stride()
	parallel.For(l.Mixtures(), func(m int) {
		d := mixture.Mixture(dx, l, m)
		clear(d)
		for k := 0; k < len(d); k += s {
			d[k] = g[m]
		}
	})
}
