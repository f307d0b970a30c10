package ops

import (
	"github.com/gmcn-go/gmcn/ops/cpu"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// Backend runs the numeric kernels of the ops on a device other than the
// CPU. Each method computes what the ops/cpu function of the same name
// computes, with the same arguments, except that the float slices arrive as
// any: all []float32 or all []float64, which Op.Do has already checked.
// The kernels without a method here (MEM, TreeHEM, Standardise,
// WeightDecay, ScaleWeights) always run on the CPU.
type Backend interface {
	// Name describes the device, for logs.
	Name() string

	Integrate(y, x any, l mixture.Layout) error
	IntegrateBackward(dx, g any, l mixture.Layout) error
	Conv(y, x, k any, lx, lk mixture.Layout) error
	ConvBackwardData(dx, g, k any, lx, lk mixture.Layout) error
	ConvBackwardKernels(dk, g, x any, lx, lk mixture.Layout) error
	Evaluate(y, x, pts any, l mixture.Layout, pb, pc, m int) error
	EvaluateBackwardMixture(dx, x, pts, g any, l mixture.Layout, pb, pc, m int) error
	EvaluateBackwardPoints(dp, x, pts, g any, l mixture.Layout, pb, pc, m int) error
	ReLUFit(y, x any, l mixture.Layout, opts cpu.ReLUFitOptions) error
	ReLUFitBackward(dx, x, g any, l mixture.Layout, opts cpu.ReLUFitOptions) error
	MeanTraces(tau []float64, x any, l mixture.Layout) error
	ScaleMixtures(y, x any, l mixture.Layout, s any) error
	CovScaleBackward(dx, g, x any, l mixture.Layout, s any, tau []float64) error
	AssembleKernel(out, w, p, a any, l mixture.Layout, cfg cpu.KernelConfig, eps float64) error
	AssembleKernelBackward(dw, dp, da, g, a any, l mixture.Layout, cfg cpu.KernelConfig) error
}

// backend is the device the ops run on; nil, the default, means the CPU
// kernels of ops/cpu. The gmcuda build sets it at start-up
// (backend_gmcuda.go); the default build never links any CUDA code.
var backend Backend
