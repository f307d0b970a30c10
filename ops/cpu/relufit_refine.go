package cpu

import (
	"math"

	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
)

// Constants of the refinement stage of the ReLU fit (docs/algorithms.md,
// "Refined ReLU fit"). They were chosen on the fitting-error benchmark
// (docs/fitting-error.md): a second EM step lowered the error by less than
// a tenth of what the first one gained, and the weight iterations level off
// after about ten.
const (
	// refineIterations is the number of weight iterations after the EM
	// step.
	refineIterations = 10
	// refineCovFloor, times the input's mean variance (mean trace / D), is
	// added to every refitted covariance: a component whose samples lie
	// almost on a line would otherwise become singular.
	refineCovFloor = 1e-2
	// refineDeadShare is the share of the largest EM mass below which a
	// component counts as receiving none: it keeps its position and
	// covariance.
	refineDeadShare = 1e-9
	// RefineMaxN is the largest component count the refinement accepts: its
	// weight iterations keep the N×N matrix of Gaussian values per worker
	// (64 MiB in float32 at this size).
	RefineMaxN = 4096
)

// refineWork holds one worker's buffers of the refinement, allocated on
// the first refined mixture and reused for the others.
type refineWork[T Float] struct {
	next *reluWork[T] // the refitted mixture
	wn   []T          // heuristic weights times normalisation
	// EM sums per component: mass W, first moments M about μ_j and second
	// moments C about μ_j (unique entries, order as reluWork.sym).
	w  []float64
	m  [3][]float64
	c  [6][]float64
	w0 []float64 // start of the weight iterations
	e  []T       // E'_kj of the refitted mixture, row-major
	t  []float64 // max(t'_k, 0) + off at the refitted centroids
	// The tape the backward pass reads (relufit_refine_backward.go): the
	// heuristic weights, the targets t'_k before the clamp, which
	// components received EM mass, the input's mean variance and, per
	// weight iteration, the weights it starts from and the sums
	// Σ_j E'_kj w_j.
	wh, tau  []float64
	alive    []bool
	meanVar  float64
	wIt, sIt [refineIterations][]float64
}

func newRefineWork[T Float](n, d int) *refineWork[T] {
	r := &refineWork[T]{
		next:  newReLUWork[T](n, d, false),
		wn:    make([]T, (n+reluLanes-1)/reluLanes*reluLanes),
		w:     make([]float64, n),
		w0:    make([]float64, n),
		e:     make([]T, n*n),
		t:     make([]float64, n),
		wh:    make([]float64, n),
		tau:   make([]float64, n),
		alive: make([]bool, n),
	}
	for i := range refineIterations {
		r.wIt[i], r.sIt[i] = make([]float64, n), make([]float64, n)
	}
	for i := range d {
		r.m[i] = make([]float64, n)
	}
	for i := range symCount(d) {
		r.c[i] = make([]float64, n)
	}
	return r
}

// refine improves the heuristic fit out (packed, same layout as the input
// loaded into s) in place: one EM step moves every component's weight,
// position and covariance towards the positive part of the input plus its
// constant κ ≤ 0 (a positive κ is an error), sampled
// at the sigma points of every component, and refineIterations weight
// iterations at the new centroids then match the fit's values to the
// positive part of the input there. See docs/algorithms.md, "Refined ReLU
// fit", for the derivation.
func (s *reluWork[T]) refine(out []T, p device.ReLUFitParams) error {
	n, d := s.n, s.d
	if s.kappa > 0 {
		// max(f + κ, 0) − κ⁺ is negative where −κ < f < 0, and EM fits
		// densities.
		return errors.Errorf("the refined fit needs constants κ ≤ 0, got %v", s.kappa)
	}
	if n > RefineMaxN {
		return errors.Errorf("the refined fit supports at most %d components per mixture, got %d", RefineMaxN, n)
	}
	if s.ref == nil {
		s.ref = newRefineWork[T](n, d)
	}
	r := s.ref
	st := mixture.PackedLen(d)
	clear(r.wn)
	for j := range n {
		r.wh[j] = float64(out[j*st])
		r.wn[j] = out[j*st] * s.nrm[j]
	}
	s.emStep(out, r)
	meanVar := meanTrace(out[:n*st], d) / float64(d)
	r.meanVar = meanVar
	var wmax float64
	for _, w := range r.w {
		wmax = max(wmax, w)
	}
	for j, w := range r.w {
		g := out[j*st:][:st]
		r.w0[j] = float64(g[0])
		r.alive[j] = w > refineDeadShare*wmax
		if !r.alive[j] {
			continue
		}
		r.w0[j] = w
		var m [3]float64
		for i := range d {
			m[i] = r.m[i][j] / w
			g[1+i] += T(m[i])
		}
		for i, rc := range symIndex[d-2] {
			c := r.c[i][j]/w - m[rc[0]]*m[rc[1]]
			if symDiagonal[d-2][i] {
				c += refineCovFloor * meanVar
			}
			g[1+d+rc[0]*d+rc[1]] = T(c)
			g[1+d+rc[1]*d+rc[0]] = T(c)
		}
	}
	if err := r.next.load(out, 0, p); err != nil {
		return errors.Wrap(err, "refined fit")
	}
	s.refineWeights(out, r, T(p.Off))
	return nil
}

// emStep accumulates, per component j of the heuristic fit, the EM mass,
// first and second moments (about μ_j) of the positive part of the input.
// The samples are the 2D+1 sigma points of every component c: μ_c and
// μ_c ± √((2D+1)/2)·L_c e_i with Σ_c = L_c L_cᵀ; each point's weight
// α/(N·q(p)), α = 1/(2D+1), q the equal-weight mixture of the components,
// makes the sum over all points a quadrature of the integral over space.
func (s *reluWork[T]) emStep(out []T, r *refineWork[T]) {
	n, d := s.n, s.d
	st := mixture.PackedLen(d)
	clear(r.w)
	for i := range d {
		clear(r.m[i])
	}
	for i := range symCount(d) {
		clear(r.c[i])
	}
	var pt [3]T
	for c := range n {
		g := out[c*st:][:st]
		var l [9]float64
		cholesky(d, g[1+d:], l[:])
		for i := range 2*d + 1 {
			smp := s.sigmaPoint(&pt, g[1:1+d], l[:], i, r.wn)
			if smp.scale == 0 {
				continue
			}
			if d == 2 {
				r.accumulate2(s, pt, smp.scale)
			} else {
				r.accumulate3(s, pt, smp.scale)
			}
		}
	}
}

// sigmaSample describes one sigma point: its share α·f/(q·g) of the EM
// sums (0 where f, q or g is not positive: the point then counts for
// nothing), the sums f = Σ_j a_j nrm_j v_j + κ, q = Σ_j nrm_j v_j and
// g = Σ_j wn_j v_j over the input's Gaussians v_j at the point (wn the
// heuristic weights times nrm), and the offset's sign and axis.
type sigmaSample struct {
	scale, f, q, g, sign float64
	axis                 int
}

// sigmaPoint writes sigma point i of a component with position mu and
// Cholesky factor l into p: mu for i = 0, mu + sign·√((2D+1)/2)·L e_axis
// for i = 2·axis + 1 (sign +1) and 2·axis + 2 (sign −1). It leaves the
// input's Gaussians at p in s.row.
func (s *reluWork[T]) sigmaPoint(p *[3]T, mu []T, l []float64, i int, wn []T) sigmaSample {
	d := s.d
	smp := sigmaSample{sign: 1, axis: (i - 1) / 2}
	if i%2 == 0 {
		smp.sign = -1
	}
	spread := math.Sqrt(float64(2*d+1) / 2)
	for a := range d {
		x := float64(mu[a])
		if i > 0 {
			x += smp.sign * spread * l[a*d+smp.axis]
		}
		p[a] = T(x)
	}
	v := s.row[:s.n]
	s.rowAt(p[:d], v)
	nrm, an, wn := s.nrm[:s.n], s.an[:s.n], wn[:s.n]
	var f, q, gs T
	for j := range v {
		f += an[j] * v[j]
		q += nrm[j] * v[j]
		gs += wn[j] * v[j]
	}
	f += s.kappa
	smp.f, smp.q, smp.g = float64(f), float64(q), float64(gs)
	if f > 0 && gs > 0 && q > 0 {
		alpha := 1 / float64(2*d+1)
		smp.scale = alpha * smp.f / smp.q / smp.g
	}
	return smp
}

// accumulate2 adds the sample at p with weight scale·wn_j·v_j (v in s.row) to
// every component's EM sums in 2D.
func (r *refineWork[T]) accumulate2(s *reluWork[T], p [3]T, scale float64) {
	n := s.n
	v, wn := s.row[:n], r.wn[:n]
	m0, m1 := s.mu[0][:n], s.mu[1][:n]
	w, s0, s1 := r.w[:n], r.m[0][:n], r.m[1][:n]
	c00, c01, c11 := r.c[0][:n], r.c[1][:n], r.c[2][:n]
	p0, p1 := float64(p[0]), float64(p[1])
	for j := range v {
		rj := float64(wn[j]*v[j]) * scale
		d0, d1 := p0-float64(m0[j]), p1-float64(m1[j])
		r0, r1 := rj*d0, rj*d1
		w[j] += rj
		s0[j] += r0
		s1[j] += r1
		c00[j] += r0 * d0
		c01[j] += r0 * d1
		c11[j] += r1 * d1
	}
}

// accumulate3 is accumulate2 in 3D.
func (r *refineWork[T]) accumulate3(s *reluWork[T], p [3]T, scale float64) {
	n := s.n
	v, wn := s.row[:n], r.wn[:n]
	m0, m1, m2 := s.mu[0][:n], s.mu[1][:n], s.mu[2][:n]
	w, s0, s1, s2 := r.w[:n], r.m[0][:n], r.m[1][:n], r.m[2][:n]
	c00, c01, c02 := r.c[0][:n], r.c[1][:n], r.c[2][:n]
	c11, c12, c22 := r.c[3][:n], r.c[4][:n], r.c[5][:n]
	p0, p1, p2 := float64(p[0]), float64(p[1]), float64(p[2])
	for j := range v {
		rj := float64(wn[j]*v[j]) * scale
		d0, d1, d2 := p0-float64(m0[j]), p1-float64(m1[j]), p2-float64(m2[j])
		r0, r1, r2 := rj*d0, rj*d1, rj*d2
		w[j] += rj
		s0[j] += r0
		s1[j] += r1
		s2[j] += r2
		c00[j] += r0 * d0
		c01[j] += r0 * d1
		c02[j] += r0 * d2
		c11[j] += r1 * d1
		c12[j] += r1 * d2
		c22[j] += r2 * d2
	}
}

// refineWeights runs the weight iterations w ← w·(max(t, 0) + off)/(E'w + off)
// from the EM masses r.w0, with t the input's values and E' the refitted
// mixture's Gaussians at the refitted centroids, and writes the weights
// into out.
func (s *reluWork[T]) refineWeights(out []T, r *refineWork[T], off T) {
	n, d := s.n, s.d
	st := mixture.PackedLen(d)
	nx := r.next
	v := s.row[:n]
	var pt [3]T
	for k := range n {
		for a := range d {
			pt[a] = nx.mu[a][k]
		}
		s.rowAt(pt[:d], v)
		t := s.kappa
		for j := range v {
			t += s.an[j] * v[j]
		}
		r.tau[k] = float64(t)
		r.t[k] = float64(max(t, 0) + off)
		nx.rowAt(pt[:d], nx.row)
		row := r.e[k*n : (k+1)*n]
		for j, x := range nx.row[:n] {
			row[j] = x * nx.nrm[j]
		}
	}
	w := r.w0
	for i := range refineIterations {
		copy(r.wIt[i], w)
		for k := range n {
			var e float64
			for j, x := range r.e[k*n : (k+1)*n] {
				e += float64(x) * w[j]
			}
			r.sIt[i][k] = e
		}
		for k := range n {
			// A zero sum means a zero weight (E'_kk > 0, weights ≥ 0),
			// which stays: the paper variant (off = 0) would divide 0 by
			// 0 where the input is nowhere positive.
			if den := r.sIt[i][k] + float64(off); den > 0 {
				w[k] *= r.t[k] / den
			}
		}
	}
	for k := range n {
		out[k*st] = T(w[k])
	}
}

// rowAt writes v_j = exp(−½ (p − μ_j)ᵀ Σ_j⁻¹ (p − μ_j)) for every Gaussian j
// of s into v[:n]; v is one of reluWork's rows, whose padding expPadded
// overwrites.
func (s *reluWork[T]) rowAt(p []T, v []T) {
	n := s.n
	v = v[:n]
	if s.d == 2 {
		m0, m1 := s.mu[0][:n], s.mu[1][:n]
		q00, q01, q11 := s.q[0][:n], s.q[1][:n], s.q[2][:n]
		for j := range v {
			d0, d1 := p[0]-m0[j], p[1]-m1[j]
			v[j] = d0*(q00[j]*d0+q01[j]*d1) + q11[j]*d1*d1
		}
	} else {
		m0, m1, m2 := s.mu[0][:n], s.mu[1][:n], s.mu[2][:n]
		q00, q01, q02 := s.q[0][:n], s.q[1][:n], s.q[2][:n]
		q11, q12, q22 := s.q[3][:n], s.q[4][:n], s.q[5][:n]
		for j := range v {
			d0, d1, d2 := p[0]-m0[j], p[1]-m1[j], p[2]-m2[j]
			v[j] = d0*(q00[j]*d0+q01[j]*d1+q02[j]*d2) + d1*(q11[j]*d1+q12[j]*d2) + q22[j]*d2*d2
		}
	}
	expPadded(v)
}

// cholesky writes the lower-triangular L with L·Lᵀ = (a + aᵀ)/2 (d×d,
// row-major) into l; a non-positive pivot, which a covariance that passed
// the fit's checks cannot have, gives a zero column. Reading the
// symmetrised matrix changes nothing for a symmetric a and shares the
// gradient of an off-diagonal entry equally between its two copies.
func cholesky[T Float](d int, a []T, l []float64) {
	for i := range d {
		for j := 0; j <= i; j++ {
			s := (float64(a[i*d+j]) + float64(a[j*d+i])) / 2
			for k := range j {
				s -= l[i*d+k] * l[j*d+k]
			}
			switch {
			case i == j && s > 0:
				l[i*d+i] = math.Sqrt(s)
			case i == j:
				l[i*d+i] = 0
			case l[j*d+j] > 0:
				l[i*d+j] = s / l[j*d+j]
			default:
				l[i*d+j] = 0
			}
		}
	}
}
