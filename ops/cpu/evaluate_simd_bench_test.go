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

// BenchmarkEvaluateBackwardLanes is BenchmarkEvaluateBackwardMixture and
// BenchmarkEvaluateBackwardPoints with the points and with the components
// in the lanes, whatever the shape would choose.
func BenchmarkEvaluateBackwardLanes(b *testing.B) {
	defer func(c evalLaneChoice) { evalLaneLayout = c }(evalLaneLayout)
	for _, c := range []struct {
		name   string
		layout evalLaneChoice
	}{{"points", evalLanesOverPoints}, {"components", evalLanesOverComponents}} {
		evalLaneLayout = c.layout
		b.Run(c.name+"/Mixture", BenchmarkEvaluateBackwardMixture)
		b.Run(c.name+"/Points", BenchmarkEvaluateBackwardPoints)
	}
}
