package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gmcn-go/gmcn/ops"
	"github.com/gmcn-go/gmcn/ops/device"
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
		hint := ""
		if d.name == "cuda" {
			hint = " (cuda needs a build with -tags gmcuda: docs/cuda.md)"
		}
		return errors.Errorf("--device %q: this build has %s%s", d.name, strings.Join(devs, ", "), hint)
	}
	return nil
}

// open returns the device the command builds its models on
// (ops.SelectDevice: a CUDA device that cannot start gives the CPU) and the
// line saying what computes where.
func (d *deviceFlag) open() (*device.Device, string, error) {
	dev, where, err := ops.SelectDevice(d.name)
	return dev, where, errors.Wrap(err, "--device")
}

// openTo is open for the commands that use a trained model: they write the
// line to log when a device other than the CPU was asked for, which may have
// fallen back to the CPU.
func (d *deviceFlag) openTo(log io.Writer) (*device.Device, error) {
	dev, where, err := d.open()
	if err == nil && d.name != "cpu" {
		fmt.Fprintf(log, "gmcn: %s\n", where)
	}
	return dev, err
}
