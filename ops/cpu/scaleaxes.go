package cpu

import (
	"github.com/gmcn-go/gmcn/internal/parallel"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// ScaleAxes writes the batch x of layout l scaled in space along each axis
// into y (docs/algorithms.md, "Per-axis scaling"): with the factors
// s_0 … s_{D−1} of mixture m, i.e. S = diag(s),
//
//	w ← w,    μ_d ← s_d·μ_d,    Σ_ij ← s_i·s_j·Σ_ij    (Σ ← S Σ S).
//
// s holds sb·sc rows of D factors, sb ∈ {1, B} and sc ∈ {1, C}; mixture
// (b, c) reads row (b mod sb)·sc + (c mod sc), so one row serves the whole
// batch, one per sample, or one per mixture. Weights are integrals of
// normalised Gaussians, so every integral is kept and the amplitudes divide
// by |det S|: the result at S·p is the input at p over |s_0 ⋯ s_{D−1}|. The
// factors must be finite and non-zero (the op checks); a negative one
// reflects its axis, and S Σ S stays positive definite.
//
// The map is linear in x with a diagonal Jacobian, so ∂L/∂x is the same call
// on the incoming gradient, ScaleAxes(dx, g, s, l, sb, sc): g_w, s_d·g_μd and
// s_i·s_j·g_Σij, the covariance entries treated as independent as in
// ScaleMixturesBackward.
func ScaleAxes[T Float](y, x, s []T, l mixture.Layout, sb, sc int) {
	st, d := l.Stride(), l.D
	parallel.For(l.Mixtures(), func(m int) {
		f := scaleAxesRow(s, l, sb, sc, m)
		// The products s_i·s_j once per mixture; ff[i·d+j] and ff[j·d+i] are
		// the same product, so a symmetric Σ stays exactly symmetric.
		var ff [9]T
		for i := range d {
			for j := range d {
				ff[i*d+j] = f[i] * f[j]
			}
		}
		ym, xm := mixture.Mixture(y, l, m), mixture.Mixture(x, l, m)
		for k := 0; k < len(xm); k += st {
			ym[k] = xm[k]
			for j := range d {
				ym[k+1+j] = f[j] * xm[k+1+j]
			}
			for j := range d * d {
				ym[k+1+d+j] = ff[j] * xm[k+1+d+j]
			}
		}
	})
}

// ScaleAxesBackwardScales writes ∂L/∂s of ScaleAxes into ds (sb·sc rows of
// D, like s) for the incoming gradient g. Since ∂(s_i·s_j)/∂s_d =
// δ_id·s_j + δ_jd·s_i, every Gaussian of a mixture reading row r adds
//
//	∂L/∂s_d += g_μd·μ_d + Σ_j (g_Σdj·Σ_dj + g_Σjd·Σ_jd)·s_j
//
// (the diagonal j = d twice: 2·g_Σdd·Σ_dd·s_d), with μ and Σ those of x.
// The covariance entries are independent variables, as everywhere in the
// package, so the formula holds for an asymmetric g. Each mixture's sum runs
// in float64 into its own slot, and the slots of a row are then added in
// (b, c) order, so the result is deterministic without atomics however the
// mixtures were spread over the cores.
func ScaleAxesBackwardScales[T Float](ds, g, x, s []T, l mixture.Layout, sb, sc int) {
	st, d := l.Stride(), l.D
	part := make([]float64, l.Mixtures()*d)
	parallel.For(l.Mixtures(), func(m int) {
		f := scaleAxesRow(s, l, sb, sc, m)
		xm, gm := mixture.Mixture(x, l, m), mixture.Mixture(g, l, m)
		var acc [3]float64
		for k := 0; k < len(xm); k += st {
			cov, gcov := xm[k+1+d:k+st], gm[k+1+d:k+st]
			for i := range d {
				a := float64(gm[k+1+i]) * float64(xm[k+1+i])
				for j := range d {
					a += (float64(gcov[i*d+j])*float64(cov[i*d+j]) + float64(gcov[j*d+i])*float64(cov[j*d+i])) * float64(f[j])
				}
				acc[i] += a
			}
		}
		copy(part[m*d:(m+1)*d], acc[:d])
	})
	sum := make([]float64, len(ds))
	for m := range l.Mixtures() {
		r := scaleAxesRowIndex(l, sb, sc, m)
		for i := range d {
			sum[r*d+i] += part[m*d+i]
		}
	}
	for i, v := range sum {
		ds[i] = T(v)
	}
}

// scaleAxesRowIndex returns the row of the factors [sb, sc, D] that mixture
// m = b·C + c reads; a size of 1 broadcasts, since b mod 1 = 0.
func scaleAxesRowIndex(l mixture.Layout, sb, sc, m int) int {
	return (m/l.C%sb)*sc + m%l.C%sc
}

// scaleAxesRow returns the D factors mixture m reads.
func scaleAxesRow[T Float](s []T, l mixture.Layout, sb, sc, m int) []T {
	r := scaleAxesRowIndex(l, sb, sc, m)
	return s[r*l.D : (r+1)*l.D]
}
