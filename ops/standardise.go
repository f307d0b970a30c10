package ops

import (
	"io"

	"github.com/gmcn-go/gmcn/ops/cpu"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// NewStandardise returns the input-normalisation op of the reference's
// GM-BatchNorm in per-sample mode (spec §5.3): every weight of mixture (b, c)
// is multiplied by gain/sd[b,c], where sd is the standard deviation of the
// mixture's values over a grid in the sample's bounding box
// (cpu.StandardiseScale), treated as a constant. Inputs: "mixture"
// [B, C, N, ·] and the learnable "gain" [1].
func NewStandardise() G.Op { return newOp(standardiseKernel{}) }

type standardiseKernel struct{}

func (standardiseKernel) name() string          { return "gm.Standardise" }
func (standardiseKernel) inputNames() []string  { return []string{"mixture", "gain"} }
func (standardiseKernel) ranks() []int          { return []int{4, 1, 4} }
func (standardiseKernel) writeParams(io.Writer) {}
func (standardiseKernel) diffWRT() []bool       { return []bool{true, true} }
func (standardiseKernel) gradKernel(i int) gradComputation {
	return standardiseGradKernel{wrt: i}
}

func (standardiseKernel) inferShape(in []tensor.Shape) (tensor.Shape, error) {
	if _, err := mixture.LayoutOf(in[0]); err != nil {
		return nil, errors.Wrap(err, `input "mixture"`)
	}
	if err := sameShape("gain", in[1], tensor.Shape{1}); err != nil {
		return nil, err
	}
	return in[0].Clone(), nil
}

func (standardiseKernel) do(out *tensor.Dense, in []*tensor.Dense) error {
	l, err := checkedMixture(in[0], "mixture")
	if err != nil {
		return err
	}
	if err := checkedFinite(in[1], "gain"); err != nil {
		return err
	}
	sd := make([]float64, l.Mixtures())
	return typed(out, in,
		func(y []float32, x [][]float32) error {
			cpu.StandardiseScale(sd, x[0], l)
			cpu.Standardise(y, x[0], sd, x[1][0], l)
			return nil
		},
		func(y []float64, x [][]float64) error {
			cpu.StandardiseScale(sd, x[0], l)
			cpu.Standardise(y, x[0], sd, x[1][0], l)
			return nil
		})
}

// standardiseGradKernel computes ∂L/∂mixture (wrt 0) or ∂L/∂gain (wrt 1)
// from (mixture, gain, output, grad).
type standardiseGradKernel struct{ wrt int }

func (k standardiseGradKernel) name() string {
	return []string{"gm.StandardiseGradMixture", "gm.StandardiseGradGain"}[k.wrt]
}
func (k standardiseGradKernel) writeParams(w io.Writer) { w.Write([]byte{byte(k.wrt)}) }

func (k standardiseGradKernel) do(out *tensor.Dense, in []*tensor.Dense) error {
	l, _ := mixture.LayoutOf(in[0].Shape())
	sd := make([]float64, l.Mixtures())
	return typed(out, in,
		func(o []float32, x [][]float32) error { standardiseGrad(k.wrt, o, x, sd, l); return nil },
		func(o []float64, x [][]float64) error { standardiseGrad(k.wrt, o, x, sd, l); return nil })
}

func standardiseGrad[T mixture.Float](wrt int, out []T, in [][]T, sd []float64, l mixture.Layout) {
	cpu.StandardiseScale(sd, in[0], l)
	dx := out
	if wrt == 1 {
		dx = make([]T, len(in[0]))
	}
	dgain := cpu.StandardiseBackward(dx, in[0], in[3], sd, in[1][0], l)
	if wrt == 1 {
		out[0] = dgain
	}
}
