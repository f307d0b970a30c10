package ops

import (
	"fmt"
	"go/parser"
	"go/token"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/ops/device"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// useDevice selects d for the ops the test builds and restores the previous
// device when the test ends.
func useDevice(t *testing.T, d *device.Device) {
	t.Helper()
	prev := CurrentDevice()
	if err := UseDevice(d); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { current.Store(prev) })
}

// deviceCase is one op of the package with float64 inputs for dimension d.
type deviceCase struct {
	name   string
	op     func() (G.Op, error)
	inputs func(rng *rand.Rand, d int) []*tensor.Dense
}

func opOnly(f func() G.Op) func() (G.Op, error) {
	return func() (G.Op, error) { return f(), nil }
}

func oneMixture(b, c, n int) func(rng *rand.Rand, d int) []*tensor.Dense {
	return func(rng *rand.Rand, d int) []*tensor.Dense {
		return []*tensor.Dense{randomMixture(rng, b, c, n, d)}
	}
}

// deviceCases holds every op constructor of the package.
var deviceCases = []deviceCase{
	{"Conv", opOnly(NewConv), func(rng *rand.Rand, d int) []*tensor.Dense {
		return []*tensor.Dense{randomMixture(rng, 2, 3, 4, d), randomMixture(rng, 2, 3, 2, d)}
	}},
	{"ConvFit", opOnly(func() G.Op { return NewConvFit(5) }), func(rng *rand.Rand, d int) []*tensor.Dense {
		return []*tensor.Dense{randomMixture(rng, 2, 3, 4, d), randomMixture(rng, 2, 3, 2, d)}
	}},
	{"KeepLargest", opOnly(func() G.Op { return NewKeepLargest(3) }), oneMixture(2, 3, 5)},
	{"Integrate", opOnly(NewIntegrate), oneMixture(2, 3, 4)},
	{"Evaluate", opOnly(NewEvaluate), func(rng *rand.Rand, d int) []*tensor.Dense {
		return []*tensor.Dense{randomMixture(rng, 2, 3, 4, d), evalPoints(rng, 1, 3, 5, d)}
	}},
	{"ReLUFit", opOnly(func() G.Op { return NewReLUFit(ReLUFitOptions{}) }), oneMixture(2, 2, 6)},
	{"ReLUFitConstant", opOnly(func() G.Op { return NewReLUFitConstant(ReLUFitOptions{}) }), func(rng *rand.Rand, d int) []*tensor.Dense {
		return []*tensor.Dense{randomMixture(rng, 2, 2, 6, d), tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{0.3, -0.2, 0, 0.6}))}
	}},
	{"TreeHEM", opOnly(func() G.Op { return NewTreeHEM(4, TreeHEMOptions{Reduction: 2}) }), func(rng *rand.Rand, d int) []*tensor.Dense {
		// TreeHEM is meant for the positive output of the ReLU fit; weights
		// of both signs can make its normalisation explode (docs/treehem.md).
		x := randomMixture(rng, 2, 2, 12, d)
		v, st := x.Data().([]float64), 1+d+d*d
		for i := 0; i < len(v); i += st {
			v[i] = 0.1 + math.Abs(v[i])
		}
		return []*tensor.Dense{x}
	}},
	{"MEM", opOnly(func() G.Op { return NewMEM(3) }), oneMixture(2, 2, 8)},
	{"CovScale", opOnly(NewCovScale), oneMixture(2, 3, 4)},
	{"CovScaleNorm", func() (G.Op, error) {
		c, err := NewCovScaleNorm(3)
		if err == nil {
			err = c.SetTraining(true)
		}
		return c, err
	}, oneMixture(2, 3, 4)},
	{"Standardise", opOnly(NewStandardise), func(rng *rand.Rand, d int) []*tensor.Dense {
		return []*tensor.Dense{randomMixture(rng, 2, 2, 4, d), tensor.New(tensor.WithShape(1), tensor.WithBacking([]float64{1.5}))}
	}},
	{"ScaleWeights", opOnly(func() G.Op { return NewScaleWeights(0.5) }), oneMixture(2, 3, 4)},
	{"ScaleAxes", func() (G.Op, error) { return NewScaleAxes(2) }, scalesOf(2)},
	{"WeightDecay", opOnly(NewWeightDecay), func(rng *rand.Rand, d int) []*tensor.Dense {
		w, _, f := kernelRawTensors(rng, 2, 3, 2, d, 0.5)
		return []*tensor.Dense{w, f}
	}},
	{"AssembleKernel", opOnly(func() G.Op { return NewAssembleKernel(device.DefaultKernelConfig(1.5)) }), func(rng *rand.Rand, d int) []*tensor.Dense {
		w, p, f := kernelRawTensors(rng, 2, 3, 2, d, 0.5)
		return []*tensor.Dense{w, p, f}
	}},
}

// TestEveryOpRoutesThroughItsDevice runs every op, forward and every grad op,
// in 2D and 3D, float32 and float64, on the recording fake device, and ops
// that can save state for their grad ops once more with memos. Each run
// must call only computations the op declares (which CallsExtern relies
// on), a grad op must receive the saved state exactly when it has a memo,
// every run must return what the same op returns on the CPU device, and
// together the ops must call every Kernels method.
func TestEveryOpRoutesThroughItsDevice(t *testing.T) {
	fake, log := newRecordingDevice()
	used := map[string]bool{}
	for _, c := range deviceCases {
		for _, d := range []int{2, 3} {
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				t.Run(fmt.Sprintf("%s/%dD/%v", c.name, d, dt), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(uint64(d), 77))
					in := c.inputs(rng, d)
					if dt == tensor.Float32 {
						for i := range in {
							in[i] = as32(in[i])
						}
					}
					ops := map[string]G.Op{}
					for name, dev := range map[string]*device.Device{"fake": fake, "cpu": cpuDevice} {
						useDevice(t, dev)
						o, err := c.op()
						if err != nil {
							t.Fatal(err)
						}
						ops[name] = o
					}
					log.take()
					fake, cpu := asOp(ops["fake"]), asOp(ops["cpu"])
					// An op that can save state for its grad ops runs a
					// second time with memos, as in a graph with its gradient.
					memos := []bool{false}
					if _, ok := fake.k64.(saving[float64]); ok {
						memos = append(memos, true)
					}
					for _, withMemo := range memos {
						suffix := ""
						if withMemo {
							fake.memo, cpu.memo, suffix = &memo{}, &memo{}, " (memo)"
						}
						runs := []deviceRun{{"forward" + suffix, fake, cpu, values(in)}}
						for k := 0; k < len(runs); k++ {
							r := runs[k]
							got, err := r.op.Do(r.args...)
							if err != nil {
								t.Fatalf("%s: %v", r.what, err)
							}
							calls := log.take()
							checkCalls(t, r.what, calls, r.op.spec().computations())
							for _, name := range calls {
								used[strings.TrimSuffix(name, "(saved)")] = true
								if withMemo != strings.HasSuffix(name, "(saved)") && k > 0 {
									t.Errorf("%s: called %s, with a memo %v", r.what, name, withMemo)
								}
							}
							want, err := r.ref.Do(r.args...)
							if err != nil {
								t.Fatalf("%s on the CPU: %v", r.what, err)
							}
							if !slicesEqual(got.Data(), want.Data()) {
								t.Errorf("%s: the fake device's result differs from the CPU device's", r.what)
							}
							if k > 0 {
								continue
							}
							// The grads need the forward output; CovScaleNorm's
							// running state allows only one forward per op.
							g := convTensor(5, want.Shape()...)
							if dt == tensor.Float32 {
								g = as32(g)
							}
							for i, wrt := range fake.DiffWRT(len(in)) {
								if wrt {
									runs = append(runs, deviceRun{fmt.Sprintf("grad %d%s", i, suffix), fake.gradOp(i), cpu.gradOp(i), append(values(in), want, g)})
								}
							}
						}
					}
				})
			}
		}
	}
	for name := range device.Computations() {
		if !used[name] {
			t.Errorf("no op called Kernels.%s", name)
		}
	}
}

// deviceRun is one op execution of TestEveryOpRoutesThroughItsDevice: the op
// on the fake device and the same op on the CPU device.
type deviceRun struct {
	what    string
	op, ref *op
	args    []G.Value
}

func values(in []*tensor.Dense) []G.Value {
	v := make([]G.Value, len(in))
	for i, t := range in {
		v[i] = t
	}
	return v
}

func slicesEqual(a, b any) bool {
	switch a := a.(type) {
	case []float32:
		return slices.Equal(a, b.([]float32))
	case []float64:
		return slices.Equal(a, b.([]float64))
	}
	return false
}

// checkCalls requires at least one recorded call and every call (a
// "(saved)" suffix aside) to be a declared computation, which CallsExtern
// relies on. A forward that can save declares its plain and its saving
// computation and calls one of them, so a declared computation may go
// uncalled; that every Kernels method is called by some op is checked by
// TestEveryOpRoutesThroughItsDevice.
func checkCalls(t *testing.T, what string, calls, declared []string) {
	t.Helper()
	if len(calls) == 0 {
		t.Errorf("%s: called nothing on the device, declares %v", what, declared)
	}
	for _, c := range calls {
		if !slices.Contains(declared, strings.TrimSuffix(c, "(saved)")) {
			t.Errorf("%s: called %v on the device, declares %v", what, calls, declared)
			return
		}
	}
}

// TestCallsExtern checks that an op reports CallsExtern exactly when one of
// its computations is external on its device.
func TestCallsExtern(t *testing.T) {
	ext, _ := newRecordingDevice("Conv", "ReLUFitBackward")
	useDevice(t, ext)
	conv, relu := asOp(NewConv()), asOp(NewReLUFit(ReLUFitOptions{}))
	for _, c := range []struct {
		what string
		op   *op
		want bool
	}{
		{"Conv", conv, true},
		{"ConvGradData", conv.gradOp(0), false},
		{"ReLUFit", relu, false},
		{"ReLUFitGrad", relu.gradOp(0), true},
		{"Integrate", asOp(NewIntegrate()), false},
		{"Conv on the CPU", newOpOn(cpuDevice, convKernel[float32]{}, convKernel[float64]{}), false},
	} {
		if got := c.op.CallsExtern(); got != c.want {
			t.Errorf("%s: CallsExtern = %v, want %v", c.what, got, c.want)
		}
	}
}

// TestUseDevice checks the device choice: bad devices are rejected without
// changing the current one, and ops keep the device they were built with.
func TestUseDevice(t *testing.T) {
	fake, log := newRecordingDevice()
	before := asOp(NewIntegrate())
	useDevice(t, fake)
	for _, c := range []struct {
		name string
		dev  *device.Device
		want string
	}{
		{"nil", nil, "nil Device"},
		{"no name", &device.Device{F32: fake.F32, F64: fake.F64}, "no name"},
		{"no float64", &device.Device{Name: "half", F32: fake.F32}, "float64"},
		{"unknown external", &device.Device{Name: "x", F32: fake.F32, F64: fake.F64, External: map[string]bool{"Convolve": true}}, `"Convolve"`},
	} {
		err := UseDevice(c.dev)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "ops.UseDevice") {
			t.Errorf("%s: error %v, want one naming ops.UseDevice and containing %q", c.name, err, c.want)
		}
		if CurrentDevice() != fake {
			t.Fatalf("%s: a rejected device replaced the current one", c.name)
		}
	}
	x := randomMixture(rand.New(rand.NewPCG(1, 2)), 2, 2, 3, 2)
	if _, err := before.Do(x); err != nil {
		t.Fatal(err)
	}
	if calls := log.take(); len(calls) != 0 {
		t.Errorf("an op built before UseDevice ran on the new device: %v", calls)
	}
	if _, err := NewIntegrate().Do(x); err != nil {
		t.Fatal(err)
	}
	if calls := log.take(); !slices.Equal(calls, []string{"Integrate"}) {
		t.Errorf("an op built after UseDevice called %v on it, want [Integrate]", calls)
	}
}

// TestOpenDevice checks the device names of this build and the errors for
// the others.
func TestOpenDevice(t *testing.T) {
	d, err := OpenDevice("cpu")
	if err != nil || d != cpuDevice {
		t.Fatalf(`OpenDevice("cpu") = %v, %v`, d, err)
	}
	if _, err := OpenDevice("tpu"); err == nil || !strings.Contains(err.Error(), `"tpu"`) || !strings.Contains(err.Error(), "cpu") {
		t.Errorf(`OpenDevice("tpu"): error %v, want one naming the device and listing this build's`, err)
	}
	if slices.Contains(Devices(), "cuda") {
		return // a gmcuda build: opening needs a GPU, which tests cannot assume
	}
	if _, err := OpenDevice("cuda"); err == nil || !strings.Contains(err.Error(), "-tags gmcuda") {
		t.Errorf(`OpenDevice("cuda") in a build without gmcuda: error %v, want one saying how to build it`, err)
	}
}

// TestOnlyTheDefaultDeviceImportsCPU keeps every computation behind the seam:
// the only non-test file of the package that may import ops/cpu is the one
// that makes the CPU device the default.
func TestOnlyTheDefaultDeviceImportsCPU(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "device_cpu.go" {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "github.com/gmcn-go/gmcn/ops/cpu" {
				t.Errorf("%s imports ops/cpu; call the computation through the op's device", name)
			}
		}
	}
}
