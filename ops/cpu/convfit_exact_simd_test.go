//go:build goexperiment.simd && amd64

package cpu

import (
	"math"
	"testing"
)

// TestConvFitExact8 checks the eight-lane kernels of the corrections at
// radius ∞, which AVX-512 machines would otherwise never take, as
// TestConvFitNearFloat32 checks the sixteen-lane ones.
func TestConvFitExact8(t *testing.T) {
	if !cpuAVX2FMA {
		t.Skip("CPU lacks AVX2 and FMA")
	}
	defer func(w bool) { exactWide = w }(exactWide)
	exactWide = false
	checkConvFitNearFloat32(t, math.Inf(1))
}
