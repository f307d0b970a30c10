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

// NewEvaluate returns the op that evaluates a packed batch of mixtures
// [B, C, N, 1+D+D·D] at point sets [pb, pc, M, D] and returns [B, C, M]:
//
//	y[b,c,i] = Σ_k w_k N(p_i; μ_k, Σ_k)
//
// with p_i row i of point set (b, c). pb must be 1 or B and pc 1 or C; a size
// of 1 evaluates every batch entry (channel) at the same points. Both inputs
// are differentiable; gradients of broadcast points are summed over the
// mixtures that read them.
func NewEvaluate(dev *device.Device) G.Op {
	return newOp(dev, evaluateKernel[float32]{}, evaluateKernel[float64]{})
}

type evaluateSpec struct{ noParams }

func (evaluateSpec) name() string           { return "gm.Evaluate" }
func (evaluateSpec) inputNames() []string   { return []string{"mixture", "points"} }
func (evaluateSpec) ranks() []int           { return []int{4, 4, 3} }
func (evaluateSpec) diffWRT() []bool        { return []bool{true, true} }
func (evaluateSpec) computations() []string { return []string{"Evaluate"} }

// evaluateShapes checks the mixture and point shapes and returns the mixture
// layout with the point batch and channel sizes and the point count.
func evaluateShapes(mix, pts tensor.Shape) (l mixture.Layout, pb, pc, m int, err error) {
	if l, err = layoutOf("mixture", mix); err != nil {
		return l, 0, 0, 0, err
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

func (evaluateSpec) inferShape(in []tensor.Shape) (tensor.Shape, error) {
	l, _, _, m, err := evaluateShapes(in[0], in[1])
	if err != nil {
		return nil, err
	}
	return tensor.Shape{l.B, l.C, m}, nil
}

// evaluateChecked validates the values of the mixture and point inputs
// and returns the sizes the kernels need.
func evaluateChecked[T Float](mix, pts operand[T]) (l mixture.Layout, pb, pc, m int, err error) {
	if l, err = checkedMixture(mix, "mixture"); err != nil {
		return l, 0, 0, 0, err
	}
	if err = checkedFinite(pts, "points"); err != nil {
		return l, 0, 0, 0, err
	}
	s := pts.shape
	return l, s[0], s[1], s[2], nil
}

type evaluateKernel[T Float] struct{ evaluateSpec }

func (evaluateKernel[T]) gradKernel(i int) gradComputation[T] { return evaluateGradKernel[T]{wrt: i} }

func (evaluateKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	l, pb, pc, m, err := evaluateChecked(in[0], in[1])
	if err != nil {
		return err
	}
	return dev.Evaluate(out.data, in[0].data, in[1].data, l, pb, pc, m)
}

// evaluateGradKernel computes ∂L/∂mixture (wrt = 0) or ∂L/∂points (wrt = 1)
// from (mixture, points, output, grad).
type evaluateGradKernel[T Float] struct{ wrt int }

func (k evaluateGradKernel[T]) name() string {
	return [...]string{"gm.EvaluateGradMixture", "gm.EvaluateGradPoints"}[k.wrt]
}

func (k evaluateGradKernel[T]) writeParams(w io.Writer) { fmt.Fprintf(w, "wrt=%d", k.wrt) }

func (k evaluateGradKernel[T]) computations() []string {
	return []string{[...]string{"EvaluateBackwardMixture", "EvaluateBackwardPoints"}[k.wrt]}
}

func (k evaluateGradKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	l, pb, pc, m, err := evaluateChecked(in[0], in[1])
	if err != nil {
		return err
	}
	if k.wrt == 0 {
		return dev.EvaluateBackwardMixture(out.data, in[0].data, in[1].data, in[3].data, l, pb, pc, m)
	}
	return dev.EvaluateBackwardPoints(out.data, in[0].data, in[1].data, in[3].data, l, pb, pc, m)
}
