package ops

import (
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// NewIntegrate returns the op y[b,c] = Σ_k w[b,c,k] that integrates every
// mixture of a packed batch [B, C, N, 1+D+D·D] into [B, C].
func NewIntegrate(dev *device.Device) G.Op {
	return newOp(dev, integrateKernel[float32]{}, integrateKernel[float64]{})
}

// integrateSpec is a mixtureOp whose output is [B, C], of rank 2.
type integrateSpec struct {
	mixtureOp
	noParams
}

func (integrateSpec) name() string           { return "gm.Integrate" }
func (integrateSpec) ranks() []int           { return []int{4, 2} }
func (integrateSpec) computations() []string { return []string{"Integrate"} }

func (integrateSpec) inferShape(in []tensor.Shape) (tensor.Shape, error) {
	l, err := layoutOf("mixture", in[0])
	if err != nil {
		return nil, err
	}
	return tensor.Shape{l.B, l.C}, nil
}

type integrateKernel[T Float] struct{ integrateSpec }

func (integrateKernel[T]) gradKernel(int) gradComputation[T] { return integrateGradKernel[T]{} }

func (integrateKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	l, err := checkedMixture(in[0], "mixture")
	if err != nil {
		return err
	}
	return dev.Integrate(out.data, in[0].data, l)
}

// integrateGradKernel computes ∂L/∂mixture from (mixture, output, grad).
type integrateGradKernel[T Float] struct{ noParams }

func (integrateGradKernel[T]) name() string           { return "gm.IntegrateGrad" }
func (integrateGradKernel[T]) computations() []string { return []string{"IntegrateBackward"} }

func (integrateGradKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	l, _ := mixture.LayoutOf(in[0].shape)
	return dev.IntegrateBackward(out.data, in[2].data, l)
}
