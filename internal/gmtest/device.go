package gmtest

import (
	"fmt"
	"math"
	"os"
	"testing"
)

// DeviceEnv names the device that the test binaries of ops and gmnode build
// every op on: "cuda" runs the suites on the CUDA device of a gmcuda build
// (a GPU, or the emulator with the tag gmcudaemu; `make cuda-emu-test`);
// unset or "cpu" keeps the CPU.
const DeviceEnv = "GMCN_TEST_DEVICE"

// RunOnEnvDevice is the body of a TestMain: it opens the device DeviceEnv
// names with open (ops.OpenDevice, passed in because ops' own tests cannot
// import a package that imports ops, and generic because this package may
// import no package of the module), hands it to use, which makes it the
// tests' device and checks it, runs the tests and returns their exit code. A device that
// cannot be opened is a failure, never a silent fallback to the CPU.
func RunOnEnvDevice[D any](m *testing.M, open func(string) (D, error), use func(D) error) int {
	if name := os.Getenv(DeviceEnv); name != "" && name != "cpu" {
		d, err := open(name)
		if err == nil {
			err = use(d)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s=%s: %v\n", DeviceEnv, name, err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "testing every op on device %s\n", name)
	}
	return m.Run()
}

// DeviceTolerance is the relative tolerance of a float64 result computed by
// a device other than the CPU against the CPU kernels' result. The GPU
// kernels sum in other orders and use the device's exp and division, so
// they differ in the last bits (2e-16 to 6e-15 seen on an H100).
const DeviceTolerance = 1e-12

// SameAsCPU reports whether got, computed on the device named dev, is the
// CPU kernels' want: bitwise on the CPU device ("cpu"), where nothing may
// differ, and within DeviceTolerance·max(1, max|want|) on any other. It also
// returns max|got − want|.
func SameAsCPU(dev string, got, want []float64) (bool, float64) {
	if len(got) != len(want) {
		return false, math.Inf(1)
	}
	e := MaxAbsDiff(got, want)
	if dev == "cpu" {
		return e == 0 && !hasNaN(got), e
	}
	return e <= DeviceTolerance*math.Max(1, MaxAbs(want)), e
}

func hasNaN(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) {
			return true
		}
	}
	return false
}
