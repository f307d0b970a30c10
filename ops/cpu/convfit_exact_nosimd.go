//go:build !goexperiment.simd || !amd64

package cpu

// exactSumFast reports false: without GOEXPERIMENT=simd on amd64 every type
// takes nearWork.exactSum.
func exactSumFast[T Float](d int, r *gaussRows[T], p *[3][]T, out []T) bool { return false }

// exactGradFast reports false, as exactSumFast.
func exactGradFast[T Float](d int, r *gaussRows[T], p *[3][]T, g []T, s *gaussSums[T], dp *[3][]T, lanes []T) bool {
	return false
}
