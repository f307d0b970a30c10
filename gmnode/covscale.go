package gmnode

import (
	"github.com/gmcn-go/gmcn/ops"
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
)

// CovScale scales every mixture of x [B, C, N, ·] in space by its own factor
// s = sqrt(D/τ), τ the mean covariance trace of the mixture, so that the
// mean trace becomes D (μ ← s·μ, Σ ← s²·Σ, weights unchanged). The gradient
// flows through s. The reference uses it on the network input.
func CovScale(x *G.Node) (*G.Node, error) {
	return G.ApplyOp(ops.NewCovScale(on(x)), x)
}

// NewCovScaleNorm returns a running-average CovScaleNorm op on the device of
// g for mixtures with the given number of channels (see ops.CovScaleNorm).
// Apply it with gorgonia.ApplyOp; one op applied in a training and an
// evaluation graph shares its running average between them.
func NewCovScaleNorm(g *G.ExprGraph, channels int) (*ops.CovScaleNorm, error) {
	return ops.NewCovScaleNorm(DeviceOf(g), channels)
}

// CovScaleNorm applies a new running-average CovScaleNorm to x [B, C, N, ·]
// and returns the node together with the op, whose SetTraining switches
// between training and evaluation and whose Running/SetRunning save and
// restore the running mean traces. Gorgonia's NewTapeMachine sets the mode
// of the op when it is built (training unless given gorgonia.EvalMode()).
func CovScaleNorm(x *G.Node) (*G.Node, *ops.CovScaleNorm, error) {
	s := x.Shape()
	if len(s) != 4 {
		return nil, nil, errors.Errorf("gm.CovScaleNorm: input %q must have rank 4 [B, C, N, 1+D+D·D], got shape %v", x.Name(), s)
	}
	op, err := ops.NewCovScaleNorm(on(x), s[1])
	if err != nil {
		return nil, nil, err
	}
	n, err := G.ApplyOp(op, x)
	if err != nil {
		return nil, nil, err
	}
	return n, op, nil
}
