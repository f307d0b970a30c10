package cpu

import (
	"math"

	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// refineGrad holds one worker's buffers of the refinement's backward pass,
// allocated on its first refined mixture and reused for the others. Every
// adjoint ∂L/∂· is accumulated in float64; matrices are full d×d blocks,
// one per component.
type refineGrad[T Float] struct {
	y []T // the heuristic fit, refined again to rebuild the tape
	// Adjoints of the weight iterations: of the weights w (from the last
	// iteration back to the start w⁰), of the clamped targets t'_k and of
	// every iteration's sums s_k = Σ_j E'_kj w_j.
	w, t []float64
	s    [refineIterations][]float64
	// Adjoints of the refitted mixture's positions μ', inverse covariances
	// A' = Σ'⁻¹ and normalisations nrm', and of the EM sums W, M and C.
	mu2      [3][]float64
	a2, nrm2 []float64
	em       []float64
	m        [3][]float64
	c        [6][]float64
	// Adjoints of the input: its positions and covariances (the direct
	// paths, the heuristic's added at the end), A = Σ⁻¹, nrm, a·nrm and
	// wh·nrm with wh the heuristic weights, and wh itself.
	mu          [3][]float64
	cov, ain    []float64
	nrm, an, wn []float64
	wh          []float64
	// Per sample point: ∂L/∂r_j of every responsibility-weighted mass, the
	// direct ∂L/∂(p − μ_j) through the moments, and p − μ_j itself.
	rb     []float64
	db, dl [3][]float64
	// The inverse covariances of the input and of the refitted mixture as
	// full d×d blocks, expanded once per mixture for the adjoint loops.
	aIn, aNx []float64
}

func newRefineGrad[T Float](n, d int) *refineGrad[T] {
	dd := d * d
	f := func(k int) []float64 { return make([]float64, k) }
	g := &refineGrad[T]{
		y: make([]T, n*mixture.PackedLen(d)),
		w: f(n), t: f(n), a2: f(n * dd), nrm2: f(n), em: f(n),
		cov: f(n * dd), ain: f(n * dd), nrm: f(n), an: f(n), wn: f(n), wh: f(n), rb: f(n),
		aIn: f(n * dd), aNx: f(n * dd),
	}
	for i := range refineIterations {
		g.s[i] = f(n)
	}
	for a := range d {
		g.mu2[a], g.m[a], g.mu[a], g.db[a], g.dl[a] = f(n), f(n), f(n), f(n), f(n)
	}
	for i := range symCount(d) {
		g.c[i] = f(n)
	}
	return g
}

// reset zeroes the adjoints that the pass accumulates into.
func (g *refineGrad[T]) reset() {
	for _, v := range [][]float64{g.t, g.a2, g.nrm2, g.em, g.cov, g.ain, g.nrm, g.an, g.wn, g.wh} {
		clear(v)
	}
	for a := range g.mu {
		clear(g.mu[a])
		clear(g.mu2[a])
		clear(g.m[a])
	}
	for i := range g.c {
		clear(g.c[i])
	}
}

// refineBackward writes ∂L/∂x of the refined fit of one mixture x into dx,
// which holds the incoming gradient of the output on entry, and returns
// ∂L/∂κ. s holds x loaded with its heuristic sums. The pass refits x to
// rebuild the refinement's tape, runs its steps backwards (the weight
// iterations, the matrix E' and the targets at the new centroids, the new
// moments, the EM step at the sigma points with their Cholesky factors)
// and hands the gradient of the heuristic weights, whose only use is the
// refinement, to the heuristic's backward pass. Discrete decisions (the
// clamps, which samples count, which components receive mass) are held
// fixed; docs/algorithms.md, "Refined ReLU fit", has the formulas.
func (s *reluWork[T]) refineBackward(dx, x []T, p device.ReLUFitParams) (T, error) {
	n, d := s.n, s.d
	st, dd := mixture.PackedLen(d), d*d
	if s.refGrad == nil {
		s.refGrad = newRefineGrad[T](n, d)
	}
	g := s.refGrad
	copy(g.y, x)
	s.heuristicWeights(g.y, T(p.Off))
	if err := s.refine(g.y, p); err != nil {
		return 0, err
	}
	g.reset()
	r := s.ref
	for j := range n {
		symFull(s.sym, j, d, g.aIn[j*dd:])
		symFull(r.next.sym, j, d, g.aNx[j*dd:])
	}
	for k := range n {
		g.w[k] = float64(dx[k*st])
		for a := range d {
			g.mu2[a][k] = float64(dx[k*st+1+a])
		}
	}
	s.iterationsBackward(p.Off)
	s.matrixBackward()
	dkappa := s.targetsBackward()
	for j := range n {
		mirrorUpper(d, g.a2[j*dd:])
	}
	meanVarBar := s.momentsBackward(dx)
	for j := range n {
		for a := range d {
			g.cov[j*dd+a*d+a] += meanVarBar / float64(n*d)
		}
	}
	dkappa += s.emBackward(x)
	for j := range n {
		mirrorUpper(d, g.ain[j*dd:])
		nb := g.nrm[j] + g.an[j]*float64(s.a[j]) + g.wn[j]*r.wh[j]
		inverseBackward(d, g.aIn[j*dd:], g.ain[j*dd:], nb*float64(s.nrm[j]), g.cov[j*dd:])
		g.wh[j] += g.wn[j] * float64(s.nrm[j])
		gx := dx[j*st : (j+1)*st]
		gx[0] = T(g.wh[j])
		for a := range d {
			gx[1+a] = T(g.mu[a][j])
		}
		for e := range dd {
			gx[1+d+e] = T(g.cov[j*dd+e])
		}
	}
	dkappa += float64(s.backward(dx, p))
	for j := range n {
		dx[j*st] += T(g.an[j] * float64(s.nrm[j]))
	}
	return T(dkappa), nil
}

// iterationsBackward runs the weight iterations w_k ← w_k·t_k/(s_k + off)
// backwards from ∂L/∂w in g.w, leaving ∂L/∂w⁰ there, ∂L/∂t_k in g.t and
// every iteration's ∂L/∂s_k in g.s.
func (s *reluWork[T]) iterationsBackward(off float64) {
	n, r, g := s.n, s.ref, s.refGrad
	for i := refineIterations - 1; i >= 0; i-- {
		w, sum, sb := r.wIt[i], r.sIt[i], g.s[i]
		for k := range n {
			den := sum[k] + off
			if !(den > 0) {
				sb[k] = 0 // the forward pass kept w_k
				continue
			}
			sb[k] = -g.w[k] * w[k] * r.t[k] / (den * den)
			g.t[k] += g.w[k] * w[k] / den
			g.w[k] *= r.t[k] / den
		}
		for k := range n {
			for j, e := range r.e[k*n : (k+1)*n] {
				g.w[j] += sb[k] * float64(e)
			}
		}
	}
}

// matrixBackward adds the gradient of E'_kj = nrm'_j exp(−½ δᵀA'_j δ),
// δ = μ'_k − μ'_j, to the refitted positions, inverse covariances and
// normalisations; ∂L/∂E'_kj = Σ_i ∂L/∂s_k⁽ⁱ⁾ w_j⁽ⁱ⁾ is formed entry by
// entry.
func (s *reluWork[T]) matrixBackward() {
	n, d, dd := s.n, s.d, s.d*s.d
	r, g, nx := s.ref, s.refGrad, s.ref.next
	var sbk [refineIterations]float64
	for k := range n {
		for i := range sbk {
			sbk[i] = g.s[i][k]
		}
		for j, e := range r.e[k*n : (k+1)*n] {
			var eb float64
			for i, v := range sbk {
				eb += v * r.wIt[i][j]
			}
			ev := float64(e)
			g.nrm2[j] += eb * ev / float64(nx.nrm[j])
			if j == k {
				continue
			}
			var dl [3]float64
			for c := range d {
				dl[c] = float64(nx.mu[c][k]) - float64(nx.mu[c][j])
			}
			u := quadBackward(d, g.aNx[j*dd:], &dl, eb*ev, g.a2[j*dd:])
			for c := range d {
				g.mu2[c][k] -= u[c]
				g.mu2[c][j] += u[c]
			}
		}
	}
}

// targetsBackward adds the gradient of the targets
// t'_k = Σ_j a_j nrm_j exp(−½ dᵀA_j d) + κ, d = μ'_k − μ_j, behind the
// clamp max(t'_k, 0), to the refitted positions and the input, and
// returns its part of ∂L/∂κ.
func (s *reluWork[T]) targetsBackward() (dkappa float64) {
	n, d, dd := s.n, s.d, s.d*s.d
	r, g, nx := s.ref, s.refGrad, s.ref.next
	v := s.row[:n]
	var pt [3]T
	for k := range n {
		tb := g.t[k]
		if !(r.tau[k] > 0) || tb == 0 {
			continue
		}
		dkappa += tb
		for c := range d {
			pt[c] = nx.mu[c][k]
		}
		s.rowAt(pt[:d], v)
		for j, vj := range v {
			ev := float64(vj)
			g.an[j] += tb * ev
			var dl [3]float64
			for c := range d {
				dl[c] = float64(pt[c]) - float64(s.mu[c][j])
			}
			u := quadBackward(d, g.aIn[j*dd:], &dl, tb*float64(s.an[j])*ev, g.ain[j*dd:])
			for c := range d {
				g.mu2[c][k] -= u[c]
				g.mu[c][j] += u[c]
			}
		}
	}
	return dkappa
}

// momentsBackward turns the adjoints of the refitted positions, inverse
// covariances and normalisations (and the incoming covariance gradient in
// dx) into those of the EM sums W, M, C, of the input positions and
// covariances of the components that kept theirs, and of the heuristic
// weights of those components, which start their weight iterations. It
// returns ∂L/∂τ̄ of the covariance floor's mean variance.
func (s *reluWork[T]) momentsBackward(dx []T) (meanVarBar float64) {
	n, d, dd := s.n, s.d, s.d*s.d
	st := mixture.PackedLen(d)
	r, g, nx := s.ref, s.refGrad, s.ref.next
	var cb [9]float64
	for j := range n {
		for e := range dd {
			cb[e] = float64(dx[j*st+1+d+e])
		}
		inverseBackward(d, g.aNx[j*dd:], g.a2[j*dd:], g.nrm2[j]*float64(nx.nrm[j]), cb[:])
		for c := range d {
			g.mu[c][j] += g.mu2[c][j]
		}
		if !r.alive[j] {
			for e := range dd {
				g.cov[j*dd+e] += cb[e]
			}
			g.wh[j] += g.w[j]
			continue
		}
		w := r.w[j]
		var m, mb [3]float64
		for c := range d {
			m[c] = r.m[c][j] / w
			mb[c] = g.mu2[c][j]
		}
		wb := g.w[j]
		for i, rc := range symIndex[d-2] {
			p, q := rc[0], rc[1]
			v := cb[p*d+q]
			if p != q {
				v += cb[q*d+p]
				mb[p] -= v * m[q]
				mb[q] -= v * m[p]
			} else {
				mb[p] -= 2 * v * m[p]
				meanVarBar += v * refineCovFloor
			}
			g.c[i][j] = v / w
			wb -= v * r.c[i][j] / (w * w)
		}
		for c := range d {
			g.m[c][j] = mb[c] / w
			wb -= mb[c] * r.m[c][j] / (w * w)
		}
		g.em[j] = wb
	}
	return meanVarBar
}

// emBackward runs the EM step backwards: at every sigma point p of every
// component of the input mixture x, recomputed as the forward pass
// computed it, the adjoints of
// W_j += r_j, M_j += r_j δ_j and C_j += r_j δ_j δ_jᵀ (δ_j = p − μ_j,
// r_j = wn_j v_j·α f/(q g)) reach the input's weights, positions,
// inverse covariances and normalisations, the heuristic weights (through
// wn) and, through p, the component's position and Cholesky factor. It
// returns its part of ∂L/∂κ.
func (s *reluWork[T]) emBackward(x []T) (dkappa float64) {
	n, d, dd := s.n, s.d, s.d*s.d
	st := mixture.PackedLen(d)
	r, g := s.ref, s.refGrad
	spread := math.Sqrt(float64(2*d+1) / 2)
	v := s.row[:n]
	nrm, an, wn := s.nrm[:n], s.an[:n], r.wn[:n]
	var pt [3]T
	for c := range n {
		gc := x[c*st:][:st]
		var l, lb [9]float64
		cholesky(d, gc[1+d:], l[:])
		for i := range 2*d + 1 {
			smp := s.sigmaPoint(&pt, gc[1:1+d], l[:], i, wn)
			scale := smp.scale
			if scale == 0 {
				continue
			}
			var scaleBar float64
			for j := range v {
				rj := float64(wn[j]*v[j]) * scale
				rb := g.em[j]
				var dl, db [3]float64
				for e := range d {
					dl[e] = float64(pt[e]) - float64(s.mu[e][j])
					g.dl[e][j] = dl[e]
					rb += g.m[e][j] * dl[e]
					db[e] = g.m[e][j]
				}
				for k, rc := range symIndex[d-2] {
					cb := g.c[k][j]
					rb += cb * dl[rc[0]] * dl[rc[1]]
					db[rc[0]] += cb * dl[rc[1]]
					db[rc[1]] += cb * dl[rc[0]]
				}
				g.rb[j] = rb
				for e := range d {
					g.db[e][j] = db[e] * rj
				}
				g.wn[j] += rb * float64(v[j]) * scale
				scaleBar += rb * float64(wn[j]*v[j])
			}
			fb := scaleBar * scale / smp.f
			qb := -scaleBar * scale / smp.q
			gb := -scaleBar * scale / smp.g
			dkappa += fb
			var pb [3]float64
			for j := range v {
				ev := float64(v[j])
				g.an[j] += fb * ev
				g.nrm[j] += qb * ev
				g.wn[j] += gb * ev
				vb := g.rb[j]*float64(wn[j])*scale + fb*float64(an[j]) + qb*float64(nrm[j]) + gb*float64(wn[j])
				var dl [3]float64
				for e := range d {
					dl[e] = g.dl[e][j]
				}
				u := quadBackward(d, g.aIn[j*dd:], &dl, vb*ev, g.ain[j*dd:])
				for e := range d {
					pb[e] += g.db[e][j] - u[e]
					g.mu[e][j] += u[e] - g.db[e][j]
				}
			}
			for e := range d {
				g.mu[e][c] += pb[e]
				if i > 0 {
					lb[e*d+smp.axis] += smp.sign * spread * pb[e]
				}
			}
		}
		choleskyBackward(d, l[:], lb[:], g.cov[c*dd:])
	}
	return dkappa
}

// quadBackward returns c·Aδ and adds −½ c·δδᵀ to the upper triangle of ab
// (mirrorUpper completes it): with c = ∂L/∂v·v for v = exp(−½ δᵀAδ), the
// gradients ∂L/∂δ = −c·Aδ and ∂L/∂A = −½ c·δδᵀ (A symmetric, full).
func quadBackward(d int, a []float64, dl *[3]float64, c float64, ab []float64) (u [3]float64) {
	for r := range d {
		var v float64
		for k := range d {
			v += a[r*d+k] * dl[k]
		}
		u[r] = c * v
		h := c / 2 * dl[r]
		for k := r; k < d; k++ {
			ab[r*d+k] -= h * dl[k]
		}
	}
	return u
}

// mirrorUpper copies the upper triangle of the d×d matrix a into its lower
// one.
func mirrorUpper(d int, a []float64) {
	for r := range d {
		for k := range r {
			a[r*d+k] = a[k*d+r]
		}
	}
}

// inverseBackward adds to cb the gradient of a covariance Σ given that of
// its inverse A (full, ab) and nb = ∂L/∂nrm·nrm for its normalisation
// nrm ∝ det(Σ)^(−½): −A·ab·A − ½ nb·A.
func inverseBackward(d int, a, ab []float64, nb float64, cb []float64) {
	var t, u [9]float64
	matMul(d, ab, a, t[:])
	matMul(d, a, t[:], u[:])
	for e := range d * d {
		cb[e] -= u[e] + nb/2*a[e]
	}
}

// symFull writes Gaussian j's symmetrised inverse covariance, stored as
// unique entries in sym, into the full d×d matrix a.
func symFull[T Float](sym [6][]T, j, d int, a []float64) {
	for i, rc := range symIndex[d-2] {
		v := float64(sym[i][j])
		a[rc[0]*d+rc[1]] = v
		a[rc[1]*d+rc[0]] = v
	}
}

// choleskyBackward adds to cb the gradient of the covariance a of
// cholesky(d, a, l) given lb = ∂L/∂L, which it overwrites: the forward
// loops run backwards. An off-diagonal entry's gradient is shared equally
// between its two copies, as cholesky reads their mean; a zero pivot passes
// no gradient.
func choleskyBackward(d int, l, lb, cb []float64) {
	for i := d - 1; i >= 0; i-- {
		for j := i; j >= 0; j-- {
			var sb float64
			switch {
			case i == j && l[i*d+i] > 0:
				sb = lb[i*d+i] / (2 * l[i*d+i])
			case i != j && l[j*d+j] > 0:
				sb = lb[i*d+j] / l[j*d+j]
				lb[j*d+j] -= sb * l[i*d+j]
			default:
				continue
			}
			for k := range j {
				lb[i*d+k] -= sb * l[j*d+k]
				lb[j*d+k] -= sb * l[i*d+k]
			}
			if i == j {
				cb[i*d+i] += sb
			} else {
				cb[i*d+j] += sb / 2
				cb[j*d+i] += sb / 2
			}
		}
	}
}
