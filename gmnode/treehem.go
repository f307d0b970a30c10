package gmnode

import (
	"github.com/gmcn-go/gmcn/ops"
	G "gorgonia.org/gorgonia"
)

// TreeHEMOption adjusts the TreeHEM reduction.
type TreeHEMOption func(*ops.TreeHEMOptions)

// TreeHEMReferenceUnderFill makes TreeHEM reproduce the reference code's
// selection loop, which leaves between 1 and T of the np output slots as
// zero-weight padding, and the reference's padding {0, 0, s·I}: the identity
// of its pre-scaled space, s = mean_k tr(Σ_k)/D of the input mixture. The
// padding's gradient reaches the input covariances through s. Use it only
// for parity with the reference. By default every slot is filled, and a slot
// that cannot be is padded with {0, 0, I}.
func TreeHEMReferenceUnderFill() TreeHEMOption {
	return func(o *ops.TreeHEMOptions) { o.UnderFill = true }
}

// TreeHEM reduces every mixture of x [B, C, N, ·] to np components
// [B, C, np, ·] with TreeHEM and reduction factor t ∈ {2, 4, 8} (the paper
// uses 2); np must lie in [t, 1024] and N must not exceed 65534. Mixtures
// with N ≤ np pass through unchanged, padded with {0, 0, I}, or with
// TreeHEMReferenceUnderFill with {0, 0, s·I} as the reference pads.
func TreeHEM(x *G.Node, np, t int, opts ...TreeHEMOption) (*G.Node, error) {
	o := ops.TreeHEMOptions{Reduction: t}
	for _, f := range opts {
		f(&o)
	}
	return G.ApplyOp(ops.NewTreeHEM(on(x), np, o), x)
}
