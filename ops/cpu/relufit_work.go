package cpu

import (
	"math"

	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
)

// reluLanes is the padding granularity of the structure-of-arrays buffers:
// one AVX-512 vector of float32 (two AVX2 vectors). Padding entries have zero
// weights, so they add nothing to any sum, and finite parameters, so they
// never produce NaN.
const reluLanes = 16

// reluWork is one worker's structure-of-arrays copy of a mixture, laid out so
// that the O(N²) loops read contiguous arrays. Each term is
//
//	E_kj = nrm_j · exp(Σ_{r≤c} q_j,rc δ_r δ_c),  δ = μ_k − μ_j,
//
// with nrm_j = (2π)^(−D/2) det(Σ_j)^(−½), q_j,rr = −½A_rr and
// q_j,rc = −½(A_rc + A_cr) for A = Σ_j⁻¹: one exponential of a quadratic
// form. The normalisation multiplies the weights once per Gaussian (an, xn)
// instead of entering the exponent as a logarithm: that saves a log per
// Gaussian, and the exponent stays ≤ 0, where float32 loses least. The
// backward pass needs u = A δ and reads the symmetrised entries of A from sym.
type reluWork[T Float] struct {
	n, d int
	mu   [3][]T    // positions μ_j
	q    [6][]T    // exponent coefficients, order 00 01 11 (2D) or 00 01 02 11 12 22 (3D)
	sym  [6][]T    // symmetrised Σ_j⁻¹ entries in the same order
	nrm  []T       // normalisation N(μ_j; μ_j, Σ_j)
	an   []T       // a_j·nrm_j
	xn   []T       // x_j·nrm_j
	a, x []T       // input and coarse weights
	t, e []T       // target (κ included) and approximation at the centroids
	row  []T       // scratch: one row of exponents, then of their exponentials
	rowU [3][]T    // scratch: one row of u = A_j δ (backward)
	vec  []float32 // scratch of the vectorised float32 loops (relufit_simd.go)
	// consts holds the broadcast per-Gaussian constants of those loops.
	consts []float32
	// kappa is the mixture's constant κ.
	kappa T
	// given is set when the targets come from the caller (ReLUFit's t):
	// then an is zero, so the O(N²) sums leave the target's part at 0, and
	// the targets contribute no gradient to the mixture itself.
	given bool

	// Backward state: per centroid k the sensitivities gt = ∂L/∂t_k,
	// ge = ∂L/∂e_k, the direct ∂L/∂x_k and kq = Σ_j w_kj u_kj; per Gaussian j
	// ga = Σ_k gt_k E_kj, gx = Σ_k ge_k E_kj, u = Σ_k w_kj u_kj and
	// uu = Σ_k w_kj u_kj u_kjᵀ (unique entries).
	gt, ge, gxd []T
	kq          [3][]T
	ga, gx      []T
	u           [3][]T
	uu          [6][]T

	// ref holds the refinement's buffers once a refined fit has used this
	// worker (relufit_refine.go).
	ref *refineWork[T]
	// refGrad holds the refinement's backward buffers once a refined
	// backward pass has used this worker (relufit_refine_backward.go).
	refGrad *refineGrad[T]
}

// symCount returns the number of unique entries of a symmetric d×d matrix.
func symCount(d int) int { return d * (d + 1) / 2 }

// symIndex lists the (row, column) of each unique entry in storage order
// (00 01 11 in 2D, 00 01 02 11 12 22 in 3D), and symDiagonal which of them
// are diagonal.
var (
	symIndex = [2][][2]int{
		{{0, 0}, {0, 1}, {1, 1}},
		{{0, 0}, {0, 1}, {0, 2}, {1, 1}, {1, 2}, {2, 2}},
	}
	symDiagonal = [2][]bool{{true, false, true}, {true, false, false, true, false, true}}
)

func newReLUWork[T Float](n, d int, backward bool) *reluWork[T] {
	np := (n + reluLanes - 1) / reluLanes * reluLanes
	ns := symCount(d)
	arrays := d + 2*ns + 8
	if backward {
		arrays += 3 + d + 2 + d + ns + d
	}
	buf := make([]T, arrays*np)
	next := func() []T {
		s := buf[:np:np]
		buf = buf[np:]
		return s
	}
	s := &reluWork[T]{n: n, d: d}
	for r := range d {
		s.mu[r] = next()
	}
	for i := range ns {
		s.q[i], s.sym[i] = next(), next()
	}
	s.nrm, s.an, s.xn = next(), next(), next()
	s.a, s.x, s.t, s.e, s.row = next(), next(), next(), next(), next()
	if backward {
		s.gt, s.ge, s.gxd = next(), next(), next()
		s.ga, s.gx = next(), next()
		for r := range d {
			s.kq[r], s.u[r], s.rowU[r] = next(), next(), next()
		}
		for i := range ns {
			s.uu[i] = next()
		}
	}
	return s
}

// load fills the arrays from the packed mixture mx with constant kappa,
// computing each inverse and determinant once. It fails for a covariance
// whose determinant or inverse is not positive and finite in T (only
// possible for matrices that are singular at this precision): the vectorised
// exponential clamps its argument, so a NaN there would not survive as a NaN
// to be caught later.
func (s *reluWork[T]) load(mx []T, kappa T, p device.ReLUFitParams) error {
	d := s.d
	st := mixture.PackedLen(d)
	norm := mixture.GaussNorm(d)
	var inv [9]T
	s.kappa = kappa
	for j := range s.n {
		g := mx[j*st : (j+1)*st]
		det := mixture.InvDet(d, g[1+d:], inv[:d*d])
		nrm := T(norm / math.Sqrt(float64(det)))
		if !(det > 0) || !mixture.Finite(nrm) || !allFinite(inv[:d*d]) {
			return errors.Errorf("component %d: covariance %v is singular in %T (det %v)", j, g[1+d:], det, det)
		}
		s.a[j] = g[0]
		s.x[j] = device.CoarseWeight(p, g[0], kappa)
		s.nrm[j], s.an[j], s.xn[j] = nrm, s.a[j]*nrm, s.x[j]*nrm
		if s.given {
			s.an[j] = 0
		}
		for r := range d {
			s.mu[r][j] = g[1+r]
		}
		var h [6]T
		if d == 2 {
			h = [6]T{inv[0], (inv[1] + inv[2]) / 2, inv[3]}
		} else {
			h = [6]T{inv[0], (inv[1] + inv[3]) / 2, (inv[2] + inv[6]) / 2, inv[4], (inv[5] + inv[7]) / 2, inv[8]}
		}
		for i, diag := range symDiagonal[d-2] {
			s.sym[i][j] = h[i]
			if diag {
				s.q[i][j] = -h[i] / 2
			} else {
				s.q[i][j] = -h[i]
			}
		}
	}
	return nil
}

func allFinite[T Float](v []T) bool {
	for _, x := range v {
		if !mixture.Finite(x) {
			return false
		}
	}
	return true
}

// forward computes t_k and e_k for every centroid: the O(N²) sums, then κ
// added to the target.
func (s *reluWork[T]) forward() {
	if !reluForwardFast(s) {
		s.forwardSums()
	}
	if s.kappa != 0 {
		for k := range s.n {
			s.t[k] += s.kappa
		}
	}
}

// forwardSums runs the scalar O(N²) forward loop.
func (s *reluWork[T]) forwardSums() {
	if s.d == 2 {
		reluForward2(s)
	} else {
		reluForward3(s)
	}
}

// heuristicWeights writes the heuristic's output weights
// a″_k = x_k·(max(t_k, 0) − κ⁺ + off)/(e_k + off) into the packed mixture
// out.
func (s *reluWork[T]) heuristicWeights(out []T, off T) {
	st := mixture.PackedLen(s.d)
	kp := max(s.kappa, 0)
	for k := range s.n {
		out[k*st] = s.x[k] * (max(s.t[k], 0) - kp + off) / (s.e[k] + off)
	}
}

// backward adds ∂L/∂x of one mixture to dx, which holds the pass-through
// gradient g on entry, and returns ∂L/∂κ (see ReLUFitBackward for the
// formulas).
func (s *reluWork[T]) backward(dx []T, p device.ReLUFitParams) T {
	dk := s.sensitivities(dx, p)
	if !reluBackwardFast(s) {
		s.backwardSums()
	}
	return dk + s.gather(dx)
}

// sensitivities computes ∂L/∂t_k, ∂L/∂e_k and the direct ∂L/∂x_k from the
// incoming weight gradients in dx, and returns the part of ∂L/∂κ that
// reaches κ through the targets and κ⁺: Σ_k ∂L/∂t_k − [κ > 0]·∂L/∂b_k.
func (s *reluWork[T]) sensitivities(dx []T, p device.ReLUFitParams) (dkappa T) {
	d, n := s.d, s.n
	st := mixture.PackedLen(d)
	off := T(p.Off)
	kp := max(s.kappa, 0)
	for k := range n {
		g := dx[k*st]
		den := s.e[k] + off
		r := (max(s.t[k], 0) - kp + off) / den
		gb := g * s.x[k] / den
		s.gxd[k] = g * r
		s.gt[k] = 0
		if s.t[k] > 0 {
			s.gt[k] = gb
		}
		s.ge[k] = -g * s.x[k] * r / den
		dkappa += s.gt[k]
		if kp > 0 {
			dkappa -= gb
		}
	}
	// Padding centroids must contribute nothing to the vectorised sums.
	for k := n; k < len(s.gt); k++ {
		s.gt[k], s.ge[k] = 0, 0
	}
	return dkappa
}

// backwardSums runs the scalar O(N²) backward loop.
func (s *reluWork[T]) backwardSums() {
	if s.d == 2 {
		reluBackward2(s)
	} else {
		reluBackward3(s)
	}
}

// gather turns the backward sums into ∂L/∂x of one mixture, adding to the
// pass-through gradient in dx, and returns the part of ∂L/∂κ that reaches κ
// through the coarse weights.
func (s *reluWork[T]) gather(dx []T) (dkappa T) {
	d, n := s.d, s.n
	st := mixture.PackedLen(d)
	idx := symIndex[d-2]
	for j := range n {
		g := dx[j*st : (j+1)*st]
		ga := s.ga[j]
		if s.given {
			ga = 0
		}
		g[0] = ga
		switch da, dk := device.CoarseSlopes(s.a[j], s.kappa); {
		case da != 0:
			g[0] += da * (s.gxd[j] + s.gx[j])
		case dk != 0:
			dkappa += s.gxd[j] + s.gx[j]
		}
		for r := range d {
			g[1+r] += s.u[r][j] - s.kq[r][j]
		}
		w := s.a[j]*ga + s.x[j]*s.gx[j]
		cov := g[1+d:]
		for i, rc := range idx {
			v := (s.uu[i][j] - w*s.sym[i][j]) / 2
			r, c := rc[0], rc[1]
			cov[r*d+c] += v
			if r != c {
				cov[c*d+r] += v
			}
		}
	}
	return dkappa
}

// checkFiniteResult reports the first non-finite value of a result (only
// the weights if weightsOnly), naming its component.
func checkFiniteResult[T Float](data []T, l mixture.Layout, what string, weightsOnly bool) error {
	st, step := l.Stride(), 1
	if weightsOnly {
		step = st
	} else if mixture.CheckFinite(data) == nil {
		return nil // the branchless, parallel check; the loop below names the value
	}
	for i := 0; i < len(data); i += step {
		if v := data[i]; !mixture.Finite(v) {
			c := i / st
			return errors.Errorf("non-finite %s %v at component (b=%d, c=%d, n=%d): a covariance is too ill-conditioned for this precision",
				what, v, c/(l.C*l.N), (c/l.N)%l.C, c%l.N)
		}
	}
	return nil
}
