//go:build gmcuda

package cudaops

import (
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// onFallback holds what this device computes on its fallback instead of
// the GPU, by the names device.Device.External uses: the device.Kernels
// methods with no GPU kernel yet, which this file hands to the fallback
// kernels, and the case of the ReLU fit its GPU kernels do not cover (the
// refined fit), which its launchers hand over. It is the
// one list of what runs where: NewDevice's External is its complement, and
// the launchers ask onGPU. The inputs already live on the host (every
// launcher uploads and downloads), so handing over costs no transfer.
var onFallback = map[string]bool{
	"WeightDecay": true, "WeightDecayBackward": true,
	"Standardise": true, "StandardiseBackward": true,
	"ScaleWeights": true, "ScaleAxes": true, "ScaleAxesBackward": true,
	"ReLUFit/refined": true, "ReLUFitSaving/refined": true, "ReLUFitBackward/refined": true,
}

// onGPU reports whether the computation External calls name runs on the
// GPU.
func onGPU(name string) bool { return !onFallback[name] }

func (c Kernels[T]) WeightDecay(w, a []T, d int) (float64, error) {
	return c.cpu.WeightDecay(w, a, d)
}

func (c Kernels[T]) WeightDecayBackward(dw, da, w, a []T, d int, g T) error {
	return c.cpu.WeightDecayBackward(dw, da, w, a, d, g)
}

func (c Kernels[T]) Standardise(y, x []T, sd []float64, gain T, l mixture.Layout) error {
	return c.cpu.Standardise(y, x, sd, gain, l)
}

func (c Kernels[T]) StandardiseBackward(dx, x, g []T, sd []float64, gain T, l mixture.Layout) (T, error) {
	return c.cpu.StandardiseBackward(dx, x, g, sd, gain, l)
}

func (c Kernels[T]) ScaleWeights(y, x []T, l mixture.Layout, s T) error {
	return c.cpu.ScaleWeights(y, x, l, s)
}

func (c Kernels[T]) ScaleAxes(y, x, s []T, l mixture.Layout, sb, sc int) error {
	return c.cpu.ScaleAxes(y, x, s, l, sb, sc)
}

func (c Kernels[T]) ScaleAxesBackward(dx, ds, g, x, s []T, l mixture.Layout, sb, sc int) error {
	return c.cpu.ScaleAxesBackward(dx, ds, g, x, s, l, sb, sc)
}
