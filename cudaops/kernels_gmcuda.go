//go:build gmcuda

package cudaops

import (
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// Kernels implements device.Kernels[T] on the GPU d. The computations with a
// GPU kernel are its methods in ops_gmcuda.go; those without one go to the
// fallback, in fallback_gmcuda.go.
type Kernels[T Float] struct {
	d   *Device
	cpu device.Kernels[T]
}

var (
	_ device.Kernels[float32] = Kernels[float32]{}
	_ device.Kernels[float64] = Kernels[float64]{}
)

// NewDevice returns the device that runs the GM ops on GPU d, handing what
// has no GPU kernel (onFallback) to fallback, normally the CPU device. Its
// External set names the GPU computations, so an op reports CallsExtern
// exactly when its computations run on the GPU.
func NewDevice(d *Device, fallback *device.Device) *device.Device {
	ext := map[string]bool{}
	for c := range device.ExternalNames() {
		if onGPU(c) {
			ext[c] = true
		}
	}
	return &device.Device{
		Name:     "cuda: " + d.String(),
		F32:      Kernels[float32]{d: d, cpu: fallback.F32},
		F64:      Kernels[float64]{d: d, cpu: fallback.F64},
		External: ext,
	}
}

// ScaleMixturesBackward is ScaleMixtures applied to the incoming gradient:
// with s constant the map is linear and diagonal.
func (c Kernels[T]) ScaleMixturesBackward(dx, g []T, l mixture.Layout, s []T) error {
	return c.ScaleMixtures(dx, g, l, s)
}
