package gmnode

import (
	"github.com/gmcn-go/gmcn/ops"
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
)

// ScaleAxes returns the mixtures x [B, C, N, ·] scaled in space along each
// axis by the factors s: every position coordinate μ_d becomes s_d·μ_d and
// every covariance entry Σ_ij becomes s_i·s_j·Σ_ij, while the weights, which
// are integrals, stay; the amplitudes therefore divide by |s_0 ⋯ s_{D−1}|.
// s is [D] (one scaling for the whole batch, e.g. a normalisation), [B, D]
// (one per sample, e.g. a random augmentation) or [B, C, D] (one per
// mixture), of x's dtype. Gradients flow to both x and s. Every factor must
// be finite and non-zero; a negative one mirrors its axis.
func ScaleAxes(x, s *G.Node) (*G.Node, error) {
	// Gorgonia would reject the mix too, but without naming the input.
	if x.Dtype() != s.Dtype() {
		return nil, errors.Errorf(`gm.ScaleAxes: input "scales" (%s) must have the dtype of input "mixture" (%s), %v; got %v`, s.Name(), x.Name(), x.Dtype(), s.Dtype())
	}
	op, err := ops.NewScaleAxes(on(x), s.Dims())
	if err != nil {
		return nil, err
	}
	return G.ApplyOp(op, x, s)
}
