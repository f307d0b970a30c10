package ops

import (
	"fmt"
	"io"

	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// ReLUFitOptions configures NewReLUFit; its zero value is the reference
// code's fit (see device.ReLUFitOptions for the fields and defaults).
type ReLUFitOptions = device.ReLUFitOptions

// NewReLUFit returns the dense ReLU fitting op: it maps a packed batch
// "mixture" [B, C, N, 1+D+D·D] to a batch of the same shape whose positions
// and covariances are the input's and whose weights approximate the positive
// part of each mixture, a″_k = x_k·(max(t_k, 0) + off)/(e_k + off) from the
// target t and the coarse approximation e evaluated at the centroids (see
// cpu.ReLUFit). The cost is O(N²) per mixture.
//
// The mixtures' constants are taken as κ = 0, as the reference's default
// model resets them before every ReLU; NewReLUFitConstant fits mixtures
// with constants. The gradient flows into weights, positions and
// covariances. Invalid options are reported when the op is applied
// (InferShape) and when it runs.
func NewReLUFit(dev *device.Device, opts ReLUFitOptions) G.Op {
	return newReLUFit(dev, reluFitSpec{opts: opts})
}

// NewReLUFitConstant returns the dense ReLU fit of mixtures with constants:
// its inputs are "mixture" [B, C, N, 1+D+D·D] and "constant" [B, C], the
// value κ of each mixture at infinity, and its output is the mixture part of
// the fit of max(f + κ, 0), whose new constant is κ⁺ = max(κ, 0) (see
// cpu.ReLUFit; gmnode.ReLUFitConstant returns both). It is a second
// constructor rather than an optional input because a Gorgonia op has a
// fixed arity. With κ = 0 its output is NewReLUFit's, bit for bit. The
// gradient flows into the mixture and the constants; each has its own grad
// op, and both run the backward pass (with the forward's saved sums in a
// graph, one O(N²) pass each).
func NewReLUFitConstant(dev *device.Device, opts ReLUFitOptions) G.Op {
	return newReLUFit(dev, reluFitSpec{opts: opts, constant: true})
}

func newReLUFit(dev *device.Device, s reluFitSpec) G.Op {
	return newOp(dev, reluFitKernel[float32]{s}, reluFitKernel[float64]{s})
}

type reluFitSpec struct {
	opts     ReLUFitOptions
	constant bool // the op has the input "constant"
}

func (reluFitSpec) name() string { return "gm.ReLUFit" }

func (k reluFitSpec) writeParams(w io.Writer) {
	fmt.Fprintf(w, "%+v constant=%v", k.opts, k.constant)
}

func (k reluFitSpec) computations() []string {
	return []string{device.ReLUFitCall("ReLUFit", k.constant, k.opts), device.ReLUFitCall("ReLUFitSaving", k.constant, k.opts)}
}

func (k reluFitSpec) inputNames() []string {
	if k.constant {
		return []string{"mixture", "constant"}
	}
	return []string{"mixture"}
}

func (k reluFitSpec) ranks() []int {
	if k.constant {
		return []int{4, 2, 4}
	}
	return []int{4, 4}
}

func (k reluFitSpec) diffWRT() []bool {
	if k.constant {
		return []bool{true, true}
	}
	return []bool{true}
}

// inferShape checks the options and the shapes: the constants are one per
// mixture, [B, C].
func (k reluFitSpec) inferShape(in []tensor.Shape) (tensor.Shape, error) {
	if _, err := k.opts.Resolve(); err != nil {
		return nil, err
	}
	s, err := sameMixture(in[0])
	if err != nil || !k.constant {
		return s, err
	}
	return s, sameShape("constant", in[1], s[:2])
}

// reluFitInputs returns the layout of the mixture input and the constants
// (nil without the input "constant"), checking their values unless saved
// state shows that the forward run checked them (see resuming.doSaved).
func reluFitInputs[T Float](k reluFitSpec, in []operand[T], saved device.Saved) (mixture.Layout, []T, error) {
	l, err := resumedMixture(in[0], "mixture", saved)
	if err != nil || !k.constant {
		return l, nil, err
	}
	if saved == nil {
		if err := checkedFinite(in[1], "constant"); err != nil {
			return l, nil, err
		}
	}
	return l, in[1].data, nil
}

type reluFitKernel[T Float] struct{ reluFitSpec }

func (k reluFitKernel[T]) gradKernel(i int) gradComputation[T] {
	return reluFitGradKernel[T]{k.reluFitSpec, i}
}

func (k reluFitKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	l, kappa, err := reluFitInputs(k.reluFitSpec, in, nil)
	if err != nil {
		return err
	}
	return dev.ReLUFit(out.data, in[0].data, kappa, l, k.opts)
}

func (k reluFitKernel[T]) doSaving(dev device.Kernels[T], out operand[T], in []operand[T]) (device.Saved, error) {
	l, kappa, err := reluFitInputs(k.reluFitSpec, in, nil)
	if err != nil {
		return nil, err
	}
	return dev.ReLUFitSaving(out.data, in[0].data, kappa, l, k.opts)
}

// reluFitGradKernel computes ∂L/∂mixture (wrt 0) or ∂L/∂constant (wrt 1)
// from (mixture, [constant,] output, grad). The output alone does not
// determine the forward sums: they come from the forward run when it saved
// them for these inputs and are recomputed otherwise.
type reluFitGradKernel[T Float] struct {
	reluFitSpec
	wrt int
}

func (k reluFitGradKernel[T]) name() string {
	if k.wrt == 1 {
		return "gm.ReLUFitConstantGrad"
	}
	return "gm.ReLUFitGrad"
}

// computations names the backward as External does: the fit with constants
// and the refined fit are variants that a device may compute elsewhere, and
// CallsExtern must not claim them for the device's plain fit.
func (k reluFitGradKernel[T]) computations() []string {
	return []string{device.ReLUFitCall("ReLUFitBackward", k.constant, k.opts)}
}

func (k reluFitGradKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	return k.doSaved(dev, out, in, nil)
}

func (k reluFitGradKernel[T]) doSaved(dev device.Kernels[T], out operand[T], in []operand[T], saved device.Saved) error {
	l, kappa, err := reluFitInputs(k.reluFitSpec, in, saved)
	if err != nil {
		return err
	}
	dx, dkappa := out.data, []T(nil)
	if k.wrt == 1 {
		dx, dkappa = nil, out.data
	}
	return dev.ReLUFitBackward(dx, dkappa, in[0].data, kappa, in[len(in)-1].data, l, k.opts, saved)
}
