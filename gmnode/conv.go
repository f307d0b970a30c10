package gmnode

import (
	"github.com/gmcn-go/gmcn/ops"
	G "gorgonia.org/gorgonia"
)

// Conv returns the analytic convolution of the data x [B, Fi, Ni, ·] with
// kernels [Fo, Fi, Nk, ·] as a [B, Fo, Fi·Ni·Nk, ·] node: every pair of a
// data and a kernel component of the same input channel becomes one output
// component with multiplied weights and summed positions and covariances.
func Conv(x, kernels *G.Node) (*G.Node, error) {
	return G.ApplyOp(ops.NewConv(), x, kernels)
}

// ScaleWeights returns x with every component weight multiplied by s;
// positions and covariances are unchanged. The reference model follows each
// Conv with ScaleWeights(y, 1/Fi).
func ScaleWeights(x *G.Node, s float64) (*G.Node, error) {
	return G.ApplyOp(ops.NewScaleWeights(s), x)
}
