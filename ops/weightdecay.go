package ops

import (
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// NewWeightDecay returns the op computing a convolution layer's weight-decay
// loss mean(w_raw²) + mean((A·Aᵀ − I)²) as a [1]-shaped tensor from
// weights_raw [F_o, F_i, N_k] and factors A [F_o, F_i, N_k, D, D]. The
// reference minimises it with its own SGD step (decoupled decay); positions
// are not decayed.
func NewWeightDecay(dev *device.Device) G.Op {
	return newOp(dev, weightDecayKernel[float32]{}, weightDecayKernel[float64]{})
}

type weightDecaySpec struct{ noParams }

var weightDecayInputs = []string{"weights_raw", "factors"}

func (weightDecaySpec) name() string           { return "gm.WeightDecay" }
func (weightDecaySpec) inputNames() []string   { return weightDecayInputs }
func (weightDecaySpec) ranks() []int           { return []int{3, 5, 1} }
func (weightDecaySpec) diffWRT() []bool        { return []bool{true, true} }
func (weightDecaySpec) computations() []string { return []string{"WeightDecay"} }

func (weightDecaySpec) inferShape(in []tensor.Shape) (tensor.Shape, error) {
	_, err := weightDecayDims(in)
	return tensor.Shape{1}, err
}

// weightDecayDims checks the raw weight and factor shapes and returns D.
func weightDecayDims(in []tensor.Shape) (int, error) {
	w := in[0]
	d, err := kernelDims(w, "factors", in[1])
	if err != nil {
		return 0, err
	}
	return d, sameShape("factors", in[1], tensor.Shape{w[0], w[1], w[2], d, d})
}

type weightDecayKernel[T Float] struct{ weightDecaySpec }

func (weightDecayKernel[T]) gradKernel(i int) gradComputation[T] {
	return weightDecayGradKernel[T]{wrt: i}
}

func (weightDecayKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	for i, x := range in {
		if err := checkedFinite(x, weightDecayInputs[i]); err != nil {
			return err
		}
	}
	v, err := dev.WeightDecay(in[0].data, in[1].data, in[1].shape[4])
	if err != nil {
		return err
	}
	out.data[0] = T(v)
	return mixture.CheckFinite(out.data)
}

// weightDecayGradKernel computes ∂L/∂input[wrt] of the weight-decay loss from
// (weights_raw, factors, output, grad).
type weightDecayGradKernel[T Float] struct {
	noParams
	wrt int
}

func (k weightDecayGradKernel[T]) name() string {
	return "gm.WeightDecayGrad/" + weightDecayInputs[k.wrt]
}
func (weightDecayGradKernel[T]) computations() []string { return []string{"WeightDecayBackward"} }

func (k weightDecayGradKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	dw, da := out.data, []T(nil)
	if k.wrt == 1 {
		dw, da = nil, out.data
	}
	return dev.WeightDecayBackward(dw, da, in[0].data, in[1].data, in[1].shape[4], in[3].data[0])
}
