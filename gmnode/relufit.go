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
// as the model uses it.
func ReLUFit(x *G.Node, opts ...ops.ReLUFitOptions) (*G.Node, error) {
	var o ops.ReLUFitOptions
	switch len(opts) {
	case 0:
	case 1:
		o = opts[0]
	default:
		return nil, errors.Errorf("gm.ReLUFit: at most one ReLUFitOptions, got %d", len(opts))
	}
	return G.ApplyOp(ops.NewReLUFit(o), x)
}
