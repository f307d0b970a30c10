//go:build goexperiment.simd && amd64

package cpu

import "unsafe"

// exactHalfLog2e turns (p − μ)ᵀ Σ⁻¹ (p − μ) into the exponent of exp2.
const exactHalfLog2e = -0.5 * expLog2e

// exactKernels are the float32 kernels of the corrections at radius ∞ for
// one lane width, indexed by dimension − 2.
type exactKernels struct {
	sum  [2]func(r *gaussRows[float32], p *[3][]float32, out []float32)
	grad [2]func(r *gaussRows[float32], p *[3][]float32, g []float32, s *gaussSums[float32], dp *[3][]float32, lanes []float32)
}

var (
	exactKernels8 = exactKernels{
		[2]func(*gaussRows[float32], *[3][]float32, []float32){exactSum2x8, exactSum3x8},
		[2]func(*gaussRows[float32], *[3][]float32, []float32, *gaussSums[float32], *[3][]float32, []float32){exactGrad2x8, exactGrad3x8}}
	exactKernels16 = exactKernels{
		[2]func(*gaussRows[float32], *[3][]float32, []float32){exactSum2x16, exactSum3x16},
		[2]func(*gaussRows[float32], *[3][]float32, []float32, *gaussSums[float32], *[3][]float32, []float32){exactGrad2x16, exactGrad3x16}}
)

// exactWide reports whether the kernels use sixteen AVX-512 lanes; tests
// clear it to run the eight-lane kernels on AVX-512 machines.
var exactWide = cpuAVX512

// exactKernelsFor returns the float32 kernels of this CPU for T, or nil
// where the generic passes run (float64, no AVX2 and FMA).
func exactKernelsFor[T Float]() *exactKernels {
	if unsafe.Sizeof(T(0)) != 4 || !cpuAVX2FMA {
		return nil
	}
	if exactWide {
		return &exactKernels16
	}
	return &exactKernels8
}

// exactSumFast runs nearWork.exactSum's sum with the vector kernels and
// reports whether it did. T's underlying type is float32 wherever it does,
// so the reinterpretations are exact.
func exactSumFast[T Float](d int, r *gaussRows[T], p *[3][]T, out []T) bool {
	k := exactKernelsFor[T]()
	if k == nil {
		return false
	}
	k.sum[d-2]((*gaussRows[float32])(unsafe.Pointer(r)), (*[3][]float32)(unsafe.Pointer(p)), *(*[]float32)(unsafe.Pointer(&out)))
	return true
}

// exactGradFast runs nearWork.exactGrad's sums with the vector kernels,
// gathering the centroids' sums in lanes, and reports whether it did.
func exactGradFast[T Float](d int, r *gaussRows[T], p *[3][]T, g []T, s *gaussSums[T], dp *[3][]T, lanes []T) bool {
	k := exactKernelsFor[T]()
	if k == nil {
		return false
	}
	f32 := func(v []T) []float32 { return *(*[]float32)(unsafe.Pointer(&v)) }
	k.grad[d-2]((*gaussRows[float32])(unsafe.Pointer(r)), (*[3][]float32)(unsafe.Pointer(p)), f32(g),
		(*gaussSums[float32])(unsafe.Pointer(s)), (*[3][]float32)(unsafe.Pointer(dp)), f32(lanes))
	return true
}
