//go:build goexperiment.simd && amd64

package cpu

import "testing"

// TestEvaluateBackwardFast8 runs checkEvalBackwardFast on the eight-lane
// kernels, which AVX-512 machines would otherwise never take.
func TestEvaluateBackwardFast8(t *testing.T) {
	if !cpuAVX2FMA {
		t.Skip("CPU lacks AVX2 and FMA")
	}
	defer func(w bool) { evalBackwardWide = w }(evalBackwardWide)
	evalBackwardWide = false
	checkEvalBackwardFast(t)
}
