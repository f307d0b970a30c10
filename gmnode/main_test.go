package gmnode

import (
	"math/rand/v2"
	"os"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops"
	"github.com/gmcn-go/gmcn/ops/device"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// testDev is the device of the tests' graphs: the CPU, or the one
// gmtest.DeviceEnv names (TestMain), so that one suite checks every device.
var testDev = ops.CPU()

func TestMain(m *testing.M) {
	os.Exit(gmtest.RunOnEnvDevice(m, ops.OpenDevice, func(d *device.Device) error {
		testDev = d
		return d.Check()
	}))
}

// newGraph returns a graph on the tests' device.
func newGraph() *G.ExprGraph {
	g := G.NewGraph()
	if err := SetDevice(g, testDev); err != nil {
		panic(err) // TestMain checked the device
	}
	return g
}

// graphGrad is gmtest.GraphGrad with the checked graph on the tests'
// device.
func graphGrad(t *testing.T, rng *rand.Rand, in []*tensor.Dense, build func([]*G.Node) (*G.Node, error), wrt ...int) {
	t.Helper()
	gmtest.GraphGrad(t, rng, in, func(n []*G.Node) (*G.Node, error) {
		if err := SetDevice(n[0].Graph(), testDev); err != nil {
			return nil, err
		}
		return build(n)
	}, wrt...)
}
