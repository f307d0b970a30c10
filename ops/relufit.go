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

// NewReLUFitTargets returns the dense ReLU fit to given targets: its inputs
// are "mixture" [B, C, N, 1+D+D·D], optionally (with constant set)
// "constant" [B, C], and "targets" [B, C, N], the values at the N centroids
// of the function whose positive part is fitted, which need not be the
// mixture's own (see cpu.ReLUFit). The mixture gives the positions,
// covariances and coarse weights of the fit; the targets replace the O(N²)
// evaluation of the mixture at its centroids. The fused convolution-fitting
// uses it to fit the ReLU of the exact convolution with its coarse mixture
// (docs/fused.md). The gradient flows into every input, each with its own
// grad op. The refined fit, which evaluates its target away from the
// centroids, is rejected (InferShape).
func NewReLUFitTargets(dev *device.Device, opts ReLUFitOptions, constant bool) G.Op {
	return newReLUFit(dev, reluFitSpec{opts: opts, constant: constant, targets: true})
}

func newReLUFit(dev *device.Device, s reluFitSpec) G.Op {
	return newOp(dev, reluFitKernel[float32]{s}, reluFitKernel[float64]{s})
}

type reluFitSpec struct {
	opts     ReLUFitOptions
	constant bool // the op has the input "constant"
	targets  bool // the op has the input "targets", last
}

func (reluFitSpec) name() string { return "gm.ReLUFit" }

func (k reluFitSpec) writeParams(w io.Writer) {
	fmt.Fprintf(w, "%+v constant=%v targets=%v", k.opts, k.constant, k.targets)
}

func (k reluFitSpec) computations() []string {
	return []string{device.ReLUFitCall("ReLUFit", k.constant, k.targets, k.opts), device.ReLUFitCall("ReLUFitSaving", k.constant, k.targets, k.opts)}
}

func (k reluFitSpec) inputNames() []string {
	names := []string{"mixture"}
	if k.constant {
		names = append(names, "constant")
	}
	if k.targets {
		names = append(names, "targets")
	}
	return names
}

// targetsInput is the index of the input "targets".
func (k reluFitSpec) targetsInput() int { return len(k.inputNames()) - 1 }

func (k reluFitSpec) ranks() []int {
	r := []int{4}
	if k.constant {
		r = append(r, 2)
	}
	if k.targets {
		r = append(r, 3)
	}
	return append(r, 4)
}

func (k reluFitSpec) diffWRT() []bool {
	d := make([]bool, len(k.inputNames()))
	for i := range d {
		d[i] = true
	}
	return d
}

// inferShape checks the options and the shapes: the constants are one per
// mixture, [B, C], the targets one per component, [B, C, N].
func (k reluFitSpec) inferShape(in []tensor.Shape) (tensor.Shape, error) {
	p, err := k.opts.Resolve()
	if err != nil {
		return nil, err
	}
	if k.targets && p.Refine {
		return nil, device.ErrRefinedTargets
	}
	s, err := sameMixture(in[0])
	if err != nil {
		return nil, err
	}
	if k.constant {
		if err := sameShape("constant", in[1], s[:2]); err != nil {
			return nil, err
		}
	}
	if k.targets {
		if err := sameShape("targets", in[k.targetsInput()], s[:3]); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// reluFitInputs returns the layout of the mixture input, the constants (nil
// without the input "constant") and the targets (nil without "targets"),
// checking their values unless saved state shows that the forward run
// checked them (see resuming.doSaved).
func reluFitInputs[T Float](k reluFitSpec, in []operand[T], saved device.Saved) (l mixture.Layout, kappa, t []T, err error) {
	if l, err = resumedMixture(in[0], "mixture", saved); err != nil {
		return l, nil, nil, err
	}
	for i, name := range k.inputNames()[1:] {
		if saved == nil {
			if err := checkedFinite(in[1+i], name); err != nil {
				return l, nil, nil, err
			}
		}
		if name == "constant" {
			kappa = in[1+i].data
		} else {
			t = in[1+i].data
		}
	}
	return l, kappa, t, nil
}

type reluFitKernel[T Float] struct{ reluFitSpec }

func (k reluFitKernel[T]) gradKernel(i int) gradComputation[T] {
	return reluFitGradKernel[T]{k.reluFitSpec, i}
}

func (k reluFitKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	l, kappa, t, err := reluFitInputs(k.reluFitSpec, in, nil)
	if err != nil {
		return err
	}
	return dev.ReLUFit(out.data, in[0].data, kappa, t, l, k.opts)
}

func (k reluFitKernel[T]) doSaving(dev device.Kernels[T], out operand[T], in []operand[T]) (device.Saved, error) {
	l, kappa, t, err := reluFitInputs(k.reluFitSpec, in, nil)
	if err != nil {
		return nil, err
	}
	return dev.ReLUFitSaving(out.data, in[0].data, kappa, t, l, k.opts)
}

// reluFitGradKernel computes ∂L/∂mixture (wrt 0), ∂L/∂constant or
// ∂L/∂targets from (mixture, [constant,] [targets,] output, grad). The output alone does not
// determine the forward sums: they come from the forward run when it saved
// them for these inputs and are recomputed otherwise.
type reluFitGradKernel[T Float] struct {
	reluFitSpec
	wrt int
}

func (k reluFitGradKernel[T]) name() string {
	switch {
	case k.wrt == 0:
		return "gm.ReLUFitGrad"
	case k.targets && k.wrt == k.targetsInput():
		return "gm.ReLUFitTargetsGrad"
	}
	return "gm.ReLUFitConstantGrad"
}

// computations names the backward as External does: the fit with constants
// and the refined fit are variants that a device may compute elsewhere, and
// CallsExtern must not claim them for the device's plain fit.
func (k reluFitGradKernel[T]) computations() []string {
	return []string{device.ReLUFitCall("ReLUFitBackward", k.constant, k.targets, k.opts)}
}

func (k reluFitGradKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	return k.doSaved(dev, out, in, nil)
}

func (k reluFitGradKernel[T]) doSaved(dev device.Kernels[T], out operand[T], in []operand[T], saved device.Saved) error {
	l, kappa, t, err := reluFitInputs(k.reluFitSpec, in, saved)
	if err != nil {
		return err
	}
	var dx, dkappa, dt []T
	switch {
	case k.wrt == 0:
		dx = out.data
	case k.targets && k.wrt == k.targetsInput():
		dt = out.data
	default:
		dkappa = out.data
	}
	return dev.ReLUFitBackward(dx, dkappa, dt, in[0].data, kappa, t, in[len(in)-1].data, l, k.opts, saved)
}
