package gmnode

import (
	"github.com/gmcn-go/gmcn/ops"
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
)

// ReLUFit returns the dense ReLU fit of every mixture of x [B, C, N, ·]: a
// node of the same shape with x's positions and covariances and new weights
// that approximate max(f, 0) (see ops.NewReLUFit). Without options it uses
// the reference code's formulas and constants, whose weights are all
// positive (the paper's variant gives weights ≥ 0); at most one
// ops.ReLUFitOptions may be given. The fit assumes a zero mixture constant,
// as the model uses it by default; ReLUFitConstant fits mixtures with
// constants.
func ReLUFit(x *G.Node, opts ...ops.ReLUFitOptions) (*G.Node, error) {
	o, err := reluFitOptions("gm.ReLUFit", opts)
	if err != nil {
		return nil, err
	}
	return G.ApplyOp(ops.NewReLUFit(on(x), o), x)
}

// ReLUFitConstant is ReLUFit for mixtures with constants: kappa [B, C]
// holds the value κ of every mixture of x at infinity (the reference's
// "bias"), and the fit approximates max(f + κ, 0) by fit + κ⁺ (see
// ops.NewReLUFitConstant). It returns the fitted mixtures [B, C, N, ·] and
// their new constants κ⁺ = max(κ, 0) [B, C]. With κ = 0 the fit is
// ReLUFit's, bit for bit. Where κ > 0 a fitted weight may be negative: the
// fitted function max(f + κ, 0) − κ⁺ is f itself where 0 < f + κ < κ.
//
// Gradients flow into x and kappa. The derivative of κ⁺ at κ = 0 is taken as
// 0, as the fit takes it for its own use of κ⁺ (Gorgonia's Rectify would
// take 1), so the gradient at κ = 0 is the one-sided derivative from below.
func ReLUFitConstant(x, kappa *G.Node, opts ...ops.ReLUFitOptions) (fit, kappaOut *G.Node, err error) {
	o, err := reluFitOptions("gm.ReLUFitConstant", opts)
	if err != nil {
		return nil, nil, err
	}
	return withConstant("gm.ReLUFitConstant", ops.NewReLUFitConstant(on(x), o), kappa, x, kappa)
}

// withConstant applies the fit op to inputs and returns its output with
// the new constants κ⁺ = max(κ, 0) of kappa; fn names the caller in errors.
func withConstant(fn string, op G.Op, kappa *G.Node, inputs ...*G.Node) (fit, kappaOut *G.Node, err error) {
	if fit, err = G.ApplyOp(op, inputs...); err != nil {
		return nil, nil, err
	}
	if kappaOut, err = positivePart(kappa); err != nil {
		return nil, nil, errors.Wrapf(err, "%s: the new constant max(κ, 0)", fn)
	}
	return fit, kappaOut, nil
}

// ReLUFitTargets is ReLUFit to given targets t [B, C, N]: the values at
// x's centroids of the function whose positive part is fitted, in place of
// x's own values there (see ops.NewReLUFitTargets). x gives the positions,
// covariances and coarse weights. The fused blocks of a model pass the exact
// convolution at the centroids of ConvFit's coarse mixture (ConvAt).
// Gradients flow into x and t.
func ReLUFitTargets(x, t *G.Node, opts ...ops.ReLUFitOptions) (*G.Node, error) {
	o, err := reluFitOptions("gm.ReLUFitTargets", opts)
	if err != nil {
		return nil, err
	}
	return G.ApplyOp(ops.NewReLUFitTargets(on(x), o, false), x, t)
}

// reluFitOptions returns the one ReLUFitOptions of opts, or the zero value
// for none; fn names the caller in the error for more than one.
func reluFitOptions(fn string, opts []ops.ReLUFitOptions) (ops.ReLUFitOptions, error) {
	switch len(opts) {
	case 0:
		return ops.ReLUFitOptions{}, nil
	case 1:
		return opts[0], nil
	}
	return ops.ReLUFitOptions{}, errors.Errorf("%s: at most one ReLUFitOptions, got %d", fn, len(opts))
}

// positivePart returns max(x, 0) elementwise as x·[x > 0], whose derivative
// [x > 0] is 0 at x = 0.
func positivePart(x *G.Node) (*G.Node, error) {
	mask, err := G.Gt(x, G.NewConstant(Scalar(x.Dtype(), 0)), true)
	if err != nil {
		return nil, err
	}
	return G.HadamardProd(x, mask)
}
