package ops

import (
	"io"

	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// NewConv returns the analytic convolution op of data [B, Fi, Ni, 1+D+D·D]
// with kernels [Fo, Fi, Nk, 1+D+D·D], giving [B, Fo, Fi·Ni·Nk, 1+D+D·D]:
// output channel o of batch entry b is the mixture Σ_c X[b,c] ⊛ K[o,c] with
// every pairwise component product kept (see cpu.Conv for the formulas and
// the component order). Both inputs are differentiable.
func NewConv(dev *device.Device) G.Op {
	return newOp(dev, convKernel[float32]{}, convKernel[float64]{})
}

type convSpec struct{ noParams }

func (convSpec) name() string           { return "gm.Conv" }
func (convSpec) inputNames() []string   { return []string{"data", "kernels"} }
func (convSpec) ranks() []int           { return []int{4, 4, 4} }
func (convSpec) diffWRT() []bool        { return []bool{true, true} }
func (convSpec) computations() []string { return []string{"Conv"} }

func (convSpec) inferShape(in []tensor.Shape) (tensor.Shape, error) {
	lx, lk, err := convLayouts(in[0], in[1])
	if err != nil {
		return nil, err
	}
	return tensor.Shape(device.ConvLayout(lx, lk).Shape()), nil
}

// convLayouts checks the shapes of data and kernels against each other and
// returns their layouts.
func convLayouts(data, kernels tensor.Shape) (lx, lk mixture.Layout, err error) {
	if lx, err = layoutOf("data", data); err != nil {
		return lx, lk, err
	}
	if lk, err = layoutOf("kernels", kernels); err != nil {
		return lx, lk, err
	}
	if lx.D != lk.D {
		return lx, lk, errors.Errorf(`input "data" %v is %dD but input "kernels" %v is %dD`, data, lx.D, kernels, lk.D)
	}
	if lx.C != lk.C {
		return lx, lk, errors.Errorf(`input "kernels" %v has Fi = %d input channels (dim 1), but input "data" %v has C = %d channels`, kernels, lk.C, data, lx.C)
	}
	return lx, lk, nil
}

type convKernel[T Float] struct{ convSpec }

func (convKernel[T]) gradKernel(i int) gradComputation[T] { return convGradKernel[T]{wrt: i} }

func (convKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	lx, lk, err := checkedConvInputs(in)
	if err != nil {
		return err
	}
	return dev.Conv(out.data, in[0].data, in[1].data, lx, lk)
}

// checkedConvInputs returns the layouts of the inputs "data" and "kernels"
// of a convolution after checking their values.
func checkedConvInputs[T Float](in []operand[T]) (lx, lk mixture.Layout, err error) {
	if lx, err = checkedMixture(in[0], "data"); err != nil {
		return lx, lk, err
	}
	lk, err = checkedMixture(in[1], "kernels")
	return lx, lk, err
}

// convGradKernel computes ∂L/∂data (wrt = 0) or ∂L/∂kernels (wrt = 1) from
// (data, kernels, output, grad). Both need only the other operand's weights
// and the incoming gradient; the forward output is unused.
type convGradKernel[T Float] struct{ wrt int }

func (g convGradKernel[T]) name() string {
	return [...]string{"gm.ConvGradData", "gm.ConvGradKernels"}[g.wrt]
}

func (g convGradKernel[T]) writeParams(w io.Writer) { _, _ = w.Write([]byte{byte(g.wrt)}) }

func (g convGradKernel[T]) computations() []string {
	return []string{[...]string{"ConvBackwardData", "ConvBackwardKernels"}[g.wrt]}
}

func (g convGradKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	lx, lk, _ := convLayouts(in[0].shape, in[1].shape)
	if g.wrt == 0 {
		return dev.ConvBackwardData(out.data, in[3].data, in[1].data, lx, lk)
	}
	return dev.ConvBackwardKernels(out.data, in[3].data, in[0].data, lx, lk)
}
