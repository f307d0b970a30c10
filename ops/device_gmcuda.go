//go:build gmcuda

package ops

import (
	"github.com/gmcn-go/gmcn/cudaops"
	"github.com/gmcn-go/gmcn/ops/device"
)

// openCUDA opens GPU 0 with the CPU device as the fallback for the
// computations that have no GPU kernel.
var openCUDA = func() (*device.Device, error) {
	d, err := cudaops.Default()
	if err != nil {
		return nil, err
	}
	return cudaops.NewDevice(d, cpuDevice), nil
}
