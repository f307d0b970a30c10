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

// NewMEM returns the modified-EM reduction (spec §4.1) of every mixture of a
// packed batch [B, C, N, 1+D+D·D] to np components, [B, C, np, 1+D+D·D].
// The np ≥ 1 largest-|w| components start the EM step; if N < np the last
// np − N slots are padding {w = 0, μ = 0, Σ = I}. The likelihoods carry no
// gradient, as in the reference; everything else does (see cpu.MEM). An np
// below 1 is reported when the op is applied.
func NewMEM(np int) G.Op { return newOp(memKernel{np: np}) }

type memKernel struct{ np int }

func (memKernel) name() string                     { return "gm.MEM" }
func (memKernel) inputNames() []string             { return []string{"mixture"} }
func (memKernel) ranks() []int                     { return []int{4, 4} }
func (k memKernel) writeParams(w io.Writer)        { fmt.Fprintf(w, "np=%d", k.np) }
func (memKernel) diffWRT() []bool                  { return []bool{true} }
func (k memKernel) gradKernel(int) gradComputation { return memGradKernel(k) }

func (k memKernel) inferShape(in []tensor.Shape) (tensor.Shape, error) {
	if k.np < 1 {
		return nil, errors.Errorf("the number of output components np must be ≥ 1, got %d", k.np)
	}
	l, err := mixture.LayoutOf(in[0])
	if err != nil {
		return nil, errors.Wrap(err, `input "mixture"`)
	}
	l.N = k.np
	return tensor.Shape(l.Shape()), nil
}

func (k memKernel) do(out *tensor.Dense, in []*tensor.Dense) error {
	l, err := checkedMixture(in[0], "mixture")
	if err != nil {
		return err
	}
	return typed(out, in,
		func(y []float32, x [][]float32) error { cpu.MEM(y, x[0], l, k.np); return nil },
		func(y []float64, x [][]float64) error { cpu.MEM(y, x[0], l, k.np); return nil })
}

// memGradKernel computes ∂L/∂mixture from (mixture, output, grad); it
// recomputes the selection and likelihoods from the mixture.
type memGradKernel struct{ np int }

func (memGradKernel) name() string              { return "gm.MEMGrad" }
func (k memGradKernel) writeParams(w io.Writer) { fmt.Fprintf(w, "np=%d", k.np) }

func (k memGradKernel) do(out *tensor.Dense, in []*tensor.Dense) error {
	l, err := checkedMixture(in[0], "mixture")
	if err != nil {
		return err
	}
	return typed(out, in,
		func(dx []float32, x [][]float32) error { cpu.MEMBackward(dx, x[0], x[2], l, k.np); return nil },
		func(dx []float64, x [][]float64) error { cpu.MEMBackward(dx, x[0], x[2], l, k.np); return nil })
}
