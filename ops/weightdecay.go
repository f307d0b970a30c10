package ops

import (
	"io"

	"github.com/gmcn-go/gmcn/ops/cpu"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// NewWeightDecay returns the op computing a convolution layer's weight-decay
// loss mean(w_raw²) + mean((A·Aᵀ − I)²) as a [1]-shaped tensor from
// weights_raw [F_o, F_i, N_k] and factors A [F_o, F_i, N_k, D, D]. The
// reference minimises it with its own SGD step (decoupled decay); positions
// are not decayed.
func NewWeightDecay() G.Op { return newOp(weightDecayKernel{}) }

type weightDecayKernel struct{}

var weightDecayInputs = []string{"weights_raw", "factors"}

func (weightDecayKernel) name() string          { return "gm.WeightDecay" }
func (weightDecayKernel) inputNames() []string  { return weightDecayInputs }
func (weightDecayKernel) ranks() []int          { return []int{3, 5, 1} }
func (weightDecayKernel) writeParams(io.Writer) {}
func (weightDecayKernel) diffWRT() []bool       { return []bool{true, true} }
func (weightDecayKernel) gradKernel(i int) gradComputation {
	return weightDecayGradKernel{wrt: i}
}

func (weightDecayKernel) inferShape(in []tensor.Shape) (tensor.Shape, error) {
	_, err := weightDecayDims(in)
	return tensor.Shape{1}, err
}

// weightDecayDims checks the raw weight and factor shapes and returns D.
func weightDecayDims(in []tensor.Shape) (int, error) {
	w := in[0]
	for i, v := range w {
		if v < 1 {
			return 0, errors.Errorf(`input "weights_raw" %v: [F_o, F_i, N_k] must all be ≥ 1, got %d at axis %d`, w, v, i)
		}
	}
	d := in[1][4]
	if d != 2 && d != 3 {
		return 0, errors.Errorf(`input "factors" %v: expected D = 2 or 3 in the last axis, got %d`, in[1], d)
	}
	return d, sameShape("factors", in[1], tensor.Shape{w[0], w[1], w[2], d, d})
}

func (weightDecayKernel) do(out *tensor.Dense, in []*tensor.Dense) error {
	for i, t := range in {
		if err := checkedFinite(t, weightDecayInputs[i]); err != nil {
			return err
		}
	}
	d := in[1].Shape()[4]
	return typed(out, in,
		func(y []float32, x [][]float32) error {
			y[0] = float32(cpu.WeightDecay(x[0], x[1], d))
			return mixture.CheckFinite(y)
		},
		func(y []float64, x [][]float64) error {
			y[0] = cpu.WeightDecay(x[0], x[1], d)
			return mixture.CheckFinite(y)
		})
}

// weightDecayGradKernel computes ∂L/∂input[wrt] of the weight-decay loss from
// (weights_raw, factors, output, grad).
type weightDecayGradKernel struct{ wrt int }

func (k weightDecayGradKernel) name() string {
	return "gm.WeightDecayGrad/" + weightDecayInputs[k.wrt]
}
func (weightDecayGradKernel) writeParams(io.Writer) {}

func (k weightDecayGradKernel) do(out *tensor.Dense, in []*tensor.Dense) error {
	d := in[1].Shape()[4]
	return typed(out, in,
		func(dx []float32, x [][]float32) error { weightDecayBackward(k.wrt, dx, x, d); return nil },
		func(dx []float64, x [][]float64) error { weightDecayBackward(k.wrt, dx, x, d); return nil })
}

func weightDecayBackward[T mixture.Float](wrt int, dx []T, x [][]T, d int) {
	g := x[3][0]
	if wrt == 0 {
		cpu.WeightDecayWeightsBackward(dx, x[0], g)
		return
	}
	cpu.WeightDecayFactorsBackward(dx, x[1], d, g)
}
