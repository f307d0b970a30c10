//go:build goexperiment.simd && amd64

package cpu

import (
	"fmt"
	"testing"
)

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

// TestEvaluateBackwardLanes runs checkEvalBackwardFast with the mixture
// gradient's points and with its components in the lanes on every shape,
// on sixteen lanes where the CPU has them and on eight.
func TestEvaluateBackwardLanes(t *testing.T) {
	if !cpuAVX2FMA {
		t.Skip("CPU lacks AVX2 and FMA")
	}
	defer func(w bool, c evalLaneChoice) { evalBackwardWide, evalLaneLayout = w, c }(evalBackwardWide, evalLaneLayout)
	for _, wide := range []bool{false, cpuAVX512} {
		for _, c := range []evalLaneChoice{evalLanesOverPoints, evalLanesOverComponents} {
			evalBackwardWide, evalLaneLayout = wide, c
			t.Run(fmt.Sprintf("wide=%v/layout=%d", wide, c), checkEvalBackwardFast)
		}
	}
}
