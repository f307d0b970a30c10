package device

import (
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
