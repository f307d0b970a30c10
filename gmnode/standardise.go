package gmnode

import (
	"github.com/gmcn-go/gmcn/ops"
	G "gorgonia.org/gorgonia"
)

// Standardise multiplies the weights of every mixture of x by gain/sd, sd
// being the standard deviation of the mixture's values over its bounding box
// (held constant in the gradient); gain is a learnable [1] node. This is the
// per-sample weight standardisation the reference applies to network inputs.
func Standardise(x, gain *G.Node) (*G.Node, error) {
	return G.ApplyOp(ops.NewStandardise(on(x)), x, gain)
}
