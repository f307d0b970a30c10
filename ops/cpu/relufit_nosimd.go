//go:build !goexperiment.simd || !amd64

package cpu

// reluForwardFast reports false: without GOEXPERIMENT=simd on amd64 every
// type takes the scalar loops.
func reluForwardFast[T Float](*reluWork[T]) bool { return false }

// reluBackwardFast reports false, as reluForwardFast.
func reluBackwardFast[T Float](*reluWork[T]) bool { return false }

// expPadded is expRow: this build has no vector exponential.
func expPadded[T Float](v []T) { expRow(v) }
