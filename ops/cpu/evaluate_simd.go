//go:build goexperiment.simd

package cpu

import "github.com/gmcn-go/gmcn/ops/mixture"

// evaluateFast reports false: the vectorised float32 path is not written yet, so every dtype takes
// the portable evaluateGeneric.
func evaluateFast[T Float](y, x, pts []T, l mixture.Layout, pb, pc, m int) bool { return false }
