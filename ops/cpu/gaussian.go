package cpu

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
	p.Det = invDet(d, g[1+d:1+d+d*d], p.Inv[:d*d])
	p.Norm = T(math.Pow(2*math.Pi, -float64(d)/2) / math.Sqrt(float64(p.Det)))
	p.Coef = g[0] * p.Norm
	return p
}

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
	return -0.5 * quadForm(d, p.Inv[:d*d], t[:d])
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
