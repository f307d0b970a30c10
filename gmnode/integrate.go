package gmnode

import (
	"github.com/gmcn-go/gmcn/ops"
	G "gorgonia.org/gorgonia"
)

// Integrate returns the integral of every mixture of x [B, C, N, ·] as a
// [B, C] node: the sum of the component weights.
func Integrate(x *G.Node) (*G.Node, error) {
	return G.ApplyOp(ops.NewIntegrate(on(x)), x)
}
