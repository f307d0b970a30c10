package train

import (
	"fmt"
	"os"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops"
)

// afterTests, when set, runs after the tests (the MPI build finalises MPI).
var afterTests func() error

// TestMain builds every op on the device gmtest.DeviceEnv names (the CPU
// when unset): the training-step benchmarks compare devices this way.
func TestMain(m *testing.M) {
	code := gmtest.RunOnEnvDevice(m, ops.OpenDevice, ops.UseDevice)
	if afterTests != nil {
		if err := afterTests(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}
