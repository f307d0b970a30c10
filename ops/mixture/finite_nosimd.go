//go:build !(goexperiment.simd && amd64)

package mixture

// allFinite leaves the check to CheckFinite's scalar loop in builds
// without the vector kernels.
func allFinite[T Float](data []T) (finite, ok bool) { return false, false }
