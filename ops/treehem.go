package ops

import (
	"fmt"
	"io"

	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TreeHEMOptions configures the TreeHEM op: the reduction factor T and
// whether to reproduce the reference's under-filling (see
// device.TreeHEMOptions).
type TreeHEMOptions = device.TreeHEMOptions

// NewTreeHEM returns the op that reduces every mixture of a packed batch
// [B, C, N, ·] to np components [B, C, np, ·] with TreeHEM (hierarchical EM
// over a Morton-ordered LBVH, Celarek et al. 2022; docs/treehem.md).
// Parameters are checked when the op is applied: T ∈ {2, 4, 8},
// T ≤ np ≤ 1024 and N ≤ 65534. The gradient op takes the discrete decisions
// (tree, initial EM components, KL masks, filters, selection) of the forward
// run on the same input when the forward saved them (in a graph with the
// op's gradient) and recomputes them otherwise: they are a function of the
// input, so both give the same gradient.
func NewTreeHEM(dev *device.Device, np int, o TreeHEMOptions) G.Op {
	s := treehemSpec{reduction{np: np}, o}
	return newOp(dev, treehemKernel[float32]{s}, treehemKernel[float64]{s})
}

type treehemSpec struct {
	reduction
	o TreeHEMOptions
}

func (treehemSpec) name() string           { return "gm.TreeHEM" }
func (treehemSpec) computations() []string { return []string{"TreeHEM", "TreeHEMSaving"} }

func (k treehemSpec) writeParams(w io.Writer) {
	fmt.Fprintf(w, "np=%d T=%d under=%v", k.np, k.o.Reduction, k.o.UnderFill)
}

func (k treehemSpec) inferShape(in []tensor.Shape) (tensor.Shape, error) {
	return k.reducedShape(in[0], func(l mixture.Layout) error {
		return errors.Wrapf(k.o.Check(l, k.np), `input "mixture" %v`, in[0])
	})
}

type treehemKernel[T Float] struct{ treehemSpec }

func (k treehemKernel[T]) gradKernel(int) gradComputation[T] { return treehemGradKernel[T](k) }

func (k treehemKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	l, err := checkedMixture(in[0], "mixture")
	if err != nil {
		return err
	}
	return dev.TreeHEM(out.data, in[0].data, l, k.np, k.o)
}

func (k treehemKernel[T]) doSaving(dev device.Kernels[T], out operand[T], in []operand[T]) (device.Saved, error) {
	l, err := checkedMixture(in[0], "mixture")
	if err != nil {
		return nil, err
	}
	return dev.TreeHEMSaving(out.data, in[0].data, l, k.np, k.o)
}

// treehemGradKernel computes ∂L/∂mixture from (mixture, output, grad).
type treehemGradKernel[T Float] struct{ treehemSpec }

func (treehemGradKernel[T]) name() string           { return "gm.TreeHEMGrad" }
func (treehemGradKernel[T]) computations() []string { return []string{"TreeHEMBackward"} }

func (k treehemGradKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	return k.doSaved(dev, out, in, nil)
}

func (k treehemGradKernel[T]) doSaved(dev device.Kernels[T], out operand[T], in []operand[T], saved device.Saved) error {
	l, err := resumedMixture(in[0], "mixture", saved)
	if err != nil {
		return err
	}
	return dev.TreeHEMBackward(out.data, in[0].data, in[2].data, l, k.np, k.o, saved)
}
