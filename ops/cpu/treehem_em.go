package cpu

import (
	"math"
	"slices"
)

// Clipping constants and EM parameters of the reference TreeHEM
// (util/epsilon.h, bvh_mhem_fit/Config.h).
const (
	hemEpsSmall       = 1e-13               // Epsilon::small: floor of integrals and likelihoods
	hemEpsLarge       = 1e-7                // Epsilon::large: weights below are ignored; dead-component threshold
	hemKLThreshold    = 0.5                 // em_kl_div_threshold
	hemVirtualSamples = 4                   // exponent factor of the likelihood
	hemLogEpsSmall    = -29.933606208922594 // ln(1e−13)
	hemMaxT           = 8                   // largest reduction factor T
	hemMaxM           = 2 * hemMaxT
)

// emDecision holds the discrete choices of one EM fit, frozen for the
// backward pass and for the frozen forward: the target index each fitted
// component starts from, and for every target the set of components it may be
// assigned to (bit s of mask[i]).
type emDecision struct {
	init [hemMaxM]uint8
	mask [hemMaxM]uint16
}

// emFit is the scratch of one fit of m ≤ 2T targets to k < m components,
// holding the forward intermediates the reverse pass needs. Matrices are d×d
// row-major in [9]T; index order is [target i][component s].
type emFit[T Float] struct {
	d, m, k int

	// Targets (inputs) and their gradients.
	tw   [hemMaxM]T
	tmu  [hemMaxM][3]T
	tcov [hemMaxM][9]T
	gtw  [hemMaxM]T
	gtmu [hemMaxM][3]T
	gtcv [hemMaxM][9]T

	// Forward intermediates.
	sumw, bigW T
	what       [hemMaxM]T
	sumv, bigV T
	vhat       [hemMaxM]T
	inv        [hemMaxM][9]T // Σ'_s⁻¹ of the initial components
	logNorm    [hemMaxM]T    // ln((2π)^(−d/2) det(Σ'_s)^(−½))
	logp, l, q [hemMaxM][hemMaxM]T
	at         [hemMaxM][hemMaxM][3]T // Σ'_s⁻¹ (μ_i − μ'_s)
	sumq       [hemMaxM]T
	r, beta    [hemMaxM][hemMaxM]T
	pi         [hemMaxM]T
	dead       [hemMaxM]bool

	// Results and their incoming gradients.
	ow   [hemMaxM]T
	omu  [hemMaxM][3]T
	ocov [hemMaxM][9]T
	gow  [hemMaxM]T
	gomu [hemMaxM][3]T
	gocv [hemMaxM][9]T

	pairs [hemMaxM * (hemMaxM - 1) / 2]emPair
}

type emPair struct {
	dist float64
	i, j uint8
}

// setTarget copies the packed Gaussian g into target slot i.
func (e *emFit[T]) setTarget(i int, g []T) {
	d := e.d
	e.tw[i] = g[0]
	copy(e.tmu[i][:d], g[1:1+d])
	copy(e.tcov[i][:d*d], g[1+d:1+d+d*d])
}

// output writes fitted component s packed into g.
func (e *emFit[T]) output(s int, g []T) {
	d := e.d
	g[0] = e.ow[s]
	copy(g[1:1+d], e.omu[s][:d])
	copy(g[1+d:1+d+d*d], e.ocov[s][:d*d])
}

// decide makes the discrete choices of a fit of the current m targets to k
// components (reference fit_initial with CentroidDistance/MaxWeight, then the
// KL mask of fit_em).
//
// Initial selection: single-linkage clustering (Kruskal) on squared centroid
// distances, +∞ between targets of different sign, merged until k clusters
// remain; a cluster is named by its smallest member and absorbs the larger
// name. Clusters in ascending name order each contribute their member of
// largest |w| (first wins ties).
//
// Mask: target i may be assigned to component s if both have the same sign and
// KL(N(μ_i,Σ_i) ‖ N(μ'_s,Σ'_s)) < 0.5, and always to its KL-closest component.
func (e *emFit[T]) decide(dec *emDecision) {
	d, m, k := e.d, e.m, e.k
	np := 0
	for i := range m {
		for j := i + 1; j < m; j++ {
			dist := math.Inf(1)
			if (e.tw[i] < 0) == (e.tw[j] < 0) {
				var s T
				for c := range d {
					t := e.tmu[i][c] - e.tmu[j][c]
					s += t * t
				}
				dist = float64(s)
			}
			e.pairs[np] = emPair{dist, uint8(i), uint8(j)}
			np++
		}
	}
	pairs := e.pairs[:np]
	slices.SortFunc(pairs, func(x, y emPair) int {
		switch {
		case x.dist < y.dist:
			return -1
		case x.dist > y.dist:
			return 1
		}
		return int(x.i)*hemMaxM + int(x.j) - (int(y.i)*hemMaxM + int(y.j))
	})
	var label [hemMaxM]uint8
	for i := range m {
		label[i] = uint8(i)
	}
	clusters := m
	for _, pr := range pairs {
		if clusters == k {
			break
		}
		a, b := label[pr.i], label[pr.j]
		if a == b {
			continue
		}
		keep, drop := min(a, b), max(a, b)
		for i := range m {
			if label[i] == drop {
				label[i] = keep
			}
		}
		clusters--
	}
	s := 0
	for c := range m {
		if int(label[c]) != c {
			continue
		}
		best := c
		for i := c + 1; i < m; i++ {
			if int(label[i]) == c && abs(e.tw[i]) > abs(e.tw[best]) {
				best = i
			}
		}
		dec.init[s] = uint8(best)
		s++
	}
	var logDet [hemMaxM]T
	for i := range m {
		logDet[i] = T(math.Log(float64(hemDet(d, e.tcov[i][:d*d]))))
	}
	for s := range k {
		invDet(d, e.tcov[dec.init[s]][:d*d], e.inv[s][:d*d])
	}
	for i := range m {
		var mask uint16
		bestS, bestKL := 0, T(math.Inf(1))
		for s := range k {
			j := int(dec.init[s])
			var kl T
			if (e.tw[i] < 0) == (e.tw[j] < 0) {
				// KL(N_i ‖ N_j) = ½[(μ_i−μ_j)ᵀΣ_j⁻¹(μ_i−μ_j) + tr(Σ_j⁻¹Σ_i) − d − ln(det Σ_i / det Σ_j)]
				inv := e.inv[s][:d*d]
				var t [3]T
				for c := range d {
					t[c] = e.tmu[i][c] - e.tmu[j][c]
				}
				kl = 0.5 * (quadForm(d, inv, t[:d]) + trProd(d, inv, e.tcov[i][:d*d]) - T(d) - logDet[i] + logDet[j])
			}
			if kl < hemKLThreshold {
				mask |= 1 << s
			}
			if kl < bestKL {
				bestS, bestKL = s, kl
			}
		}
		dec.mask[i] = mask | 1<<bestS
	}
}

// hemDet returns the determinant of the d×d row-major matrix m.
func hemDet[T Float](d int, m []T) T {
	if d == 2 {
		return m[0]*m[3] - m[1]*m[2]
	}
	return m[0]*(m[4]*m[8]-m[5]*m[7]) - m[1]*(m[3]*m[8]-m[5]*m[6]) + m[2]*(m[3]*m[7]-m[4]*m[6])
}

// forward runs the EM step with the frozen decisions dec:
//
//	W = max(Σ_i w_i, ε), ŵ_i = w_i/W; v_s = w_{init_s}, V = max(Σ_s v_s, ε), v̂_s = v_s/V
//	L_is = max(N(μ_i; μ'_s, Σ'_s)·exp(−½ tr(Σ'_s⁻¹Σ_i)), ε)^(4ŵ_i)
//	q_is = max(v̂_s L_is, ε)·mask_is, r_is = q_is / Σ_s q_is
//	ρ_is = r_is ŵ_i, π_s = Σ_i ρ_is, β_is = ρ_is / max(π_s, ε)
//	μ_s = Σ_i β_is μ_i, Σ_s = Σ_i β_is (Σ_i + (μ_i−μ_s)(μ_i−μ_s)ᵀ), w_s = π_s W
//
// with ε = 1e−13, (μ'_s, Σ'_s) = (μ, Σ)_{init_s}, and Σ_s = I where π_s < 1e−7.
// Σ_s w_s = Σ_i w_i whenever no clip is active.
func (e *emFit[T]) forward(dec *emDecision) {
	d, m, k := e.d, e.m, e.k
	e.sumw = 0
	for i := range m {
		e.sumw += e.tw[i]
	}
	e.bigW = max(e.sumw, hemEpsSmall)
	for i := range m {
		e.what[i] = e.tw[i] / e.bigW
	}
	e.sumv = 0
	for s := range k {
		e.sumv += e.tw[dec.init[s]]
	}
	e.bigV = max(e.sumv, hemEpsSmall)
	for s := range k {
		j := dec.init[s]
		e.vhat[s] = e.tw[j] / e.bigV
		det := invDet(d, e.tcov[j][:d*d], e.inv[s][:d*d])
		e.logNorm[s] = T(-0.5 * (float64(d)*math.Log(2*math.Pi) + math.Log(float64(det))))
	}
	for i := range m {
		e.sumq[i] = 0
		for s := range k {
			j := dec.init[s]
			inv := e.inv[s][:d*d]
			var t [3]T
			for c := range d {
				t[c] = e.tmu[i][c] - e.tmu[j][c]
			}
			matVec(d, inv, t[:d], e.at[i][s][:d])
			var qf T
			for c := range d {
				qf += t[c] * e.at[i][s][c]
			}
			// ln(a·b) with a = N(μ_i; μ'_s, Σ'_s), b = exp(−½ tr(Σ'_s⁻¹Σ_i)):
			// working in the log domain costs one exp per pair.
			logp := e.logNorm[s] - 0.5*qf - 0.5*trProd(d, inv, e.tcov[i][:d*d])
			l := T(math.Exp(float64(hemVirtualSamples * e.what[i] * max(logp, hemLogEpsSmall))))
			e.logp[i][s], e.l[i][s] = logp, l
			var q T
			if dec.mask[i]&(1<<s) != 0 {
				q = max(e.vhat[s]*l, hemEpsSmall)
			}
			e.q[i][s] = q
			e.sumq[i] += q
		}
	}
	for s := range k {
		e.pi[s] = 0
	}
	for i := range m {
		for s := range k {
			e.r[i][s] = e.q[i][s] / e.sumq[i]
			e.pi[s] += e.r[i][s] * e.what[i]
		}
	}
	for s := range k {
		pic := max(e.pi[s], hemEpsSmall)
		var mu [3]T
		for i := range m {
			e.beta[i][s] = e.r[i][s] * e.what[i] / pic
			for c := range d {
				mu[c] += e.beta[i][s] * e.tmu[i][c]
			}
		}
		e.omu[s] = mu
		e.ow[s] = e.pi[s] * e.bigW
		e.dead[s] = e.pi[s] < hemEpsLarge
		cov := &e.ocov[s]
		clear(cov[:])
		if e.dead[s] {
			for c := range d {
				cov[c*d+c] = 1
			}
			continue
		}
		for i := range m {
			bt := e.beta[i][s]
			var t [3]T
			for c := range d {
				t[c] = e.tmu[i][c] - mu[c]
			}
			for r := range d {
				for c := range d {
					cov[r*d+c] += bt * (e.tcov[i][r*d+c] + t[r]*t[c])
				}
			}
		}
	}
}

// backward turns the gradients of the fitted components (gow, gomu, gocv)
// into gradients of the targets (gtw, gtmu, gtcv), by reverse-mode
// differentiation of forward with the same decisions; clips pass no gradient
// where active. forward must have run on the same targets.
func (e *emFit[T]) backward(dec *emDecision) {
	d, m, k := e.d, e.m, e.k
	for i := range m {
		e.gtw[i] = 0
		e.gtmu[i] = [3]T{}
		e.gtcv[i] = [9]T{}
	}
	var gwhat [hemMaxM]T
	var gvhat [hemMaxM]T
	var gbeta, gq [hemMaxM][hemMaxM]T
	var gimu [hemMaxM][3]T // gradient of the initial positions μ'_s
	var gicv [hemMaxM][9]T // gradient of the initial covariances Σ'_s
	var gpi [hemMaxM]T
	var gW T

	// M-step: w_s = π_s W, μ_s = Σ β μ_i, Σ_s = Σ β (Σ_i + δδᵀ), δ = μ_i − μ_s.
	for s := range k {
		gpi[s] = e.gow[s] * e.bigW
		gW += e.gow[s] * e.pi[s]
		gmu := e.gomu[s]
		if !e.dead[s] {
			g := &e.gocv[s]
			for i := range m {
				var t [3]T
				for c := range d {
					t[c] = e.tmu[i][c] - e.omu[s][c]
				}
				var dot T
				for r := range d {
					for c := range d {
						dot += g[r*d+c] * (e.tcov[i][r*d+c] + t[r]*t[c])
						e.gtcv[i][r*d+c] += e.beta[i][s] * g[r*d+c]
					}
				}
				gbeta[i][s] += dot
				// ∂⟨G, δδᵀ⟩/∂δ = (G + Gᵀ) δ
				for r := range d {
					var gd T
					for c := range d {
						gd += (g[r*d+c] + g[c*d+r]) * t[c]
					}
					gd *= e.beta[i][s]
					e.gtmu[i][r] += gd
					gmu[r] -= gd
				}
			}
		}
		for i := range m {
			var dot T
			for c := range d {
				dot += gmu[c] * e.tmu[i][c]
				e.gtmu[i][c] += e.beta[i][s] * gmu[c]
			}
			gbeta[i][s] += dot
		}
		// β_is = ρ_is / max(π_s, ε), π_s = Σ_i ρ_is, ρ_is = r_is ŵ_i
		pic := max(e.pi[s], hemEpsSmall)
		var gpic T
		for i := range m {
			gpic -= gbeta[i][s] * e.beta[i][s] / pic
		}
		if e.pi[s] > hemEpsSmall {
			gpi[s] += gpic
		}
		for i := range m {
			grho := gbeta[i][s]/pic + gpi[s]
			gq[i][s] = grho * e.what[i] // ∂L/∂r_is for now
			gwhat[i] += grho * e.r[i][s]
		}
	}
	// r_is = q_is / Σ_t q_it
	for i := range m {
		var dot T
		for s := range k {
			dot += gq[i][s] * e.r[i][s]
		}
		for s := range k {
			gq[i][s] = (gq[i][s] - dot) / e.sumq[i]
		}
	}
	// q_is = max(v̂_s L_is, ε)·mask, L = max(ab, ε)^(4ŵ_i)
	for i := range m {
		for s := range k {
			if dec.mask[i]&(1<<s) == 0 || e.vhat[s]*e.l[i][s] <= hemEpsSmall {
				continue
			}
			l := e.l[i][s]
			gvhat[s] += gq[i][s] * l
			gl := gq[i][s] * e.vhat[s]
			logp := e.logp[i][s]
			gwhat[i] += gl * hemVirtualSamples * l * max(logp, hemLogEpsSmall)
			if logp <= hemLogEpsSmall {
				continue
			}
			// ∂L/∂p·p = 4ŵ L, and p = a·b, so ∂L/∂a·a = ∂L/∂b·b = 4ŵ L.
			ga := gl * hemVirtualSamples * e.what[i] * l
			gb := ga
			at := &e.at[i][s]
			inv := &e.inv[s]
			for c := range d {
				e.gtmu[i][c] -= ga * at[c]
				gimu[s][c] += ga * at[c]
			}
			// ∂a/∂Σ' = ½a(A t tᵀA − A); ∂b/∂Σ' = ½b A Σ_i A; ∂b/∂Σ_i = −½b A.
			for r := range d {
				for c := range d {
					var aca T
					for u := range d {
						for v := range d {
							aca += inv[r*d+u] * e.tcov[i][u*d+v] * inv[v*d+c]
						}
					}
					gicv[s][r*d+c] += 0.5*ga*(at[r]*at[c]-inv[r*d+c]) + 0.5*gb*aca
					e.gtcv[i][r*d+c] -= 0.5 * gb * inv[r*d+c]
				}
			}
		}
	}
	// Initial components are copies of targets: v_s = w_j, μ'_s = μ_j, Σ'_s = Σ_j.
	var gV T
	for s := range k {
		gV -= gvhat[s] * e.vhat[s] / e.bigV
	}
	for s := range k {
		j := dec.init[s]
		gv := gvhat[s] / e.bigV
		if e.sumv > hemEpsSmall {
			gv += gV
		}
		e.gtw[j] += gv
		for c := range d {
			e.gtmu[j][c] += gimu[s][c]
		}
		for c := range d * d {
			e.gtcv[j][c] += gicv[s][c]
		}
	}
	for i := range m {
		gW -= gwhat[i] * e.what[i] / e.bigW
	}
	for i := range m {
		e.gtw[i] += gwhat[i] / e.bigW
		if e.sumw > hemEpsSmall {
			e.gtw[i] += gW
		}
	}
}

// trProd returns tr(A B) = Σ_rc A_rc B_cr for d×d row-major matrices.
func trProd[T Float](d int, a, b []T) T {
	var s T
	for r := range d {
		for c := range d {
			s += a[r*d+c] * b[c*d+r]
		}
	}
	return s
}

func abs[T Float](v T) T {
	if v < 0 {
		return -v
	}
	return v
}
