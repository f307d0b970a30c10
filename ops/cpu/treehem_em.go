package cpu

import (
	"math"
	"unsafe"

	"github.com/gmcn-go/gmcn/ops/mixture"
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

// emDecision holds the discrete choices of one EM fit of m targets to k
// components, frozen for the backward pass and for the frozen forward: the
// target index each fitted component starts from (init[:k]), and for every
// target the set of components it may be assigned to (bit s of mask[i],
// mask[:m]).
type emDecision struct {
	init []uint8
	mask []uint16
}

// emFit is the scratch of one fit of m ≤ 2T targets to k < m components,
// holding the forward intermediates the reverse pass needs. Positions are
// [3]T and covariances d×d row-major in [9]T, as packed. The arithmetic on
// them is written out per dimension (d = 2 or 3) in scalar locals: loops over
// a run-time d cost several times the arithmetic they do.
type emFit[T Float] struct {
	d, m, k    int
	sumw, bigW T // Σ_i w_i, W
	sumv, bigV T // Σ_s v_s, V
	tg         [hemMaxM]emTarget[T]
	cp         [hemMaxM]emComp[T]
	pt         [hemMaxP]emPairTerm[T] // target i and component s at i·k + s
	l          [hemMaxP]T             // L_is at i·k + s
	pairs      [hemMaxM * (hemMaxM - 1) / 2]emPair[T]
}

// emTarget is target i of a fit, (w, μ, Σ), with its intermediates and its
// gradient.
type emTarget[T Float] struct {
	w, what, logDet, sumq T // w_i, ŵ_i, ln det Σ_i, Σ_s q_is
	mu                    [3]T
	cov                   [9]T
	gw, gwhat             T // ∂L/∂w_i, ∂L/∂ŵ_i
	gmu                   [3]T
	gcov                  [9]T
}

// emComp is component s of a fit: the target it starts from and
// A = Σ'_s⁻¹ with the other intermediates, the result (w, μ, Σ) and its
// incoming gradient, and the sums of the reverse pass.
type emComp[T Float] struct {
	init              int
	inv               [9]T
	logNorm, vhat, pi T // ln((2π)^(−d/2) det(Σ'_s)^(−½)), v̂_s, π_s
	dead              bool
	w                 T
	mu                [3]T
	cov               [9]T
	gw                T
	gmu               [3]T
	gcov              [9]T
	// ∂L/∂v̂_s, and with g_is = ∂L/∂ln a_is (see backward) the sums over
	// targets Σ_i g_is, Σ_i g_is·at_is, Σ_i g_is·at_is at_isᵀ and Σ_i g_is·Σ_i.
	gvhat, gsum T
	gat         [3]T
	gaat, gsig  [9]T
}

// emPairTerm holds the quantities of target i and component s.
type emPairTerm[T Float] struct {
	at                   [3]T // Σ'_s⁻¹ (μ_i − μ'_s)
	tr, logp, q, r, beta T    // tr(Σ'_s⁻¹ Σ_i), ln(a·b) (see forward), q, r, β
	gq                   T    // ∂L/∂q (∂L/∂r on the way)
}

type emPair[T Float] struct {
	dist T
	i, j uint8
}

// hemLoad reads the packed d-dimensional Gaussian g into w, μ and Σ; in 2D
// μ[2] and Σ[4:] are left as they are, zero.
func hemLoad[T Float](d int, g []T, w *T, mu *[3]T, cov *[9]T) {
	if d == 2 {
		g = g[:7]
		*w, mu[0], mu[1] = g[0], g[1], g[2]
		cov[0], cov[1], cov[2], cov[3] = g[3], g[4], g[5], g[6]
		return
	}
	g = g[:13]
	*w, *mu, *cov = g[0], [3]T(g[1:4]), [9]T(g[4:13])
}

// hemStore writes w, μ and Σ packed in d dimensions into g.
func hemStore[T Float](d int, g []T, w T, mu *[3]T, cov *[9]T) {
	if d == 2 {
		g = g[:7]
		g[0], g[1], g[2], g[3], g[4], g[5], g[6] = w, mu[0], mu[1], cov[0], cov[1], cov[2], cov[3]
		return
	}
	g = g[:13]
	g[0] = w
	*(*[3]T)(g[1:4]) = *mu
	*(*[9]T)(g[4:13]) = *cov
}

// setTarget loads the packed Gaussian g into target slot i.
func (e *emFit[T]) setTarget(i int, g []T) {
	x := &e.tg[i]
	hemLoad(e.d, g, &x.w, &x.mu, &x.cov)
}

// output writes fitted component s packed into g; covariances must have run.
func (e *emFit[T]) output(s int, g []T) {
	c := &e.cp[s]
	hemStore(e.d, g, c.w, &c.mu, &c.cov)
}

// setOutputGrad loads the packed gradient g of fitted component s.
func (e *emFit[T]) setOutputGrad(s int, g []T) {
	c := &e.cp[s]
	hemLoad(e.d, g, &c.gw, &c.gmu, &c.gcov)
}

// addTargetGrad adds the gradient of target i to the packed g.
func (e *emFit[T]) addTargetGrad(i int, g []T) {
	x := &e.tg[i]
	if e.d == 2 {
		g = g[:7]
		g[0] += x.gw
		g[1] += x.gmu[0]
		g[2] += x.gmu[1]
		g[3] += x.gcov[0]
		g[4] += x.gcov[1]
		g[5] += x.gcov[2]
		g[6] += x.gcov[3]
		return
	}
	g = g[:13]
	g[0] += x.gw
	for c, v := range x.gmu {
		g[1+c] += v
	}
	for c, v := range x.gcov {
		g[4+c] += v
	}
}

// fit runs the EM step of the current m targets to k components: with
// record it first makes the decisions into dec (decide), else it replays
// them. The intermediates stay for backward; the fitted covariances are
// left to covariances.
func (e *emFit[T]) fit(dec emDecision, record bool) {
	tg := e.tg[:e.m]
	e.sumw = 0
	for i := range tg {
		e.sumw += tg[i].w
	}
	e.bigW = atLeast(e.sumw, hemEpsSmall)
	for i := range tg {
		tg[i].what = tg[i].w / e.bigW
	}
	if record {
		e.decide(dec)
	} else {
		for _, j := range dec.init[:e.k] {
			x := &e.tg[j]
			x.logDet = hemLog(hemDet(e.d, &x.cov))
		}
		e.prepare(dec)
	}
	e.forward(dec)
}

// initial chooses the targets the k components of a fit of the current m
// targets start from into init[:k] (reference fit_initial with
// CentroidDistance/MaxWeight); it reads only the targets' weights and
// positions.
//
// Single-linkage clustering (Kruskal) on squared centroid distances, +∞
// between targets of different sign, merged until k clusters remain; a
// cluster is named by its smallest member and absorbs the larger name.
// Clusters in ascending name order each contribute their member of largest
// |w| (first wins ties).
func (e *emFit[T]) initial(init []uint8) {
	d, m, k := e.d, e.m, e.k
	tg := e.tg[:m]
	// Pairs are made in ascending (i, j) order, and the insertion sort is
	// stable, so equal distances stay in that order, the reference's
	// tie-break.
	np := 0
	for i := range tg {
		for j := i + 1; j < m; j++ {
			dist := T(math.Inf(1))
			if (tg[i].w < 0) == (tg[j].w < 0) {
				dist = 0
				for c := range d {
					t := tg[i].mu[c] - tg[j].mu[c]
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
			if int(label[i]) == c && abs(tg[i].w) > abs(tg[best].w) {
				best = i
			}
		}
		init[s] = uint8(best)
		s++
	}
}

// decide makes the discrete choices of a fit of the current m targets to k
// components (initial, then the KL mask of the reference's fit_em), and
// prepares the fit.
//
// Mask: target i may be assigned to component s if both have the same sign and
// KL(N(μ_i,Σ_i) ‖ N(μ'_s,Σ'_s)) < 0.5, and always to its KL-closest component.
func (e *emFit[T]) decide(dec emDecision) {
	d, m, k := e.d, e.m, e.k
	tg := e.tg[:m]
	e.initial(dec.init)
	for i := range tg {
		tg[i].logDet = hemLog(hemDet(d, &tg[i].cov))
	}
	e.prepare(dec)
	for i := range tg {
		x := &tg[i]
		var mask uint16
		bestS, bestKL := 0, T(math.Inf(1))
		for s := range e.cp[:k] {
			y := &tg[e.cp[s].init]
			var kl T
			if (x.w < 0) == (y.w < 0) {
				// KL(N_i ‖ N_j) = ½[(μ_i−μ_j)ᵀΣ_j⁻¹(μ_i−μ_j) + tr(Σ_j⁻¹Σ_i) − d − ln(det Σ_i / det Σ_j)]
				a, t0, t1 := &e.cp[s].inv, x.mu[0]-y.mu[0], x.mu[1]-y.mu[1]
				var qf T // quadForm's formulas
				if d == 2 {
					qf = a[0]*t0*t0 + (a[1]+a[2])*t0*t1 + a[3]*t1*t1
				} else {
					t2 := x.mu[2] - y.mu[2]
					qf = a[0]*t0*t0 + a[4]*t1*t1 + a[8]*t2*t2 +
						(a[1]+a[3])*t0*t1 + (a[2]+a[6])*t0*t2 + (a[5]+a[7])*t1*t2
				}
				kl = 0.5 * (qf + e.pt[i*k+s].tr - T(d) - x.logDet + y.logDet)
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

// prepare sets up the initial components of dec, given ŵ_i and ln det Σ_j
// of their targets: v̂_s, A_s = Σ'_s⁻¹ and the log normaliser; then for
// every target i and component s with t = μ_i − μ'_s the pair terms
// at_is = A_s t, tr_is = tr(A_s Σ_i) and logp_is = ln(a·b), which the KL
// divergence and the likelihood share, and ln L_is (see forward).
func (e *emFit[T]) prepare(dec emDecision) {
	d, m, k := e.d, e.m, e.k
	cp := e.cp[:k]
	e.sumv = 0
	for s := range cp {
		c := &cp[s]
		c.init = int(dec.init[s])
		y := &e.tg[c.init]
		e.sumv += y.w
		mixture.InvDet(d, y.cov[:d*d], c.inv[:d*d])
		c.logNorm = -0.5 * (T(d)*T(hemLog2Pi) + y.logDet)
	}
	e.bigV = atLeast(e.sumv, hemEpsSmall)
	for s := range cp {
		cp[s].vhat = e.tg[cp[s].init].w / e.bigV
	}
	l := e.l[:m*k]
	for i := range e.tg[:m] {
		x := &e.tg[i]
		aw := hemVirtualSamples * x.what
		for s := range cp {
			c, p := &cp[s], &e.pt[i*k+s]
			a, y := &c.inv, &e.tg[c.init].mu
			var qf T
			if d == 2 {
				t0, t1 := x.mu[0]-y[0], x.mu[1]-y[1]
				a0, a1 := a[0]*t0+a[1]*t1, a[2]*t0+a[3]*t1
				p.at = [3]T{a0, a1}
				qf = t0*a0 + t1*a1
				p.tr = a[0]*x.cov[0] + a[1]*x.cov[2] + a[2]*x.cov[1] + a[3]*x.cov[3]
			} else {
				t0, t1, t2 := x.mu[0]-y[0], x.mu[1]-y[1], x.mu[2]-y[2]
				a0 := a[0]*t0 + a[1]*t1 + a[2]*t2
				a1 := a[3]*t0 + a[4]*t1 + a[5]*t2
				a2 := a[6]*t0 + a[7]*t1 + a[8]*t2
				p.at = [3]T{a0, a1, a2}
				qf = t0*a0 + t1*a1 + t2*a2
				v := &x.cov
				p.tr = a[0]*v[0] + a[1]*v[3] + a[2]*v[6] +
					a[3]*v[1] + a[4]*v[4] + a[5]*v[7] +
					a[6]*v[2] + a[7]*v[5] + a[8]*v[8]
			}
			p.logp = c.logNorm - 0.5*qf - 0.5*p.tr
			l[i*k+s] = aw * atLeast(p.logp, hemLogEpsSmall)
		}
	}
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
// Σ_s w_s = Σ_i w_i whenever no clip is active. fit computes W and ŵ,
// prepare V, v̂ and ln L_is = 4ŵ_i·max(ln(a·b), ln ε), from ln(a·b) with
// a = N(μ_i; μ'_s, Σ'_s) and b = exp(−½ tr(Σ'_s⁻¹Σ_i)): one exponential per
// pair. Σ_s is left to covariances: the reverse pass does not need it.
func (e *emFit[T]) forward(dec emDecision) {
	m, k := e.m, e.k
	tg, cp, l := e.tg[:m], e.cp[:k], e.l[:m*k]
	hemExp(l)
	for s := range cp {
		cp[s].pi = 0
	}
	for i := range tg {
		x, mask := &tg[i], dec.mask[i]
		var sum T
		for s := range cp {
			var q T
			if mask&(1<<s) != 0 {
				q = atLeast(cp[s].vhat*l[i*k+s], hemEpsSmall)
			}
			e.pt[i*k+s].q = q
			sum += q
		}
		x.sumq = sum
		for s := range cp {
			p := &e.pt[i*k+s]
			p.r = p.q / sum
			cp[s].pi += p.r * x.what
		}
	}
	for s := range cp {
		c := &cp[s]
		pic := atLeast(c.pi, hemEpsSmall)
		var mu0, mu1, mu2 T
		for i := range tg {
			p, x := &e.pt[i*k+s], &tg[i].mu
			p.beta = p.r * tg[i].what / pic
			mu0 += p.beta * x[0]
			mu1 += p.beta * x[1]
			mu2 += p.beta * x[2]
		}
		c.mu = [3]T{mu0, mu1, mu2}
		c.w = c.pi * e.bigW
		c.dead = c.pi < hemEpsLarge
	}
}

// covariances computes the fitted Σ_s of forward.
func (e *emFit[T]) covariances() {
	d, m, k := e.d, e.m, e.k
	for s := range e.cp[:k] {
		c := &e.cp[s]
		if c.dead {
			c.cov = [9]T{}
			for j := range d {
				c.cov[j*d+j] = 1
			}
			continue
		}
		if d == 2 {
			var c0, c1, c2, c3 T
			for i := range e.tg[:m] {
				x, bt := &e.tg[i], e.pt[i*k+s].beta
				t0, t1 := x.mu[0]-c.mu[0], x.mu[1]-c.mu[1]
				c0 += bt * (x.cov[0] + t0*t0)
				c1 += bt * (x.cov[1] + t0*t1)
				c2 += bt * (x.cov[2] + t1*t0)
				c3 += bt * (x.cov[3] + t1*t1)
			}
			c.cov = [9]T{c0, c1, c2, c3}
			continue
		}
		var c0, c1, c2, c3, c4, c5, c6, c7, c8 T
		for i := range e.tg[:m] {
			x, bt := &e.tg[i], e.pt[i*k+s].beta
			t0, t1, t2 := x.mu[0]-c.mu[0], x.mu[1]-c.mu[1], x.mu[2]-c.mu[2]
			v := &x.cov
			c0 += bt * (v[0] + t0*t0)
			c1 += bt * (v[1] + t0*t1)
			c2 += bt * (v[2] + t0*t2)
			c3 += bt * (v[3] + t1*t0)
			c4 += bt * (v[4] + t1*t1)
			c5 += bt * (v[5] + t1*t2)
			c6 += bt * (v[6] + t2*t0)
			c7 += bt * (v[7] + t2*t1)
			c8 += bt * (v[8] + t2*t2)
		}
		c.cov = [9]T{c0, c1, c2, c3, c4, c5, c6, c7, c8}
	}
}

// backward turns the gradients of the fitted components (gw, gmu, gcov of
// cp) into gradients of the targets (of tg), by reverse-mode
// differentiation of forward and covariances with the same decisions; clips
// pass no gradient where active. forward must have run on the same targets.
func (e *emFit[T]) backward(dec emDecision) {
	d, m, k := e.d, e.m, e.k
	tg, cp := e.tg[:m], e.cp[:k]
	for i := range tg {
		x := &tg[i]
		x.gw, x.gwhat, x.gmu, x.gcov = 0, 0, [3]T{}, [9]T{}
	}
	var gW T

	// M-step: w_s = π_s W, μ_s = Σ β μ_i, Σ_s = Σ β (Σ_i + δδᵀ), δ = μ_i − μ_s.
	for s := range cp {
		c := &cp[s]
		c.gvhat, c.gsum, c.gat, c.gaat, c.gsig = 0, 0, [3]T{}, [9]T{}, [9]T{}
		var gbeta [hemMaxM]T
		gpi := c.gw * e.bigW
		gW += c.gw * c.pi
		gmu := c.gmu
		if !c.dead {
			// ⟨G, Σ_i + δδᵀ⟩, whose gradient in δ is (G + Gᵀ) δ
			g := &c.gcov
			for i := range tg {
				x, bt := &tg[i], e.pt[i*k+s].beta
				v := &x.cov
				if d == 2 {
					t0, t1 := x.mu[0]-c.mu[0], x.mu[1]-c.mu[1]
					gbeta[i] = g[0]*(v[0]+t0*t0) + g[1]*(v[1]+t0*t1) + g[2]*(v[2]+t1*t0) + g[3]*(v[3]+t1*t1)
					g12 := g[1] + g[2]
					d0, d1 := bt*(2*g[0]*t0+g12*t1), bt*(g12*t0+2*g[3]*t1)
					x.gmu[0] += d0
					x.gmu[1] += d1
					gmu[0] -= d0
					gmu[1] -= d1
					addScaled4(&x.gcov, bt, g)
					continue
				}
				t0, t1, t2 := x.mu[0]-c.mu[0], x.mu[1]-c.mu[1], x.mu[2]-c.mu[2]
				gbeta[i] = g[0]*(v[0]+t0*t0) + g[1]*(v[1]+t0*t1) + g[2]*(v[2]+t0*t2) +
					g[3]*(v[3]+t1*t0) + g[4]*(v[4]+t1*t1) + g[5]*(v[5]+t1*t2) +
					g[6]*(v[6]+t2*t0) + g[7]*(v[7]+t2*t1) + g[8]*(v[8]+t2*t2)
				g01, g02, g12 := g[1]+g[3], g[2]+g[6], g[5]+g[7]
				d0 := bt * (2*g[0]*t0 + g01*t1 + g02*t2)
				d1 := bt * (g01*t0 + 2*g[4]*t1 + g12*t2)
				d2 := bt * (g02*t0 + g12*t1 + 2*g[8]*t2)
				x.gmu[0] += d0
				x.gmu[1] += d1
				x.gmu[2] += d2
				gmu[0] -= d0
				gmu[1] -= d1
				gmu[2] -= d2
				addScaled9(&x.gcov, bt, g)
			}
		}
		// β_is = ρ_is / max(π_s, ε), π_s = Σ_i ρ_is, ρ_is = r_is ŵ_i. The
		// reverse pass multiplies by reciprocals: divisions would make its
		// critical path.
		ipic := 1 / atLeast(c.pi, hemEpsSmall)
		var gpic T
		for i := range tg {
			x, bt := &tg[i], e.pt[i*k+s].beta
			gbeta[i] += gmu[0]*x.mu[0] + gmu[1]*x.mu[1] + gmu[2]*x.mu[2]
			x.gmu[0] += bt * gmu[0]
			x.gmu[1] += bt * gmu[1]
			x.gmu[2] += bt * gmu[2]
			gpic -= gbeta[i] * bt * ipic
		}
		if c.pi > hemEpsSmall {
			gpi += gpic
		}
		for i := range tg {
			p := &e.pt[i*k+s]
			grho := gbeta[i]*ipic + gpi
			p.gq = grho * tg[i].what // ∂L/∂r_is for now
			tg[i].gwhat += grho * p.r
		}
	}
	for i := range tg {
		x, pt := &tg[i], e.pt[i*k:(i+1)*k]
		// r_is = q_is / Σ_t q_it
		var dot T
		for s := range pt {
			dot += pt[s].gq * pt[s].r
		}
		isumq := 1 / x.sumq
		for s := range pt {
			pt[s].gq = (pt[s].gq - dot) * isumq
		}
		// q_is = max(v̂_s L_is, ε)·mask, L = max(ab, ε)^(4ŵ_i)
		for s := range cp {
			c, p, l := &cp[s], &e.pt[i*k+s], e.l[i*k+s]
			if dec.mask[i]&(1<<s) == 0 || c.vhat*l <= hemEpsSmall {
				continue
			}
			c.gvhat += p.gq * l
			gl := p.gq * c.vhat
			x.gwhat += gl * hemVirtualSamples * l * atLeast(p.logp, hemLogEpsSmall)
			if p.logp <= hemLogEpsSmall {
				continue
			}
			// ∂L/∂p·p = 4ŵ L, and p = a·b, so ∂L/∂a·a = ∂L/∂b·b = 4ŵ L:
			// g_is = ∂L/∂ln a = ∂L/∂ln b. ln a depends on μ_i by −at and on
			// μ'_s by at; on Σ'_s by ½(at atᵀ − A) and ln b by ½ A Σ_i A,
			// summed over i at the end; ln b on Σ_i by −½ A.
			g := gl * hemVirtualSamples * x.what * l
			c.gsum += g
			a, at := &c.inv, &p.at
			h := 0.5 * g
			if d == 2 {
				g0, g1 := g*at[0], g*at[1]
				x.gmu[0] -= g0
				x.gmu[1] -= g1
				c.gat[0] += g0
				c.gat[1] += g1
				c.gaat[0] += g0 * at[0]
				c.gaat[1] += g0 * at[1]
				c.gaat[2] += g1 * at[0]
				c.gaat[3] += g1 * at[1]
				addScaled4(&c.gsig, g, &x.cov)
				addScaled4(&x.gcov, -h, a)
				continue
			}
			for r := range 3 {
				gr := g * at[r]
				x.gmu[r] -= gr
				c.gat[r] += gr
				for j := range 3 {
					c.gaat[3*r+j] += gr * at[j]
				}
			}
			addScaled9(&c.gsig, g, &x.cov)
			addScaled9(&x.gcov, -h, a)
		}
	}
	// Initial components are copies of targets: v_s = w_j, μ'_s = μ_j,
	// Σ'_s = Σ_j, which collect ½(Σ_i g_is at atᵀ − (Σ_i g_is) A + A W A)
	// with W = Σ_i g_is Σ_i.
	var gV T
	ibigV := 1 / e.bigV
	for s := range cp {
		gV -= cp[s].gvhat * cp[s].vhat * ibigV
	}
	for s := range cp {
		c := &cp[s]
		y := &tg[c.init]
		gv := c.gvhat * ibigV
		if e.sumv > hemEpsSmall {
			gv += gV
		}
		y.gw += gv
		y.gmu[0] += c.gat[0]
		y.gmu[1] += c.gat[1]
		y.gmu[2] += c.gat[2]
		a := &c.inv
		aw := hemMatMul(d, a, &c.gsig)
		awa := hemMatMul(d, &aw, a)
		for j := range y.gcov[:d*d] {
			y.gcov[j] += 0.5 * (c.gaat[j] - c.gsum*a[j] + awa[j])
		}
	}
	ibigW := 1 / e.bigW
	for i := range tg {
		gW -= tg[i].gwhat * tg[i].what * ibigW
	}
	for i := range tg {
		x := &tg[i]
		x.gw += x.gwhat * ibigW
		if e.sumw > hemEpsSmall {
			x.gw += gW
		}
	}
}

// addScaled4 adds a·X to Y for 2×2 X and Y.
func addScaled4[T Float](y *[9]T, a T, x *[9]T) {
	y[0] += a * x[0]
	y[1] += a * x[1]
	y[2] += a * x[2]
	y[3] += a * x[3]
}

// addScaled9 adds a·X to Y for 3×3 X and Y.
func addScaled9[T Float](y *[9]T, a T, x *[9]T) {
	for j := range y {
		y[j] += a * x[j]
	}
}

// atLeast returns max(x, lo) for a lo that is neither NaN nor zero, NaN for
// NaN x as the builtin does, by one comparison: the builtin's rules for NaN
// and ±0 cost a dozen instructions.
func atLeast[T Float](x, lo T) T {
	if x < lo {
		return lo
	}
	return x
}

// hemMatMul returns the product A B of d×d row-major matrices.
func hemMatMul[T Float](d int, a, b *[9]T) [9]T {
	if d == 2 {
		return [9]T{a[0]*b[0] + a[1]*b[2], a[0]*b[1] + a[1]*b[3], a[2]*b[0] + a[3]*b[2], a[2]*b[1] + a[3]*b[3]}
	}
	var c [9]T
	for r := range 3 {
		a0, a1, a2 := a[3*r], a[3*r+1], a[3*r+2]
		c[3*r] = a0*b[0] + a1*b[3] + a2*b[6]
		c[3*r+1] = a0*b[1] + a1*b[4] + a2*b[7]
		c[3*r+2] = a0*b[2] + a1*b[5] + a2*b[8]
	}
	return c
}

// hemDet returns the determinant of the d×d row-major matrix m.
func hemDet[T Float](d int, m *[9]T) T {
	if d == 2 {
		return m[0]*m[3] - m[1]*m[2]
	}
	return m[0]*(m[4]*m[8]-m[5]*m[7]) - m[1]*(m[3]*m[8]-m[5]*m[6]) + m[2]*(m[3]*m[7]-m[4]*m[6])
}

// hemExp replaces every v[i] by e^v[i], with hemExpFast where it runs, else
// expRow. In float32, where both clamp arguments at expMaxArg = 88
// (e^88 ≈ 1.7e38, float32 itself overflows at 88.72), an argument above gives
// +Inf instead: a likelihood that large overflows the products that follow
// anyway, and must make the result non-finite, to be reported, rather than
// be silently capped.
func hemExp[T Float](v []T) {
	if unsafe.Sizeof(v[0]) == 4 {
		for _, x := range v {
			if x > expMaxArg {
				hemExpOverflow(v)
				return
			}
		}
	}
	if !hemExpFast(v) {
		expRow(v)
	}
}

// hemExpOverflow is hemExp where some float32 arguments exceed expMaxArg.
func hemExpOverflow[T Float](v []T) {
	var args [hemMaxP]T
	copy(args[:], v)
	if !hemExpFast(v) {
		expRow(v)
	}
	for i, x := range args[:len(v)] {
		if x > expMaxArg {
			v[i] = T(math.Inf(1))
		}
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
	// P by Estrin's scheme: its chain of dependent operations is half as
	// long as Horner's.
	z4 := zz * zz
	p01, p23 := float32(logP0)*z+logP1, float32(logP2)*z+logP3
	p45, p67 := float32(logP4)*z+logP5, float32(logP6)*z+logP7
	p := ((p01*zz+p23)*z4+(p45*zz+p67))*z + logP8
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
