//go:build goexperiment.simd && amd64

package cpu

import (
	"slices"
	"testing"
)

// BenchmarkEvaluateBackward8 is BenchmarkEvaluateBackwardMixture and
// BenchmarkEvaluateBackwardPoints on the eight-lane AVX2 kernels, which an
// AVX-512 machine takes only here.
func BenchmarkEvaluateBackward8(b *testing.B) {
	defer func(w bool) { evalBackwardWide = w }(evalBackwardWide)
	evalBackwardWide = false
	b.Run("Mixture", BenchmarkEvaluateBackwardMixture)
	b.Run("Points", BenchmarkEvaluateBackwardPoints)
}

// BenchmarkEvaluateBackwardLanes is BenchmarkEvaluateBackwardMixture with
// the points and with the components in the lanes, whatever the shape
// would choose, also on shapes around the choice: few components at many
// points, and as many points as components.
func BenchmarkEvaluateBackwardLanes(b *testing.B) {
	defer func(c evalLaneChoice) { evalLaneLayout = c }(evalLaneLayout)
	cases := append(slices.Clip(evalBenchAll),
		evalBench{D: 2, B: 21, C: 8, N: 4, M: 1000}, evalBench{D: 2, B: 21, C: 8, N: 8, M: 1000},
		evalBench{D: 2, B: 21, C: 8, N: 16, M: 1000}, evalBench{D: 2, B: 21, C: 8, N: 64, M: 1000},
		evalBench{D: 2, B: 4, C: 8, N: 1280, M: 1280, PerMixture: true})
	for _, c := range []struct {
		name   string
		layout evalLaneChoice
	}{{"points", evalLanesOverPoints}, {"components", evalLanesOverComponents}} {
		evalLaneLayout = c.layout
		b.Run(c.name, func(b *testing.B) { benchBackwardMixture(b, cases) })
	}
}
