package ops

import (
	"fmt"
	"io"

	"github.com/gmcn-go/gmcn/ops/cpu"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TreeHEMOptions configures the TreeHEM op: the reduction factor T and
// whether to reproduce the reference's under-filling (see cpu.TreeHEMOptions).
type TreeHEMOptions = cpu.TreeHEMOptions

// NewTreeHEM returns the op that reduces every mixture of a packed batch
// [B, C, N, ·] to np components [B, C, np, ·] with TreeHEM (hierarchical EM
// over a Morton-ordered LBVH, Celarek et al. 2022, §4.2–4.6 of the spec).
// Parameters are checked when the op is applied: T ∈ {2, 4, 8},
// T ≤ np ≤ 1024 and N ≤ 65534. The gradient op recomputes the discrete
// decisions (tree, initial EM components, KL masks, filters, selection) from
// the same input, so forward and backward share no state.
func NewTreeHEM(np int, o TreeHEMOptions) G.Op { return newOp(treehemKernel{np: np, o: o}) }

type treehemKernel struct {
	np int
	o  TreeHEMOptions
}

func (treehemKernel) name() string                     { return "gm.TreeHEM" }
func (treehemKernel) inputNames() []string             { return []string{"mixture"} }
func (treehemKernel) ranks() []int                     { return []int{4, 4} }
func (treehemKernel) diffWRT() []bool                  { return []bool{true} }
func (k treehemKernel) gradKernel(int) gradComputation { return treehemGradKernel(k) }

func (k treehemKernel) writeParams(w io.Writer) {
	fmt.Fprintf(w, "np=%d T=%d under=%v", k.np, k.o.Reduction, k.o.UnderFill)
}

// layout checks the mixture shape and TreeHEM's parameters against it.
func (k treehemKernel) layout(s tensor.Shape) (mixture.Layout, error) {
	l, err := mixture.LayoutOf(s)
	if err != nil {
		return l, errors.Wrap(err, `input "mixture"`)
	}
	return l, errors.Wrapf(cpu.CheckTreeHEM(l, k.np, k.o), `input "mixture" %v`, s)
}

func (k treehemKernel) inferShape(in []tensor.Shape) (tensor.Shape, error) {
	l, err := k.layout(in[0])
	if err != nil {
		return nil, err
	}
	return tensor.Shape{l.B, l.C, k.np, l.Stride()}, nil
}

func (k treehemKernel) do(out *tensor.Dense, in []*tensor.Dense) error {
	l, err := checkedMixture(in[0], "mixture")
	if err != nil {
		return err
	}
	return typed(out, in,
		func(y []float32, x [][]float32) error { return cpu.TreeHEMForward(y, x[0], l, k.np, k.o) },
		func(y []float64, x [][]float64) error { return cpu.TreeHEMForward(y, x[0], l, k.np, k.o) })
}

// treehemGradKernel computes ∂L/∂mixture from (mixture, output, grad).
type treehemGradKernel treehemKernel

func (treehemGradKernel) name() string              { return "gm.TreeHEMGrad" }
func (k treehemGradKernel) writeParams(w io.Writer) { treehemKernel(k).writeParams(w) }

func (k treehemGradKernel) do(out *tensor.Dense, in []*tensor.Dense) error {
	l, err := checkedMixture(in[0], "mixture")
	if err != nil {
		return err
	}
	return typed(out, in,
		func(dx []float32, x [][]float32) error { return cpu.TreeHEMGrad(dx, x[0], x[2], l, k.np, k.o) },
		func(dx []float64, x [][]float64) error { return cpu.TreeHEMGrad(dx, x[0], x[2], l, k.np, k.o) })
}
