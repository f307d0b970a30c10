package gmnode

import (
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/ops"
	"github.com/gmcn-go/gmcn/ops/device"
	G "gorgonia.org/gorgonia"
)

// TestSetDevice checks the device of graphs: the CPU by default, the one
// given per graph, bad devices refused without changing it, and nodes
// built before a change keeping their device.
func TestSetDevice(t *testing.T) {
	cpu := ops.CPU()
	other := &device.Device{Name: "other", F32: cpu.F32, F64: cpu.F64}
	g1, g2 := G.NewGraph(), G.NewGraph()
	if DeviceOf(g1) != cpu {
		t.Errorf("a new graph is on %s, want the CPU", DeviceOf(g1).Name)
	}
	if err := SetDevice(g2, other); err != nil {
		t.Fatal(err)
	}
	if DeviceOf(g1) != cpu || DeviceOf(g2) != other {
		t.Errorf("graphs on %s and %s, want cpu and other", DeviceOf(g1).Name, DeviceOf(g2).Name)
	}
	for _, c := range []struct {
		name string
		g    *G.ExprGraph
		dev  *device.Device
		want string
	}{
		{"nil graph", nil, other, "nil graph"},
		{"nil device", g2, nil, "nil Device"},
		{"no float64", g2, &device.Device{Name: "half", F32: cpu.F32}, "float64"},
	} {
		err := SetDevice(c.g, c.dev)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "gmnode.SetDevice") {
			t.Errorf("%s: error %v, want one naming gmnode.SetDevice and containing %q", c.name, err, c.want)
		}
	}
	if DeviceOf(g2) != other {
		t.Errorf("a refused device changed the graph's to %s", DeviceOf(g2).Name)
	}
}
