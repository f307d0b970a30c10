//go:build !gmcuda

package ops

import "github.com/gmcn-go/gmcn/ops/device"

// openCUDA is nil: this build has no CUDA device.
var openCUDA func() (*device.Device, error)
