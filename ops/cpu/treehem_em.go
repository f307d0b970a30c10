package cpu

import (
	"math"
	"unsafe"
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
	hemMaxP           = hemMaxM * hemMaxM // target–component pairs of one fit
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
// row-major in [9]T; quantities of target i and component s are stored flat
// at p = i·k + s.
type emFit[T Float] struct {
	d, m, k int

	// Targets (inputs) and their gradients.
	tw   [hemMaxM]T
	tmu  [hemMaxM][3]T
	tcov [hemMaxM][9]T
	gtw  [hemMaxM]T
	gtmu [hemMaxM][3]T
	gtcv [hemMaxM][9]T

	// ln det Σ_i of every target when deciding, else of the initial ones.
	logDet [hemMaxM]T

	// Forward intermediates.
	sumw, bigW T
	what       [hemMaxM]T
	sumv, bigV T
	vhat       [hemMaxM]T
	inv        [hemMaxM][9]T // Σ'_s⁻¹ of the initial components
	logNorm    [hemMaxM]T    // ln((2π)^(−d/2) det(Σ'_s)^(−½))
	at         [hemMaxP][3]T // Σ'_s⁻¹ (μ_i − μ'_s)
	tr         [hemMaxP]T    // tr(Σ'_s⁻¹ Σ_i)
	logp, l, q [hemMaxP]T    // ln(a·b) (see forward), L, q
	r, beta    [hemMaxP]T
	sumq       [hemMaxM]T
	pi         [hemMaxM]T
	dead       [hemMaxM]bool

	// Results and their incoming gradients.
	ow   [hemMaxM]T
	omu  [hemMaxM][3]T
	ocov [hemMaxM][9]T
	gow  [hemMaxM]T
	gomu [hemMaxM][3]T
	gocv [hemMaxM][9]T

	// Scratch of the reverse pass: ∂L/∂q (∂L/∂r on the way), ∂L/∂ŵ, ∂L/∂v̂,
	// and ∂L/∂ of the initial positions μ'_s and covariances Σ'_s; wcov
	// accumulates Σ_i ∂L/∂ln b_is Σ_i per component.
	gq           [hemMaxP]T
	gwhat, gvhat [hemMaxM]T
	gimu         [hemMaxM][3]T
	gicv, wcov   [hemMaxM][9]T

	pairs [hemMaxM * (hemMaxM - 1) / 2]emPair[T]
}

type emPair[T Float] struct {
	dist T
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

// fit runs the EM step of the current m targets to k components: with
// record it first makes the decisions into dec (decide), else it replays
// them. The intermediates stay for backward.
func (e *emFit[T]) fit(dec *emDecision, record bool) {
	if record {
		e.decide(dec)
	} else {
		for _, j := range dec.init[:e.k] {
			e.logDet[j] = hemLog(hemDet(e.d, &e.tcov[j]))
		}
		e.prepare(dec)
	}
	e.forward(dec)
}

// decide makes the discrete choices of a fit of the current m targets to k
// components (reference fit_initial with CentroidDistance/MaxWeight, then the
// KL mask of fit_em), and prepares the fit.
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
	// Pairs are made in ascending (i, j) order, and the insertion sort is
	// stable, so equal distances stay in that order, the reference's
	// tie-break.
	np := 0
	for i := range m {
		for j := i + 1; j < m; j++ {
			dist := T(math.Inf(1))
			if (e.tw[i] < 0) == (e.tw[j] < 0) {
				dist = 0
				for c := range d {
					t := e.tmu[i][c] - e.tmu[j][c]
					dist += t * t
				}
			}
			q := np
			for ; q > 0 && e.pairs[q-1].dist > dist; q-- {
				e.pairs[q] = e.pairs[q-1]
			}
			e.pairs[q] = emPair[T]{dist, uint8(i), uint8(j)}
			np++
		}
	}
	var label [hemMaxM]uint8
	for i := range m {
		label[i] = uint8(i)
	}
	clusters := m
	for _, pr := range e.pairs[:np] {
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
	for i := range m {
		e.logDet[i] = hemLog(hemDet(d, &e.tcov[i]))
	}
	e.prepare(dec)
	for i := range m {
		var mask uint16
		bestS, bestKL := 0, T(math.Inf(1))
		for s := range k {
			j := int(dec.init[s])
			var kl T
			if (e.tw[i] < 0) == (e.tw[j] < 0) {
				// KL(N_i ‖ N_j) = ½[(μ_i−μ_j)ᵀΣ_j⁻¹(μ_i−μ_j) + tr(Σ_j⁻¹Σ_i) − d − ln(det Σ_i / det Σ_j)]
				var t [3]T
				for c := range d {
					t[c] = e.tmu[i][c] - e.tmu[j][c]
				}
				kl = 0.5 * (quadForm(d, e.inv[s][:d*d], t[:d]) + e.tr[i*k+s] - T(d) - e.logDet[i] + e.logDet[j])
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

// prepare sets up the initial components of dec, given ln det Σ'_s in
// logDet: A_s = Σ'_s⁻¹ and the log normaliser, then for every target i and
// component s with t = μ_i − μ'_s the pair terms at_is = A_s t,
// tr_is = tr(A_s Σ_i) and logp_is = ln(a·b) (see forward), which the KL
// divergence and the likelihood share.
func (e *emFit[T]) prepare(dec *emDecision) {
	d, m, k := e.d, e.m, e.k
	for s := range k {
		j := dec.init[s]
		invDet(d, e.tcov[j][:d*d], e.inv[s][:d*d])
		e.logNorm[s] = -0.5 * (T(d)*T(hemLog2Pi) + e.logDet[j])
	}
	for i := range m {
		x, c := &e.tmu[i], &e.tcov[i]
		for s := range k {
			p := i*k + s
			a, mu, at := &e.inv[s], &e.tmu[dec.init[s]], &e.at[p]
			var qf T
			if d == 2 {
				t0, t1 := x[0]-mu[0], x[1]-mu[1]
				at[0], at[1] = a[0]*t0+a[1]*t1, a[2]*t0+a[3]*t1
				qf = t0*at[0] + t1*at[1]
				e.tr[p] = a[0]*c[0] + a[1]*c[2] + a[2]*c[1] + a[3]*c[3]
			} else {
				t0, t1, t2 := x[0]-mu[0], x[1]-mu[1], x[2]-mu[2]
				at[0] = a[0]*t0 + a[1]*t1 + a[2]*t2
				at[1] = a[3]*t0 + a[4]*t1 + a[5]*t2
				at[2] = a[6]*t0 + a[7]*t1 + a[8]*t2
				qf = t0*at[0] + t1*at[1] + t2*at[2]
				e.tr[p] = a[0]*c[0] + a[1]*c[3] + a[2]*c[6] +
					a[3]*c[1] + a[4]*c[4] + a[5]*c[7] +
					a[6]*c[2] + a[7]*c[5] + a[8]*c[8]
			}
			e.logp[p] = e.logNorm[s] - 0.5*qf - 0.5*e.tr[p]
		}
	}
}

// hemDet returns the determinant of the d×d row-major matrix m.
func hemDet[T Float](d int, m *[9]T) T {
	if d == 2 {
		return m[0]*m[3] - m[1]*m[2]
	}
	return m[0]*(m[4]*m[8]-m[5]*m[7]) - m[1]*(m[3]*m[8]-m[5]*m[6]) + m[2]*(m[3]*m[7]-m[4]*m[6])
}

// forward runs the EM step with the frozen decisions dec, after prepare:
//
//	W = max(Σ_i w_i, ε), ŵ_i = w_i/W; v_s = w_{init_s}, V = max(Σ_s v_s, ε), v̂_s = v_s/V
//	L_is = max(N(μ_i; μ'_s, Σ'_s)·exp(−½ tr(Σ'_s⁻¹Σ_i)), ε)^(4ŵ_i)
//	q_is = max(v̂_s L_is, ε)·mask_is, r_is = q_is / Σ_s q_is
//	ρ_is = r_is ŵ_i, π_s = Σ_i ρ_is, β_is = ρ_is / max(π_s, ε)
//	μ_s = Σ_i β_is μ_i, Σ_s = Σ_i β_is (Σ_i + (μ_i−μ_s)(μ_i−μ_s)ᵀ), w_s = π_s W
//
// with ε = 1e−13, (μ'_s, Σ'_s) = (μ, Σ)_{init_s}, and Σ_s = I where π_s < 1e−7.
// Σ_s w_s = Σ_i w_i whenever no clip is active. The likelihood is evaluated
// in the log domain, from ln(a·b) with a = N(μ_i; μ'_s, Σ'_s) and
// b = exp(−½ tr(Σ'_s⁻¹Σ_i)) from prepare, at one exponential per pair.
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
		e.vhat[s] = e.tw[dec.init[s]] / e.bigV
	}
	for i := range m {
		for s := range k {
			p := i*k + s
			e.l[p] = hemVirtualSamples * e.what[i] * max(e.logp[p], hemLogEpsSmall)
		}
	}
	hemExp(e.l[:m*k])
	clear(e.pi[:k])
	for i := range m {
		var sum T
		for s := range k {
			p := i*k + s
			var q T
			if dec.mask[i]&(1<<s) != 0 {
				q = max(e.vhat[s]*e.l[p], hemEpsSmall)
			}
			e.q[p] = q
			sum += q
		}
		e.sumq[i] = sum
		for s := range k {
			p := i*k + s
			e.r[p] = e.q[p] / sum
			e.pi[s] += e.r[p] * e.what[i]
		}
	}
	for s := range k {
		pic := max(e.pi[s], hemEpsSmall)
		var mu [3]T
		for i := range m {
			b := e.r[i*k+s] * e.what[i] / pic
			e.beta[i*k+s] = b
			for c := range d {
				mu[c] += b * e.tmu[i][c]
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
			bt := e.beta[i*k+s]
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
	clear(e.gtw[:m])
	clear(e.gtmu[:m])
	clear(e.gtcv[:m])
	clear(e.gwhat[:m])
	clear(e.gvhat[:k])
	clear(e.gimu[:k])
	clear(e.gicv[:k])
	clear(e.wcov[:k])
	var gW T

	// M-step: w_s = π_s W, μ_s = Σ β μ_i, Σ_s = Σ β (Σ_i + δδᵀ), δ = μ_i − μ_s.
	for s := range k {
		var gbeta [hemMaxM]T
		gpi := e.gow[s] * e.bigW
		gW += e.gow[s] * e.pi[s]
		gmu := e.gomu[s]
		if !e.dead[s] {
			g := &e.gocv[s]
			for i := range m {
				bt := e.beta[i*k+s]
				var t [3]T
				for c := range d {
					t[c] = e.tmu[i][c] - e.omu[s][c]
				}
				var dot T
				for r := range d {
					for c := range d {
						dot += g[r*d+c] * (e.tcov[i][r*d+c] + t[r]*t[c])
						e.gtcv[i][r*d+c] += bt * g[r*d+c]
					}
				}
				gbeta[i] += dot
				// ∂⟨G, δδᵀ⟩/∂δ = (G + Gᵀ) δ
				for r := range d {
					var gd T
					for c := range d {
						gd += (g[r*d+c] + g[c*d+r]) * t[c]
					}
					gd *= bt
					e.gtmu[i][r] += gd
					gmu[r] -= gd
				}
			}
		}
		for i := range m {
			var dot T
			for c := range d {
				dot += gmu[c] * e.tmu[i][c]
				e.gtmu[i][c] += e.beta[i*k+s] * gmu[c]
			}
			gbeta[i] += dot
		}
		// β_is = ρ_is / max(π_s, ε), π_s = Σ_i ρ_is, ρ_is = r_is ŵ_i
		pic := max(e.pi[s], hemEpsSmall)
		var gpic T
		for i := range m {
			gpic -= gbeta[i] * e.beta[i*k+s] / pic
		}
		if e.pi[s] > hemEpsSmall {
			gpi += gpic
		}
		for i := range m {
			grho := gbeta[i]/pic + gpi
			e.gq[i*k+s] = grho * e.what[i] // ∂L/∂r_is for now
			e.gwhat[i] += grho * e.r[i*k+s]
		}
	}
	// r_is = q_is / Σ_t q_it
	for i := range m {
		gq := e.gq[i*k : (i+1)*k]
		var dot T
		for s, g := range gq {
			dot += g * e.r[i*k+s]
		}
		for s := range gq {
			gq[s] = (gq[s] - dot) / e.sumq[i]
		}
	}
	// q_is = max(v̂_s L_is, ε)·mask, L = max(ab, ε)^(4ŵ_i)
	for i := range m {
		for s := range k {
			p := i*k + s
			if dec.mask[i]&(1<<s) == 0 || e.vhat[s]*e.l[p] <= hemEpsSmall {
				continue
			}
			l := e.l[p]
			e.gvhat[s] += e.gq[p] * l
			gl := e.gq[p] * e.vhat[s]
			logp := e.logp[p]
			e.gwhat[i] += gl * hemVirtualSamples * l * max(logp, hemLogEpsSmall)
			if logp <= hemLogEpsSmall {
				continue
			}
			// ∂L/∂p·p = 4ŵ L, and p = a·b, so ∂L/∂a·a = ∂L/∂b·b = 4ŵ L.
			ga := gl * hemVirtualSamples * e.what[i] * l
			at, inv := &e.at[p], &e.inv[s]
			for c := range d {
				e.gtmu[i][c] -= ga * at[c]
				e.gimu[s][c] += ga * at[c]
			}
			// ∂a/∂Σ' = ½a(A t tᵀA − A); ∂b/∂Σ' = ½b A Σ_i A, summed over i
			// as ½ A (Σ_i ∂L/∂b·b Σ_i) A below; ∂b/∂Σ_i = −½b A.
			for r := range d {
				for c := range d {
					e.gicv[s][r*d+c] += 0.5 * ga * (at[r]*at[c] - inv[r*d+c])
					e.wcov[s][r*d+c] += ga * e.tcov[i][r*d+c]
					e.gtcv[i][r*d+c] -= 0.5 * ga * inv[r*d+c]
				}
			}
		}
	}
	for s := range k {
		a, w := &e.inv[s], &e.wcov[s]
		for r := range d {
			var aw [3]T // row r of A W
			for u := range d {
				for v := range d {
					aw[v] += a[r*d+u] * w[u*d+v]
				}
			}
			for c := range d {
				var awa T
				for v := range d {
					awa += aw[v] * a[v*d+c]
				}
				e.gicv[s][r*d+c] += 0.5 * awa
			}
		}
	}
	// Initial components are copies of targets: v_s = w_j, μ'_s = μ_j, Σ'_s = Σ_j.
	var gV T
	for s := range k {
		gV -= e.gvhat[s] * e.vhat[s] / e.bigV
	}
	for s := range k {
		j := dec.init[s]
		gv := e.gvhat[s] / e.bigV
		if e.sumv > hemEpsSmall {
			gv += gV
		}
		e.gtw[j] += gv
		for c := range d {
			e.gtmu[j][c] += e.gimu[s][c]
		}
		for c := range d * d {
			e.gtcv[j][c] += e.gicv[s][c]
		}
	}
	for i := range m {
		gW -= e.gwhat[i] * e.what[i] / e.bigW
	}
	for i := range m {
		e.gtw[i] += e.gwhat[i] / e.bigW
		if e.sumw > hemEpsSmall {
			e.gtw[i] += gW
		}
	}
}

// hemExp replaces every v[i] by e^v[i] like expRow. In float32, where
// expRow clamps arguments at expMaxArg = 88 (e^88 ≈ 1.7e38, float32 itself
// overflows at 88.72), an argument above gives +Inf instead: a likelihood
// that large overflows the products that follow anyway, and must make the
// result non-finite, to be reported, rather than be silently capped.
func hemExp[T Float](v []T) {
	over := false
	for _, x := range v {
		over = over || x > expMaxArg
	}
	if !over || unsafe.Sizeof(v[0]) != 4 {
		expRow(v)
		return
	}
	for i, x := range v {
		if x > expMaxArg {
			v[i] = T(math.Inf(1))
			continue
		}
		expRow(v[i : i+1])
	}
}

// hemLog returns ln x: math.Log in float64, where the gradient checks need
// the exact value, log32 in float32.
func hemLog[T Float](x T) T {
	if unsafe.Sizeof(x) == 4 {
		return T(log32(float32(x)))
	}
	return T(math.Log(float64(x)))
}

// Constants of log32 (Cephes logf): ln(1+z) = z − z²/2 + z³·P(z) on
// z ∈ [√½−1, √2−1), P of degree 8; ln 2 = log2Hi + log2Lo with log2Hi
// exact in few bits, so that e·log2Hi is exact.
const (
	logP0  = 7.0376836292e-2
	logP1  = -1.1514610310e-1
	logP2  = 1.1676998740e-1
	logP3  = -1.2420140846e-1
	logP4  = 1.4249322787e-1
	logP5  = -1.6668057665e-1
	logP6  = 2.0000714765e-1
	logP7  = -2.4999993993e-1
	logP8  = 3.3333331174e-1
	log2Hi = 0.693359375
	log2Lo = -2.12194440e-4
)

// hemLog2Pi is ln 2π as math.Log rounds it.
var hemLog2Pi = math.Log(2 * math.Pi)

// log32 returns ln x in float32 within 2 ulp without calling math.Log for
// positive finite x: x = 2^e·f with f ∈ [√½, √2), ln x = e·ln 2 + ln f.
// Zero, negative, infinite and NaN arguments give math.Log's results.
func log32(x float32) float32 {
	if !(x > 0 && x <= math.MaxFloat32) {
		return float32(math.Log(float64(x)))
	}
	b := math.Float32bits(x)
	e := int32(b>>expMantLen) - expBias
	if b < 1<<expMantLen { // subnormal: normalise by 2²³ first
		b = math.Float32bits(x * (1 << expMantLen))
		e = int32(b>>expMantLen) - expBias - expMantLen
	}
	f := math.Float32frombits(b&(1<<expMantLen-1) | expBias<<expMantLen) // [1, 2)
	if f >= math.Sqrt2 {
		f *= 0.5
		e++
	}
	z := f - 1 // exact
	zz := z * z
	p := float32(logP0)
	p = p*z + logP1
	p = p*z + logP2
	p = p*z + logP3
	p = p*z + logP4
	p = p*z + logP5
	p = p*z + logP6
	p = p*z + logP7
	p = p*z + logP8
	fe := float32(e)
	y := p*z*zz + fe*log2Lo - 0.5*zz
	return z + y + fe*log2Hi
}

func abs[T Float](v T) T {
	if v < 0 {
		return -v
	}
	return v
}
