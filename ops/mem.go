package ops

import (
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// NewMEM returns the modified-EM reduction of every mixture of a packed
// batch [B, C, N, 1+D+D·D] to np components, [B, C, np, 1+D+D·D].
// The np ≥ 1 largest-|w| components start the EM step; if N < np the last
// np − N slots are padding {w = 0, μ = 0, Σ = I}. The likelihoods carry no
// gradient, as in the reference; everything else does (see cpu.MEM). An np
// below 1 is reported when the op is applied.
func NewMEM(dev *device.Device, np int) G.Op {
	s := memSpec{reduction{np: np}}
	return newOp(dev, memKernel[float32]{s}, memKernel[float64]{s})
}

type memSpec struct{ reduction }

func (memSpec) name() string           { return "gm.MEM" }
func (memSpec) computations() []string { return []string{"MEM"} }

func (k memSpec) inferShape(in []tensor.Shape) (tensor.Shape, error) {
	return k.reducedShape(in[0], func(mixture.Layout) error {
		if k.np < 1 {
			return errors.Errorf("the number of output components np must be ≥ 1, got %d", k.np)
		}
		return nil
	})
}

type memKernel[T Float] struct{ memSpec }

func (k memKernel[T]) gradKernel(int) gradComputation[T] { return memGradKernel[T](k) }

func (k memKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	l, err := checkedMixture(in[0], "mixture")
	if err != nil {
		return err
	}
	return dev.MEM(out.data, in[0].data, l, k.np)
}

// memGradKernel computes ∂L/∂mixture from (mixture, output, grad); it
// recomputes the selection and likelihoods from the mixture.
type memGradKernel[T Float] struct{ memSpec }

func (memGradKernel[T]) name() string           { return "gm.MEMGrad" }
func (memGradKernel[T]) computations() []string { return []string{"MEMBackward"} }

func (k memGradKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	l, err := checkedMixture(in[0], "mixture")
	if err != nil {
		return err
	}
	return dev.MEMBackward(out.data, in[0].data, in[2].data, l, k.np)
}
