//go:build gmcuda

package cudaops

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops/cpu"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// The tests compare every GPU kernel with the CPU kernel of the same name on
// random inputs, forward and every gradient, float32 and float64, 2D and 3D,
// for sizes that are and are not multiples of the block sizes. Output
// buffers are poisoned with NaN, so an element a kernel does not write fails
// the comparison. Build on a machine with Go and run on the GPU machine:
//
//	go test -c -tags gmcuda -o gpu.test ./cudaops && ./gpu.test -test.v -test.bench . -test.benchtime 20x

var dev *Device

func TestMain(m *testing.M) {
	d, err := Default()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cudaops tests need a CUDA device:", err)
		os.Exit(1)
	}
	dev = d
	poison = true
	os.Exit(m.Run())
}

// shapes are mixture batches [B, C, N] to test; 1, 37, 130 and 257 are not
// multiples of any block size (32, 128, 256).
var shapes = [][3]int{{1, 1, 1}, {2, 3, 37}, {3, 2, 130}, {2, 2, 257}}

// tolerance is the largest accepted max|gpu − cpu| / max|cpu| for T: the
// kernels sum in a different order (and the CPU float32 exp is a polynomial).
func tolerance[T Float](grad bool) float64 {
	if sizeOf[T]() == 4 {
		if grad {
			return 2e-3
		}
		return 2e-4
	}
	return 1e-9
}

// mixtureSpec draws weights of both signs with |w| ≥ 0.1, positions in
// [−3, 3) and covariances 4·A·Aᵀ + 0.1·I (A·2 uniform in [−1, 1)), which are
// SPD and not too anisotropic.
var mixtureSpec = gmtest.Spec{WeightMin: 0.1, WeightMax: 1.1, NegativeOneIn: 4, Spread: 3, CovScale: 4, CovDiag: 0.1}

// randomMixtures returns a packed batch of layout l drawn from mixtureSpec.
func randomMixtures[T Float](rng *rand.Rand, l mixture.Layout) []T {
	return gmtest.Mixtures[T](rng, mixtureSpec, l.B, l.C, l.N, l.D)
}

// compare fails t unless got matches want within tol relative to max|want|
// and got holds no NaN (a poisoned, unwritten element).
func compare[T Float](t *testing.T, what string, got, want []T, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	var diff, scale float64
	worst := -1
	for i := range got {
		g, w := float64(got[i]), float64(want[i])
		if math.IsNaN(g) || math.IsInf(g, 0) {
			t.Errorf("%s: element %d is %v (not written?), want %v", what, i, g, w)
			return
		}
		if e := math.Abs(g - w); e > diff {
			diff, worst = e, i
		}
		scale = math.Max(scale, math.Abs(w))
	}
	if rel := diff / math.Max(scale, 1e-300); rel > tol {
		t.Errorf("%s: max|gpu−cpu|/max|cpu| = %.3g > %.3g (element %d: gpu %v, cpu %v)", what, rel, tol, worst, got[worst], want[worst])
	}
}

func forTypes(t *testing.T, f32, f64 func(t *testing.T)) {
	t.Run("float32", f32)
	t.Run("float64", f64)
}

func forShapes(t *testing.T, f func(t *testing.T, rng *rand.Rand, l mixture.Layout)) {
	for _, d := range []int{2, 3} {
		for _, sh := range shapes {
			l := mixture.Layout{B: sh[0], C: sh[1], N: sh[2], D: d}
			t.Run(fmt.Sprintf("%dD_B%d_C%d_N%d", d, l.B, l.C, l.N), func(t *testing.T) {
				f(t, rand.New(rand.NewPCG(uint64(l.Len()), uint64(d))), l)
			})
		}
	}
}

// gpu returns the kernels of the test device with the CPU device as the
// fallback, as NewDevice makes them for programs.
func gpu[T Float]() Kernels[T] {
	d := NewDevice(dev, cpu.Device())
	if k, ok := any(d.F32).(Kernels[T]); ok {
		return k
	}
	return any(d.F64).(Kernels[T])
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestIntegrate(t *testing.T) {
	forTypes(t, testIntegrate[float32], testIntegrate[float64])
}

func testIntegrate[T Float](t *testing.T) {
	forShapes(t, func(t *testing.T, rng *rand.Rand, l mixture.Layout) {
		x := randomMixtures[T](rng, l)
		y, want := make([]T, l.Mixtures()), make([]T, l.Mixtures())
		must(t, gpu[T]().Integrate(y, x, l))
		cpu.Integrate(want, x, l)
		compare(t, "y", y, want, tolerance[T](false))
		g := gmtest.Uniform[T](rng, l.Mixtures(), -1, 1)
		dx, wdx := make([]T, l.Len()), make([]T, l.Len())
		must(t, gpu[T]().IntegrateBackward(dx, g, l))
		cpu.IntegrateBackward(wdx, g, l)
		compare(t, "dx", dx, wdx, tolerance[T](true))
	})
}

func TestConv(t *testing.T) {
	forTypes(t, testConv[float32], testConv[float64])
}

func testConv[T Float](t *testing.T) {
	forShapes(t, func(t *testing.T, rng *rand.Rand, lx mixture.Layout) {
		for _, nk := range []int{1, 5} {
			lk := mixture.Layout{B: 3, C: lx.C, N: nk, D: lx.D}
			ly := device.ConvLayout(lx, lk)
			x, k := randomMixtures[T](rng, lx), randomMixtures[T](rng, lk)
			y, want := make([]T, ly.Len()), make([]T, ly.Len())
			must(t, gpu[T]().Conv(y, x, k, lx, lk))
			cpu.Conv(want, x, k, lx, lk)
			compare(t, fmt.Sprintf("Nk%d y", nk), y, want, tolerance[T](false))
			g := gmtest.Uniform[T](rng, ly.Len(), -1, 1)
			dx, wdx := make([]T, lx.Len()), make([]T, lx.Len())
			must(t, gpu[T]().ConvBackwardData(dx, g, k, lx, lk))
			cpu.ConvBackwardData(wdx, g, k, lx, lk)
			compare(t, fmt.Sprintf("Nk%d dx", nk), dx, wdx, tolerance[T](true))
			dk, wdk := make([]T, lk.Len()), make([]T, lk.Len())
			must(t, gpu[T]().ConvBackwardKernels(dk, g, x, lx, lk))
			cpu.ConvBackwardKernels(wdk, g, x, lx, lk)
			compare(t, fmt.Sprintf("Nk%d dk", nk), dk, wdk, tolerance[T](true))
		}
	})
}

// TestStandardiseScale compares the standardisation statistic with the
// CPU's; the grid spans every channel of a sample, so the channels of one
// sample share their box.
func TestStandardiseScale(t *testing.T) {
	forTypes(t, testStandardiseScale[float32], testStandardiseScale[float64])
}

func testStandardiseScale[T Float](t *testing.T) {
	forShapes(t, func(t *testing.T, rng *rand.Rand, l mixture.Layout) {
		x := randomMixtures[T](rng, l)
		sd, want := make([]float64, l.Mixtures()), make([]float64, l.Mixtures())
		must(t, gpu[T]().StandardiseScale(sd, x, l))
		cpu.StandardiseScale(want, x, l)
		compare(t, "sd", sd, want, 1e-9)
	})
}

// TestKeepLargest compares the selection of the largest weights with the
// CPU's, forward and gradient, on random weights and on weights with many
// ties (rounded to one decimal), where the earlier component must win.
func TestKeepLargest(t *testing.T) {
	forTypes(t, testKeepLargest[float32], testKeepLargest[float64])
}

func testKeepLargest[T Float](t *testing.T) {
	forShapes(t, func(t *testing.T, rng *rand.Rand, l mixture.Layout) {
		x := randomMixtures[T](rng, l)
		for _, data := range []string{"random", "tied"} {
			if data == "tied" {
				for i := 0; i < len(x); i += l.Stride() {
					x[i] = T(math.Round(float64(x[i])*10) / 10)
				}
			}
			for _, np := range slices.Compact([]int{1, max(l.N/2, 1), l.N}) {
				ly := mixture.Layout{B: l.B, C: l.C, N: np, D: l.D}
				y, want := make([]T, ly.Len()), make([]T, ly.Len())
				must(t, gpu[T]().KeepLargest(y, x, l, np))
				cpu.KeepLargest(want, x, l, np)
				compare(t, fmt.Sprintf("%s np%d y", data, np), y, want, 0)
				g := gmtest.Uniform[T](rng, ly.Len(), -1, 1)
				dx, wdx := make([]T, l.Len()), make([]T, l.Len())
				must(t, gpu[T]().KeepLargestBackward(dx, x, g, l, np))
				cpu.KeepLargestBackward(wdx, x, g, l, np)
				compare(t, fmt.Sprintf("%s np%d dx", data, np), dx, wdx, 0)
			}
		}
	})
}

// TestConvFit compares the fused convolution-fitting with the CPU's, forward
// and both gradients, for counts n from 1 (the root) past Nv (every leaf,
// and padding), on
// random mixtures and on two made to tie: equal weights on a lattice give
// equal masses (the first slot must win) and equal Morton codes (the index
// must order them), and zero data weights take the equal-weight moments.
// Which nodes are selected shows in every output value, so equal outputs in
// float64 mean equal decisions.
func TestConvFit(t *testing.T) {
	forTypes(t, testConvFit[float32], testConvFit[float64])
}

func testConvFit[T Float](t *testing.T) {
	forShapes(t, func(t *testing.T, rng *rand.Rand, lx mixture.Layout) {
		for _, nk := range []int{1, 5} {
			if nk == 5 && lx.N > 200 {
				// Nv 2570 adds nothing the other shapes miss (N 130 with
				// Nk 5 takes the global-memory scratch at n = Nv + 3), and
				// the emulator sorts slowly.
				continue
			}
			lk := mixture.Layout{B: 3, C: lx.C, N: nk, D: lx.D}
			nv := lx.C * lx.N * nk
			x, k := randomMixtures[T](rng, lx), randomMixtures[T](rng, lk)
			// The made-up data once, with the larger kernels. With half
			// the weights zero some nodes have only zero weights (their
			// moment match is the equal-weight one) beside others in the
			// same warp.
			data := []string{"random", "lattice", "zero", "half zero"}
			if nk == 1 {
				data = data[:1]
			}
			for _, data := range data {
				switch data {
				case "lattice":
					x, k = tiedMixtures[T](lx), tiedMixtures[T](lk)
				case "zero", "half zero":
					step := lx.Stride()
					if data == "half zero" {
						x = randomMixtures[T](rng, lx)
						step *= 2
					}
					for i := 0; i < len(x); i += step {
						x[i] = 0
					}
				}
				// Both selection rules, alternating over the sizes: each
				// makes other decisions, run twice the emulator is slow.
				for i, n := range slices.Compact([]int{1, 7, max(nv/3, 1), nv + 3}) {
					sel := device.ConvFitSelect{N: n, Negative: []float64{1, device.DefaultConvFitNegative}[i%2]}
					testConvFitCase(t, rng, fmt.Sprintf("Nk%d %s %v", nk, data, sel), x, k, lx, lk, sel)
				}
			}
		}
	})
}

// TestConvFitLooping runs ConvFit with a grid of two blocks, each looping
// over several output mixtures (as batches past 512 mixtures do), with the
// scratch in shared and in global memory, in blocks of one, two and eight
// warps.
func TestConvFitLooping(t *testing.T) {
	defer func(b, bb, g int) { convFitBlock, convFitBackBlock, convFitGrid = b, bb, g }(convFitBlock, convFitBackBlock, convFitGrid)
	convFitGrid = 2
	rng := rand.New(rand.NewPCG(7, 8))
	lx := mixture.Layout{B: 3, C: 2, N: 130, D: 2}
	lk := mixture.Layout{B: 3, C: 2, N: 5, D: 2}
	x, k := randomMixtures[float64](rng, lx), randomMixtures[float64](rng, lk)
	for _, threads := range []int{256, 32, 64} {
		convFitBlock, convFitBackBlock = threads, threads
		for _, n := range []int{9, 1303} { // Nv = 1300; 1303 needs more than 48 KiB of scratch
			sel := device.ConvFitSelect{N: n, Negative: device.DefaultConvFitNegative}
			testConvFitCase(t, rng, fmt.Sprintf("grid 2 threads %d %v", threads, sel), x, k, lx, lk, sel)
		}
	}
}

func testConvFitCase[T Float](t *testing.T, rng *rand.Rand, what string, x, k []T, lx, lk mixture.Layout, n device.ConvFitSelect) {
	t.Helper()
	ly := device.ConvFitLayout(lx, lk, n.N)
	y, want := make([]T, ly.Len()), make([]T, ly.Len())
	saved, err := gpu[T]().ConvFitSaving(y, x, k, lx, lk, n)
	must(t, err)
	cpu.ConvFit(want, x, k, lx, lk, n)
	compare(t, what+" y", y, want, tolerance[T](false))
	g := gmtest.Uniform[T](rng, ly.Len(), -1, 1)
	dx, dk := make([]T, lx.Len()), make([]T, lk.Len())
	wdx, wdk := make([]T, lx.Len()), make([]T, lk.Len())
	must(t, gpu[T]().ConvFitBackward(dx, dk, g, x, k, lx, lk, n, saved))
	cpu.ConvFitBackward(wdx, wdk, g, x, k, lx, lk, n)
	compare(t, what+" dx", dx, wdx, tolerance[T](true))
	compare(t, what+" dk", dk, wdk, tolerance[T](true))
	// One destination at a time, as the op's two gradient nodes ask.
	clear(dx)
	must(t, gpu[T]().ConvFitBackward(dx, nil, g, x, k, lx, lk, n, nil))
	compare(t, what+" dx alone", dx, wdx, tolerance[T](true))
}

// tiedMixtures returns mixtures of weight 1 and covariance I whose
// positions repeat on a 3-point lattice per axis.
func tiedMixtures[T Float](l mixture.Layout) []T {
	x := make([]T, l.Len())
	s := l.Stride()
	for g := 0; g < l.Mixtures()*l.N; g++ {
		v := x[g*s : (g+1)*s]
		v[0] = 1
		for a := range l.D {
			v[1+a] = T((g>>a)%3) - 1
			v[1+l.D+a*l.D+a] = 1
		}
	}
	return x
}

func TestEvaluate(t *testing.T) {
	forTypes(t, testEvaluate[float32], testEvaluate[float64])
}

func testEvaluate[T Float](t *testing.T) {
	forShapes(t, func(t *testing.T, rng *rand.Rand, l mixture.Layout) {
		x := randomMixtures[T](rng, l)
		// Point sets: one per mixture, broadcast over the batch, and one for all.
		for _, ps := range [][3]int{{l.B, l.C, 45}, {1, l.C, 129}, {1, 1, 7}} {
			pb, pc, m := ps[0], ps[1], ps[2]
			name := fmt.Sprintf("pts%dx%dx%d", pb, pc, m)
			pts := gmtest.Uniform[T](rng, pb*pc*m*l.D, -4, 4)
			y, want := make([]T, l.Mixtures()*m), make([]T, l.Mixtures()*m)
			must(t, gpu[T]().Evaluate(y, x, pts, l, pb, pc, m))
			cpu.Evaluate(want, x, pts, l, pb, pc, m)
			compare(t, name+" y", y, want, tolerance[T](false))
			g := gmtest.Uniform[T](rng, len(y), -1, 1)
			dx, wdx := make([]T, l.Len()), make([]T, l.Len())
			must(t, gpu[T]().EvaluateBackwardMixture(dx, x, pts, g, l, pb, pc, m))
			cpu.EvaluateBackwardMixture(wdx, x, pts, g, l, pb, pc, m)
			compare(t, name+" dx", dx, wdx, tolerance[T](true))
			dp, wdp := make([]T, len(pts)), make([]T, len(pts))
			must(t, gpu[T]().EvaluateBackwardPoints(dp, x, pts, g, l, pb, pc, m))
			cpu.EvaluateBackwardPoints(wdp, x, pts, g, l, pb, pc, m)
			compare(t, name+" dp", dp, wdp, tolerance[T](true))
		}
	})
}

func TestReLUFit(t *testing.T) {
	forTypes(t, testReLUFit[float32], testReLUFit[float64])
}

func testReLUFit[T Float](t *testing.T) {
	forShapes(t, func(t *testing.T, rng *rand.Rand, l mixture.Layout) {
		x := randomMixtures[T](rng, l)
		g := gmtest.Uniform[T](rng, l.Len(), -1, 1)
		for _, opts := range []device.ReLUFitOptions{{}, {Variant: device.ReLUFitPaper}} {
			name := fmt.Sprintf("variant%d", opts.Variant)
			y, want := make([]T, l.Len()), make([]T, l.Len())
			must(t, gpu[T]().ReLUFit(y, x, nil, nil, l, opts))
			must(t, cpu.ReLUFit(want, x, nil, nil, l, opts))
			compare(t, name+" y", y, want, tolerance[T](false))
			dx, wdx := make([]T, l.Len()), make([]T, l.Len())
			must(t, gpu[T]().ReLUFitBackward(dx, nil, nil, x, nil, nil, g, l, opts, nil))
			must(t, cpu.ReLUFitBackward(wdx, nil, nil, x, nil, nil, g, l, opts))
			compare(t, name+" dx", dx, wdx, tolerance[T](true))
			// With constants, given targets or both: the GPU kernels against
			// the CPU's, every gradient asked for.
			kappa := gmtest.Uniform[T](rng, l.Mixtures(), -0.5, 0.5)
			tg := gmtest.Uniform[T](rng, l.Mixtures()*l.N, -0.5, 1)
			for _, c := range []struct {
				name     string
				kappa, t []T
			}{{"constants", kappa, nil}, {"targets", nil, tg}, {"constants and targets", kappa, tg}} {
				cname := name + " with " + c.name
				must(t, gpu[T]().ReLUFit(y, x, c.kappa, c.t, l, opts))
				must(t, cpu.ReLUFit(want, x, c.kappa, c.t, l, opts))
				compare(t, cname+" y", y, want, tolerance[T](false))
				dk, wdk := make([]T, l.Mixtures()), make([]T, l.Mixtures())
				var dt, wdt []T
				if c.t != nil {
					dt, wdt = make([]T, len(tg)), make([]T, len(tg))
				}
				must(t, gpu[T]().ReLUFitBackward(dx, dk, dt, x, c.kappa, c.t, g, l, opts, nil))
				must(t, cpu.ReLUFitBackward(wdx, wdk, wdt, x, c.kappa, c.t, g, l, opts))
				compare(t, cname+" dx", dx, wdx, tolerance[T](true))
				compare(t, cname+" dkappa", dk, wdk, tolerance[T](true))
				compare(t, cname+" dt", dt, wdt, tolerance[T](true))
			}
			// ∂L/∂κ alone, at κ = 0 (no constants given).
			dk, wdk := make([]T, l.Mixtures()), make([]T, l.Mixtures())
			must(t, gpu[T]().ReLUFitBackward(nil, dk, nil, x, nil, nil, g, l, opts, nil))
			must(t, cpu.ReLUFitBackward(nil, wdk, nil, x, nil, nil, g, l, opts))
			compare(t, name+" dkappa at κ = 0", dk, wdk, tolerance[T](true))
		}
	})
}

func TestCovScale(t *testing.T) {
	forTypes(t, testCovScale[float32], testCovScale[float64])
}

func testCovScale[T Float](t *testing.T) {
	forShapes(t, func(t *testing.T, rng *rand.Rand, l mixture.Layout) {
		x := randomMixtures[T](rng, l)
		tau, wtau := make([]float64, l.Mixtures()), make([]float64, l.Mixtures())
		must(t, gpu[T]().MeanTraces(tau, x, l))
		cpu.MeanTraces(wtau, x, l)
		compare(t, "tau", tau, wtau, 1e-12)
		s := make([]T, l.Mixtures())
		for m, v := range wtau {
			f, _ := device.CovScaleFactor(l.D, v)
			s[m] = T(f)
		}
		y, want := make([]T, l.Len()), make([]T, l.Len())
		must(t, gpu[T]().ScaleMixtures(y, x, l, s))
		cpu.ScaleMixtures(want, x, l, s)
		compare(t, "y", y, want, tolerance[T](false))
		g := gmtest.Uniform[T](rng, l.Len(), -1, 1)
		dx, wdx := make([]T, l.Len()), make([]T, l.Len())
		must(t, gpu[T]().ScaleMixtures(dx, g, l, s))
		cpu.ScaleMixturesBackward(wdx, g, l, s)
		compare(t, "detached dx", dx, wdx, tolerance[T](true))
		must(t, gpu[T]().CovScaleBackward(dx, g, x, l, s, wtau))
		cpu.CovScaleBackward(wdx, g, x, l, s, wtau)
		compare(t, "dx", dx, wdx, tolerance[T](true))
	})
}

func TestAssembleKernel(t *testing.T) {
	forTypes(t, testAssembleKernel[float32], testAssembleKernel[float64])
}

func testAssembleKernel[T Float](t *testing.T) {
	forShapes(t, func(t *testing.T, rng *rand.Rand, l mixture.Layout) {
		cfg := device.DefaultKernelConfig(2.5)
		count, d := l.Mixtures()*l.N, l.D
		w := gmtest.Uniform[T](rng, count, -1, 1)
		p := gmtest.Uniform[T](rng, count*d, -1, 1)
		a := gmtest.Uniform[T](rng, count*d*d, -1.5, 1.5)
		for _, f32 := range []bool{true, false} {
			cfg.Float32Epsilon = f32
			eps, err := gpu[T]().KernelEpsilon(a, d, cfg)
			must(t, err)
			compare(t, fmt.Sprintf("eps (float32 ε %v)", f32), []float64{eps}, []float64{cpu.KernelEpsilon(a, d, cfg)}, tolerance[T](false))
		}
		weps := cpu.KernelEpsilon(a, d, cfg)
		y, want := make([]T, l.Len()), make([]T, l.Len())
		must(t, gpu[T]().AssembleKernel(y, w, p, a, l, cfg, weps))
		cpu.AssembleKernel(want, w, p, a, l, cfg, weps)
		compare(t, "kernel", y, want, tolerance[T](false))
		g := gmtest.Uniform[T](rng, l.Len(), -1, 1)
		dw, dp, da := make([]T, len(w)), make([]T, len(p)), make([]T, len(a))
		wdw, wdp, wda := make([]T, len(w)), make([]T, len(p)), make([]T, len(a))
		must(t, gpu[T]().AssembleKernelBackward(dw, dp, da, g, a, l, cfg))
		cpu.KernelWeightsBackward(wdw, g, l, cfg)
		cpu.KernelPositionsBackward(wdp, g, l, cfg)
		cpu.KernelFactorsBackward(wda, g, a, l, cfg)
		compare(t, "dw", dw, wdw, tolerance[T](true))
		compare(t, "dp", dp, wdp, tolerance[T](true))
		compare(t, "da", da, wda, tolerance[T](true))
	})
}

// benchKernels runs f b.N times with kernel timing on and reports, per
// kernel, the median of its CUDA-event durations after one warm-up call.
func benchKernels(b *testing.B, f func() error) {
	if err := f(); err != nil { // warm-up: JIT, allocation
		b.Fatal(err)
	}
	if err := dev.TimeKernels(true); err != nil {
		b.Fatal(err)
	}
	defer dev.TimeKernels(false)
	for b.Loop() {
		if err := f(); err != nil {
			b.Fatal(err)
		}
	}
	for _, kt := range dev.KernelTimes() {
		if !kt.Copy() {
			b.ReportMetric(float64(kt.Median)/1e3, kt.Name+"-µs/median")
		}
	}
}

// BenchmarkReLUFit is the paper's dense-fit benchmark size: 800 mixtures of
// 256 2D Gaussians (docs/algorithms.md, "Benchmarks from the paper"), forward and backward, float32.
func BenchmarkReLUFit(b *testing.B) {
	l := mixture.Layout{B: 800, C: 1, N: 256, D: 2}
	rng := rand.New(rand.NewPCG(1, 2))
	x := randomMixtures[float32](rng, l)
	g := gmtest.Uniform[float32](rng, l.Len(), -1, 1)
	y := make([]float32, l.Len())
	// Without constants, and with them (--bias), ∂L/∂κ included.
	for _, c := range []struct {
		suffix    string
		kappa, dk []float32
	}{{"", nil, nil}, {"Constant", gmtest.Uniform[float32](rng, l.Mixtures(), -0.5, 0.5), make([]float32, l.Mixtures())}} {
		b.Run("Forward"+c.suffix+"/2D_B800_N256", func(b *testing.B) {
			benchKernels(b, func() error { return gpu[float32]().ReLUFit(y, x, c.kappa, nil, l, device.ReLUFitOptions{}) })
		})
		b.Run("Backward"+c.suffix+"/2D_B800_N256", func(b *testing.B) {
			benchKernels(b, func() error {
				return gpu[float32]().ReLUFitBackward(y, c.dk, nil, x, c.kappa, nil, g, l, device.ReLUFitOptions{}, nil)
			})
		})
	}
}

// BenchmarkConv is a layer of the ModelNet-style network: B 21, Fi 8,
// Ni 32, Fo 16, Nk 5, float32.
func BenchmarkConv(b *testing.B) {
	lx := mixture.Layout{B: 21, C: 8, N: 32, D: 3}
	lk := mixture.Layout{B: 16, C: 8, N: 5, D: 3}
	ly := device.ConvLayout(lx, lk)
	rng := rand.New(rand.NewPCG(3, 4))
	x, k := randomMixtures[float32](rng, lx), randomMixtures[float32](rng, lk)
	y, g := make([]float32, ly.Len()), gmtest.Uniform[float32](rng, ly.Len(), -1, 1)
	dx, dk := make([]float32, lx.Len()), make([]float32, lk.Len())
	b.Run("Forward/3D_B21_Fi8_Ni32_Fo16_Nk5", func(b *testing.B) {
		benchKernels(b, func() error { return gpu[float32]().Conv(y, x, k, lx, lk) })
	})
	b.Run("Backward/3D_B21_Fi8_Ni32_Fo16_Nk5", func(b *testing.B) {
		benchKernels(b, func() error {
			if err := gpu[float32]().ConvBackwardData(dx, g, k, lx, lk); err != nil {
				return err
			}
			return gpu[float32]().ConvBackwardKernels(dk, g, x, lx, lk)
		})
	})
}

// BenchmarkConvFit is the fused convolution-fitting of the paper-fused MNIST
// model's blocks 2 to 4 at batch 32 (Nv = Fi·Ni·Nk = 1280 fitted to n =
// 16·Np: 512 to 2048 mixtures), and block 2 to a quarter of its n, forward
// and both gradients, float32.
func BenchmarkConvFit(b *testing.B) {
	benchConvFit(b, func(b *testing.B, name string, run func() error) {
		b.Run(name, func(b *testing.B) { benchKernels(b, run) })
	})
}

// BenchmarkConvFitThreads is BenchmarkConvFit with other block sizes for
// both kernels (their defaults differ): fewer threads let more mixtures
// share an SM. Apart from BenchmarkConvFit so that the emulator's quick
// check (gpu-check.sh --small) can leave it out.
func BenchmarkConvFitThreads(b *testing.B) {
	for _, threads := range []int{64, 128, 256} {
		benchConvFit(b, func(b *testing.B, name string, run func() error) {
			b.Run(fmt.Sprintf("%s/threads%d", name, threads), func(b *testing.B) {
				defer func(f, bb int) { convFitBlock, convFitBackBlock = f, bb }(convFitBlock, convFitBackBlock)
				convFitBlock, convFitBackBlock = threads, threads
				benchKernels(b, run)
			})
		})
	}
}

// benchConvFit calls bench with the name and the call of ConvFit's forward
// and backward at each of the paper-fused model's block sizes.
func benchConvFit(b *testing.B, bench func(b *testing.B, name string, run func() error)) {
	for _, c := range []struct{ fi, ni, fo, n int }{{8, 32, 16, 256}, {8, 32, 16, 64}, {16, 16, 32, 128}, {32, 8, 64, 64}} {
		lx := mixture.Layout{B: 32, C: c.fi, N: c.ni, D: 2}
		lk := mixture.Layout{B: c.fo, C: c.fi, N: 5, D: 2}
		n := device.ConvFitSelect{N: c.n, Negative: device.DefaultConvFitNegative}
		ly := device.ConvFitLayout(lx, lk, n.N)
		rng := rand.New(rand.NewPCG(5, 6))
		x, k := randomMixtures[float32](rng, lx), randomMixtures[float32](rng, lk)
		y, g := make([]float32, ly.Len()), gmtest.Uniform[float32](rng, ly.Len(), -1, 1)
		dx, dk := make([]float32, lx.Len()), make([]float32, lk.Len())
		size := fmt.Sprintf("2D_B32_Fi%d_Ni%d_Fo%d_Nk5_n%d", c.fi, c.ni, c.fo, c.n)
		bench(b, "Forward/"+size, func() error { return gpu[float32]().ConvFit(y, x, k, lx, lk, n) })
		bench(b, "Backward/"+size, func() error { return gpu[float32]().ConvFitBackward(dx, dk, g, x, k, lx, lk, n, nil) })
	}
}

// BenchmarkTreeHEM is the reductions of the paper MNIST model's blocks at
// batch 32 (the ReLU fit's outputs, positive, to Np with T = 2), forward
// and backward, float32; on the largest also with other block sizes.
func BenchmarkTreeHEM(b *testing.B) {
	o := device.TreeHEMOptions{Reduction: 2}
	forPaperReductions(func(size string, l mixture.Layout, np int, x, y, g, dx []float32) {
		size += "_T2"
		b.Run("Forward/"+size, func(b *testing.B) {
			benchKernels(b, func() error { return gpu[float32]().TreeHEM(y, x, l, np, o) })
		})
		b.Run("Backward/"+size, func(b *testing.B) {
			benchKernels(b, func() error { return gpu[float32]().TreeHEMBackward(dx, x, g, l, np, o, nil) })
		})
		if l.C != 64 {
			return
		}
		// Threads per block (more share a height's nodes, fewer let more
		// mixtures run at once) and grids of one to four blocks per SM of
		// an H100 (fewer resident threads keep more of their EM fits'
		// local memory in L1).
		for _, v := range []struct{ threads, grid int }{{64, 4096}, {256, 4096}, {128, 132}, {128, 264}, {128, 528}, {256, 132}} {
			b.Run(fmt.Sprintf("Backward/%s/threads%d_grid%d", size, v.threads, v.grid), func(b *testing.B) {
				defer func(t, g int) { hemBlock, hemGrid = t, g }(hemBlock, hemGrid)
				hemBlock, hemGrid = v.threads, v.grid
				benchKernels(b, func() error { return gpu[float32]().TreeHEMBackward(dx, x, g, l, np, o, nil) })
			})
		}
	})
}

// BenchmarkMEM reduces the same layers with MEM (the model's --reduction
// mem), forward and backward.
func BenchmarkMEM(b *testing.B) {
	forPaperReductions(func(size string, l mixture.Layout, np int, x, y, g, dx []float32) {
		b.Run("Forward/"+size, func(b *testing.B) {
			benchKernels(b, func() error { return gpu[float32]().MEM(y, x, l, np) })
		})
		b.Run("Backward/"+size, func(b *testing.B) {
			benchKernels(b, func() error { return gpu[float32]().MEMBackward(dx, x, g, l, np) })
		})
	})
}

// forPaperReductions calls f for each reducing layer of the paper's MNIST
// model at batch 32, 2D float32: N = 320 or 1280 Gaussians per mixture
// reduced to Np, 256 to 2048 mixtures. f gets the layer's name, layout and
// Np, positive input mixtures x, room for the output y and the input's
// gradient dx, and an incoming gradient g.
func forPaperReductions(f func(size string, l mixture.Layout, np int, x, y, g, dx []float32)) {
	for _, c := range []struct{ c, n, np int }{{8, 320, 32}, {16, 1280, 16}, {32, 1280, 8}, {64, 1280, 4}} {
		l := mixture.Layout{B: 32, C: c.c, N: c.n, D: 2}
		rng := rand.New(rand.NewPCG(7, 8))
		x := treeHEMData[float32](rng, l, 3, "random")
		ly := mixture.Layout{B: l.B, C: l.C, N: c.np, D: l.D}
		y, g, dx := make([]float32, ly.Len()), gmtest.Uniform[float32](rng, ly.Len(), -1, 1), make([]float32, l.Len())
		f(fmt.Sprintf("2D_B32_C%d_N%d_Np%d", c.c, c.n, c.np), l, c.np, x, y, g, dx)
	}
}

// BenchmarkEvaluate evaluates 21×16 mixtures of 1280 3D Gaussians at 1000
// points each, float32.
func BenchmarkEvaluate(b *testing.B) {
	l := mixture.Layout{B: 21, C: 16, N: 1280, D: 3}
	const m = 1000
	rng := rand.New(rand.NewPCG(5, 6))
	x := randomMixtures[float32](rng, l)
	pts := gmtest.Uniform[float32](rng, l.Mixtures()*m*3, -4, 4)
	y := make([]float32, l.Mixtures()*m)
	g := gmtest.Uniform[float32](rng, len(y), -1, 1)
	dx, dp := make([]float32, l.Len()), make([]float32, len(pts))
	b.Run("Forward/3D_B21_C16_N1280_M1000", func(b *testing.B) {
		benchKernels(b, func() error { return gpu[float32]().Evaluate(y, x, pts, l, l.B, l.C, m) })
	})
	b.Run("Backward/3D_B21_C16_N1280_M1000", func(b *testing.B) {
		benchKernels(b, func() error {
			if err := gpu[float32]().EvaluateBackwardMixture(dx, x, pts, g, l, l.B, l.C, m); err != nil {
				return err
			}
			return gpu[float32]().EvaluateBackwardPoints(dp, x, pts, g, l, l.B, l.C, m)
		})
	})
}

// TestOnFallback checks the one list of what runs on the fallback: every
// name in it is a computation or a case of one that External can name, the
// device is valid, and External is exactly its complement.
func TestOnFallback(t *testing.T) {
	d := NewDevice(dev, cpu.Device())
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
	if err := (&device.Device{Name: "list", F32: d.F32, F64: d.F64, External: onFallback}).Check(); err != nil {
		t.Errorf("onFallback names something External cannot: %v", err)
	}
	for c := range device.ExternalNames() {
		if d.External[c] != onGPU(c) {
			t.Errorf("%s: External %v, onGPU %v", c, d.External[c], onGPU(c))
		}
	}
	for name := range d.External {
		if onFallback[name] {
			t.Errorf("External names %s, which onFallback hands to the CPU", name)
		}
	}
	p := d.Placement()
	for _, inGo := range []string{"ReLUFit/refined", "WeightDecayBackward"} {
		if !strings.Contains(p, inGo) {
			t.Errorf("Placement %q does not say that %s computes in Go", p, inGo)
		}
	}
	for _, onGPU := range []string{"Conv,", "ReLUFit/targets", "ReLUFitBackward/constant", "MEM,", "MEMBackward"} {
		if strings.Contains(p, onGPU) {
			t.Errorf("Placement %q says that %s computes in Go", p, strings.TrimSuffix(onGPU, ","))
		}
	}
}

// TestTreeHEM compares TreeHEM's reduction and gradient with the CPU's, for
// every reduction factor, plain splits, splits down to leaves, the refit to
// the missing count, the reference's under-filling, the pass-through of
// N ≤ Np, far components whose likelihoods clip, dropped zero weights and
// positions tied on a lattice (equal Morton codes, ordered by index). Which
// nodes were fitted and selected shows in every output value, so equal
// outputs in float64 mean equal decisions.
func TestTreeHEM(t *testing.T) {
	forTypes(t, testTreeHEM[float32], testTreeHEM[float64])
}

// treeHEMCases are the shapes of TestTreeHEM: N 130 and 257 give trees
// deeper than one block's threads are wide at their lowest heights.
var treeHEMCases = []struct {
	d, n, t, np int
	under       bool
	spread      float64
	data        string
}{
	{2, 11, 2, 2, false, 3, "random"}, {2, 11, 2, 4, false, 0.5, "random"}, {2, 13, 2, 5, false, 3, "random"},
	{2, 13, 2, 6, true, 0.5, "random"}, {3, 11, 2, 3, false, 0.5, "random"}, {3, 13, 2, 6, true, 0.5, "random"},
	{2, 17, 4, 6, false, 3, "random"}, {3, 17, 4, 7, false, 0.6, "random"}, {2, 21, 8, 8, false, 0.8, "random"},
	{3, 19, 8, 9, true, 0.8, "random"}, {2, 13, 2, 4, false, 30, "random"}, {3, 13, 2, 4, false, 30, "random"},
	{2, 130, 2, 16, false, 3, "random"}, {3, 257, 4, 32, false, 3, "random"}, {2, 257, 2, 64, true, 3, "random"},
	{2, 40, 2, 8, false, 3, "zeros"}, {3, 40, 4, 8, false, 3, "zeros"},
	{2, 50, 2, 8, false, 0, "lattice"}, {3, 50, 2, 10, false, 0, "lattice"},
	{2, 64, 2, 20, false, 0, "equal"}, {3, 48, 4, 16, false, 0, "equal"},
	{2, 5, 2, 8, false, 3, "random"}, {3, 5, 4, 8, true, 3, "random"},
}

func testTreeHEM[T Float](t *testing.T) {
	for i, c := range treeHEMCases {
		t.Run(fmt.Sprintf("%dD_N%d_T%d_Np%d_under%v_r%v_%s", c.d, c.n, c.t, c.np, c.under, c.spread, c.data), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, uint64(i)))
			l := mixture.Layout{B: 2, C: 3, N: c.n, D: c.d}
			o := device.TreeHEMOptions{Reduction: c.t, UnderFill: c.under}
			testTreeHEMCase(t, rng, treeHEMData[T](rng, l, c.spread, c.data), l, c.np, o)
		})
	}
}

// TestTreeHEMLooping runs TreeHEM with a grid of two blocks, each looping
// over several mixtures, as batches past hemGrid mixtures do.
func TestTreeHEMLooping(t *testing.T) {
	defer func(g int) { hemGrid = g }(hemGrid)
	hemGrid = 2
	rng := rand.New(rand.NewPCG(7, 9))
	l := mixture.Layout{B: 3, C: 3, N: 60, D: 2}
	testTreeHEMCase(t, rng, treeHEMData[float64](rng, l, 3, "random"), l, 8, device.TreeHEMOptions{Reduction: 2})
}

// treeHEMData returns positive mixtures (TreeHEM's input is the ReLU fit's
// output) with positions in [−r, r)^D, or with data "zeros" every third
// weight 0 (dropped by the nodes' filter), with "lattice" positions on a
// 3-point lattice per axis, each moved by less than 5e−4, or with "equal"
// those positions and every weight 1 (the tree splits runs of equal codes
// by index, evenly, and the node ratings are leaf counts: ties, where the
// first must win, as must the first member of largest |w| in a fit's
// initial clusters).
//
// The lattice's Morton codes tie (the index must order them), but its
// positions do not: exactly equal positions would make the fitted means of
// nodes tie up to rounding, and the initial clusters of a fit would then
// depend on the last bit of exp, which the CPU and the GPU compute
// differently. The middle point and the moves keep every position of one
// point in one Morton cell: −1 → cell 0, 1 → 1023 (clamped), the middle
// 460.5/512 − 1 → 460.4–460.8 whatever the moves do to the bounding box.
func treeHEMData[T Float](rng *rand.Rand, l mixture.Layout, r float64, data string) []T {
	x := gmtest.Mixtures[T](rng, gmtest.Spec{WeightMin: 0.5, WeightMax: 1.5, Spread: max(r, 1), CovScale: 0.3, CovDiag: 0.3}, l.B, l.C, l.N, l.D)
	s := l.Stride()
	for g := 0; g < l.Mixtures()*l.N; g++ {
		v := x[g*s : (g+1)*s]
		switch data {
		case "zeros":
			if g%3 == 0 {
				v[0] = 0
			}
		case "equal":
			v[0] = 1
			fallthrough
		case "lattice":
			for a := range l.D {
				v[1+a] = T(lattice[(g>>a)%3] + 5e-4*rng.Float64())
			}
		}
	}
	return x
}

var lattice = [3]float64{-1, 460.5/512 - 1, 1}

func testTreeHEMCase[T Float](t *testing.T, rng *rand.Rand, x []T, l mixture.Layout, np int, o device.TreeHEMOptions) {
	t.Helper()
	ly := mixture.Layout{B: l.B, C: l.C, N: np, D: l.D}
	y, want := make([]T, ly.Len()), make([]T, ly.Len())
	saved, err := gpu[T]().TreeHEMSaving(y, x, l, np, o)
	must(t, err)
	must(t, cpu.TreeHEM(want, x, l, np, o))
	compare(t, "y", y, want, treeHEMTolerance[T](false))
	g := gmtest.Uniform[T](rng, ly.Len(), -1, 1)
	dx, wdx := make([]T, l.Len()), make([]T, l.Len())
	must(t, gpu[T]().TreeHEMBackward(dx, x, g, l, np, o, saved))
	must(t, cpu.TreeHEMBackward(wdx, x, g, l, np, o))
	compare(t, "dx", dx, wdx, treeHEMTolerance[T](true))
	clear(dx)
	must(t, gpu[T]().TreeHEMBackward(dx, x, g, l, np, o, nil))
	compare(t, "dx unsaved", dx, wdx, treeHEMTolerance[T](true))
}

// treeHEMTolerance is tolerance, but in float64 1e−12: the kernel makes
// the CPU's decisions with the CPU's operations, only exp and log round
// differently.
func treeHEMTolerance[T Float](grad bool) float64 {
	if sizeOf[T]() == 8 {
		return 1e-12
	}
	return tolerance[T](grad)
}

// TestMEM compares MEM's reduction and gradient with the CPU's: fewer
// outputs than inputs and more (padding), weights of both signs, weights
// tied in |w| (the lower index must be selected first), sums of |w| below
// the clamp 0.05, zero weights, and far targets whose likelihoods
// underflow, leaving dead fitting components. Which components were
// selected shows in every output value, so equal outputs in float64 mean
// equal decisions.
func TestMEM(t *testing.T) {
	forTypes(t, testMEM[float32], testMEM[float64])
}

// memCases are the shapes of TestMEM: N 130 and 257 have more targets than
// a block has threads.
var memCases = []struct {
	d, n, np int
	data     string
}{
	{2, 1, 1, "random"}, {3, 1, 2, "random"}, {2, 11, 4, "random"}, {3, 11, 4, "random"},
	{2, 37, 8, "random"}, {3, 130, 16, "random"}, {2, 257, 32, "random"}, {3, 5, 8, "random"},
	{2, 40, 8, "tied"}, {3, 40, 12, "tied"}, {2, 20, 4, "tiny"}, {3, 20, 5, "tiny"},
	{2, 30, 6, "zeros"}, {3, 30, 6, "zeros"}, {2, 30, 6, "far"}, {3, 30, 6, "far"},
}

func testMEM[T Float](t *testing.T) {
	for i, c := range memCases {
		t.Run(fmt.Sprintf("%dD_N%d_Np%d_%s", c.d, c.n, c.np, c.data), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(13, uint64(i)))
			l := mixture.Layout{B: 2, C: 3, N: c.n, D: c.d}
			testMEMCase(t, rng, memData[T](rng, l, c.data), l, c.np)
		})
	}
}

// TestMEMLooping runs MEM with a grid of two blocks, each looping over
// several mixtures, as batches past memGrid mixtures do: the op, and a
// block whose forward leaves each mixture's decisions in a region of its
// own, where the backward's blocks must find them.
func TestMEMLooping(t *testing.T) {
	defer func(g int) { memGrid = g }(memGrid)
	memGrid = 2
	rng := rand.New(rand.NewPCG(7, 11))
	l := mixture.Layout{B: 3, C: 3, N: 45, D: 2}
	testMEMCase(t, rng, memData[float64](rng, l, "random"), l, 6)
	b := device.BlockSpec{Reduce: device.BlockMEM, Np: 5}
	lx, lk := mixture.Layout{B: 3, C: 2, N: 9, D: 2}, mixture.Layout{B: 3, C: 2, N: 3, D: 2}
	x, k := treeHEMData[float64](rng, lx, 3, "random"), randomMixtures[float64](rng, lk)
	y, want := make([]float64, b.OutLen(lx, lk)), make([]float64, b.OutLen(lx, lk))
	saved, err := gpu[float64]().BlockSaving(y, x, k, lx, lk, b)
	must(t, err)
	must(t, cpu.Block(want, x, k, lx, lk, b))
	compare(t, "block y", y, want, 1e-12)
	g := gmtest.Uniform[float64](rng, len(y), -1, 1)
	dx, dk := make([]float64, lx.Len()), make([]float64, lk.Len())
	wdx, wdk := make([]float64, lx.Len()), make([]float64, lk.Len())
	must(t, gpu[float64]().BlockBackward(dx, dk, g, x, k, lx, lk, b, saved))
	must(t, cpu.BlockBackward(wdx, wdk, g, x, k, lx, lk, b, nil))
	compare(t, "block dx", dx, wdx, 1e-12)
	compare(t, "block dk", dk, wdk, 1e-12)
}

// memData returns mixtures drawn from mixtureSpec, or with data "tied"
// weights of |w| ∈ {0.5, 1} and both signs, "tiny" weights whose |w| sum
// to less than 0.05 per mixture, "zeros" every third weight 0, "far"
// positions spread over [−40, 40)^D, where most likelihoods underflow.
func memData[T Float](rng *rand.Rand, l mixture.Layout, data string) []T {
	spec := mixtureSpec
	if data == "far" {
		spec.Spread = 40
	}
	x := gmtest.Mixtures[T](rng, spec, l.B, l.C, l.N, l.D)
	s := l.Stride()
	for g := 0; g < l.Mixtures()*l.N; g++ {
		w := &x[g*s]
		switch data {
		case "tied":
			*w = T(0.5 * float64(1+g%2) * float64(1-2*(g/2%2)))
		case "tiny":
			*w *= T(0.04 / float64(l.N))
		case "zeros":
			if g%3 == 0 {
				*w = 0
			}
		}
	}
	return x
}

func testMEMCase[T Float](t *testing.T, rng *rand.Rand, x []T, l mixture.Layout, np int) {
	t.Helper()
	ly := mixture.Layout{B: l.B, C: l.C, N: np, D: l.D}
	y, want := make([]T, ly.Len()), make([]T, ly.Len())
	must(t, gpu[T]().MEM(y, x, l, np))
	cpu.MEM(want, x, l, np)
	compare(t, "y", y, want, treeHEMTolerance[T](false))
	g := gmtest.Uniform[T](rng, ly.Len(), -1, 1)
	dx, wdx := make([]T, l.Len()), make([]T, l.Len())
	must(t, gpu[T]().MEMBackward(dx, x, g, l, np))
	cpu.MEMBackward(wdx, x, g, l, np)
	compare(t, "dx", dx, wdx, treeHEMTolerance[T](true))
}

// TestBlockReuse checks when the second gradient node of a block reuses
// the first's gradient at the convolution (and, in a fused block, at every
// convolved Gaussian; blockSaved): for the same incoming gradient it runs
// only the convolution's backward kernel it needs, but not for another
// incoming gradient, and not after another block's backward wrote the
// device's buffers, whose results would otherwise be read.
func TestBlockReuse(t *testing.T) {
	for _, b := range []device.BlockSpec{
		{Reduce: device.BlockTreeHEM, Np: 6, TreeHEM: device.TreeHEMOptions{Reduction: 2}},
		{Fit: device.ConvFitSelect{N: 20, Negative: device.DefaultConvFitNegative}, Reduce: device.BlockTreeHEM, Np: 6, TreeHEM: device.TreeHEMOptions{Reduction: 2}},
		exactBlock(20, 6),
		{Reduce: device.BlockMEM, Np: 6},
	} {
		t.Run(b.String(), func(t *testing.T) { testBlockReuse(t, b) })
	}
}

func testBlockReuse(t *testing.T, b device.BlockSpec) {
	rng := rand.New(rand.NewPCG(9, 9))
	lx := mixture.Layout{B: 2, C: 2, N: 11, D: 2}
	lk := mixture.Layout{B: 3, C: 2, N: 3, D: 2}
	ly := b.Layout(lx, lk)
	x, k := treeHEMData[float64](rng, lx, 3, "random"), randomMixtures[float64](rng, lk)
	x2, k2 := treeHEMData[float64](rng, lx, 3, "random"), randomMixtures[float64](rng, lk)
	g, g2 := gmtest.Uniform[float64](rng, ly.Len(), -1, 1), gmtest.Uniform[float64](rng, ly.Len(), -1, 1)
	y := make([]float64, ly.Len())
	saved, err := gpu[float64]().BlockSaving(y, x, k, lx, lk, b)
	must(t, err)
	saved2, err := gpu[float64]().BlockSaving(y, x2, k2, lx, lk, b)
	must(t, err)
	want := func(x, k, g []float64) []float64 {
		dk := make([]float64, lk.Len())
		must(t, cpu.BlockBackward(nil, dk, g, x, k, lx, lk, b, nil))
		return dk
	}
	dx, dk := make([]float64, lx.Len()), make([]float64, lk.Len())
	// The same gradient: one launch, the kernels' reduction.
	must(t, gpu[float64]().BlockBackward(dx, nil, g, x, k, lx, lk, b, saved))
	t0 := dev.Traffic()
	must(t, gpu[float64]().BlockBackward(nil, dk, g, x, k, lx, lk, b, saved))
	if n := dev.Traffic().Sub(t0).Launches; n != 1 {
		t.Errorf("the second gradient node for the same g made %d launches, want 1", n)
	}
	compare(t, "dk reusing the first node's", dk, want(x, k, g), 1e-9)
	// Another gradient: the first node's buffers are for g, not g2.
	must(t, gpu[float64]().BlockBackward(dx, nil, g, x, k, lx, lk, b, saved))
	must(t, gpu[float64]().BlockBackward(nil, dk, g2, x, k, lx, lk, b, saved))
	compare(t, "dk for another g", dk, want(x, k, g2), 1e-9)
	// Another block in between: its backward overwrote the buffers.
	must(t, gpu[float64]().BlockBackward(dx, nil, g, x, k, lx, lk, b, saved))
	must(t, gpu[float64]().BlockBackward(dx, nil, g, x2, k2, lx, lk, b, saved2))
	must(t, gpu[float64]().BlockBackward(nil, dk, g, x, k, lx, lk, b, saved))
	compare(t, "dk after another block", dk, want(x, k, g), 1e-9)
}

// TestBlockSavedRelease checks the device memory a saved block state owns
// for its backward: two live states have their own, a released state's goes
// to the next state of its size, and the backward from either reads its own
// forward's intermediates.
func TestBlockSavedRelease(t *testing.T) {
	for _, b := range []device.BlockSpec{
		{Reduce: device.BlockTreeHEM, Np: 5, TreeHEM: device.TreeHEMOptions{Reduction: 2}},
		{Fit: device.ConvFitSelect{N: 17, Negative: device.DefaultConvFitNegative}, Reduce: device.BlockTreeHEM, Np: 5, TreeHEM: device.TreeHEMOptions{Reduction: 2}},
		exactBlock(17, 5),
	} {
		t.Run(b.String(), func(t *testing.T) { testBlockSavedRelease(t, b) })
	}
}

func testBlockSavedRelease(t *testing.T, b device.BlockSpec) {
	rng := rand.New(rand.NewPCG(4, 11))
	lx := mixture.Layout{B: 2, C: 3, N: 9, D: 2}
	lk := mixture.Layout{B: 2, C: 3, N: 4, D: 2}
	ly := b.Layout(lx, lk)
	y, g := make([]float64, ly.Len()), gmtest.Uniform[float64](rng, ly.Len(), -1, 1)
	var xs, ks [3][]float64
	var states [3]*blockSaved[float64]
	for i := range 3 {
		xs[i], ks[i] = treeHEMData[float64](rng, lx, 3, "random"), randomMixtures[float64](rng, lk)
		if i == 2 {
			states[0].Release()
		}
		saved, err := gpu[float64]().BlockSaving(y, xs[i], ks[i], lx, lk, b)
		must(t, err)
		states[i] = saved.(*blockSaved[float64])
		if states[i].fwd == nil {
			t.Fatalf("state %d owns no device memory", i)
		}
		if b.Fused() && states[i].fwd.cf.perm == 0 {
			t.Fatalf("state %d of a fused block keeps no selection", i)
		}
		if f := states[i].fwd; b.ExactTargets() && (f.c == 0 || f.p == 0 || f.t == 0) {
			t.Fatalf("state %d of a block with exact targets keeps no convolution, points or targets: %v", i, f.blockPtrs)
		}
	}
	own := func(s *blockSaved[float64]) []devPtr { return []devPtr{min(s.fwd.v, s.fwd.r), max(s.fwd.v, s.fwd.r)} }
	if slices.Equal(own(states[0]), own(states[1])) {
		t.Errorf("two live states share device memory %v", own(states[0]))
	}
	if !slices.Equal(own(states[2]), own(states[0])) {
		t.Errorf("the state after a release owns %v, want the released state's %v", own(states[2]), own(states[0]))
	}
	for _, i := range []int{1, 2} {
		dx, dk := make([]float64, lx.Len()), make([]float64, lk.Len())
		wdx, wdk := make([]float64, lx.Len()), make([]float64, lk.Len())
		must(t, gpu[float64]().BlockBackward(dx, dk, g, xs[i], ks[i], lx, lk, b, states[i]))
		must(t, cpu.BlockBackward(wdx, wdk, g, xs[i], ks[i], lx, lk, b, nil))
		compare(t, fmt.Sprintf("dx of state %d", i), dx, wdx, 1e-9)
		compare(t, fmt.Sprintf("dk of state %d", i), dk, wdk, 1e-9)
	}
}

// TestBlock compares the GPU block with the CPU's (its parts one after
// another), forward and both gradients, for the convolution and the fused
// convolution-fitting with every reduction, 2D and 3D, float32 and float64.
func TestBlock(t *testing.T) {
	forTypes(t, testBlock[float32], testBlock[float64])
}

func testBlock[T Float](t *testing.T) {
	specs := []device.BlockSpec{
		{Reduce: device.BlockTreeHEM, Np: 8, TreeHEM: device.TreeHEMOptions{Reduction: 2}},
		{Fit: device.ConvFitSelect{N: 24, Negative: device.DefaultConvFitNegative}, Reduce: device.BlockTreeHEM, Np: 6, TreeHEM: device.TreeHEMOptions{Reduction: 4, UnderFill: true}},
		{Reduce: device.BlockKeepLargest, Np: 5, ReLU: device.ReLUFitOptions{Variant: device.ReLUFitPaper}},
		{Fit: device.ConvFitSelect{N: 9, Negative: 1}},
		{Reduce: device.BlockTreeHEM, Np: 8, TreeHEM: device.TreeHEMOptions{Reduction: 2}, Integrate: true},
		{Integrate: true},
		exactBlock(20, 5),
		{Fit: device.ConvFitSelect{N: 11, Negative: 1}, NearTargets: true, Near: math.Inf(1), Reduce: device.BlockKeepLargest, Np: 4, Integrate: true,
			ReLU: device.ReLUFitOptions{Variant: device.ReLUFitPaper}},
		{Reduce: device.BlockMEM, Np: 7},
		{Fit: device.ConvFitSelect{N: 20, Negative: device.DefaultConvFitNegative}, Reduce: device.BlockMEM, Np: 5, Integrate: true},
		{Fit: device.ConvFitSelect{N: 14, Negative: 1}, NearTargets: true, Near: math.Inf(1), Reduce: device.BlockMEM, Np: 6},
	}
	for _, d := range []int{2, 3} {
		for i, b := range specs {
			t.Run(fmt.Sprintf("%dD/%v", d, b), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(d), uint64(i)))
				lx := mixture.Layout{B: 3, C: 2, N: 13, D: d}
				lk := mixture.Layout{B: 4, C: 2, N: 3, D: d}
				x, k := treeHEMData[T](rng, lx, 3, "random"), randomMixtures[T](rng, lk)
				ny := b.OutLen(lx, lk)
				y, want := make([]T, ny), make([]T, ny)
				saved, err := gpu[T]().BlockSaving(y, x, k, lx, lk, b)
				must(t, err)
				must(t, cpu.Block(want, x, k, lx, lk, b))
				compare(t, "y", y, want, tolerance[T](false))
				g := gmtest.Uniform[T](rng, ny, -1, 1)
				dx, dk := make([]T, lx.Len()), make([]T, lk.Len())
				wdx, wdk := make([]T, lx.Len()), make([]T, lk.Len())
				must(t, gpu[T]().BlockBackward(dx, dk, g, x, k, lx, lk, b, saved))
				must(t, cpu.BlockBackward(wdx, wdk, g, x, k, lx, lk, b, nil))
				compare(t, "dx", dx, wdx, tolerance[T](true))
				compare(t, "dk", dk, wdk, tolerance[T](true))
				// Without the saved state the backward runs the forward
				// again, TreeHEM's or MEM's included; from the state it
				// starts from the scratch their forward kept, which must
				// give bitwise the same.
				if kept := saved.(*blockSaved[T]).fwd.hem != 0; kept != (b.Reduce == device.BlockTreeHEM) {
					t.Errorf("the saved state keeps TreeHEM's scratch: %v", kept)
				}
				if kept := saved.(*blockSaved[T]).fwd.mem != 0; kept != (b.Reduce == device.BlockMEM) {
					t.Errorf("the saved state keeps MEM's scratch: %v", kept)
				}
				fromSaved := slices.Clone(dk)
				clear(dk)
				must(t, gpu[T]().BlockBackward(nil, dk, g, x, k, lx, lk, b, nil))
				compare(t, "dk alone", dk, wdk, tolerance[T](true))
				if !slices.Equal(dk, fromSaved) {
					t.Errorf("dk from the saved state differs from dk with the forward run again: max |Δ| %g", gmtest.MaxAbsDiff(dk, fromSaved))
				}
				// The op's two gradient nodes with the forward's saved
				// state: the second reuses the first's gradient at the
				// convolution, on the device.
				clear(dx)
				clear(dk)
				must(t, gpu[T]().BlockBackward(dx, nil, g, x, k, lx, lk, b, saved))
				must(t, gpu[T]().BlockBackward(nil, dk, g, x, k, lx, lk, b, saved))
				compare(t, "dx, then dk reusing it", dx, wdx, tolerance[T](true))
				compare(t, "dk reusing dx's", dk, wdk, tolerance[T](true))
			})
		}
	}
}

// TestKernelTimes checks the Device's kernel timing: off, nothing is
// collected; on, every launch and copy of a call is counted under its name
// with a positive time; turning it on again forgets the earlier times.
func TestKernelTimes(t *testing.T) {
	l := mixture.Layout{B: 2, C: 3, N: 4, D: 2}
	x := randomMixtures[float32](rand.New(rand.NewPCG(1, 2)), l)
	y := make([]float32, l.Mixtures())
	must(t, gpu[float32]().Integrate(y, x, l))
	if kt := dev.KernelTimes(); kt != nil {
		t.Fatalf("timing off: got %v, want nil", kt)
	}
	defer dev.TimeKernels(false)
	for range 2 { // the second round starts from nothing again
		must(t, dev.TimeKernels(true))
		for range 3 {
			must(t, gpu[float32]().Integrate(y, x, l))
		}
		calls := map[string]int{}
		for _, kt := range dev.KernelTimes() {
			if kt.Total <= 0 || kt.Median <= 0 || kt.Median > kt.Total {
				t.Errorf("%s: total %v, median %v: want 0 < median ≤ total", kt.Name, kt.Total, kt.Median)
			}
			if kt.Copy() != (kt.Name != "gm_integrate_f32") {
				t.Errorf("%s: Copy() = %v", kt.Name, kt.Copy())
			}
			calls[kt.Name] = kt.Calls
		}
		want := map[string]int{"gm_integrate_f32": 3, "memcpy_HtoD": 3, "memcpy_DtoH": 3}
		if !maps.Equal(calls, want) {
			t.Errorf("calls %v, want %v", calls, want)
		}
	}
	must(t, dev.TimeKernels(false))
	if kt := dev.KernelTimes(); kt != nil {
		t.Errorf("timing off again: got %v, want nil", kt)
	}
}

// syncCounter is the Device's driver, counting the waits for the device's
// work.
type syncCounter struct {
	driver
	syncs int
}

func (c *syncCounter) synchronize() error {
	c.syncs++
	return c.driver.synchronize()
}

// TestLaunchesWaitOnce checks that a call's kernels are not waited for one
// by one: a call that ends with a copy (which waits for every kernel before
// it) never synchronises, a call whose kernels follow its last copy
// synchronises once at its end, and a failed wait names the kernels it
// waited for.
func TestLaunchesWaitOnce(t *testing.T) {
	c := &syncCounter{}
	must(t, dev.do(func() error { c.driver, dev.drv = dev.drv, c; return nil }))
	defer dev.do(func() error { dev.drv = c.driver; return nil })
	l := mixture.Layout{B: 2, C: 3, N: 4, D: 2}
	x := randomMixtures[float32](rand.New(rand.NewPCG(3, 4)), l)
	y := make([]float32, l.Mixtures())
	must(t, gpu[float32]().Integrate(y, x, l))
	if c.syncs != 0 {
		t.Errorf("Integrate (copy, kernel, copy) synchronised %d times, want 0", c.syncs)
	}
	must(t, dev.run(func(s *seq) {
		p := in(s, slotIn0, x)
		launchScaleWeights[float32](s, p, p, l, 2)
		launchScaleWeights[float32](s, p, p, l, 0.5)
	}))
	if c.syncs != 1 {
		t.Errorf("a call ending with two kernels synchronised %d times, want 1", c.syncs)
	}
	err := dev.do(func() error {
		dev.unsynced = append(dev.unsynced[:0], "gm_a", "gm_b")
		err := dev.waited(fmt.Errorf("unspecified launch failure"))
		if len(dev.unsynced) != 0 {
			t.Errorf("after a wait %v are still unsynced", dev.unsynced)
		}
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "after the kernels gm_a, gm_b") {
		t.Errorf("a failed wait after two kernels: %v, want the kernels named", err)
	}
}

// exactBlock is a fused block of n Gaussians with exact targets, reduced by
// TreeHEM to np.
func exactBlock(n, np int) device.BlockSpec {
	return device.BlockSpec{Fit: device.ConvFitSelect{N: n, Negative: device.DefaultConvFitNegative}, NearTargets: true, Near: math.Inf(1),
		Reduce: device.BlockTreeHEM, Np: np, TreeHEM: device.TreeHEMOptions{Reduction: 2}}
}

// TestBlockNearFallback checks that a fused block with near-group targets
// of a finite radius, which have no GPU kernel, runs on the fallback: the
// CPU's results, bitwise, and no launch.
func TestBlockNearFallback(t *testing.T) {
	b := device.BlockSpec{Fit: device.ConvFitSelect{N: 12, Negative: device.DefaultConvFitNegative}, NearTargets: true,
		Reduce: device.BlockTreeHEM, Np: 6, TreeHEM: device.TreeHEMOptions{Reduction: 2}}
	rng := rand.New(rand.NewPCG(5, 51))
	lx := mixture.Layout{B: 2, C: 2, N: 13, D: 2}
	lk := mixture.Layout{B: 3, C: 2, N: 3, D: 2}
	x, k := treeHEMData[float64](rng, lx, 3, "random"), randomMixtures[float64](rng, lk)
	ny := b.OutLen(lx, lk)
	y, want := make([]float64, ny), make([]float64, ny)
	t0 := dev.Traffic()
	saved, err := gpu[float64]().BlockSaving(y, x, k, lx, lk, b)
	must(t, err)
	must(t, cpu.Block(want, x, k, lx, lk, b))
	compare(t, "y", y, want, 0)
	g := gmtest.Uniform[float64](rng, ny, -1, 1)
	dx, dk := make([]float64, lx.Len()), make([]float64, lk.Len())
	wdx, wdk := make([]float64, lx.Len()), make([]float64, lk.Len())
	must(t, gpu[float64]().BlockBackward(dx, dk, g, x, k, lx, lk, b, saved))
	must(t, cpu.BlockBackward(wdx, wdk, g, x, k, lx, lk, b, nil))
	compare(t, "dx", dx, wdx, 0)
	compare(t, "dk", dk, wdk, 0)
	if n := dev.Traffic().Sub(t0).Launches; n != 0 {
		t.Errorf("the near-target block made %d launches, want 0 (the fallback)", n)
	}
}

// TestBlockExact checks that a fused block with exact targets runs on the
// GPU, forward and backward, with the kernels of the targets (the
// convolution at the fitted positions and its gradients), and gives what the
// CPU block (near-group corrections of radius ∞) gives: in float64 to
// 1e-12, which the two ways of summing the same targets allow.
func TestBlockExact(t *testing.T) {
	for _, d := range []int{2, 3} {
		t.Run(fmt.Sprintf("%dD", d), func(t *testing.T) {
			b := exactBlock(16, 6)
			rng := rand.New(rand.NewPCG(uint64(d), 77))
			lx := mixture.Layout{B: 2, C: 3, N: 10, D: d}
			lk := mixture.Layout{B: 3, C: 3, N: 4, D: d}
			x, k := treeHEMData[float64](rng, lx, 3, "random"), randomMixtures[float64](rng, lk)
			ny := b.OutLen(lx, lk)
			y, want := make([]float64, ny), make([]float64, ny)
			g := gmtest.Uniform[float64](rng, ny, -1, 1)
			dx, dk := make([]float64, lx.Len()), make([]float64, lk.Len())
			wdx, wdk := make([]float64, lx.Len()), make([]float64, lk.Len())
			must(t, dev.TimeKernels(true))
			defer dev.TimeKernels(false)
			saved, err := gpu[float64]().BlockSaving(y, x, k, lx, lk, b)
			must(t, err)
			must(t, gpu[float64]().BlockBackward(dx, dk, g, x, k, lx, lk, b, saved))
			calls := map[string]int{}
			for _, kt := range dev.KernelTimes() {
				calls[strings.TrimSuffix(kt.Name, "_f64")] = kt.Calls
			}
			for _, name := range []string{"gm_convfit", "gm_conv", "gm_positions", "gm_evaluate", "gm_relufit", "gm_treehem2",
				"gm_evaluate_backward_points", "gm_add_positions", "gm_evaluate_backward_mixture", "gm_convfit_backward", "gm_add"} {
				if calls[name] != 1 {
					t.Errorf("kernel %s ran %d times, want once (calls: %v)", name, calls[name], calls)
				}
			}
			must(t, cpu.Block(want, x, k, lx, lk, b))
			must(t, cpu.BlockBackward(wdx, wdk, g, x, k, lx, lk, b, nil))
			compare(t, "y", y, want, 1e-12)
			compare(t, "dx", dx, wdx, 1e-12)
			compare(t, "dk", dk, wdk, 1e-12)
		})
	}
}
