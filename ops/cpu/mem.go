package cpu

import (
	"math"

	"github.com/gmcn-go/gmcn/internal/parallel"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// Constants of the modified EM reduction, as in the reference
// (fitting.py mixture_to_double_gmm, calc_likelihoods, mhem_fit_a_to_b).
const (
	// memVirtualSamples scales the likelihood exponent: a target carrying the
	// fraction |ŵ_i| of the mass counts as 20·|ŵ_i| samples.
	memVirtualSamples = 20
	// memMinIntegral bounds the normalising integrals from below, so nearly
	// empty mixtures are not blown up to unit mass.
	memMinIntegral = 0.05
	// memMinDivisor bounds Σ_s q_is and π_s from below before dividing.
	memMinDivisor = 1e-5
	// memDeadWeight is the π_s below which 1e-4·I is added to the covariance,
	// keeping the Gaussian of a nearly unused fitting component invertible.
	memDeadWeight = 1e-4
	memDeadCov    = 1e-4
)

// memComponents returns K = min(n, np), the number of fitting components
// that MEM selects from a mixture of n components; output slots K…np−1 are
// padding {w = 0, μ = 0, Σ = I}.
func memComponents(n, np int) int { return min(n, np) }

// MEM reduces every mixture of the packed batch x (layout l, N components)
// to np components with the modified EM of the reference (docs/algorithms.md, "Modified EM") and
// writes them into y (layout l with N = np).
//
// Per mixture, with targets i (w_i, μ_i, Σ_i) and the K = min(N, np)
// targets of largest |w| as initial fitting s (a frozen decision, see
// memSelect):
//
//	S = max(Σ_i |w_i|, 0.05),  a_i = |w_i|/S
//	V = max(Σ_s |v_s|, 0.05),  u_s = |v_s|/V      (v_s the initial weights)
//	L_is = [N(μ_i; μ_s, Σ_s)·exp(−½ tr(Σ_s⁻¹Σ_i))]^(20·a_i)   (detached)
//	r_is = L_is u_s / max(Σ_s L_is u_s, 1e-5)
//	ρ_is = r_is a_i,  π_s = Σ_i ρ_is,  β_is = ρ_is / max(π_s, 1e-5)
//	μ'_s = Σ_i β_is μ_i
//	Σ'_s = Σ_i β_is (Σ_i + (μ_i−μ'_s)(μ_i−μ'_s)ᵀ) + [π_s < 1e-4]·1e-4·I
//	w'_s = π_s · memSign(v_s) · S
//
// The likelihoods carry no gradient (the reference computes them on detached
// copies); MEMBackward differentiates everything else.
func MEM[T Float](y, x []T, l mixture.Layout, np int) {
	lo := l
	lo.N = np
	memEach(x, l, np, func(m int, mx []T, sc *memScratch[T]) {
		memForward(mixture.Mixture(y, lo, m), mx, sc.lik, sc.sel, l.D, sc)
	})
}

// MEMBackward writes ∂L/∂x for MEM given gy = ∂L/∂y. The selection and the
// likelihoods are recomputed from x exactly as in the forward pass and held
// constant; padding slots receive no gradient.
func MEMBackward[T Float](dx, x, gy []T, l mixture.Layout, np int) {
	lo := l
	lo.N = np
	memEach(x, l, np, func(m int, mx []T, sc *memScratch[T]) {
		memBackward(mixture.Mixture(dx, l, m), mx, mixture.Mixture(gy, lo, m), sc.lik, sc.sel, l.D, sc)
	})
}

// memEach runs f in parallel on every mixture m of x, given as its packed
// components mx and a worker's scratch that holds m's selection and
// likelihoods, the decisions MEM's forward and backward share.
func memEach[T Float](x []T, l mixture.Layout, np int, f func(m int, mx []T, sc *memScratch[T])) {
	scratch := newMEMScratch[T](parallel.Workers(l.Mixtures()), l.N, memComponents(l.N, np))
	parallel.ForWorker(l.Mixtures(), func(w, m int) {
		sc := &scratch[w]
		mx := mixture.Mixture(x, l, m)
		memSelect(sc.sel, mx, l.D)
		memLikelihoods(sc.lik, mx, sc.sel, l.D, sc)
		f(m, mx, sc)
	})
}

// memSelect writes into sel the indices of the len(sel) ≥ 1 components of
// the packed mixture mx (dimension d) with the largest |w|, in descending
// order of |w|; ties keep the lower index first, so the choice is
// deterministic: the first len(sel) of a stable sort by descending |w|. One
// pass over the components keeps the best so far in sel, in that order; a
// component enters only if its |w| beats the last kept one's, and goes
// after every kept one of equal |w| (a lower index).
func memSelect[T Float](sel []int, mx []T, d int) {
	s := mixture.PackedLen(d)
	k, kept := len(sel), 0
	for i := range len(mx) / s {
		w := memAbs(mx[i*s])
		if kept == k && !(w > memAbs(mx[sel[k-1]*s])) {
			continue
		}
		j := min(kept, k-1) // a full list drops its last
		for ; j > 0 && memAbs(mx[sel[j-1]*s]) < w; j-- {
			sel[j] = sel[j-1]
		}
		sel[j] = i
		kept = min(kept+1, k)
	}
}

// memScratch is one worker's buffers: N·K likelihoods, responsibilities and
// their gradients, and per-fitting-component state.
type memScratch[T Float] struct {
	sel       []int
	lik, resp []T // N·K, row i, column s
	gbeta     []T // N·K, ∂L/∂β_is
	a, q      []T // N: a_i and max(Σ_s q_is, 1e-5)
	fit       []mixture.Prepared[T]
	logNorm   []T         // K: ln((2π)^(−D/2) det(Σ_s)^(−½))
	s         []memFit[T] // K
}

// memFit is the per-fitting-component state of the M-step and its gradient.
type memFit[T Float] struct {
	u, pi, p, sign T
	mu             [3]T
	cov            [9]T // Σ'_s, accumulated by memForward
	gu, gpi, gp    T    // ∂L/∂u_s, ∂L/∂π_s, ∂L/∂max(π_s, 1e-5)
	gmu            [3]T // ∂L/∂μ'_s including the path through the covariance
	gcov, gsym     [9]T // ∂L/∂Σ'_s and its symmetrisation G + Gᵀ
}

func newMEMScratch[T Float](workers, n, k int) []memScratch[T] {
	sc := make([]memScratch[T], workers)
	for w := range sc {
		sc[w] = memScratch[T]{
			sel: make([]int, k),
			lik: make([]T, n*k), resp: make([]T, n*k), gbeta: make([]T, n*k),
			a: make([]T, n), q: make([]T, n),
			fit: make([]mixture.Prepared[T], k), logNorm: make([]T, k), s: make([]memFit[T], k),
		}
	}
	return sc
}

// memLikelihoods writes L_is (row i, column s) for the targets of mx and the
// initial fitting sel. It works in log space,
// ln L_is = 20·a_i·(ln norm_s − ½ (μ_i−μ_s)ᵀΣ_s⁻¹(μ_i−μ_s) − ½ tr(Σ_s⁻¹Σ_i)),
// so a far target with little mass gets its small but positive likelihood
// instead of 0 from an underflowed base; a_i = 0 gives L = 1 = x⁰.
func memLikelihoods[T Float](lik, mx []T, sel []int, d int, sc *memScratch[T]) {
	st := mixture.PackedLen(d)
	k := len(sel)
	n := len(mx) / st
	total, _ := memTotal(mx, d)
	fit, logNorm := sc.fit[:k], sc.logNorm[:k]
	for s, j := range sel {
		fit[s] = mixture.Prepare(d, mx[j*st:(j+1)*st])
		logNorm[s] = T(math.Log(float64(fit[s].Norm)))
	}
	dd := d * d
	for i := range n {
		g := mx[i*st : (i+1)*st]
		ai := memAbs(g[0]) / total
		cov := g[1+d : 1+d+dd]
		row := lik[i*k : (i+1)*k]
		for s := range fit {
			f := &fit[s]
			var tr T
			for e := range dd {
				tr += f.Inv[e] * cov[e]
			}
			row[s] = memVirtualSamples * ai * (logNorm[s] + f.Exponent(d, g[1:1+d]) - tr/2)
		}
		expRow(row)
	}
}

// memForward runs steps 2–7 of MEM on one mixture with fixed likelihoods
// and selection and writes the np packed outputs into y.
func memForward[T Float](y, mx, lik []T, sel []int, d int, sc *memScratch[T]) {
	memStats(mx, lik, sel, d, sc)
	st := mixture.PackedLen(d)
	k := len(sel)
	n := len(mx) / st
	total, _ := memTotal(mx, d)
	fs := sc.s[:k]
	for i := range n {
		g := mx[i*st : (i+1)*st]
		resp := sc.resp[i*k : (i+1)*k]
		for s := range fs {
			rho := resp[s] * sc.a[i]
			if rho == 0 {
				continue
			}
			f := &fs[s]
			b := rho / f.p
			var t [3]T
			for r := range d {
				t[r] = g[1+r] - f.mu[r]
			}
			for r := range d {
				for c := range d {
					f.cov[r*d+c] += b * (g[1+d+r*d+c] + t[r]*t[c])
				}
			}
		}
	}
	for s := range fs {
		f := &fs[s]
		if f.pi < memDeadWeight {
			for r := range d {
				f.cov[r*d+r] += memDeadCov
			}
		}
		o := y[s*st : (s+1)*st]
		o[0] = f.pi * f.sign * total
		copy(o[1:1+d], f.mu[:d])
		copy(o[1+d:], f.cov[:d*d])
	}
	for s := k; s < len(y)/st; s++ {
		o := y[s*st : (s+1)*st]
		clear(o)
		for r := range d {
			o[1+d+r*d+r] = 1
		}
	}
}

// memTotal returns S = max(Σ_i |w_i|, 0.05) and whether the clamp is
// inactive, i.e. whether the gradient flows through the sum.
func memTotal[T Float](mx []T, d int) (T, bool) {
	st := mixture.PackedLen(d)
	var a T
	for i := 0; i < len(mx); i += st {
		a += memAbs(mx[i])
	}
	return max(a, memMinIntegral), a > memMinIntegral
}

// memStats computes a_i, u_s, sign_s, the responsibilities r_is, the
// clamped sums max(Σ_s q_is, 1e-5), π_s, max(π_s, 1e-5) and μ'_s.
func memStats[T Float](mx, lik []T, sel []int, d int, sc *memScratch[T]) {
	st := mixture.PackedLen(d)
	k := len(sel)
	n := len(mx) / st
	total, _ := memTotal(mx, d)
	var vsum T
	for _, j := range sel {
		vsum += memAbs(mx[j*st])
	}
	vsum = max(vsum, memMinIntegral)
	fs := sc.s[:k]
	for s, j := range sel {
		fs[s] = memFit[T]{u: memAbs(mx[j*st]) / vsum, sign: memSign(mx[j*st])}
	}
	for i := range n {
		g := mx[i*st : (i+1)*st]
		ai := memAbs(g[0]) / total
		sc.a[i] = ai
		row := lik[i*k : (i+1)*k]
		resp := sc.resp[i*k : (i+1)*k]
		var q T
		for s := range fs {
			resp[s] = row[s] * fs[s].u
			q += resp[s]
		}
		q = max(q, memMinDivisor)
		sc.q[i] = q
		for s := range fs {
			resp[s] /= q
			rho := resp[s] * ai
			fs[s].pi += rho
			for r := range d {
				fs[s].mu[r] += rho * g[1+r]
			}
		}
	}
	for s := range fs {
		f := &fs[s]
		f.p = max(f.pi, memMinDivisor)
		for r := range d {
			f.mu[r] /= f.p
		}
	}
}

// memBackward writes ∂L/∂mx for one mixture given gy = ∂L/∂y, with the
// likelihoods and selection fixed. Reverse mode through the forward:
//
//	∂β_is = ⟨G_s, Σ_i + t tᵀ⟩ + ĝ_sᵀ μ_i,  t = μ_i − μ'_s, G_s = ∂L/∂Σ'_s,
//	ĝ_s = ∂L/∂μ'_s − (1 − π_s/P_s)(G_s + G_sᵀ) μ'_s   (μ'_s's own use in t),
//	∂μ_i += β_is (ĝ_s + (G_s + G_sᵀ) t),  ∂Σ_i += β_is G_s,
//	∂π_s = ∂w'_s sign_s S + [π_s > 1e-5] (−Σ_i ∂β_is β_is / P_s),
//	∂ρ_is = ∂β_is/P_s + ∂π_s,  ∂r_is = ∂ρ_is a_i,  ∂a_i = Σ_s ∂ρ_is r_is,
//	∂q_is = ∂r_is/D_i − [Q_i > 1e-5] Σ_s' ∂r_is' r_is'/D_i,  ∂u_s = Σ_i ∂q_is L_is,
//
// then through u_s = |v_s|/V, a_i = |w_i|/S and the clamped sums V and S
// (no gradient where a clamp is active) into the weights.
func memBackward[T Float](dx, mx, gy, lik []T, sel []int, d int, sc *memScratch[T]) {
	memStats(mx, lik, sel, d, sc)
	clear(dx)
	st := mixture.PackedLen(d)
	dd := d * d
	k := len(sel)
	n := len(mx) / st
	total, totalActive := memTotal(mx, d)
	fs := sc.s[:k]
	var gS T
	for s := range fs {
		f := &fs[s]
		o := gy[s*st : (s+1)*st]
		gS += o[0] * f.pi * f.sign
		f.gpi = o[0] * f.sign * total
		copy(f.gcov[:dd], o[1+d:])
		for r := range d {
			for c := range d {
				f.gsym[r*d+c] = f.gcov[r*d+c] + f.gcov[c*d+r]
			}
		}
		var gm [3]T
		matVec(d, f.gsym[:dd], f.mu[:d], gm[:d])
		c := 1 - f.pi/f.p
		for r := range d {
			f.gmu[r] = o[1+r] - c*gm[r]
		}
	}
	// Pass A: ∂β, the position and covariance gradients, and ∂P_s folded into ∂π_s.
	for i := range n {
		g := mx[i*st : (i+1)*st]
		dg := dx[i*st : (i+1)*st]
		cov := g[1+d : 1+d+dd]
		for s := range fs {
			f := &fs[s]
			rho := sc.resp[i*k+s] * sc.a[i]
			var t [3]T
			for r := range d {
				t[r] = g[1+r] - f.mu[r]
			}
			var gb T
			for e := range dd {
				gb += f.gcov[e] * cov[e]
			}
			gb += mixture.QuadForm(d, f.gcov[:dd], t[:d])
			for r := range d {
				gb += f.gmu[r] * g[1+r]
			}
			sc.gbeta[i*k+s] = gb
			if rho == 0 {
				continue
			}
			b := rho / f.p
			f.gp -= gb * b / f.p
			var gt [3]T
			matVec(d, f.gsym[:dd], t[:d], gt[:d])
			for r := range d {
				dg[1+r] += b * (f.gmu[r] + gt[r])
			}
			for e := range dd {
				dg[1+d+e] += b * f.gcov[e]
			}
		}
	}
	for s := range fs {
		if fs[s].pi > memMinDivisor {
			fs[s].gpi += fs[s].gp
		}
	}
	// Pass B: through ρ = r·a and r = q / max(Σq, 1e-5) into a_i and u_s.
	for i := range n {
		ai := sc.a[i]
		q := sc.q[i]
		resp := sc.resp[i*k : (i+1)*k]
		gbeta := sc.gbeta[i*k : (i+1)*k]
		row := lik[i*k : (i+1)*k]
		var ga, gq T
		for s := range fs {
			grho := gbeta[s]/fs[s].p + fs[s].gpi
			ga += grho * resp[s]
			gbeta[s] = grho * ai // now ∂L/∂r_is
			gq -= gbeta[s] * resp[s] / q
		}
		if q <= memMinDivisor {
			gq = 0
		}
		for s := range fs {
			fs[s].gu += (gbeta[s]/q + gq) * row[s]
		}
		w := mx[i*st]
		gS -= ga * ai / total
		dx[i*st] += ga / total * memSign(w)
	}
	if totalActive {
		for i := range n {
			dx[i*st] += gS * memSign(mx[i*st])
		}
	}
	// Through u_s = |v_s| / max(Σ|v|, 0.05).
	var vsum T
	for _, j := range sel {
		vsum += memAbs(mx[j*st])
	}
	vActive := vsum > memMinIntegral
	vsum = max(vsum, memMinIntegral)
	var gV T
	for s := range fs {
		gV -= fs[s].gu * fs[s].u / vsum
	}
	for s, j := range sel {
		gv := fs[s].gu / vsum
		if vActive {
			gv += gV
		}
		dx[j*st] += gv * memSign(mx[j*st])
	}
}

func memAbs[T Float](x T) T {
	if x < 0 {
		return -x
	}
	return x
}

// memSign returns −1, 0 or +1 like torch.sign (sign(0) = 0).
func memSign[T Float](x T) T {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}
