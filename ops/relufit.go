package ops

import (
	"fmt"
	"io"

	"github.com/gmcn-go/gmcn/ops/cpu"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// ReLUFitOptions configures NewReLUFit; its zero value is the reference
// code's fit (see cpu.ReLUFitOptions for the fields and defaults).
type ReLUFitOptions = cpu.ReLUFitOptions

// NewReLUFit returns the dense ReLU fitting op: it maps a packed batch
// "mixture" [B, C, N, 1+D+D·D] to a batch of the same shape whose positions
// and covariances are the input's and whose weights approximate the positive
// part of each mixture, a″_k = x_k·(max(t_k, 0) + off)/(e_k + off) from the
// target t and the coarse approximation e evaluated at the centroids (see
// cpu.ReLUFit). The cost is O(N²) per mixture.
//
// The op has no constant (bias) input: the model resets each mixture's
// constant κ to zero before every ReLU (spec §5.5), so the fit is the κ = 0
// case. The gradient flows into weights, positions and covariances. Invalid
// options are reported when the op is applied (InferShape) and when it runs.
func NewReLUFit(opts ReLUFitOptions) G.Op { return newOp(reluFitKernel{opts}) }

type reluFitKernel struct{ opts ReLUFitOptions }

func (reluFitKernel) name() string                     { return "gm.ReLUFit" }
func (reluFitKernel) inputNames() []string             { return []string{"mixture"} }
func (reluFitKernel) ranks() []int                     { return []int{4, 4} }
func (k reluFitKernel) writeParams(w io.Writer)        { fmt.Fprintf(w, "%+v", k.opts) }
func (reluFitKernel) diffWRT() []bool                  { return []bool{true} }
func (k reluFitKernel) gradKernel(int) gradComputation { return reluFitGradKernel(k) }

func (k reluFitKernel) inferShape(in []tensor.Shape) (tensor.Shape, error) {
	if err := k.opts.Validate(); err != nil {
		return nil, err
	}
	if _, err := mixture.LayoutOf(in[0]); err != nil {
		return nil, errors.Wrap(err, `input "mixture"`)
	}
	return in[0].Clone(), nil
}

func (k reluFitKernel) do(out *tensor.Dense, in []*tensor.Dense) error {
	l, err := checkedMixture(in[0], "mixture")
	if err != nil {
		return err
	}
	if backend != nil {
		return backend.ReLUFit(out.Data(), in[0].Data(), l, k.opts)
	}
	return typed(out, in,
		func(y []float32, x [][]float32) error { return cpu.ReLUFit(y, x[0], l, k.opts) },
		func(y []float64, x [][]float64) error { return cpu.ReLUFit(y, x[0], l, k.opts) })
}

// reluFitGradKernel computes ∂L/∂mixture from (mixture, output, grad); the
// forward sums are recomputed from the mixture, as the output alone does not
// determine them.
type reluFitGradKernel struct{ opts ReLUFitOptions }

func (reluFitGradKernel) name() string              { return "gm.ReLUFitGrad" }
func (k reluFitGradKernel) writeParams(w io.Writer) { fmt.Fprintf(w, "%+v", k.opts) }

func (k reluFitGradKernel) do(out *tensor.Dense, in []*tensor.Dense) error {
	l, err := checkedMixture(in[0], "mixture")
	if err != nil {
		return err
	}
	if backend != nil {
		return backend.ReLUFitBackward(out.Data(), in[0].Data(), in[2].Data(), l, k.opts)
	}
	return typed(out, in,
		func(dx []float32, x [][]float32) error { return cpu.ReLUFitBackward(dx, x[0], x[2], l, k.opts) },
		func(dx []float64, x [][]float64) error { return cpu.ReLUFitBackward(dx, x[0], x[2], l, k.opts) })
}
