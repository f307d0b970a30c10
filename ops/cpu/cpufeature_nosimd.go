//go:build !goexperiment.simd || !amd64

package cpu

// cpuAVX2FMA and cpuAVX512 are false: this build has no vector kernels, so
// every kernel takes its portable scalar path whatever the CPU offers.
const (
	cpuAVX2FMA = false
	cpuAVX512  = false
)
