package ops

import (
	"sync/atomic"

	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/pkg/errors"
)

// current is the device of the ops built from now on; nil means the CPU.
var current atomic.Pointer[device.Device]

// UseDevice selects the device that every op built afterwards computes on;
// ops already built keep theirs, and the grad ops of an op use the op's. A
// program calls it once before it builds its graphs (gmcn does for
// --device); the default is the CPU. It rejects a device that fails
// device.Device.Check.
func UseDevice(d *device.Device) error {
	if err := d.Check(); err != nil {
		return errors.Wrap(err, "ops.UseDevice")
	}
	current.Store(d)
	return nil
}

// CurrentDevice returns the device that ops built now compute on.
func CurrentDevice() *device.Device {
	if d := current.Load(); d != nil {
		return d
	}
	return cpuDevice
}

// ErrDeviceUnavailable is wrapped by OpenDevice's error when the device is
// part of this build but cannot be used on this machine (no GPU, no driver).
var ErrDeviceUnavailable = errors.New("device unavailable")

// Devices returns the names OpenDevice accepts in this build: "cpu", and
// "cuda" in a build with the gmcuda tag.
func Devices() []string {
	if openCUDA == nil {
		return []string{"cpu"}
	}
	return []string{"cpu", "cuda"}
}

// OpenDevice returns the device of the given name (see Devices). A name this
// build does not have is an error that says how to get it; a device of this
// build that cannot start returns an error wrapping ErrDeviceUnavailable with
// the reason.
func OpenDevice(name string) (*device.Device, error) {
	switch {
	case name == "cpu":
		return cpuDevice, nil
	case name == "cuda" && openCUDA != nil:
		d, err := openCUDA()
		if err != nil {
			return nil, errors.Wrapf(ErrDeviceUnavailable, "device cuda: %v", err)
		}
		return d, nil
	case name == "cuda":
		return nil, errors.New(`device "cuda" is not in this build: build with -tags gmcuda (see docs/cuda.md)`)
	}
	return nil, errors.Errorf("unknown device %q: this build has %v", name, Devices())
}
