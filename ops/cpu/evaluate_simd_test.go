//go:build goexperiment.simd && amd64

package cpu

import (
	"testing"

	"simd/archsimd"
)

// TestEvaluateBackwardFast8 runs checkEvalBackwardFast on the eight-lane
// kernels, which AVX-512 machines would otherwise never take.
func TestEvaluateBackwardFast8(t *testing.T) {
	if !archsimd.X86.AVX2() || !archsimd.X86.FMA() {
		t.Skip("CPU lacks AVX2 and FMA")
	}
	defer func(w bool) { evalBackwardWide = w }(evalBackwardWide)
	evalBackwardWide = false
	checkEvalBackwardFast(t)
}
