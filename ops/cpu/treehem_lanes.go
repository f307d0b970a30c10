package cpu

import "unsafe"

// hemLanesN is the number of tree nodes whose EM fits run at once in the
// lanes of hemLanes: one AVX-512 vector of float32.
const hemLanesN = 16

// hemLanesOK reports whether TreeHEM fits float32 nodes in the sixteen
// AVX-512 lanes of hemLanes: on CPUs with AVX-512 in a SIMD build, unless a
// test turns it off to compare with the scalar step.
var hemLanesOK = cpuAVX512

// hemLane holds one value of every lane.
type hemLane = [hemLanesN]float32

// hemLanes is the scratch of up to hemLanesN EM fits of TreeHEM nodes run
// side by side, lane j holding node j's fit of m_j ≤ m targets to k
// components, in float32. Its arrays are the fields of emFit turned
// inside out (structure of arrays), so that a kernel computes one quantity
// of all fits with one vector operation; the kernels (fit, covariances,
// backward) follow emFit's formulas term for term.
//
// A lane with fewer targets than m is padded with {w = 0, μ = 0, Σ = I}
// targets that may take component 0: their ŵ = 0 makes them add exactly
// zero to every sum of the fit and of its reverse pass, so a lane's result
// does not depend on the padding or on its neighbours.
//
// Every array is a whole number of 64-byte vectors, and newHEMLanes aligns
// the struct, so that no vector access straddles two cache lines.
type hemLanes struct {
	// Targets: w, μ, Σ staged; ŵ, ln det Σ, Σ_s q_is computed; gradients.
	w, what, logDet, sumq, gw, gwhat [hemMaxM]hemLane
	mu, gmu                          [hemMaxM][3]hemLane
	cov, gcov                        [hemMaxM][9]hemLane

	// Targets per lane, and initial's pairwise distances and cluster
	// labels.
	mj    [hemLanesN]int32
	dist  [hemMaxM * (hemMaxM - 1) / 2]hemLane
	label [hemMaxM][hemLanesN]int32

	// The KL masks as emDecision holds them (bit s of dmask[i]: target i
	// may take component s); the kernels work on mask.
	dmask [hemMaxM][hemLanesN]int32

	// Initial components: the targets they start from (init, and a copy
	// of their v, μ', Σ' in yw, ymu, ycov), A = Σ'⁻¹, ln det Σ', the log
	// normaliser and v̂; the gradients reaching the start targets.
	init                    [hemMaxT][hemLanesN]int32
	yw, ylog, logNorm, vhat [hemMaxT]hemLane
	ymu, ygmu               [hemMaxT][3]hemLane
	ycov, inv, ygcov        [hemMaxT][9]hemLane
	ygw                     [hemMaxT]hemLane

	// Fitted components (w, μ, Σ, π) and their incoming gradients.
	cw, pi, cgw [hemMaxT]hemLane
	cmu, cgmu   [hemMaxT][3]hemLane
	ccov, cgcov [hemMaxT][9]hemLane
	// Sums of the reverse pass per component (see emComp).
	gvhat, gsum   [hemMaxT]hemLane
	gat           [hemMaxT][3]hemLane
	gaat, gsig    [hemMaxT][9]hemLane
	sumw, bigW    hemLane
	sumv, bigV    hemLane
	at            [hemMaxP][3]hemLane // target i, component s at i·k + s
	logp, l, q, r [hemMaxP]hemLane
	beta, gq      [hemMaxP]hemLane
	mask          [hemMaxP]uint16 // bit j: lane j's target i may take component s
	dead          [hemMaxT]uint16 // bit j: lane j's component s has π < 1e−7
	d, m, k, n    int             // dimension, targets, components, lanes used
}

// newHEMLanes returns zeroed lanes on a 64-byte boundary. The struct holds
// no pointers, so it may live in a byte allocation.
func newHEMLanes() *hemLanes {
	buf := make([]byte, unsafe.Sizeof(hemLanes{})+63)
	p := unsafe.Pointer(unsafe.SliceData(buf))
	return (*hemLanes)(unsafe.Add(p, -uintptr(p)%64))
}

// start begins a batch of fits of d-dimensional targets to k components.
func (e *hemLanes) start(d, k int) {
	e.d, e.k, e.m, e.n = d, k, 0, 0
}

// laneSet stores the packed d-dimensional Gaussian g into lane j of w, μ
// and Σ.
func laneSet[T Float](d, j int, g []T, w *hemLane, mu *[3]hemLane, cov *[9]hemLane) {
	j &= hemLanesN - 1 // j is a lane; this lets the compiler drop the bounds checks
	if d == 2 {
		g = g[:7]
		w[j], mu[0][j], mu[1][j] = float32(g[0]), float32(g[1]), float32(g[2])
		cov[0][j], cov[1][j], cov[2][j], cov[3][j] = float32(g[3]), float32(g[4]), float32(g[5]), float32(g[6])
		return
	}
	g = g[:13]
	w[j], mu[0][j], mu[1][j], mu[2][j] = float32(g[0]), float32(g[1]), float32(g[2]), float32(g[3])
	cov[0][j], cov[1][j], cov[2][j] = float32(g[4]), float32(g[5]), float32(g[6])
	cov[3][j], cov[4][j], cov[5][j] = float32(g[7]), float32(g[8]), float32(g[9])
	cov[6][j], cov[7][j], cov[8][j] = float32(g[10]), float32(g[11]), float32(g[12])
}

// laneGet is laneSet's inverse; with add it adds to g instead.
func laneGet[T Float](d, j int, g []T, w *hemLane, mu *[3]hemLane, cov *[9]hemLane, add bool) {
	j &= hemLanesN - 1 // j is a lane; this lets the compiler drop the bounds checks
	if d == 2 {
		g = g[:7]
		if !add {
			clear(g)
		}
		g[0], g[1], g[2] = g[0]+T(w[j]), g[1]+T(mu[0][j]), g[2]+T(mu[1][j])
		g[3], g[4], g[5], g[6] = g[3]+T(cov[0][j]), g[4]+T(cov[1][j]), g[5]+T(cov[2][j]), g[6]+T(cov[3][j])
		return
	}
	g = g[:13]
	if !add {
		clear(g)
	}
	g[0], g[1], g[2], g[3] = g[0]+T(w[j]), g[1]+T(mu[0][j]), g[2]+T(mu[1][j]), g[3]+T(mu[2][j])
	g[4], g[5], g[6] = g[4]+T(cov[0][j]), g[5]+T(cov[1][j]), g[6]+T(cov[2][j])
	g[7], g[8], g[9] = g[7]+T(cov[3][j]), g[8]+T(cov[4][j]), g[9]+T(cov[5][j])
	g[10], g[11], g[12] = g[10]+T(cov[6][j]), g[11]+T(cov[7][j]), g[12]+T(cov[8][j])
}

// laneSetTarget stages the packed Gaussian g as target i of lane j.
func laneSetTarget[T Float](e *hemLanes, j, i int, g []T) {
	laneSet(e.d, j, g, &e.w[i], &e.mu[i], &e.cov[i])
}

// padLane fills the targets mj…m−1 of lane j with the neutral padding, and lets
// them take component 0.
func (e *hemLanes) padLane(j, mj int) {
	if mj == e.m {
		return
	}
	for i := mj; i < e.m; i++ {
		e.w[i][j] = 0
		for c := range e.d {
			e.mu[i][c][j] = 0
		}
		for c := range e.d * e.d {
			e.cov[i][c][j] = 0
		}
		for c := 0; c < e.d*e.d; c += e.d + 1 {
			e.cov[i][c][j] = 1
		}
		e.dmask[i][j] = 1
	}
}

// setInit stages the start targets init[:k] of lane j's components.
func (e *hemLanes) setInit(j int, init []uint8) {
	for s, i := range init[:e.k] {
		e.init[s][j] = int32(i)
	}
}

// getInit writes the start targets of lane j's components into init[:k].
func (e *hemLanes) getInit(j int, init []uint8) {
	for s := range init[:e.k] {
		init[s] = uint8(e.init[s][j])
	}
}

// setMask stages the KL masks of lane j's targets.
func (e *hemLanes) setMask(j int, mask []uint16) {
	for i, mi := range mask {
		e.dmask[i][j] = int32(mi)
	}
}

// getMask writes the KL masks of lane j's first len(mask) targets into mask.
func (e *hemLanes) getMask(j int, mask []uint16) {
	for i := range mask {
		mask[i] = uint16(e.dmask[i][j])
	}
}

// laneOutput writes fitted component s of lane j packed into g.
func laneOutput[T Float](e *hemLanes, j, s int, g []T) {
	laneGet(e.d, j, g, &e.cw[s], &e.cmu[s], &e.ccov[s], false)
}

// laneSetOutputGrad stages the packed gradient g of fitted component s of
// lane j.
func laneSetOutputGrad[T Float](e *hemLanes, j, s int, g []T) {
	laneSet(e.d, j, g, &e.cgw[s], &e.cgmu[s], &e.cgcov[s])
}

// laneAddTargetGrad adds the gradient of target i of lane j to the packed g.
func laneAddTargetGrad[T Float](e *hemLanes, j, i int, g []T) {
	laneGet(e.d, j, g, &e.gw[i], &e.gmu[i], &e.gcov[i], true)
}
