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

// ConvFit returns the fused convolution-fitting of the data x [B, Fi, Ni, ·]
// with kernels [Fo, Fi, Nk, ·] as a [B, Fo, n, ·] node: every output channel
// is Conv's mixture of Fi·Ni·Nk components fitted to n Gaussians while it is
// computed, without storing it (see ops.NewConvFit). With n ≥ Fi·Ni·Nk the
// result is Conv's, reordered and padded.
func ConvFit(x, kernels *G.Node, n int) (*G.Node, error) {
	return G.ApplyOp(ops.NewConvFit(n), x, kernels)
}
