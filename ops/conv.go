package ops

import (
	"io"

	"github.com/gmcn-go/gmcn/ops/cpu"
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
func NewConv() G.Op { return newOp(convKernel{}) }

type convKernel struct{}

func (convKernel) name() string          { return "gm.Conv" }
func (convKernel) inputNames() []string  { return []string{"data", "kernels"} }
func (convKernel) ranks() []int          { return []int{4, 4, 4} }
func (convKernel) writeParams(io.Writer) {}
func (convKernel) diffWRT() []bool       { return []bool{true, true} }
func (convKernel) gradKernel(i int) gradComputation {
	return convGradKernel{wrt: i}
}

func (convKernel) inferShape(in []tensor.Shape) (tensor.Shape, error) {
	lx, lk, err := convLayouts(in[0], in[1])
	if err != nil {
		return nil, err
	}
	return tensor.Shape(cpu.ConvLayout(lx, lk).Shape()), nil
}

// convLayouts checks the shapes of data and kernels against each other and
// returns their layouts.
func convLayouts(data, kernels tensor.Shape) (lx, lk mixture.Layout, err error) {
	if lx, err = mixture.LayoutOf(data); err != nil {
		return lx, lk, errors.Wrap(err, `input "data"`)
	}
	if lk, err = mixture.LayoutOf(kernels); err != nil {
		return lx, lk, errors.Wrap(err, `input "kernels"`)
	}
	if lx.D != lk.D {
		return lx, lk, errors.Errorf(`input "data" %v is %dD but input "kernels" %v is %dD`, data, lx.D, kernels, lk.D)
	}
	if lx.C != lk.C {
		return lx, lk, errors.Errorf(`input "kernels" %v has Fi = %d input channels (dim 1), but input "data" %v has C = %d channels`, kernels, lk.C, data, lx.C)
	}
	return lx, lk, nil
}

func (convKernel) do(out *tensor.Dense, in []*tensor.Dense) error {
	lx, err := checkedMixture(in[0], "data")
	if err != nil {
		return err
	}
	lk, err := checkedMixture(in[1], "kernels")
	if err != nil {
		return err
	}
	if backend != nil {
		return backend.Conv(out.Data(), in[0].Data(), in[1].Data(), lx, lk)
	}
	return typed(out, in,
		func(y []float32, v [][]float32) error { cpu.Conv(y, v[0], v[1], lx, lk); return nil },
		func(y []float64, v [][]float64) error { cpu.Conv(y, v[0], v[1], lx, lk); return nil })
}

// convGradKernel computes ∂L/∂data (wrt = 0) or ∂L/∂kernels (wrt = 1) from
// (data, kernels, output, grad). Both need only the other operand's weights
// and the incoming gradient; the forward output is unused.
type convGradKernel struct{ wrt int }

func (g convGradKernel) name() string {
	return [...]string{"gm.ConvGradData", "gm.ConvGradKernels"}[g.wrt]
}

func (g convGradKernel) writeParams(w io.Writer) { _, _ = w.Write([]byte{byte(g.wrt)}) }

func (g convGradKernel) do(out *tensor.Dense, in []*tensor.Dense) error {
	lx, lk, _ := convLayouts(in[0].Shape(), in[1].Shape())
	if backend != nil && g.wrt == 0 {
		return backend.ConvBackwardData(out.Data(), in[3].Data(), in[1].Data(), lx, lk)
	}
	if backend != nil {
		return backend.ConvBackwardKernels(out.Data(), in[3].Data(), in[0].Data(), lx, lk)
	}
	if g.wrt == 0 {
		return typed(out, in,
			func(dx []float32, v [][]float32) error { cpu.ConvBackwardData(dx, v[3], v[1], lx, lk); return nil },
			func(dx []float64, v [][]float64) error { cpu.ConvBackwardData(dx, v[3], v[1], lx, lk); return nil })
	}
	return typed(out, in,
		func(dk []float32, v [][]float32) error { cpu.ConvBackwardKernels(dk, v[3], v[0], lx, lk); return nil },
		func(dk []float64, v [][]float64) error { cpu.ConvBackwardKernels(dk, v[3], v[0], lx, lk); return nil })
}
