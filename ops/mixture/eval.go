package mixture

import "math"

// Prepared is one Gaussian ready for repeated evaluation: its position, the
// inverse covariance and the factor w·(2π)^(-D/2)·det(Σ)^(-1/2), computed once.
type Prepared[T Float] struct {
	Coef T    // w · (2π)^(-D/2) · det(Σ)^(-1/2)
	Norm T    // (2π)^(-D/2) · det(Σ)^(-1/2)
	Det  T    // det Σ
	Mu   [3]T // position; entries ≥ D are zero
	Inv  [9]T // Σ⁻¹, row-major D×D
}

// Prepare precomputes the evaluation data of the packed Gaussian g
// ([w, μ, Σ]) in dimension d.
func Prepare[T Float](d int, g []T) Prepared[T] {
	var p Prepared[T]
	copy(p.Mu[:d], g[1:1+d])
	p.Det = InvDet(d, g[1+d:1+d+d*d], p.Inv[:d*d])
	p.Norm = T(GaussNorm(d) / math.Sqrt(float64(p.Det)))
	p.Coef = g[0] * p.Norm
	return p
}

// GaussNorm returns (2π)^(−d/2), the normalisation of a d-dimensional
// Gaussian without its determinant, for d = 0…3; it panics for larger d.
// It is the value math.Pow gives, from a table: Prepare runs once per
// Gaussian in every kernel, and math.Pow with a fractional exponent (d = 3)
// cost more than the rest of it together.
func GaussNorm(d int) float64 { return gaussNorm[d] }

var gaussNorm = [4]float64{1, math.Pow(2*math.Pi, -0.5), math.Pow(2*math.Pi, -1), math.Pow(2*math.Pi, -1.5)}

// PrepareMixture prepares the n packed Gaussians of mix into dst[:n].
func PrepareMixture[T Float](d int, mix []T, dst []Prepared[T]) {
	s := 1 + d + d*d
	for k := range dst {
		dst[k] = Prepare(d, mix[k*s:(k+1)*s])
	}
}

// Exponent returns −½ (x−μ)ᵀ Σ⁻¹ (x−μ) for the point x.
func (p *Prepared[T]) Exponent(d int, x []T) T {
	var t [3]T
	for j := range d {
		t[j] = x[j] - p.Mu[j]
	}
	return -0.5 * QuadForm(d, p.Inv[:d*d], t[:d])
}

// Eval returns w·N(x; μ, Σ).
func (p *Prepared[T]) Eval(d int, x []T) T {
	return p.Coef * T(math.Exp(float64(p.Exponent(d, x))))
}

// EvalMixture returns Σ_k w_k N(x; μ_k, Σ_k) over the prepared components.
func EvalMixture[T Float](d int, ps []Prepared[T], x []T) T {
	var s T
	for k := range ps {
		s += ps[k].Eval(d, x)
	}
	return s
}

// InvDet writes the inverse of the symmetric d×d row-major matrix m (d = 2 or
// 3) into inv and returns det m. The caller checks det > 0 beforehand or
// afterwards; a singular m yields Inf/NaN entries, never a panic.
func InvDet[T Float](d int, m, inv []T) T {
	if d == 2 {
		det := m[0]*m[3] - m[1]*m[2]
		r := 1 / det
		inv[0], inv[1], inv[2], inv[3] = m[3]*r, -m[1]*r, -m[2]*r, m[0]*r
		return det
	}
	a, b, c := m[0], m[1], m[2]
	dd, e, f := m[3], m[4], m[5]
	g, h, i := m[6], m[7], m[8]
	c00, c01, c02 := e*i-f*h, -(dd*i - f*g), dd*h-e*g
	det := a*c00 + b*c01 + c*c02
	r := 1 / det
	inv[0], inv[3], inv[6] = c00*r, c01*r, c02*r
	inv[1], inv[4], inv[7] = -(b*i-c*h)*r, (a*i-c*g)*r, -(a*h-b*g)*r
	inv[2], inv[5], inv[8] = (b*f-c*e)*r, -(a*f-c*dd)*r, (a*e-b*dd)*r
	return det
}

// QuadForm returns tᵀ A t for the d×d row-major matrix A.
func QuadForm[T Float](d int, a, t []T) T {
	if d == 2 {
		return a[0]*t[0]*t[0] + (a[1]+a[2])*t[0]*t[1] + a[3]*t[1]*t[1]
	}
	return a[0]*t[0]*t[0] + a[4]*t[1]*t[1] + a[8]*t[2]*t[2] +
		(a[1]+a[3])*t[0]*t[1] + (a[2]+a[6])*t[0]*t[2] + (a[5]+a[7])*t[1]*t[2]
}
