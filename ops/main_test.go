package ops

import (
	"os"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops/device"
)

// TestMain builds every op of the tests on the device gmtest.DeviceEnv
// names (the CPU when unset), so that one suite checks every device.
func TestMain(m *testing.M) {
	os.Exit(gmtest.RunOnEnvDevice(m, OpenDevice, func(d *device.Device) error {
		testDev = d
		return d.Check()
	}))
}
