package ops

import "github.com/gmcn-go/gmcn/ops/cpu"

// cpuDevice is the default device. This file is the only one of package ops
// that imports ops/cpu: every computation of an op goes through its device.
var cpuDevice = cpu.Device()
