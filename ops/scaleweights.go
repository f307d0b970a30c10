package ops

import (
	"fmt"
	"io"
	"math"

	"github.com/gmcn-go/gmcn/ops/cpu"
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
func NewScaleWeights(s float64) G.Op { return newOp(scaleWeightsKernel{s: s}) }

type scaleWeightsKernel struct{ s float64 }

func (scaleWeightsKernel) name() string         { return "gm.ScaleWeights" }
func (scaleWeightsKernel) inputNames() []string { return []string{"mixture"} }
func (scaleWeightsKernel) ranks() []int         { return []int{4, 4} }
func (k scaleWeightsKernel) writeParams(w io.Writer) {
	fmt.Fprintf(w, "s=%v", math.Float64bits(k.s))
}
func (scaleWeightsKernel) diffWRT() []bool { return []bool{true} }
func (k scaleWeightsKernel) gradKernel(int) gradComputation {
	return scaleWeightsGradKernel(k)
}

func (k scaleWeightsKernel) inferShape(in []tensor.Shape) (tensor.Shape, error) {
	if math.IsNaN(k.s) || math.IsInf(k.s, 0) {
		return nil, errors.Errorf("scale factor must be finite, got %v", k.s)
	}
	if _, err := mixture.LayoutOf(in[0]); err != nil {
		return nil, errors.Wrap(err, `input "mixture"`)
	}
	return in[0].Clone(), nil
}

func (k scaleWeightsKernel) do(out *tensor.Dense, in []*tensor.Dense) error {
	l, err := checkedMixture(in[0], "mixture")
	if err != nil {
		return err
	}
	return scaleWeights(out, in[0], l, k.s)
}

func scaleWeights(out, in *tensor.Dense, l mixture.Layout, s float64) error {
	return typed(out, []*tensor.Dense{in},
		func(y []float32, x [][]float32) error { cpu.ScaleWeights(y, x[0], l, float32(s)); return nil },
		func(y []float64, x [][]float64) error { cpu.ScaleWeights(y, x[0], l, s); return nil })
}

// scaleWeightsGradKernel computes ∂L/∂mixture from (mixture, output, grad).
// The op is linear with Jacobian diag(s on weights, 1 elsewhere), so the
// gradient is the incoming gradient with its weight entries scaled by s.
type scaleWeightsGradKernel scaleWeightsKernel

func (scaleWeightsGradKernel) name() string              { return "gm.ScaleWeightsGrad" }
func (k scaleWeightsGradKernel) writeParams(w io.Writer) { scaleWeightsKernel(k).writeParams(w) }

func (k scaleWeightsGradKernel) do(out *tensor.Dense, in []*tensor.Dense) error {
	l, _ := mixture.LayoutOf(in[0].Shape())
	return scaleWeights(out, in[2], l, k.s)
}
