package gmnode

import (
	"github.com/gmcn-go/gmcn/ops"
	G "gorgonia.org/gorgonia"
)

// Evaluate returns the values of the mixtures x [B, C, N, ·] at the points
// [pb, pc, M, D] as a [B, C, M] node. pb must be 1 or B and pc 1 or C; a size
// of 1 evaluates all batch entries (channels) at the same point set.
// Gradients flow to both x and points.
func Evaluate(x, points *G.Node) (*G.Node, error) {
	return G.ApplyOp(ops.NewEvaluate(on(x)), x, points)
}
