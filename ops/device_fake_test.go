package ops

import (
	"sync"

	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// recorder is the test-only fake device: it records the name of every
// Kernels method called on it and computes with the wrapped kernels, so an
// op on it returns what it returns on those.
type recorder[T Float] struct {
	k   device.Kernels[T]
	log *callLog
}

// callLog collects the calls of both element types' recorders.
type callLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *callLog) add(name string) {
	l.mu.Lock()
	l.calls = append(l.calls, name)
	l.mu.Unlock()
}

// take returns the calls recorded since the last take.
func (l *callLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.calls
	l.calls = nil
	return c
}

// newRecordingDevice wraps the CPU device's kernels in recorders sharing
// one log; external becomes the device's External set.
func newRecordingDevice(external ...string) (*device.Device, *callLog) {
	log := &callLog{}
	ext := map[string]bool{}
	for _, c := range external {
		ext[c] = true
	}
	return &device.Device{
		Name:     "recorder",
		F32:      recorder[float32]{cpuDevice.F32, log},
		F64:      recorder[float64]{cpuDevice.F64, log},
		External: ext,
	}, log
}

var (
	_ device.Kernels[float32] = recorder[float32]{}
	_ device.Kernels[float64] = recorder[float64]{}
)

func (r recorder[T]) Integrate(y, x []T, l mixture.Layout) error {
	r.log.add("Integrate")
	return r.k.Integrate(y, x, l)
}

func (r recorder[T]) IntegrateBackward(dx, g []T, l mixture.Layout) error {
	r.log.add("IntegrateBackward")
	return r.k.IntegrateBackward(dx, g, l)
}

func (r recorder[T]) Conv(y, x, k []T, lx, lk mixture.Layout) error {
	r.log.add("Conv")
	return r.k.Conv(y, x, k, lx, lk)
}

func (r recorder[T]) ConvBackwardData(dx, g, k []T, lx, lk mixture.Layout) error {
	r.log.add("ConvBackwardData")
	return r.k.ConvBackwardData(dx, g, k, lx, lk)
}

func (r recorder[T]) ConvBackwardKernels(dk, g, x []T, lx, lk mixture.Layout) error {
	r.log.add("ConvBackwardKernels")
	return r.k.ConvBackwardKernels(dk, g, x, lx, lk)
}

func (r recorder[T]) ConvFit(y, x, k []T, lx, lk mixture.Layout, s device.ConvFitSelect) error {
	r.log.add("ConvFit")
	return r.k.ConvFit(y, x, k, lx, lk, s)
}

func (r recorder[T]) ConvFitSaving(y, x, k []T, lx, lk mixture.Layout, s device.ConvFitSelect) (device.Saved, error) {
	r.log.add("ConvFitSaving")
	return r.k.ConvFitSaving(y, x, k, lx, lk, s)
}

func (r recorder[T]) ConvFitBackward(dx, dk, g, x, k []T, lx, lk mixture.Layout, s device.ConvFitSelect, saved device.Saved) error {
	r.log.add(savedName("ConvFitBackward", saved))
	return r.k.ConvFitBackward(dx, dk, g, x, k, lx, lk, s, saved)
}

func (r recorder[T]) KeepLargest(y, x []T, l mixture.Layout, np int) error {
	r.log.add("KeepLargest")
	return r.k.KeepLargest(y, x, l, np)
}

func (r recorder[T]) KeepLargestBackward(dx, x, g []T, l mixture.Layout, np int) error {
	r.log.add("KeepLargestBackward")
	return r.k.KeepLargestBackward(dx, x, g, l, np)
}

func (r recorder[T]) Evaluate(y, x, pts []T, l mixture.Layout, pb, pc, m int) error {
	r.log.add("Evaluate")
	return r.k.Evaluate(y, x, pts, l, pb, pc, m)
}

func (r recorder[T]) EvaluateBackwardMixture(dx, x, pts, g []T, l mixture.Layout, pb, pc, m int) error {
	r.log.add("EvaluateBackwardMixture")
	return r.k.EvaluateBackwardMixture(dx, x, pts, g, l, pb, pc, m)
}

func (r recorder[T]) EvaluateBackwardPoints(dp, x, pts, g []T, l mixture.Layout, pb, pc, m int) error {
	r.log.add("EvaluateBackwardPoints")
	return r.k.EvaluateBackwardPoints(dp, x, pts, g, l, pb, pc, m)
}

func (r recorder[T]) ReLUFit(y, x, kappa, t []T, l mixture.Layout, opts device.ReLUFitOptions) error {
	r.log.add("ReLUFit")
	return r.k.ReLUFit(y, x, kappa, t, l, opts)
}

func (r recorder[T]) ReLUFitSaving(y, x, kappa, t []T, l mixture.Layout, opts device.ReLUFitOptions) (device.Saved, error) {
	r.log.add("ReLUFitSaving")
	return r.k.ReLUFitSaving(y, x, kappa, t, l, opts)
}

func (r recorder[T]) ReLUFitBackward(dx, dkappa, dt, x, kappa, t, g []T, l mixture.Layout, opts device.ReLUFitOptions, saved device.Saved) error {
	r.log.add(savedName("ReLUFitBackward", saved))
	return r.k.ReLUFitBackward(dx, dkappa, dt, x, kappa, t, g, l, opts, saved)
}

func (r recorder[T]) TreeHEM(y, x []T, l mixture.Layout, np int, o device.TreeHEMOptions) error {
	r.log.add("TreeHEM")
	return r.k.TreeHEM(y, x, l, np, o)
}

func (r recorder[T]) TreeHEMSaving(y, x []T, l mixture.Layout, np int, o device.TreeHEMOptions) (device.Saved, error) {
	r.log.add("TreeHEMSaving")
	return r.k.TreeHEMSaving(y, x, l, np, o)
}

func (r recorder[T]) TreeHEMBackward(dx, x, g []T, l mixture.Layout, np int, o device.TreeHEMOptions, saved device.Saved) error {
	r.log.add(savedName("TreeHEMBackward", saved))
	return r.k.TreeHEMBackward(dx, x, g, l, np, o, saved)
}

// savedName logs a backward computation that received saved state as
// "name(saved)", so tests see whether the forward's state reached it.
func savedName(name string, saved device.Saved) string {
	if saved != nil {
		return name + "(saved)"
	}
	return name
}

func (r recorder[T]) MEM(y, x []T, l mixture.Layout, np int) error {
	r.log.add("MEM")
	return r.k.MEM(y, x, l, np)
}

func (r recorder[T]) MEMBackward(dx, x, g []T, l mixture.Layout, np int) error {
	r.log.add("MEMBackward")
	return r.k.MEMBackward(dx, x, g, l, np)
}

func (r recorder[T]) MeanTraces(tau []float64, x []T, l mixture.Layout) error {
	r.log.add("MeanTraces")
	return r.k.MeanTraces(tau, x, l)
}

func (r recorder[T]) ScaleMixtures(y, x []T, l mixture.Layout, s []T) error {
	r.log.add("ScaleMixtures")
	return r.k.ScaleMixtures(y, x, l, s)
}

func (r recorder[T]) ScaleMixturesBackward(dx, g []T, l mixture.Layout, s []T) error {
	r.log.add("ScaleMixturesBackward")
	return r.k.ScaleMixturesBackward(dx, g, l, s)
}

func (r recorder[T]) CovScaleBackward(dx, g, x []T, l mixture.Layout, s []T, tau []float64) error {
	r.log.add("CovScaleBackward")
	return r.k.CovScaleBackward(dx, g, x, l, s, tau)
}

func (r recorder[T]) KernelEpsilon(a []T, d int, cfg device.KernelConfig) (float64, error) {
	r.log.add("KernelEpsilon")
	return r.k.KernelEpsilon(a, d, cfg)
}

func (r recorder[T]) AssembleKernel(y, w, p, a []T, l mixture.Layout, cfg device.KernelConfig, eps float64) error {
	r.log.add("AssembleKernel")
	return r.k.AssembleKernel(y, w, p, a, l, cfg, eps)
}

func (r recorder[T]) AssembleKernelBackward(dw, dp, da, g, a []T, l mixture.Layout, cfg device.KernelConfig) error {
	r.log.add("AssembleKernelBackward")
	return r.k.AssembleKernelBackward(dw, dp, da, g, a, l, cfg)
}

func (r recorder[T]) WeightDecay(w, a []T, d int) (float64, error) {
	r.log.add("WeightDecay")
	return r.k.WeightDecay(w, a, d)
}

func (r recorder[T]) WeightDecayBackward(dw, da, w, a []T, d int, g T) error {
	r.log.add("WeightDecayBackward")
	return r.k.WeightDecayBackward(dw, da, w, a, d, g)
}

func (r recorder[T]) StandardiseScale(sd []float64, x []T, l mixture.Layout) error {
	r.log.add("StandardiseScale")
	return r.k.StandardiseScale(sd, x, l)
}

func (r recorder[T]) Standardise(y, x []T, sd []float64, gain T, l mixture.Layout) error {
	r.log.add("Standardise")
	return r.k.Standardise(y, x, sd, gain, l)
}

func (r recorder[T]) StandardiseBackward(dx, x, g []T, sd []float64, gain T, l mixture.Layout) (T, error) {
	r.log.add("StandardiseBackward")
	return r.k.StandardiseBackward(dx, x, g, sd, gain, l)
}

func (r recorder[T]) ScaleWeights(y, x []T, l mixture.Layout, s T) error {
	r.log.add("ScaleWeights")
	return r.k.ScaleWeights(y, x, l, s)
}

func (r recorder[T]) ScaleAxes(y, x, s []T, l mixture.Layout, sb, sc int) error {
	r.log.add("ScaleAxes")
	return r.k.ScaleAxes(y, x, s, l, sb, sc)
}

func (r recorder[T]) ScaleAxesBackward(dx, ds, g, x, s []T, l mixture.Layout, sb, sc int) error {
	r.log.add("ScaleAxesBackward")
	return r.k.ScaleAxesBackward(dx, ds, g, x, s, l, sb, sc)
}

func (r recorder[T]) Block(y, x, k []T, lx, lk mixture.Layout, b device.BlockSpec) error {
	r.log.add("Block")
	return r.k.Block(y, x, k, lx, lk, b)
}

func (r recorder[T]) BlockSaving(y, x, k []T, lx, lk mixture.Layout, b device.BlockSpec) (device.Saved, error) {
	r.log.add("BlockSaving")
	return r.k.BlockSaving(y, x, k, lx, lk, b)
}

func (r recorder[T]) BlockBackward(dx, dk, g, x, k []T, lx, lk mixture.Layout, b device.BlockSpec, saved device.Saved) error {
	r.log.add(savedName("BlockBackward", saved))
	return r.k.BlockBackward(dx, dk, g, x, k, lx, lk, b, saved)
}
