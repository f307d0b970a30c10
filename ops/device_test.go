package ops

import (
	"fmt"
	"github.com/gmcn-go/gmcn/internal/gmtest"
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

// testDev is the device the tests build their ops on: the CPU, or the one
// gmtest.DeviceEnv names (TestMain).
var testDev = cpuDevice

// on adapts a constructor to build its op on the tests' device when called.
func on(f func(*device.Device) G.Op) func() G.Op {
	return func() G.Op { return f(testDev) }
}

// useDevice makes d the tests' device until the test ends.
func useDevice(t *testing.T, d *device.Device) {
	t.Helper()
	prev := testDev
	testDev = d
	t.Cleanup(func() { testDev = prev })
}

// deviceCase is one op of the package with float64 inputs for dimension d.
type deviceCase struct {
	name   string
	op     func() (G.Op, error)
	inputs func(rng *rand.Rand, d int) []*tensor.Dense
}

// opOnly adapts a constructor that cannot fail, called on the tests'
// device when the case runs.
func opOnly(f func(*device.Device) G.Op) func() (G.Op, error) {
	return func() (G.Op, error) { return f(testDev), nil }
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
	{"ConvFit", opOnly(func(testDev *device.Device) G.Op { return NewConvFit(testDev, fitN(5)) }), func(rng *rand.Rand, d int) []*tensor.Dense {
		return []*tensor.Dense{randomMixture(rng, 2, 3, 4, d), randomMixture(rng, 2, 3, 2, d)}
	}},
	{"ReLUFitTargets", opOnly(func(testDev *device.Device) G.Op { return NewReLUFitTargets(testDev, ReLUFitOptions{}, false) }), func(rng *rand.Rand, d int) []*tensor.Dense {
		return []*tensor.Dense{randomMixture(rng, 2, 2, 6, d), tensor.New(tensor.WithShape(2, 2, 6), tensor.WithBacking(gmtest.Normal(rng, 24)))}
	}},
	{"KeepLargest", opOnly(func(testDev *device.Device) G.Op { return NewKeepLargest(testDev, 3) }), oneMixture(2, 3, 5)},
	{"Block", opOnly(func(testDev *device.Device) G.Op {
		return NewBlock(testDev, BlockSpec{Reduce: BlockTreeHEM, Np: 4, TreeHEM: TreeHEMOptions{Reduction: 2}})
	}), blockInputs},
	{"Integrate", opOnly(NewIntegrate), oneMixture(2, 3, 4)},
	{"Evaluate", opOnly(NewEvaluate), func(rng *rand.Rand, d int) []*tensor.Dense {
		return []*tensor.Dense{randomMixture(rng, 2, 3, 4, d), evalPoints(rng, 1, 3, 5, d)}
	}},
	{"ReLUFit", opOnly(func(testDev *device.Device) G.Op { return NewReLUFit(testDev, ReLUFitOptions{}) }), oneMixture(2, 2, 6)},
	{"ReLUFitConstant", opOnly(func(testDev *device.Device) G.Op { return NewReLUFitConstant(testDev, ReLUFitOptions{}) }), func(rng *rand.Rand, d int) []*tensor.Dense {
		return []*tensor.Dense{randomMixture(rng, 2, 2, 6, d), tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{0.3, -0.2, 0, 0.6}))}
	}},
	{"TreeHEM", opOnly(func(testDev *device.Device) G.Op { return NewTreeHEM(testDev, 4, TreeHEMOptions{Reduction: 2}) }), func(rng *rand.Rand, d int) []*tensor.Dense {
		// TreeHEM is meant for the positive output of the ReLU fit; weights
		// of both signs can make its normalisation explode (docs/treehem.md).
		x := randomMixture(rng, 2, 2, 12, d)
		v, st := x.Data().([]float64), 1+d+d*d
		for i := 0; i < len(v); i += st {
			v[i] = 0.1 + math.Abs(v[i])
		}
		return []*tensor.Dense{x}
	}},
	{"MEM", opOnly(func(testDev *device.Device) G.Op { return NewMEM(testDev, 3) }), oneMixture(2, 2, 8)},
	{"CovScale", opOnly(NewCovScale), oneMixture(2, 3, 4)},
	{"CovScaleNorm", func() (G.Op, error) {
		c, err := NewCovScaleNorm(testDev, 3)
		if err == nil {
			err = c.SetTraining(true)
		}
		return c, err
	}, oneMixture(2, 3, 4)},
	{"Standardise", opOnly(NewStandardise), func(rng *rand.Rand, d int) []*tensor.Dense {
		return []*tensor.Dense{randomMixture(rng, 2, 2, 4, d), tensor.New(tensor.WithShape(1), tensor.WithBacking([]float64{1.5}))}
	}},
	{"ScaleWeights", opOnly(func(testDev *device.Device) G.Op { return NewScaleWeights(testDev, 0.5) }), oneMixture(2, 3, 4)},
	{"ScaleAxes", func() (G.Op, error) { return NewScaleAxes(testDev, 2) }, scalesOf(2)},
	{"WeightDecay", opOnly(NewWeightDecay), func(rng *rand.Rand, d int) []*tensor.Dense {
		w, _, f := kernelRawTensors(rng, 2, 3, 2, d, 0.5)
		return []*tensor.Dense{w, f}
	}},
	{"AssembleKernel", opOnly(func(testDev *device.Device) G.Op { return NewAssembleKernel(testDev, device.DefaultKernelConfig(1.5)) }), func(rng *rand.Rand, d int) []*tensor.Dense {
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
					var plainCalls [][]string // per run, without memos
					for _, withMemo := range memos {
						suffix := ""
						if withMemo {
							fake.memo, cpu.memo, suffix = &memo{}, &memo{}, " (memo)"
						}
						runs := []deviceRun{{"forward" + suffix, fake, cpu, values(in)}}
						var memoCalls [][]string // per run, with memos
						for k := 0; k < len(runs); k++ {
							r := runs[k]
							got, err := r.op.Do(r.args...)
							if err != nil {
								t.Fatalf("%s: %v", r.what, err)
							}
							calls := log.take()
							for _, name := range calls {
								used[strings.TrimSuffix(name, "(saved)")] = true
							}
							if !withMemo {
								checkCalls(t, r.what, calls, r.op.spec().computations())
								plainCalls = append(plainCalls, calls)
							} else {
								memoCalls = append(memoCalls, calls)
							}
							if !withMemo && slices.ContainsFunc(calls, func(c string) bool { return strings.HasSuffix(c, "(saved)") }) {
								t.Errorf("%s: called %v without a memo", r.what, calls)
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
						if !withMemo {
							continue
						}
						checkCalls(t, runs[0].what, memoCalls[0], runs[0].op.spec().computations())
						shared := sharedGrads(memoCalls[1:], plainCalls[1:])
						for k := 1; k < len(runs); k++ {
							if !shared || k == 1 {
								checkCalls(t, runs[k].what, memoCalls[k], runs[k].op.spec().computations())
							}
							if !shared && !usedSaved(memoCalls[k], plainCalls[k]) {
								t.Errorf("%s: called %v with a memo, as without (%v)", runs[k].what, memoCalls[k], plainCalls[k])
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

// usedSaved reports whether a grad op's device calls show that it used its
// forward's saved state: it handed the state to a computation ("(saved)"),
// or it skipped computations that it makes without the state (plain).
func usedSaved(calls, plain []string) bool {
	return slices.ContainsFunc(calls, func(c string) bool { return strings.HasSuffix(c, "(saved)") }) ||
		len(calls) < len(plain)
}

// sharedGrads reports whether the device calls of an op's grad runs with a
// memo (in order) show grads that share one computation through the
// forward's saved state, as the kernel assembly's three do: the first
// makes the calls it makes without the memo (plain) and computes there what
// all of them need, and the others call nothing.
func sharedGrads(calls, plain [][]string) bool {
	if len(calls) < 2 || !slices.Equal(calls[0], plain[0]) {
		return false
	}
	for _, c := range calls[1:] {
		if len(c) > 0 {
			return false
		}
	}
	return true
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
	methods := make([]string, len(declared))
	for i, d := range declared {
		methods[i], _, _ = strings.Cut(d, "/")
	}
	for _, c := range calls {
		if !slices.Contains(methods, strings.TrimSuffix(c, "(saved)")) {
			t.Errorf("%s: called %v on the device, declares %v", what, calls, declared)
			return
		}
	}
}

// TestCallsExtern checks that an op reports CallsExtern exactly when one of
// its computations is external on its device.
func TestCallsExtern(t *testing.T) {
	ext, _ := newRecordingDevice("Conv", "ReLUFitBackward", "ReLUFit/refined")
	useDevice(t, ext)
	conv, relu := asOp(NewConv(testDev)), asOp(NewReLUFit(testDev, ReLUFitOptions{}))
	refined := asOp(NewReLUFit(testDev, ReLUFitOptions{Refine: true}))
	constant := asOp(NewReLUFitConstant(testDev, ReLUFitOptions{}))
	for _, c := range []struct {
		what string
		op   *op
		want bool
	}{
		{"Conv", conv, true},
		{"ConvGradData", conv.gradOp(0), false},
		{"ReLUFit", relu, false},
		{"ReLUFitGrad", relu.gradOp(0), true},
		// The variants are external only where the device names them.
		{"ReLUFit refined", refined, true},
		{"ReLUFitGrad refined", refined.gradOp(0), false},
		{"ReLUFitConstant", constant, false},
		{"ReLUFitConstantGrad", constant.gradOp(0), false},
		{"ReLUFitConstantGrad of the constant", constant.gradOp(1), false},
		{"Integrate", asOp(NewIntegrate(testDev)), false},
		{"Conv on the CPU", newOp(cpuDevice, convKernel[float32]{}, convKernel[float64]{}), false},
	} {
		if got := c.op.CallsExtern(); got != c.want {
			t.Errorf("%s: CallsExtern = %v, want %v", c.what, got, c.want)
		}
	}
}

// TestOpsKeepTheirDevice builds one op on a fake device and one on the
// CPU in the same process: each computes on its own, and a nil device is
// the CPU.
func TestOpsKeepTheirDevice(t *testing.T) {
	fake, log := newRecordingDevice()
	onFake, onCPU, onNil := NewIntegrate(fake), NewIntegrate(cpuDevice), NewIntegrate(nil)
	if d := asOp(onNil).dev; d != cpuDevice {
		t.Errorf("an op built with a nil device is on %v, want the CPU", d.Name)
	}
	x := randomMixture(rand.New(rand.NewPCG(1, 2)), 2, 2, 3, 2)
	for _, c := range []struct {
		name string
		op   G.Op
		want []string
	}{{"cpu", onCPU, nil}, {"fake", onFake, []string{"Integrate"}}, {"nil", onNil, nil}} {
		if _, err := c.op.Do(x); err != nil {
			t.Fatal(err)
		}
		if calls := log.take(); !slices.Equal(calls, c.want) {
			t.Errorf("the op built on %s called %v on the fake device, want %v", c.name, calls, c.want)
		}
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
// in the whole module, whatever the build tags, the only non-test file that
// may import ops/cpu is the one of package ops that makes the CPU device
// (device_cpu.go). Code above the ops reaches the kernels through a device
// (ops.CPU, ops.OpenDevice), and the Gaussian maths every layer needs lives
// below them, in ops/mixture.
func TestOnlyTheDefaultDeviceImportsCPU(t *testing.T) {
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir("..", func(path string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if name := e.Name(); path != ".." && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel("..", path)
		if err != nil {
			return err
		}
		if filepath.Dir(rel) == filepath.Join("ops", "cpu") || rel == filepath.Join("ops", "device_cpu.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "github.com/gmcn-go/gmcn/ops/cpu" {
				t.Errorf("%s imports ops/cpu; reach the kernels through a device (ops.CPU, ops.OpenDevice)", rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Errorf("checked %d files; is .. the module root?", checked)
	}
}
