package gmnode

import (
	"runtime"
	"sync"
	"weak"

	"github.com/gmcn-go/gmcn/ops"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
)

// devices holds the device of each graph that SetDevice was given, keyed
// weakly so that it does not keep the graph alive: a Gorgonia graph has no
// room for it, as a GoMLX graph has for its backend.
var devices sync.Map // weak.Pointer[G.ExprGraph] → *device.Device

// SetDevice makes dev the device that every GM node built on g from now on
// computes on (nodes already built keep theirs, and gradient nodes use
// their forward node's). A graph that was given none computes on the CPU,
// so two graphs of one program can compute on two devices. A device that
// fails device.Device.Check is rejected and g keeps its device.
func SetDevice(g *G.ExprGraph, dev *device.Device) error {
	if g == nil {
		return errors.New("gmnode.SetDevice: nil graph")
	}
	if err := dev.Check(); err != nil {
		return errors.Wrap(err, "gmnode.SetDevice")
	}
	key := weak.Make(g)
	if _, had := devices.Swap(key, dev); !had {
		runtime.AddCleanup(g, func(k weak.Pointer[G.ExprGraph]) { devices.Delete(k) }, key)
	}
	return nil
}

// DeviceOf returns the device of the GM nodes built on g: the one
// SetDevice gave it, else the CPU.
func DeviceOf(g *G.ExprGraph) *device.Device {
	if d, ok := devices.Load(weak.Make(g)); ok {
		return d.(*device.Device)
	}
	return ops.CPU()
}

// on returns the device of the graph of x.
func on(x *G.Node) *device.Device { return DeviceOf(x.Graph()) }
