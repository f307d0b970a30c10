//go:build goexperiment.simd && amd64

package cpu

import "simd/archsimd"

// The CPU features the vector kernels need, asked once at start-up; every
// kernel and test chooses its path from these two.
//
// cpuAVX2FMA reports whether the CPU runs the 8-lane float32 kernels: they
// need AVX2 (integer shifts of the exponent, masks) and FMA. cpuAVX512
// reports whether it runs the 16-lane AVX-512 kernels. Where a kernel has
// both widths, both are kept: on AVX-512 the wider loops issue half the
// instructions per term (and VSCALEFPS shortens the exponential), while
// AVX2-only CPUs would otherwise fall back to the scalar loops, several times
// slower.
var (
	cpuAVX2FMA = archsimd.X86.AVX2() && archsimd.X86.FMA()
	cpuAVX512  = archsimd.X86.AVX512()
)
