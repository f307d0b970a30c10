package cpu

import (
	"github.com/gmcn-go/gmcn/internal/parallel"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// ScaleWeights writes x with every weight multiplied by s into y (both of
// layout l); positions and covariances pass through. The reference model
// divides the convolution output by Fi this way (s = 1/Fi).
//
// The map is linear in the packed values with a diagonal Jacobian (s on
// weights, 1 elsewhere), so its backward pass is the same call on the
// incoming gradient: ScaleWeights(dx, g, l, s).
func ScaleWeights[T Float](y, x []T, l mixture.Layout, s T) {
	st := l.Stride()
	parallel.For(l.Mixtures(), func(m int) {
		ym, xm := mixture.Mixture(y, l, m), mixture.Mixture(x, l, m)
		copy(ym, xm)
		for i := 0; i < len(ym); i += st {
			ym[i] *= s
		}
	})
}
