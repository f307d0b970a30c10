package gmtest

import "math/rand/v2"

// Spec describes random packed Gaussians [w, μ, Σ] (docs/algorithms.md,
// "Layout and Gaussians"). The zero Spec is not useful; StandardSpec is the
// common choice.
type Spec struct {
	// WeightMin and WeightMax bound the weights: uniform in [WeightMin, WeightMax).
	WeightMin, WeightMax float64
	// NegativeOneIn negates a weight with probability 1/NegativeOneIn after
	// it is drawn; 0 keeps every sign.
	NegativeOneIn int
	// Spread bounds the positions: uniform in [−Spread, Spread)^D.
	Spread float64
	// CovScale and CovDiag make the covariance CovScale·A·Aᵀ + CovDiag·I
	// (see SPD).
	CovScale, CovDiag float64
}

// StandardSpec returns the Spec most tests use: weights in [−1, 1), positions
// in [−2, 2) and covariances A·Aᵀ + 0.5·I, whose eigenvalues lie in
// [0.5, 1.5] for D = 2 and [0.5, 2.75] for D = 3.
func StandardSpec() Spec {
	return Spec{WeightMin: -1, WeightMax: 1, Spread: 2, CovScale: 1, CovDiag: 0.5}
}

// ScaledSpec returns a Spec of weights of magnitude about w (|w| in
// [w/2, 3w/2), negative one time in two unless positive), positions within
// spread and covariances cs·A·Aᵀ + 0.3·cs·I.
func ScaledSpec(spread, w, cs float64, positive bool) Spec {
	s := Spec{WeightMin: w / 2, WeightMax: 3 * w / 2, NegativeOneIn: 2, Spread: spread, CovScale: cs, CovDiag: 0.3 * cs}
	if positive {
		s.NegativeOneIn = 0
	}
	return s
}

// Mixtures returns a packed batch [b, c, n, 1+d+d·d] of Gaussians drawn from
// s in dimension d. The values are drawn in float64 and then rounded to T,
// so the float32 and float64 batches of one seed agree to float32 rounding.
func Mixtures[T Float](rng *rand.Rand, s Spec, b, c, n, d int) []T {
	st := 1 + d + d*d
	x := make([]float64, b*c*n*st)
	for i := 0; i < len(x); i += st {
		s.Gaussian(rng, x[i:i+st], d)
	}
	return Convert[T](x)
}

// Gaussian fills the packed Gaussian g (length 1+d+d·d) with one draw from s.
func (s Spec) Gaussian(rng *rand.Rand, g []float64, d int) {
	g[0] = s.WeightMin + (s.WeightMax-s.WeightMin)*rng.Float64()
	if s.NegativeOneIn > 0 && rng.IntN(s.NegativeOneIn) == 0 {
		g[0] = -g[0]
	}
	for j := range d {
		g[1+j] = s.Spread * (2*rng.Float64() - 1)
	}
	SPD(g[1+d:1+d+d*d], rng, d, s.CovScale, s.CovDiag)
}

// SPD writes the row-major d×d matrix scale·A·Aᵀ + diag·I into dst, with the
// entries of A uniform in [−½, ½). For scale ≥ 0 and diag > 0 it is symmetric
// positive definite with eigenvalues in [diag, diag + scale·‖A‖²_F], i.e.
// at most diag + scale·d²/4, so it is well conditioned.
func SPD(dst []float64, rng *rand.Rand, d int, scale, diag float64) {
	var a [9]float64
	for j := range d * d {
		a[j] = rng.Float64() - 0.5
	}
	for r := range d {
		for c := range d {
			var v float64
			for k := range d {
				v += a[r*d+k] * a[c*d+k]
			}
			v *= scale
			if r == c {
				v += diag
			}
			dst[r*d+c] = v
		}
	}
}

// Uniform returns n values uniform in [lo, hi).
func Uniform[T Float](rng *rand.Rand, n int, lo, hi float64) []T {
	v := make([]T, n)
	for i := range v {
		v[i] = T(lo + (hi-lo)*rng.Float64())
	}
	return v
}

// Normal returns n standard normal values, e.g. the weights r of a test loss
// L = Σ y·r.
func Normal(rng *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	return v
}

// Scales returns n per-axis scale factors: magnitudes uniform in [0.5, 2),
// each negated with probability 1/3, so draws include reflections and stay
// well away from the forbidden 0.
func Scales[T Float](rng *rand.Rand, n int) []T {
	v := make([]T, n)
	for i := range v {
		f := 0.5 + 1.5*rng.Float64()
		if rng.IntN(3) == 0 {
			f = -f
		}
		v[i] = T(f)
	}
	return v
}
