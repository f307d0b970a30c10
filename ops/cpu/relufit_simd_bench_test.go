//go:build goexperiment.simd && amd64

package cpu

import (
	"testing"

	"github.com/gmcn-go/gmcn/ops/device"
)

// BenchmarkReLUFitForward8 is BenchmarkReLUFitForward on the eight-lane AVX2
// loops, which an AVX-512 machine takes only here.
func BenchmarkReLUFitForward8(b *testing.B) {
	defer func(w bool) { reluWide = w }(reluWide)
	reluWide = false
	benchReLUFitForward(b, device.ReLUFitOptions{})
}

// BenchmarkReLUFitBackward8 is BenchmarkReLUFitBackward on the eight-lane
// AVX2 loops.
func BenchmarkReLUFitBackward8(b *testing.B) {
	defer func(w bool) { reluWide = w }(reluWide)
	reluWide = false
	benchReLUFitBackward(b, device.ReLUFitOptions{})
}
