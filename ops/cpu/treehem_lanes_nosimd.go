//go:build !goexperiment.simd || !amd64

package cpu

// The kernels of hemLanes exist only with SIMD; TreeHEM never calls these,
// since hemLanesOK is false.

func (e *hemLanes) fit(bool)     { panic("cpu: TreeHEM lanes kernel called in a build without SIMD") }
func (e *hemLanes) covariances() { panic("cpu: TreeHEM lanes kernel called in a build without SIMD") }
func (e *hemLanes) backward()    { panic("cpu: TreeHEM lanes kernel called in a build without SIMD") }
