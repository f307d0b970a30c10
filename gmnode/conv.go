package gmnode

import (
	"github.com/gmcn-go/gmcn/ops"
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
)

// Conv returns the analytic convolution of the data x [B, Fi, Ni, ·] with
// kernels [Fo, Fi, Nk, ·] as a [B, Fo, Fi·Ni·Nk, ·] node: every pair of a
// data and a kernel component of the same input channel becomes one output
// component with multiplied weights and summed positions and covariances.
func Conv(x, kernels *G.Node) (*G.Node, error) {
	return G.ApplyOp(ops.NewConv(on(x)), x, kernels)
}

// ConvConstant returns the constants of Conv's output mixtures from the
// constants kappa [B, Fi] of its input mixtures and the kernels
// [Fo, Fi, Nk, ·], as a [B, Fo] node: a constant convolved with a kernel is
// the constant times the kernel's integral, so
//
//	κ_out[b,o] = Σ_c κ[b,c]·Σ_k w[o,c,k],
//
// the matrix product of kappa with the transposed kernel integrals
// (Integrate). Gradients flow into kappa and into the kernels' weights. The
// same holds for ConvFit's output, which stands for Conv's.
func ConvConstant(kappa, kernels *G.Node) (*G.Node, error) {
	ks, cs := kernels.Shape(), kappa.Shape()
	switch {
	case kappa.Dtype() != kernels.Dtype():
		return nil, errors.Errorf("gm.ConvConstant: input \"constant\" is %v but input \"kernels\" is %v; both must share one dtype", kappa.Dtype(), kernels.Dtype())
	case len(ks) != 4:
		return nil, errors.Errorf("gm.ConvConstant: input \"kernels\" must be [Fo, Fi, Nk, 1+D+D·D] (rank 4), got shape %v", ks)
	case len(cs) != 2 || cs[1] != ks[1]:
		return nil, errors.Errorf("gm.ConvConstant: input \"constant\" must be [B, Fi] with Fi = %d (the kernels' input channels), got shape %v", ks[1], cs)
	}
	integral, err := Integrate(kernels)
	if err != nil {
		return nil, errors.Wrap(err, "gm.ConvConstant")
	}
	t, err := G.Transpose(integral)
	if err != nil {
		return nil, errors.Wrap(err, "gm.ConvConstant")
	}
	y, err := G.Mul(kappa, t)
	return y, errors.Wrap(err, "gm.ConvConstant")
}

// ScaleWeights returns x with every component weight multiplied by s;
// positions and covariances are unchanged. The reference model follows each
// Conv with ScaleWeights(y, 1/Fi).
func ScaleWeights(x *G.Node, s float64) (*G.Node, error) {
	return G.ApplyOp(ops.NewScaleWeights(on(x), s), x)
}

// ConvFitOption adjusts how ConvFit selects its groups.
type ConvFitOption func(*ops.ConvFitSelect)

// ConvFitNegative sets the priority factor of groups of negative weights
// (ops.ConvFitSelect.Negative): 1 splits groups of either sign by their
// mass alone; the default, ops.DefaultConvFitNegative, counts a negative
// group's mass half (docs/fused.md).
func ConvFitNegative(f float64) ConvFitOption {
	return func(s *ops.ConvFitSelect) { s.Negative = f }
}

// ConvFit returns the fused convolution-fitting of the data x [B, Fi, Ni, ·]
// with kernels [Fo, Fi, Nk, ·] as a [B, Fo, n, ·] node: every output channel
// is Conv's mixture of Fi·Ni·Nk components fitted to n Gaussians while it is
// computed, without storing it (see ops.NewConvFit). With n ≥ Fi·Ni·Nk the
// result is Conv's, reordered and padded.
func ConvFit(x, kernels *G.Node, n int, opts ...ConvFitOption) (*G.Node, error) {
	s := ops.ConvFitSelect{N: n, Negative: ops.DefaultConvFitNegative}
	for _, o := range opts {
		o(&s)
	}
	return G.ApplyOp(ops.NewConvFit(on(x), s), x, kernels)
}

// ConvAt returns the values of Conv(x, kernels) at the points
// [B, Fo, M, D] as a [B, Fo, M] node: the exact convolution, evaluated, for
// instance, where a fused block's coarse mixture has its centroids
// (Positions of ConvFit's output), in O(M·Fi·Ni·Nk) per output channel. It
// materialises Conv's output, O(Fi·Ni·Nk) per channel, but never evaluates
// it at its own components. Gradients flow to x, kernels and points.
func ConvAt(x, kernels, points *G.Node) (*G.Node, error) {
	c, err := Conv(x, kernels)
	if err != nil {
		return nil, errors.Wrap(err, "gm.ConvAt")
	}
	y, err := Evaluate(c, points)
	return y, errors.Wrap(err, "gm.ConvAt")
}

// ConvFitTargets is ConvFit(x, kernels, n, opts...) with its weights scaled by
// scale (the model's 1/Fi), together with the targets of a ReLU fit of the
// exact convolution: scale·Conv(x, kernels) at the centroids of the fitted
// mixtures, [B, Fo, n] (ConvAt). Passed to ReLUFitTargets (or
// ReLUFitReduce with WithTargets) they make the fit see the convolution
// itself where the coarse mixture has its centres (docs/fused.md).
// Gradients flow to x and kernels through both results.
func ConvFitTargets(x, kernels *G.Node, n int, scale float64, opts ...ConvFitOption) (fit, targets *G.Node, err error) {
	if fit, err = ConvFit(x, kernels, n, opts...); err != nil {
		return nil, nil, err
	}
	if fit, err = ScaleWeights(fit, scale); err != nil {
		return nil, nil, err
	}
	pts, err := Positions(fit)
	if err != nil {
		return nil, nil, err
	}
	if targets, err = ConvAt(x, kernels, pts); err != nil {
		return nil, nil, err
	}
	if targets, err = G.Mul(targets, G.NewConstant(Scalar(targets.Dtype(), scale))); err != nil {
		return nil, nil, errors.Wrap(err, "gm.ConvFitTargets")
	}
	return fit, targets, nil
}

// Positions returns the positions of the mixtures x [B, C, N, 1+D+D·D] as a
// [B, C, N, D] node (a slice of x; gradients flow back into x's positions).
func Positions(x *G.Node) (*G.Node, error) {
	s := x.Shape()
	if len(s) != 4 || (s[3] != 7 && s[3] != 13) {
		return nil, errors.Errorf("gm.Positions: input must be [B, C, N, 1+D+D·D] with D = 2 or 3 (last axis 7 or 13), got shape %v", s)
	}
	d := 2
	if s[3] == 13 {
		d = 3
	}
	y, err := G.Slice(x, nil, nil, nil, G.S(1, 1+d))
	return y, errors.Wrap(err, "gm.Positions")
}
