package gmnode

import (
	"github.com/gmcn-go/gmcn/ops"
	G "gorgonia.org/gorgonia"
)

// Block returns one GMCN block of the data x [B, Fi, Ni, ·] with kernels
// [Fo, Fi, Nk, ·] as one node [B, Fo, Np, ·] (ops.NewBlock): the
// convolution (or the fused convolution-fitting, s.Fit), ÷Fi, the dense
// ReLU fit and the reduction s.Reduce, equal to Conv (or ConvFit),
// ScaleWeights, ReLUFit and TreeHEM (or KeepLargest) one after another. As
// one op it keeps the Fi·Ni·Nk-sized intermediates inside the device that
// computes them.
func Block(x, kernels *G.Node, s ops.BlockSpec) (*G.Node, error) {
	return G.ApplyOp(ops.NewBlock(on(x), s), x, kernels)
}
