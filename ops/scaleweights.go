package ops

import (
	"fmt"
	"io"
	"math"

	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// NewScaleWeights returns the op that multiplies every component weight of a
// packed mixture batch [B, C, N, 1+D+D·D] by s and passes positions and
// covariances through, so the mixture's function and integral scale by s.
// The reference model applies it with s = 1/Fi right after each convolution.
// A non-finite s is reported as an error when the op is applied.
func NewScaleWeights(dev *device.Device, s float64) G.Op {
	sp := scaleWeightsSpec{s: s}
	return newOp(dev, scaleWeightsKernel[float32]{sp}, scaleWeightsKernel[float64]{sp})
}

type scaleWeightsSpec struct {
	mixtureOp
	s float64
}

func (scaleWeightsSpec) name() string              { return "gm.ScaleWeights" }
func (k scaleWeightsSpec) writeParams(w io.Writer) { fmt.Fprintf(w, "s=%v", math.Float64bits(k.s)) }
func (scaleWeightsSpec) computations() []string    { return []string{"ScaleWeights"} }

func (k scaleWeightsSpec) inferShape(in []tensor.Shape) (tensor.Shape, error) {
	if math.IsNaN(k.s) || math.IsInf(k.s, 0) {
		return nil, errors.Errorf("scale factor must be finite, got %v", k.s)
	}
	return sameMixture(in[0])
}

type scaleWeightsKernel[T Float] struct{ scaleWeightsSpec }

func (k scaleWeightsKernel[T]) gradKernel(int) gradComputation[T] {
	return scaleWeightsGradKernel[T](k)
}

func (k scaleWeightsKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	l, err := checkedMixture(in[0], "mixture")
	if err != nil {
		return err
	}
	return dev.ScaleWeights(out.data, in[0].data, l, T(k.s))
}

// scaleWeightsGradKernel computes ∂L/∂mixture from (mixture, output, grad).
// The op is linear with Jacobian diag(s on weights, 1 elsewhere), so the
// gradient is the incoming gradient with its weight entries scaled by s.
type scaleWeightsGradKernel[T Float] struct{ scaleWeightsSpec }

func (scaleWeightsGradKernel[T]) name() string { return "gm.ScaleWeightsGrad" }

func (k scaleWeightsGradKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	l, _ := mixture.LayoutOf(in[0].shape)
	return dev.ScaleWeights(out.data, in[2].data, l, T(k.s))
}
