package cpu

import (
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
)

// Kernels implements device.Kernels[T] with the functions of this package.
// Its methods only adapt signatures: the computations, their formulas and
// their parallelism are those of the functions they call.
type Kernels[T Float] struct{}

var (
	_ device.Kernels[float32] = Kernels[float32]{}
	_ device.Kernels[float64] = Kernels[float64]{}
)

// Device returns the CPU device: both element types, nothing external.
func Device() *device.Device {
	return &device.Device{Name: "cpu", F32: Kernels[float32]{}, F64: Kernels[float64]{}}
}

// Integrate is Integrate.
func (Kernels[T]) Integrate(y, x []T, l mixture.Layout) error {
	Integrate(y, x, l)
	return nil
}

// IntegrateBackward is IntegrateBackward.
func (Kernels[T]) IntegrateBackward(dx, g []T, l mixture.Layout) error {
	IntegrateBackward(dx, g, l)
	return nil
}

// Conv is Conv.
func (Kernels[T]) Conv(y, x, k []T, lx, lk mixture.Layout) error {
	Conv(y, x, k, lx, lk)
	return nil
}

// ConvBackwardData is ConvBackwardData.
func (Kernels[T]) ConvBackwardData(dx, g, k []T, lx, lk mixture.Layout) error {
	ConvBackwardData(dx, g, k, lx, lk)
	return nil
}

// ConvBackwardKernels is ConvBackwardKernels.
func (Kernels[T]) ConvBackwardKernels(dk, g, x []T, lx, lk mixture.Layout) error {
	ConvBackwardKernels(dk, g, x, lx, lk)
	return nil
}

// ConvFit is ConvFit.
func (Kernels[T]) ConvFit(y, x, k []T, lx, lk mixture.Layout, s device.ConvFitSelect) error {
	ConvFit(y, x, k, lx, lk, s)
	return nil
}

// ConvFitSaving is ConvFitSaving; the saved state is the *ConvFitSelection.
func (Kernels[T]) ConvFitSaving(y, x, k []T, lx, lk mixture.Layout, s device.ConvFitSelect) (device.Saved, error) {
	return ConvFitSaving(y, x, k, lx, lk, s), nil
}

// ConvFitBackward is ConvFitBackwardSaved.
func (Kernels[T]) ConvFitBackward(dx, dk, g, x, k []T, lx, lk mixture.Layout, s device.ConvFitSelect, saved device.Saved) error {
	sel, err := savedAs[*ConvFitSelection](saved, "ConvFitBackward")
	if err != nil {
		return err
	}
	if sel != nil && (sel.lx != lx || sel.lk != lk || sel.s != s) {
		return errors.Errorf("ConvFitBackward: selection made for %v ⊛ %v (%v), used for %v ⊛ %v (%v)", sel.lx.Shape(), sel.lk.Shape(), sel.s, lx.Shape(), lk.Shape(), s)
	}
	ConvFitBackwardSaved(dx, dk, g, x, k, lx, lk, s, sel)
	return nil
}

// Block is Block.
func (Kernels[T]) Block(y, x, k []T, lx, lk mixture.Layout, b device.BlockSpec) error {
	return Block(y, x, k, lx, lk, b)
}

// BlockSaving is BlockSaving; the saved state is the *BlockState[T].
func (Kernels[T]) BlockSaving(y, x, k []T, lx, lk mixture.Layout, b device.BlockSpec) (device.Saved, error) {
	return saved(BlockSaving(y, x, k, lx, lk, b))
}

// BlockBackward is BlockBackward with the saved state, or with the forward
// run again without.
func (Kernels[T]) BlockBackward(dx, dk, g, x, k []T, lx, lk mixture.Layout, b device.BlockSpec, saved device.Saved) error {
	st, err := savedAs[*BlockState[T]](saved, "BlockBackward")
	if err != nil {
		return err
	}
	return BlockBackward(dx, dk, g, x, k, lx, lk, b, st)
}

// KeepLargest is KeepLargest.
func (Kernels[T]) KeepLargest(y, x []T, l mixture.Layout, np int) error {
	KeepLargest(y, x, l, np)
	return nil
}

// KeepLargestBackward is KeepLargestBackward.
func (Kernels[T]) KeepLargestBackward(dx, x, g []T, l mixture.Layout, np int) error {
	KeepLargestBackward(dx, x, g, l, np)
	return nil
}

// Evaluate is Evaluate.
func (Kernels[T]) Evaluate(y, x, pts []T, l mixture.Layout, pb, pc, m int) error {
	Evaluate(y, x, pts, l, pb, pc, m)
	return nil
}

// EvaluateBackwardMixture is EvaluateBackwardMixture.
func (Kernels[T]) EvaluateBackwardMixture(dx, x, pts, g []T, l mixture.Layout, pb, pc, m int) error {
	EvaluateBackwardMixture(dx, x, pts, g, l, pb, pc, m)
	return nil
}

// EvaluateBackwardPoints is EvaluateBackwardPoints.
func (Kernels[T]) EvaluateBackwardPoints(dp, x, pts, g []T, l mixture.Layout, pb, pc, m int) error {
	EvaluateBackwardPoints(dp, x, pts, g, l, pb, pc, m)
	return nil
}

// ReLUFit is ReLUFit.
func (Kernels[T]) ReLUFit(y, x, kappa, t []T, l mixture.Layout, opts device.ReLUFitOptions) error {
	return ReLUFit(y, x, kappa, t, l, opts)
}

// ReLUFitSaving is ReLUFitSaving; the saved state is the *ReLUFitSums.
func (Kernels[T]) ReLUFitSaving(y, x, kappa, t []T, l mixture.Layout, opts device.ReLUFitOptions) (device.Saved, error) {
	return saved(ReLUFitSaving(y, x, kappa, t, l, opts))
}

// ReLUFitBackward is ReLUFitBackwardSaved.
func (Kernels[T]) ReLUFitBackward(dx, dkappa, dt, x, kappa, t, g []T, l mixture.Layout, opts device.ReLUFitOptions, saved device.Saved) error {
	sums, err := savedAs[*ReLUFitSums[T]](saved, "ReLUFitBackward")
	if err != nil {
		return err
	}
	return ReLUFitBackwardSaved(dx, dkappa, dt, x, kappa, t, g, l, opts, sums)
}

// TreeHEM is TreeHEM.
func (Kernels[T]) TreeHEM(y, x []T, l mixture.Layout, np int, o device.TreeHEMOptions) error {
	return TreeHEM(y, x, l, np, o)
}

// TreeHEMSaving is TreeHEMSaving; the saved state is the *Decisions.
func (Kernels[T]) TreeHEMSaving(y, x []T, l mixture.Layout, np int, o device.TreeHEMOptions) (device.Saved, error) {
	return saved(TreeHEMSaving(y, x, l, np, o))
}

// TreeHEMBackward is TreeHEMBackwardSaved with the saved decisions, or
// TreeHEMBackward, which recomputes them from x, without.
func (Kernels[T]) TreeHEMBackward(dx, x, g []T, l mixture.Layout, np int, o device.TreeHEMOptions, saved device.Saved) error {
	dec, err := savedAs[*Decisions](saved, "TreeHEMBackward")
	switch {
	case err != nil:
		return err
	case dec == nil:
		return TreeHEMBackward(dx, x, g, l, np, o)
	case dec.l != l || dec.np != np || dec.o != o:
		return errors.Errorf("TreeHEMBackward: decisions made for %v → %d with %+v, used for %v → %d with %+v", dec.l.Shape(), dec.np, dec.o, l.Shape(), np, o)
	}
	return TreeHEMBackwardSaved(dx, x, g, dec)
}

// saved returns s as device.Saved, or nil (not a nil *S) after an error.
func saved[S any](s S, err error) (device.Saved, error) {
	if err != nil {
		return nil, err
	}
	return s, nil
}

// savedAs returns saved as the state type S of computation name, the zero S
// for nil, and an error for state of another type (another device's or
// another computation's).
func savedAs[S any](saved device.Saved, name string) (S, error) {
	var zero S
	if saved == nil {
		return zero, nil
	}
	s, ok := saved.(S)
	if !ok {
		return zero, errors.Errorf("%s: saved state %T is not the CPU's %T", name, saved, zero)
	}
	return s, nil
}

// MEM is MEM.
func (Kernels[T]) MEM(y, x []T, l mixture.Layout, np int) error {
	MEM(y, x, l, np)
	return nil
}

// MEMBackward is MEMBackward.
func (Kernels[T]) MEMBackward(dx, x, g []T, l mixture.Layout, np int) error {
	MEMBackward(dx, x, g, l, np)
	return nil
}

// MeanTraces is MeanTraces.
func (Kernels[T]) MeanTraces(tau []float64, x []T, l mixture.Layout) error {
	MeanTraces(tau, x, l)
	return nil
}

// ScaleMixtures is ScaleMixtures.
func (Kernels[T]) ScaleMixtures(y, x []T, l mixture.Layout, s []T) error {
	ScaleMixtures(y, x, l, s)
	return nil
}

// ScaleMixturesBackward is ScaleMixturesBackward.
func (Kernels[T]) ScaleMixturesBackward(dx, g []T, l mixture.Layout, s []T) error {
	ScaleMixturesBackward(dx, g, l, s)
	return nil
}

// CovScaleBackward is CovScaleBackward.
func (Kernels[T]) CovScaleBackward(dx, g, x []T, l mixture.Layout, s []T, tau []float64) error {
	CovScaleBackward(dx, g, x, l, s, tau)
	return nil
}

// KernelEpsilon is KernelEpsilon.
func (Kernels[T]) KernelEpsilon(a []T, d int, cfg device.KernelConfig) (float64, error) {
	return KernelEpsilon(a, d, cfg), nil
}

// AssembleKernel is AssembleKernel.
func (Kernels[T]) AssembleKernel(y, w, p, a []T, l mixture.Layout, cfg device.KernelConfig, eps float64) error {
	AssembleKernel(y, w, p, a, l, cfg, eps)
	return nil
}

// AssembleKernelBackward is KernelWeightsBackward, KernelPositionsBackward
// and KernelFactorsBackward for the destinations that are not nil.
func (Kernels[T]) AssembleKernelBackward(dw, dp, da, g, a []T, l mixture.Layout, cfg device.KernelConfig) error {
	if dw != nil {
		KernelWeightsBackward(dw, g, l, cfg)
	}
	if dp != nil {
		KernelPositionsBackward(dp, g, l, cfg)
	}
	if da != nil {
		KernelFactorsBackward(da, g, a, l, cfg)
	}
	return nil
}

// WeightDecay is WeightDecay.
func (Kernels[T]) WeightDecay(w, a []T, d int) (float64, error) {
	return WeightDecay(w, a, d), nil
}

// WeightDecayBackward is WeightDecayWeightsBackward and
// WeightDecayFactorsBackward for the destinations that are not nil.
func (Kernels[T]) WeightDecayBackward(dw, da, w, a []T, d int, g T) error {
	if dw != nil {
		WeightDecayWeightsBackward(dw, w, g)
	}
	if da != nil {
		WeightDecayFactorsBackward(da, a, d, g)
	}
	return nil
}

// StandardiseScale is StandardiseScale.
func (Kernels[T]) StandardiseScale(sd []float64, x []T, l mixture.Layout) error {
	StandardiseScale(sd, x, l)
	return nil
}

// Standardise is Standardise.
func (Kernels[T]) Standardise(y, x []T, sd []float64, gain T, l mixture.Layout) error {
	Standardise(y, x, sd, gain, l)
	return nil
}

// StandardiseBackward is StandardiseBackward.
func (Kernels[T]) StandardiseBackward(dx, x, g []T, sd []float64, gain T, l mixture.Layout) (T, error) {
	return StandardiseBackward(dx, x, g, sd, gain, l), nil
}

// ScaleWeights is ScaleWeights.
func (Kernels[T]) ScaleWeights(y, x []T, l mixture.Layout, s T) error {
	ScaleWeights(y, x, l, s)
	return nil
}

// ScaleAxes is ScaleAxes.
func (Kernels[T]) ScaleAxes(y, x, s []T, l mixture.Layout, sb, sc int) error {
	ScaleAxes(y, x, s, l, sb, sc)
	return nil
}

// ScaleAxesBackward is ScaleAxes on the incoming gradient (the op is linear
// in x) and ScaleAxesBackwardScales, for the destinations that are not nil.
func (Kernels[T]) ScaleAxesBackward(dx, ds, g, x, s []T, l mixture.Layout, sb, sc int) error {
	if dx != nil {
		ScaleAxes(dx, g, s, l, sb, sc)
	}
	if ds != nil {
		ScaleAxesBackwardScales(ds, g, x, s, l, sb, sc)
	}
	return nil
}
