//go:build gmcuda && gmcudaemu

package cudaops

import (
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// TestEmulatorReportsUndefined checks that what CUDA leaves undefined fails
// an emulated launch with an error naming the kernel and what happened,
// and that unwritten shared memory reads as NaN.
func TestEmulatorReportsUndefined(t *testing.T) {
	// Which lanes wait when one exits depends on the order the threads run
	// in, so the messages are checked under the forward schedule; under a
	// shuffled one they depend on how many launches came before.
	defer func() {
		s, seed, _ := envSchedule()
		setSchedule(s, seed)
	}()
	setSchedule(Forward, 1)
	for _, c := range []struct {
		what int
		want []string
	}{
		{0, []string{"gm_test_undefined_f64", "block (0,0,0)", "deadlock", "__syncthreads"}},
		// The forward schedule sees lane 16 exit while lanes 0-15 wait.
		{1, []string{"gm_test_undefined_f64", "of warp", "lanes 0xffff wait"}},
	} {
		err := dev.run(func(s *seq) {
			p := out[float64](s, slotOut, 64)
			s.launch("gm_test_undefined_f64", [2]int{1, 1}, 64, 0, p, c.what)
		})
		gmtest.WantErr(t, err, c.want...)
	}
	res := make([]float64, 64)
	must(t, dev.run(func(s *seq) {
		p := out[float64](s, slotOut, 64)
		s.launch("gm_test_undefined_f64", [2]int{1, 1}, 64, 64*8, p, 2)
		get(s, res, p)
	}))
	for i, v := range res {
		if !math.IsNaN(v) {
			t.Fatalf("thread %d read %v from shared memory no thread wrote, want NaN", i, v)
		}
	}
}

// TestEmulatorChecksLaunchesAndCopies checks the errors a real driver would
// give (or, for the parameter count, could not detect): each fails the
// call with a message that says what was wrong.
func TestEmulatorChecksLaunchesAndCopies(t *testing.T) {
	launch := func(block, shared int, args ...any) error {
		return dev.run(func(s *seq) {
			p := out[float32](s, slotOut, 64*6)
			s.launch("gm_test_warp_f32", [2]int{1, 1}, block, shared, append([]any{p}, args...)...)
		})
	}
	gmtest.WantErr(t, launch(64, 0, 7), "gm_test_warp_f32 takes 1 parameters, the launch passes 2")
	gmtest.WantErr(t, launch(2048, 0), "block (2048,1,1) is not a valid CUDA block")
	gmtest.WantErr(t, launch(64, 49153), "49153 bytes of dynamic shared memory", "49152")
	err := dev.run(func(s *seq) {
		p := out[float32](s, slotOut, 10)
		get(s, make([]float32, 11), p)
	})
	gmtest.WantErr(t, err, "copy from the device of 44 bytes", "reaches 4 bytes past the end of the 40-byte allocation")
}

// TestSchedulesAgree runs every GPU computation under the three schedules
// and demands bitwise equal results: a result that depends on the order of
// the threads between barriers is a race, even where it stays within the
// tolerance of the comparison with the CPU.
func TestSchedulesAgree(t *testing.T) {
	defer func() {
		s, seed, _ := envSchedule()
		setSchedule(s, seed)
	}()
	run := func() [][]float64 {
		rng := rand.New(rand.NewPCG(3, 4))
		k := gpu[float64]()
		l := mixture.Layout{B: 2, C: 3, N: 130, D: 3}
		lk := mixture.Layout{B: 2, C: 3, N: 5, D: 3}
		ly := device.ConvLayout(l, lk)
		x, kr := randomMixtures[float64](rng, l), randomMixtures[float64](rng, lk)
		g := gmtest.Uniform[float64](rng, l.Len(), -1, 1)
		gy := gmtest.Uniform[float64](rng, ly.Len(), -1, 1)
		const m = 45
		pts := gmtest.Uniform[float64](rng, l.Mixtures()*m*3, -4, 4)
		gm := gmtest.Uniform[float64](rng, l.Mixtures()*m, -1, 1)
		var res [][]float64
		add := func(n int, f func(y []float64) error) {
			y := make([]float64, n)
			must(t, f(y))
			res = append(res, y)
		}
		add(l.Mixtures(), func(y []float64) error { return k.Integrate(y, x, l) })
		add(ly.Len(), func(y []float64) error { return k.Conv(y, x, kr, l, lk) })
		add(l.Len(), func(y []float64) error { return k.ConvBackwardData(y, gy, kr, l, lk) })
		add(lk.Len(), func(y []float64) error { return k.ConvBackwardKernels(y, gy, x, l, lk) })
		nf := device.ConvFitSelect{N: 40, Negative: device.DefaultConvFitNegative}
		lf := device.ConvFitLayout(l, lk, nf.N)
		gf := gmtest.Uniform[float64](rng, lf.Len(), -1, 1)
		add(lf.Len(), func(y []float64) error { return k.ConvFit(y, x, kr, l, lk, nf) })
		add(l.Len(), func(y []float64) error { return k.ConvFitBackward(y, nil, gf, x, kr, l, lk, nf, nil) })
		add(lk.Len(), func(y []float64) error { return k.ConvFitBackward(nil, y, gf, x, kr, l, lk, nf, nil) })
		add(l.Mixtures()*m, func(y []float64) error { return k.Evaluate(y, x, pts, l, l.B, l.C, m) })
		add(l.Len(), func(y []float64) error { return k.EvaluateBackwardMixture(y, x, pts, gm, l, l.B, l.C, m) })
		add(len(pts), func(y []float64) error { return k.EvaluateBackwardPoints(y, x, pts, gm, l, l.B, l.C, m) })
		add(l.Len(), func(y []float64) error { return k.ReLUFit(y, x, nil, nil, l, device.ReLUFitOptions{}) })
		add(l.Len(), func(y []float64) error {
			return k.ReLUFitBackward(y, nil, nil, x, nil, nil, g, l, device.ReLUFitOptions{}, nil)
		})
		add(l.Mixtures(), func(y []float64) error { return k.MeanTraces(y, x, l) })
		add(l.Mixtures(), func(y []float64) error { return k.StandardiseScale(y, x, l) })
		lp := mixture.Layout{B: l.B, C: l.C, N: 50, D: l.D}
		add(lp.Len(), func(y []float64) error { return k.KeepLargest(y, x, l, lp.N) })
		add(l.Len(), func(y []float64) error { return k.KeepLargestBackward(y, x, g[:lp.Len()], l, lp.N) })
		xp := slices.Clone(x) // TreeHEM reduces positive mixtures
		for i := 0; i < len(xp); i += l.Stride() {
			xp[i] = math.Abs(xp[i])
		}
		lt := mixture.Layout{B: l.B, C: l.C, N: 16, D: l.D}
		for _, o := range []device.TreeHEMOptions{{Reduction: 2}, {Reduction: 4, UnderFill: true}} {
			add(lt.Len(), func(y []float64) error { return k.TreeHEM(y, xp, l, lt.N, o) })
			add(l.Len(), func(y []float64) error { return k.TreeHEMBackward(y, xp, g[:lt.Len()], l, lt.N, o, nil) })
		}
		sc := gmtest.Uniform[float64](rng, l.Mixtures(), 0.5, 2)
		tau := gmtest.Uniform[float64](rng, l.Mixtures(), 1, 2)
		add(l.Len(), func(y []float64) error { return k.CovScaleBackward(y, g, x, l, sc, tau) })
		a := gmtest.Uniform[float64](rng, lk.Mixtures()*lk.N*9, -1.5, 1.5)
		add(1, func(y []float64) error {
			var err error
			y[0], err = k.KernelEpsilon(a, 3, device.DefaultKernelConfig(2.5))
			return err
		})
		return res
	}
	setSchedule(Forward, 1)
	want := run()
	for _, s := range []Schedule{Reverse, Shuffled} {
		setSchedule(s, 11)
		for i, got := range run() {
			if !slices.Equal(got, want[i]) {
				t.Errorf("computation %d: the %s schedule's result differs from the forward one's by %g", i, s, gmtest.MaxAbsDiff(got, want[i]))
			}
		}
	}
}

// TestEmulatorCompilesEverySource checks that every .cu file has its
// emu_<name>.cc, which compiles it into the emulator.
func TestEmulatorCompilesEverySource(t *testing.T) {
	cus, err := fs.Glob(kernelSources, "*.cu")
	if err != nil || len(cus) == 0 {
		t.Fatalf("embedded .cu sources: %v, %v", cus, err)
	}
	for _, cu := range cus {
		name := strings.TrimSuffix(cu, ".cu")
		src, err := os.ReadFile("emu_" + name + ".cc")
		if err != nil || !strings.Contains(string(src), `#include "`+cu+`"`) {
			t.Errorf("%s: emu_%s.cc does not include it (%v)", cu, name, err)
		}
	}
}
