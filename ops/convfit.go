package ops

import (
	"fmt"
	"io"
	"math"

	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// ConvFitSelect says how ConvFit chooses its groups: how many, and how much
// a group of negative weights counts against one of positive weights
// (device.ConvFitSelect).
type ConvFitSelect = device.ConvFitSelect

// DefaultConvFitNegative is the models' ConvFitSelect.Negative
// (device.DefaultConvFitNegative).
const DefaultConvFitNegative = device.DefaultConvFitNegative

// NewConvFit returns the fused convolution-fitting op: data
// [B, Fi, Ni, 1+D+D·D] convolved with kernels [Fo, Fi, Nk, 1+D+D·D] and
// fitted to n = s.N Gaussians per output channel, [B, Fo, n, 1+D+D·D],
// without forming Conv's Fi·Ni·Nk components per channel (see
// cpu.ConvFit). Output Gaussian i of a channel is the moment match of a
// group of Conv's components chosen by a tree over their signs and
// positions, split where s says; with n ≥ Fi·Ni·Nk the output is Conv's (in
// another order) padded with {0, 0, I}. Both inputs are differentiable, with
// the groups held fixed. A selection that fails s.Check is reported when the
// op is applied.
func NewConvFit(dev *device.Device, s ConvFitSelect) G.Op {
	spec := convFitSpec{s}
	return newOp(dev, convFitKernel[float32]{spec}, convFitKernel[float64]{spec})
}

type convFitSpec struct{ s ConvFitSelect }

func (convFitSpec) name() string              { return "gm.ConvFit" }
func (convFitSpec) inputNames() []string      { return []string{"data", "kernels"} }
func (convFitSpec) ranks() []int              { return []int{4, 4, 4} }
func (s convFitSpec) writeParams(w io.Writer) { fmt.Fprint(w, s.s) }
func (convFitSpec) diffWRT() []bool           { return []bool{true, true} }
func (convFitSpec) computations() []string    { return []string{"ConvFit", "ConvFitSaving"} }

func (s convFitSpec) inferShape(in []tensor.Shape) (tensor.Shape, error) {
	if err := s.s.Check(); err != nil {
		return nil, err
	}
	lx, lk, err := convLayouts(in[0], in[1])
	if err != nil {
		return nil, err
	}
	// The kernel keeps a component's index in 31 bits of its sort key.
	if nv := lx.C * lx.N * lk.N; nv > math.MaxInt32 {
		return nil, errors.Errorf("Fi·Ni·Nk = %d convolved Gaussians per channel exceed the limit 2³¹ − 1", nv)
	}
	return tensor.Shape(device.ConvFitLayout(lx, lk, s.s.N).Shape()), nil
}

type convFitKernel[T Float] struct{ convFitSpec }

func (k convFitKernel[T]) gradKernel(i int) gradComputation[T] {
	return convFitGradKernel[T]{convFitSpec: k.convFitSpec, wrt: i}
}

func (k convFitKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	lx, lk, err := checkedConvInputs(in)
	if err != nil {
		return err
	}
	return dev.ConvFit(out.data, in[0].data, in[1].data, lx, lk, k.s)
}

func (k convFitKernel[T]) doSaving(dev device.Kernels[T], out operand[T], in []operand[T]) (device.Saved, error) {
	lx, lk, err := checkedConvInputs(in)
	if err != nil {
		return nil, err
	}
	return dev.ConvFitSaving(out.data, in[0].data, in[1].data, lx, lk, k.s)
}

// convFitGradKernel computes ∂L/∂data (wrt = 0) or ∂L/∂kernels (wrt = 1)
// from (data, kernels, output, grad), with the selection the forward run
// saved for these inputs, or one rebuilt from them.
type convFitGradKernel[T Float] struct {
	convFitSpec
	wrt int
}

func (g convFitGradKernel[T]) name() string {
	return [...]string{"gm.ConvFitGradData", "gm.ConvFitGradKernels"}[g.wrt]
}

func (g convFitGradKernel[T]) writeParams(w io.Writer) { fmt.Fprintf(w, "%v wrt=%d", g.s, g.wrt) }

func (convFitGradKernel[T]) computations() []string { return []string{"ConvFitBackward"} }

func (g convFitGradKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	return g.doSaved(dev, out, in, nil)
}

func (g convFitGradKernel[T]) doSaved(dev device.Kernels[T], out operand[T], in []operand[T], saved device.Saved) error {
	lx, lk, err := resumedConvInputs(in, saved)
	if err != nil {
		return err
	}
	dx, dk := convGradDest(g.wrt, out.data)
	return dev.ConvFitBackward(dx, dk, in[3].data, in[0].data, in[1].data, lx, lk, g.s, saved)
}

// convGradDest returns the destinations of a gradient op of a (data,
// kernels) op: out is ∂L/∂data for wrt = 0 and ∂L/∂kernels for wrt = 1.
func convGradDest[T Float](wrt int, out []T) (dx, dk []T) {
	if wrt == 1 {
		return nil, out
	}
	return out, nil
}

// resumedConvInputs is checkedConvInputs for a resuming computation: it
// checks the values only without saved state (see resuming.doSaved).
func resumedConvInputs[T Float](in []operand[T], saved device.Saved) (lx, lk mixture.Layout, err error) {
	if saved != nil {
		return convLayouts(in[0].shape, in[1].shape)
	}
	return checkedConvInputs(in)
}
