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

// NewScaleAxes returns the op that scales a packed mixture batch
// [B, C, N, 1+D+D·D] in space along each axis (docs/algorithms.md, "Per-axis
// scaling"): with the factors s_0 … s_{D−1} of a mixture,
//
//	μ_d ← s_d·μ_d,    Σ_ij ← s_i·s_j·Σ_ij,    weights unchanged.
//
// Weights are integrals, so every integral is kept and the amplitudes divide
// by |s_0 ⋯ s_{D−1}|: the output at S·p is the input at p over |det S|. The
// second input "scales" holds the factors with rank scalesRank: [D] (one for
// the whole batch, e.g. a normalisation), [B, D] (one per sample, e.g. a
// random augmentation) or [B, C, D] (one per mixture). Gradients flow to
// both inputs; the gradient of a shared factor is summed over the mixtures
// that read it. Every factor must be finite and non-zero, since a zero one
// makes Σ singular; a negative one reflects its axis.
//
// Gorgonia's types fix an input's rank when the op is built, hence the rank
// parameter; gmnode.ScaleAxes takes it from the scales node. A rank other
// than 1, 2 or 3 is an error.
func NewScaleAxes(dev *device.Device, scalesRank int) (G.Op, error) {
	if scalesRank < 1 || scalesRank > 3 {
		return nil, errors.Errorf(`gm.ScaleAxes: input "scales" must have rank 1 [D], 2 [B, D] or 3 [B, C, D], got rank %d`, scalesRank)
	}
	s := scaleAxesSpec{rank: scalesRank}
	return newOp(dev, scaleAxesKernel[float32]{s}, scaleAxesKernel[float64]{s}), nil
}

type scaleAxesSpec struct{ rank int }

func (scaleAxesSpec) name() string              { return "gm.ScaleAxes" }
func (scaleAxesSpec) inputNames() []string      { return []string{"mixture", "scales"} }
func (k scaleAxesSpec) ranks() []int            { return []int{4, k.rank, 4} }
func (k scaleAxesSpec) writeParams(w io.Writer) { fmt.Fprintf(w, "rank=%d", k.rank) }
func (scaleAxesSpec) diffWRT() []bool           { return []bool{true, true} }
func (scaleAxesSpec) computations() []string    { return []string{"ScaleAxes"} }

func (scaleAxesSpec) inferShape(in []tensor.Shape) (tensor.Shape, error) {
	if _, _, _, err := scaleAxesShapes(in[0], in[1]); err != nil {
		return nil, err
	}
	return in[0].Clone(), nil
}

// scaleAxesShapes checks the mixture and scales shapes and returns the
// mixture layout and the rows of the scales along the batch (sb) and the
// channels (sc), 1 where one row is shared.
func scaleAxesShapes(mix, s tensor.Shape) (l mixture.Layout, sb, sc int, err error) {
	if l, err = layoutOf("mixture", mix); err != nil {
		return l, 0, 0, err
	}
	forms := [...]struct {
		name  string
		shape tensor.Shape
	}{{"[D]", tensor.Shape{l.D}}, {"[B, D]", tensor.Shape{l.B, l.D}}, {"[B, C, D]", tensor.Shape{l.B, l.C, l.D}}}
	want := forms[len(s)-1]
	if !s.Eq(want.shape) {
		return l, 0, 0, errors.Errorf(`input "scales" must have shape %s = %v for the %dD mixture %v, got %v`, want.name, want.shape, l.D, mix, s)
	}
	sb, sc = 1, 1
	if len(s) >= 2 {
		sb = l.B
	}
	if len(s) == 3 {
		sc = l.C
	}
	return l, sb, sc, nil
}

// checkedScales checks that every factor of the operand s (D per row) is
// finite and non-zero: a zero factor would make the covariances singular.
func checkedScales[T Float](s operand[T], d int) error {
	for i, v := range s.data {
		if !mixture.Finite(v) || v == 0 {
			return errors.Errorf(`input "scales" %v: factor %v of row %d, axis %d; expected finite non-zero factors`, s.shape, v, i/d, i%d)
		}
	}
	return nil
}

type scaleAxesKernel[T Float] struct{ scaleAxesSpec }

func (k scaleAxesKernel[T]) gradKernel(i int) gradComputation[T] {
	return scaleAxesGradKernel[T]{wrt: i}
}

// do validates the output as well as the inputs: valid inputs and factors
// can still over- or underflow a covariance, and the error should name this
// op rather than the next one.
func (scaleAxesKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	l, sb, sc, _ := scaleAxesShapes(in[0].shape, in[1].shape)
	if _, err := checkedMixture(in[0], "mixture"); err != nil {
		return err
	}
	if err := checkedScales(in[1], l.D); err != nil {
		return err
	}
	if err := dev.ScaleAxes(out.data, in[0].data, in[1].data, l, sb, sc); err != nil {
		return err
	}
	return errors.Wrap(validateParallel(out.data, l), `output: the factors of "scales" over- or underflow a component`)
}

// scaleAxesGradKernel computes ∂L/∂mixture (wrt = 0) or ∂L/∂scales (wrt = 1)
// from (mixture, scales, output, grad). Neither needs the other, so each
// grad op computes only its own.
type scaleAxesGradKernel[T Float] struct{ wrt int }

func (k scaleAxesGradKernel[T]) name() string {
	return [...]string{"gm.ScaleAxesGradMixture", "gm.ScaleAxesGradScales"}[k.wrt]
}
func (k scaleAxesGradKernel[T]) writeParams(w io.Writer) { fmt.Fprintf(w, "wrt=%d", k.wrt) }
func (scaleAxesGradKernel[T]) computations() []string    { return []string{"ScaleAxesBackward"} }

func (k scaleAxesGradKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	l, sb, sc, _ := scaleAxesShapes(in[0].shape, in[1].shape)
	var d [2][]T
	d[k.wrt] = out.data
	return dev.ScaleAxesBackward(d[0], d[1], in[3].data, in[0].data, in[1].data, l, sb, sc)
}
