package device

import (
	"fmt"
	"math"

	"github.com/gmcn-go/gmcn/ops/mixture"
)

// ConvLayout returns the layout of the convolution of data of layout lx
// [B, Fi, Ni, ·] with kernels of layout lk [Fo, Fi, Nk, ·]:
// [B, Fo, Fi·Ni·Nk, ·]. Each output channel keeps every pairwise product of an
// input channel's data and kernel components, so no components are summed.
func ConvLayout(lx, lk mixture.Layout) mixture.Layout {
	return mixture.Layout{B: lx.B, C: lk.B, N: lx.C * lx.N * lk.N, D: lx.D}
}

// CovScaleFactor returns the CovScaleNorm factor s = sqrt(D/τ) that scales a
// mixture of mean covariance trace τ to mean trace D, and whether τ admits
// one (τ > 0 and finite).
func CovScaleFactor(d int, tau float64) (float64, bool) {
	if !(tau > 0) || math.IsInf(tau, 0) {
		return 0, false
	}
	return math.Sqrt(float64(d) / tau), true
}

// ConvFitSelect says how the fused convolution-fitting selects the nodes
// of its tree that become its output Gaussians (docs/fused.md): N per
// output mixture, found by splitting, again and again, the selected node of
// highest priority. A node's priority is |Σ w| over its components if their
// weights are positive, and Negative·|Σ w| if they are negative or zero, so
// a Negative below 1 spends more of the N Gaussians where the convolution
// is positive, which the ReLU that follows keeps, and fewer where it is
// negative, which matters only where it cancels positive weight.
type ConvFitSelect struct {
	N        int
	Negative float64
}

// DefaultConvFitNegative is ConvFitSelect.Negative of the models' fused
// blocks and of the graph API unless a caller says otherwise: on the demo
// model it trains better than 1, which treats both signs alike (docs/fused.md,
// "The split rule").
const DefaultConvFitNegative = 0.5

// Check returns an error unless s can select: N ≥ 1 and Negative a finite
// number > 0.
func (s ConvFitSelect) Check() error {
	if s.N < 1 {
		return fmt.Errorf("n = %d Gaussians per output mixture, want n ≥ 1", s.N)
	}
	if !(s.Negative > 0) || math.IsInf(s.Negative, 1) {
		return fmt.Errorf("negative nodes' priority factor %g, want a finite number > 0", s.Negative)
	}
	return nil
}

// String writes s as "n=N negative=Negative", as op names and errors show it.
func (s ConvFitSelect) String() string { return fmt.Sprintf("n=%d negative=%g", s.N, s.Negative) }

// ConvFitLayout returns the layout of the fused convolution-fitting of data
// of layout lx with kernels of layout lk to n Gaussians per output mixture:
// [B, Fo, n, ·].
func ConvFitLayout(lx, lk mixture.Layout, n int) mixture.Layout {
	return mixture.Layout{B: lx.B, C: lk.B, N: n, D: lx.D}
}

// StandardisePoints is the number of grid points per axis at which
// StandardiseScale evaluates a mixture: 32² = 1024 points in 2D, 10³ = 1000
// in 3D, matching the reference's 1000 random points.
func StandardisePoints(d int) int {
	if d == 2 {
		return 32
	}
	return 10
}
