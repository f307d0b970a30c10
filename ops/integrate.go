package ops

import (
	"io"

	"github.com/gmcn-go/gmcn/ops/cpu"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// NewIntegrate returns the op y[b,c] = Σ_k w[b,c,k] that integrates every
// mixture of a packed batch [B, C, N, 1+D+D·D] into [B, C].
func NewIntegrate() G.Op { return newOp(integrateKernel{}) }

type integrateKernel struct{}

func (integrateKernel) name() string                   { return "gm.Integrate" }
func (integrateKernel) inputNames() []string           { return []string{"mixture"} }
func (integrateKernel) ranks() []int                   { return []int{4, 2} }
func (integrateKernel) writeParams(io.Writer)          {}
func (integrateKernel) diffWRT() []bool                { return []bool{true} }
func (integrateKernel) gradKernel(int) gradComputation { return integrateGradKernel{} }

func (integrateKernel) inferShape(in []tensor.Shape) (tensor.Shape, error) {
	l, err := mixture.LayoutOf(in[0])
	if err != nil {
		return nil, errors.Wrap(err, `input "mixture"`)
	}
	return tensor.Shape{l.B, l.C}, nil
}

func (integrateKernel) do(out *tensor.Dense, in []*tensor.Dense) error {
	l, err := checkedMixture(in[0], "mixture")
	if err != nil {
		return err
	}
	if backend != nil {
		return backend.Integrate(out.Data(), in[0].Data(), l)
	}
	return typed(out, in,
		func(y []float32, x [][]float32) error { cpu.Integrate(y, x[0], l); return nil },
		func(y []float64, x [][]float64) error { cpu.Integrate(y, x[0], l); return nil })
}

// integrateGradKernel computes ∂L/∂mixture from (mixture, output, grad).
type integrateGradKernel struct{}

func (integrateGradKernel) name() string          { return "gm.IntegrateGrad" }
func (integrateGradKernel) writeParams(io.Writer) {}

func (integrateGradKernel) do(out *tensor.Dense, in []*tensor.Dense) error {
	l, _ := mixture.LayoutOf(in[0].Shape())
	if backend != nil {
		return backend.IntegrateBackward(out.Data(), in[2].Data(), l)
	}
	return typed(out, in,
		func(dx []float32, x [][]float32) error { cpu.IntegrateBackward(dx, x[2], l); return nil },
		func(dx []float64, x [][]float64) error { cpu.IntegrateBackward(dx, x[2], l); return nil })
}
