package ops

import (
	"fmt"
	"io"

	"github.com/gmcn-go/gmcn/ops/device"
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
// The op has no constant (bias) input: the model resets each mixture's
// constant κ to zero before every ReLU, so the fit is the κ = 0 case. The
// gradient flows into weights, positions and covariances. Invalid options
// are reported when the op is applied (InferShape) and when it runs.
func NewReLUFit(opts ReLUFitOptions) G.Op {
	s := reluFitSpec{opts: opts}
	return newOp(reluFitKernel[float32]{s}, reluFitKernel[float64]{s})
}

type reluFitSpec struct {
	mixtureOp
	opts ReLUFitOptions
}

func (reluFitSpec) name() string              { return "gm.ReLUFit" }
func (k reluFitSpec) writeParams(w io.Writer) { fmt.Fprintf(w, "%+v", k.opts) }
func (reluFitSpec) computations() []string    { return []string{"ReLUFit", "ReLUFitSaving"} }

func (k reluFitSpec) inferShape(in []tensor.Shape) (tensor.Shape, error) {
	if _, err := k.opts.Resolve(); err != nil {
		return nil, err
	}
	return sameMixture(in[0])
}

type reluFitKernel[T Float] struct{ reluFitSpec }

func (k reluFitKernel[T]) gradKernel(int) gradComputation[T] {
	return reluFitGradKernel[T](k)
}

func (k reluFitKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	l, err := checkedMixture(in[0], "mixture")
	if err != nil {
		return err
	}
	return dev.ReLUFit(out.data, in[0].data, nil, l, k.opts)
}

func (k reluFitKernel[T]) doSaving(dev device.Kernels[T], out operand[T], in []operand[T]) (device.Saved, error) {
	l, err := checkedMixture(in[0], "mixture")
	if err != nil {
		return nil, err
	}
	return dev.ReLUFitSaving(out.data, in[0].data, nil, l, k.opts)
}

// reluFitGradKernel computes ∂L/∂mixture from (mixture, output, grad). The
// output alone does not determine the forward sums: they come from the
// forward run when it saved them for this mixture and are recomputed
// otherwise.
type reluFitGradKernel[T Float] struct{ reluFitSpec }

func (reluFitGradKernel[T]) name() string           { return "gm.ReLUFitGrad" }
func (reluFitGradKernel[T]) computations() []string { return []string{"ReLUFitBackward"} }

func (k reluFitGradKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	return k.doSaved(dev, out, in, nil)
}

func (k reluFitGradKernel[T]) doSaved(dev device.Kernels[T], out operand[T], in []operand[T], saved device.Saved) error {
	l, err := resumedMixture(in[0], "mixture", saved)
	if err != nil {
		return err
	}
	return dev.ReLUFitBackward(out.data, nil, in[0].data, nil, in[2].data, l, k.opts, saved)
}
