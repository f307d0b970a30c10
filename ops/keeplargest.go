package ops

import (
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// NewKeepLargest returns the reduction of every mixture of a packed batch
// [B, C, N, 1+D+D·D] to its np components of largest weight, largest first,
// [B, C, np, 1+D+D·D]: the reference's fixed_point_and_max reduction, which
// follows the dense ReLU fit there (all weights positive). The gradient
// passes to the kept components (see cpu.KeepLargest). An np outside
// [1, N] is reported when the op is applied.
func NewKeepLargest(dev *device.Device, np int) G.Op {
	s := keepLargestSpec{reduction{np: np}}
	return newOp(dev, keepLargestKernel[float32]{s}, keepLargestKernel[float64]{s})
}

type keepLargestSpec struct{ reduction }

func (keepLargestSpec) name() string           { return "gm.KeepLargest" }
func (keepLargestSpec) computations() []string { return []string{"KeepLargest"} }

func (k keepLargestSpec) inferShape(in []tensor.Shape) (tensor.Shape, error) {
	return k.reducedShape(in[0], func(l mixture.Layout) error {
		if k.np < 1 || k.np > l.N {
			return errors.Errorf("the number of kept components np must be in [1, N = %d] for input \"mixture\" %v, got %d", l.N, in[0], k.np)
		}
		return nil
	})
}

type keepLargestKernel[T Float] struct{ keepLargestSpec }

func (k keepLargestKernel[T]) gradKernel(int) gradComputation[T] {
	return keepLargestGradKernel[T](k)
}

func (k keepLargestKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	l, err := checkedMixture(in[0], "mixture")
	if err != nil {
		return err
	}
	return dev.KeepLargest(out.data, in[0].data, l, k.np)
}

// keepLargestGradKernel computes ∂L/∂mixture from (mixture, output, grad);
// it recomputes the selection from the mixture.
type keepLargestGradKernel[T Float] struct{ keepLargestSpec }

func (keepLargestGradKernel[T]) name() string           { return "gm.KeepLargestGrad" }
func (keepLargestGradKernel[T]) computations() []string { return []string{"KeepLargestBackward"} }

func (k keepLargestGradKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	l, err := mixture.LayoutOf(in[0].shape)
	if err != nil {
		return err
	}
	return dev.KeepLargestBackward(out.data, in[0].data, in[2].data, l, k.np)
}
