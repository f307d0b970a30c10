package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/gmcn-go/gmcn/ops"
	"github.com/pkg/errors"
)

// deviceFlag is --device: where the GM ops of a command compute.
type deviceFlag struct{ name string }

// register adds --device to f. The default is the last device of the
// build: cuda in a gmcuda build, else cpu.
func (d *deviceFlag) register(f *flagSet) {
	devs := ops.Devices()
	f.StringVar(&d.name, "device", devs[len(devs)-1], "`NAME` of where the GM ops compute; this build has "+strings.Join(devs, ", ")+
		"\n(cuda needs a build with -tags gmcuda and a GPU: docs/cuda.md)")
}

// check rejects a device this build does not have.
func (d *deviceFlag) check() error {
	if devs := ops.Devices(); !slices.Contains(devs, d.name) {
		return errors.Errorf("--device %q: this build has %s", d.name, strings.Join(devs, ", "))
	}
	return nil
}

// use selects the device for every GM op built afterwards and returns its
// name. A CUDA device that is built in but cannot start says why on
// standard error and the command runs on the CPU.
func (d *deviceFlag) use() (string, error) {
	dev, err := ops.OpenDevice(d.name)
	if errors.Is(err, ops.ErrDeviceUnavailable) {
		fmt.Fprintf(os.Stderr, "gmcn: --device %s: %v; the GM ops run on the CPU\n", d.name, err)
		dev, err = ops.OpenDevice("cpu")
	}
	if err != nil {
		return "", errors.Wrap(err, "--device")
	}
	return dev.Name, ops.UseDevice(dev)
}
