package ops

import (
	"fmt"

	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/pkg/errors"
)

// CPU returns the CPU device: the pure-Go kernels of ops/cpu. An op built
// with a nil device computes on it.
func CPU() *device.Device { return cpuDevice }

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

// SelectDevice returns the device of the given name for a program to build
// its graphs on, and a line that says what computes where. It is where a
// program's fallback is decided: a device of this build that cannot start
// here (ErrDeviceUnavailable) gives the CPU, and the line says so and why;
// a name this build lacks is an error. Which computations of a working
// device run on its CPU fallback is the device's own (device.Device.Placement).
func SelectDevice(name string) (*device.Device, string, error) {
	d, err := OpenDevice(name)
	if errors.Is(err, ErrDeviceUnavailable) {
		return cpuDevice, fmt.Sprintf("%v; the GM ops compute on the CPU instead", err), nil
	}
	if err != nil {
		return nil, "", err
	}
	return d, "GM ops compute on " + d.Placement(), nil
}
