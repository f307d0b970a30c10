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

// NewEvaluate returns the op that evaluates a packed batch of mixtures
// [B, C, N, 1+D+D·D] at point sets [pb, pc, M, D] and returns [B, C, M]:
//
//	y[b,c,i] = Σ_k w_k N(p_i; μ_k, Σ_k)
//
// with p_i row i of point set (b, c). pb must be 1 or B and pc 1 or C; a size
// of 1 evaluates every batch entry (channel) at the same points. Both inputs
// are differentiable; gradients of broadcast points are summed over the
// mixtures that read them.
func NewEvaluate() G.Op { return newOp(evaluateKernel{}) }

type evaluateKernel struct{}

func (evaluateKernel) name() string          { return "gm.Evaluate" }
func (evaluateKernel) inputNames() []string  { return []string{"mixture", "points"} }
func (evaluateKernel) ranks() []int          { return []int{4, 4, 3} }
func (evaluateKernel) writeParams(io.Writer) {}
func (evaluateKernel) diffWRT() []bool       { return []bool{true, true} }
func (evaluateKernel) gradKernel(i int) gradComputation {
	return evaluateGradKernel{wrt: i}
}

// evaluateShapes checks the mixture and point shapes and returns the mixture
// layout with the point batch and channel sizes and the point count.
func evaluateShapes(mix, pts tensor.Shape) (l mixture.Layout, pb, pc, m int, err error) {
	l, err = mixture.LayoutOf(mix)
	if err != nil {
		return l, 0, 0, 0, errors.Wrap(err, `input "mixture"`)
	}
	pb, pc, m = pts[0], pts[1], pts[2]
	switch {
	case pts[3] != l.D:
		err = errors.Errorf(`input "points" %v must have %d coordinates per point (last axis), as the %dD mixture %v, got %d`, pts, l.D, l.D, mix, pts[3])
	case pb != 1 && pb != l.B:
		err = errors.Errorf(`input "points" %v: batch size must be 1 or the mixture batch size %d, got %d`, pts, l.B, pb)
	case pc != 1 && pc != l.C:
		err = errors.Errorf(`input "points" %v: channel size must be 1 or the mixture channel size %d, got %d`, pts, l.C, pc)
	case m < 1:
		err = errors.Errorf(`input "points" %v: needs at least one point, got M = %d`, pts, m)
	}
	return l, pb, pc, m, err
}

func (evaluateKernel) inferShape(in []tensor.Shape) (tensor.Shape, error) {
	l, _, _, m, err := evaluateShapes(in[0], in[1])
	if err != nil {
		return nil, err
	}
	return tensor.Shape{l.B, l.C, m}, nil
}

// evaluateChecked validates the values of the mixture and point inputs
// and returns the sizes the kernels need.
func evaluateChecked(mix, pts *tensor.Dense) (l mixture.Layout, pb, pc, m int, err error) {
	if l, err = checkedMixture(mix, "mixture"); err != nil {
		return l, 0, 0, 0, err
	}
	if err = checkedFinite(pts, "points"); err != nil {
		return l, 0, 0, 0, err
	}
	s := pts.Shape()
	return l, s[0], s[1], s[2], nil
}

func (evaluateKernel) do(out *tensor.Dense, in []*tensor.Dense) error {
	l, pb, pc, m, err := evaluateChecked(in[0], in[1])
	if err != nil {
		return err
	}
	if backend != nil {
		return backend.Evaluate(out.Data(), in[0].Data(), in[1].Data(), l, pb, pc, m)
	}
	return typed(out, in,
		func(y []float32, x [][]float32) error { cpu.Evaluate(y, x[0], x[1], l, pb, pc, m); return nil },
		func(y []float64, x [][]float64) error { cpu.Evaluate(y, x[0], x[1], l, pb, pc, m); return nil })
}

// evaluateGradKernel computes ∂L/∂mixture (wrt = 0) or ∂L/∂points (wrt = 1)
// from (mixture, points, output, grad).
type evaluateGradKernel struct{ wrt int }

func (k evaluateGradKernel) name() string {
	if k.wrt == 0 {
		return "gm.EvaluateGradMixture"
	}
	return "gm.EvaluateGradPoints"
}

func (k evaluateGradKernel) writeParams(w io.Writer) { fmt.Fprintf(w, "wrt=%d", k.wrt) }

func (k evaluateGradKernel) do(out *tensor.Dense, in []*tensor.Dense) error {
	l, pb, pc, m, err := evaluateChecked(in[0], in[1])
	if err != nil {
		return err
	}
	if backend != nil && k.wrt == 0 {
		return backend.EvaluateBackwardMixture(out.Data(), in[0].Data(), in[1].Data(), in[3].Data(), l, pb, pc, m)
	}
	if backend != nil {
		return backend.EvaluateBackwardPoints(out.Data(), in[0].Data(), in[1].Data(), in[3].Data(), l, pb, pc, m)
	}
	if k.wrt == 0 {
		return typed(out, in,
			func(dx []float32, x [][]float32) error {
				cpu.EvaluateBackwardMixture(dx, x[0], x[1], x[3], l, pb, pc, m)
				return nil
			},
			func(dx []float64, x [][]float64) error {
				cpu.EvaluateBackwardMixture(dx, x[0], x[1], x[3], l, pb, pc, m)
				return nil
			})
	}
	return typed(out, in,
		func(dp []float32, x [][]float32) error {
			cpu.EvaluateBackwardPoints(dp, x[0], x[1], x[3], l, pb, pc, m)
			return nil
		},
		func(dp []float64, x [][]float64) error {
			cpu.EvaluateBackwardPoints(dp, x[0], x[1], x[3], l, pb, pc, m)
			return nil
		})
}
