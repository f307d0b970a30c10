//go:build goexperiment.simd && amd64

package cpu

import "testing"

// BenchmarkEvaluateBackward8 is BenchmarkEvaluateBackwardMixture and
// BenchmarkEvaluateBackwardPoints on the eight-lane AVX2 kernels, which an
// AVX-512 machine takes only here.
func BenchmarkEvaluateBackward8(b *testing.B) {
	defer func(w bool) { evalBackwardWide = w }(evalBackwardWide)
	evalBackwardWide = false
	b.Run("Mixture", BenchmarkEvaluateBackwardMixture)
	b.Run("Points", BenchmarkEvaluateBackwardPoints)
}
