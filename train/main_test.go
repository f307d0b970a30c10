package train

import (
	"fmt"
	"os"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops"
	"github.com/gmcn-go/gmcn/ops/device"
)

// afterTests, when set, runs after the tests (the MPI build finalises MPI).
var afterTests func() error

// testDev is the device of the tests' models: the CPU, or the one
// gmtest.DeviceEnv names (TestMain); the training-step benchmarks compare
// devices this way.
var testDev = ops.CPU()

func TestMain(m *testing.M) {
	code := gmtest.RunOnEnvDevice(m, ops.OpenDevice, func(d *device.Device) error {
		testDev = d
		return d.Check()
	})
	if afterTests != nil {
		if err := afterTests(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}
