//go:build !goexperiment.simd || !amd64

package cpu

import "github.com/gmcn-go/gmcn/ops/mixture"

// evaluateFast reports false: without GOEXPERIMENT=simd on amd64 every dtype
// takes the portable evaluateGeneric.
func evaluateFast[T Float](y, x, pts []T, l mixture.Layout, pb, pc, m int) bool { return false }

// evaluateBackwardMixtureFast reports false, as evaluateFast.
func evaluateBackwardMixtureFast[T Float](dx, x, pts, g []T, l mixture.Layout, pb, pc, m int) bool {
	return false
}

// evaluateBackwardPointsFast reports false, as evaluateFast.
func evaluateBackwardPointsFast[T Float](dp, x, pts, g []T, l mixture.Layout, pb, pc, m int) bool {
	return false
}
