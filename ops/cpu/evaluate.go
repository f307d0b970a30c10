package cpu

import (
	"github.com/gmcn-go/gmcn/internal/parallel"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// A point batch for Evaluate is a packed tensor [pb, pc, M, D] with
// pb ∈ {1, B} and pc ∈ {1, C}: a size of 1 broadcasts one point set over all
// batch entries or all channels of the mixtures.

// pointSet returns the index of the point set that mixture (b, c) is
// evaluated at, for a point batch with pb batch and pc channel entries.
func pointSet(b, c, pb, pc int) int {
	if pb == 1 {
		b = 0
	}
	if pc == 1 {
		c = 0
	}
	return b*pc + c
}

// Evaluate writes the values of the mixtures x (layout l) at the points pts
// [pb, pc, m, D] into y [B, C, m]:
//
//	y[b,c,i] = Σ_k w_k · (2π)^(−D/2) det(Σ_k)^(−½) · exp(−½ (p_i−μ_k)ᵀ Σ_k⁻¹ (p_i−μ_k))
//
// where p_i is row i of point set pointSet(b, c). Every component is evaluated
// at every point (no cut-off radius), as the reference does. Each Gaussian is
// prepared (inverse, determinant) once per mixture. With GOEXPERIMENT=simd on
// an AVX2 machine, float32 inputs take a vectorised path. Every float32 path
// uses the polynomial exp of expSlice32 (within 2 ulp); float64 uses math.Exp.
func Evaluate[T Float](y, x, pts []T, l mixture.Layout, pb, pc, m int) {
	if evaluateFast(y, x, pts, l, pb, pc, m) {
		return
	}
	evaluateGeneric(y, x, pts, l, pb, pc, m)
}

// evaluateGeneric is the portable Evaluate for both float types. Per point
// it sweeps the components three times (exponents, exp, weighted sum) so the
// exp runs over a whole row (expRow) instead of once per call.
func evaluateGeneric[T Float](y, x, pts []T, l mixture.Layout, pb, pc, m int) {
	d := l.D
	ws := newEvalScratch[T](parallel.Workers(l.Mixtures()), l.N, 0)
	parallel.ForWorker(l.Mixtures(), func(w, mi int) {
		ps, row := ws[w].prep, ws[w].row
		mixture.PrepareMixture(d, mixture.Mixture(x, l, mi), ps)
		p := pts[pointSet(mi/l.C, mi%l.C, pb, pc)*m*d:]
		out := y[mi*m : (mi+1)*m]
		for i := range out {
			pi := p[i*d : (i+1)*d]
			for k := range ps {
				row[k] = ps[k].Exponent(d, pi)
			}
			expRow(row)
			var sum T
			for k, e := range row {
				sum += ps[k].Coef * e
			}
			out[i] = sum
		}
	})
}

// evalScratch is one worker's scratch space: prepared components, a row of
// exponents and the vectors A·t of that row.
type evalScratch[T Float] struct {
	prep []mixture.Prepared[T]
	row  []T
	u    []T
}

// newEvalScratch returns scratch for each of workers workers with room for
// nPrep prepared components and rows of length nRow (with D = 3 vectors);
// nRow = 0 sizes the rows for nPrep.
func newEvalScratch[T Float](workers, nPrep, nRow int) []evalScratch[T] {
	if nRow == 0 {
		nRow = nPrep
	}
	ws := make([]evalScratch[T], workers)
	for w := range ws {
		ws[w] = evalScratch[T]{prep: make([]mixture.Prepared[T], nPrep), row: make([]T, nRow), u: make([]T, 3*nRow)}
	}
	return ws
}

// EvaluateBackwardMixture writes ∂L/∂x for Evaluate into dx (layout l) from
// the incoming gradient g [B, C, m]. With t = p_i − μ_k, A = Σ_k⁻¹,
// e = exp(−½ tᵀ A t), f = w_k·norm_k·e and gᵢ = g[b,c,i]:
//
//	∂L/∂w_k = Σ_i gᵢ · norm_k · e
//	∂L/∂μ_k = Σ_i gᵢ f · A t
//	∂L/∂Σ_k = ½ Σ_i gᵢ f · (A t tᵀ A − A)
//
// The last line is −A (∂L/∂A) A with ∂L/∂A = ½ gᵢ f (A⁻¹ − t tᵀ), i.e. the
// reference's gradient for the inverse chained through Σ ↦ Σ⁻¹; it treats
// the covariance entries as independent. Mixtures are independent, so the
// kernel runs in parallel over them without sharing any output. With
// GOEXPERIMENT=simd on amd64 with AVX2 and FMA (sixteen lanes with AVX-512),
// float32 inputs take a vectorised path, lanes over the points, that agrees
// with evaluateBackwardMixtureGeneric up to rounding.
func EvaluateBackwardMixture[T Float](dx, x, pts, g []T, l mixture.Layout, pb, pc, m int) {
	if evaluateBackwardMixtureFast(dx, x, pts, g, l, pb, pc, m) {
		return
	}
	evaluateBackwardMixtureGeneric(dx, x, pts, g, l, pb, pc, m)
}

// evaluateBackwardMixtureGeneric is the portable EvaluateBackwardMixture for
// both float types.
func evaluateBackwardMixtureGeneric[T Float](dx, x, pts, g []T, l mixture.Layout, pb, pc, m int) {
	d, s := l.D, l.Stride()
	ws := newEvalScratch[T](parallel.Workers(l.Mixtures()), 0, m)
	parallel.ForWorker(l.Mixtures(), func(w, mi int) {
		row, us := ws[w].row, ws[w].u[:m*d]
		mx := mixture.Mixture(x, l, mi)
		dmx := mixture.Mixture(dx, l, mi)
		p := pts[pointSet(mi/l.C, mi%l.C, pb, pc)*m*d:]
		gm := g[mi*m : (mi+1)*m]
		for k := range l.N {
			pk := mixture.Prepare(d, mx[k*s:(k+1)*s])
			a := pk.Inv[:d*d]
			for i := range row {
				var t [3]T
				for j := range d {
					t[j] = p[i*d+j] - pk.Mu[j]
				}
				u := us[i*d : (i+1)*d]
				matVec(d, a, t[:d], u)
				var q T
				for j := range d {
					q += t[j] * u[j]
				}
				row[i] = -0.5 * q
			}
			expRow(row)
			// Accumulated over the points: Σ gᵢe, Σ gᵢf, Σ gᵢf·u and
			// Σ gᵢf·u uᵀ with u = A t, so A t tᵀ A = u uᵀ needs no matrix products.
			var sge, sgf T
			var su [3]T
			var suu [9]T
			for i, gi := range gm {
				ge := gi * row[i]
				gf := pk.Coef * ge
				sge += ge
				sgf += gf
				u := us[i*d : (i+1)*d]
				for r := range d {
					su[r] += gf * u[r]
					for c := range d {
						suu[r*d+c] += gf * u[r] * u[c]
					}
				}
			}
			dg := dmx[k*s : (k+1)*s]
			dg[0] = pk.Norm * sge
			copy(dg[1:1+d], su[:d])
			for j := range d * d {
				dg[1+d+j] = 0.5 * (suu[j] - sgf*a[j])
			}
		}
	})
}

// evaluatePointRows is how many point rows one work item of
// EvaluateBackwardPoints owns: large enough that preparing the mixtures per
// item costs little next to the N·rows evaluations, small enough to balance.
const evaluatePointRows = 64

// EvaluateBackwardPoints writes ∂L/∂pts for Evaluate into dp [pb, pc, m, D]
// from the incoming gradient g [B, C, m]:
//
//	∂L/∂p_i = −Σ_{(b,c) → set} Σ_k g[b,c,i] · f_k(p_i) · A_k (p_i − μ_k)
//
// summed over every mixture that reads the point set (the broadcast
// dimensions). The work is split over (point set, block of rows), and each
// item owns its rows of dp, so the sums need no locks or atomics. Float32
// inputs take a vectorised path as in EvaluateBackwardMixture, which agrees
// with evaluateBackwardPointsGeneric up to rounding.
func EvaluateBackwardPoints[T Float](dp, x, pts, g []T, l mixture.Layout, pb, pc, m int) {
	if evaluateBackwardPointsFast(dp, x, pts, g, l, pb, pc, m) {
		return
	}
	evaluateBackwardPointsGeneric(dp, x, pts, g, l, pb, pc, m)
}

// evaluateBackwardPointsGeneric is the portable EvaluateBackwardPoints for
// both float types.
func evaluateBackwardPointsGeneric[T Float](dp, x, pts, g []T, l mixture.Layout, pb, pc, m int) {
	d := l.D
	blocks := (m + evaluatePointRows - 1) / evaluatePointRows
	items := pb * pc * blocks
	ws := newEvalScratch[T](parallel.Workers(items), l.N, 0)
	// Each point set is read by the mixtures whose b (c) equals its batch
	// (channel) index, or by all of them along a broadcast dimension.
	bs, cs := l.B/pb, l.C/pc
	parallel.ForWorker(items, func(w, it int) {
		set, blk := it/blocks, it%blocks
		lo, hi := blk*evaluatePointRows, min((blk+1)*evaluatePointRows, m)
		p := pts[set*m*d : (set+1)*m*d]
		dpSet := dp[set*m*d : (set+1)*m*d]
		clear(dpSet[lo*d : hi*d])
		b0, c0 := (set/pc)*bs, (set%pc)*cs
		for b := b0; b < b0+bs; b++ {
			for c := c0; c < c0+cs; c++ {
				mi := b*l.C + c
				mixture.PrepareMixture(d, mixture.Mixture(x, l, mi), ws[w].prep)
				gm := g[mi*m : (mi+1)*m]
				for i := lo; i < hi; i++ {
					pointGrad(d, &ws[w], p[i*d:(i+1)*d], gm[i], dpSet[i*d:(i+1)*d])
				}
			}
		}
	})
}

// pointGrad adds −g Σ_k f_k(x) A_k (x − μ_k) to dst for the components
// prepared in sc.prep, using sc's rows.
func pointGrad[T Float](d int, sc *evalScratch[T], x []T, g T, dst []T) {
	ps, row, us := sc.prep, sc.row, sc.u
	for k := range ps {
		pk := &ps[k]
		var t [3]T
		for j := range d {
			t[j] = x[j] - pk.Mu[j]
		}
		u := us[k*d : (k+1)*d]
		matVec(d, pk.Inv[:d*d], t[:d], u)
		var q T
		for j := range d {
			q += t[j] * u[j]
		}
		row[k] = -0.5 * q
	}
	expRow(row)
	var acc [3]T
	for k, e := range row {
		f := ps[k].Coef * e
		for j := range d {
			acc[j] += f * us[k*d+j]
		}
	}
	for j := range d {
		dst[j] -= g * acc[j]
	}
}
