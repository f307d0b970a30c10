package cpu

import (
	"github.com/gmcn-go/gmcn/internal/parallel"

	"github.com/gmcn-go/gmcn/ops/mixture"
)

// MeanTraces writes τ[m] = (1/N) Σ_k tr Σ_k for every mixture m = b·C + c of
// the packed batch x into tau [B·C]. The sums run in float64 so that float32
// batches of thousands of components keep their statistic accurate.
func MeanTraces[T Float](tau []float64, x []T, l mixture.Layout) {
	parallel.For(l.Mixtures(), func(m int) {
		tau[m] = meanTrace(mixture.Mixture(x, l, m), l.D)
	})
}

// meanTrace returns the mean trace of the covariances of the packed
// mixture mx in dimension d.
func meanTrace[T Float](mx []T, d int) float64 {
	s := mixture.PackedLen(d)
	var sum float64
	for k := 0; k < len(mx); k += s {
		cov := mx[k+1+d:]
		for j := range d {
			sum += float64(cov[j*(d+1)])
		}
	}
	return sum / float64(len(mx)/s)
}

// ScaleMixtures writes the spatially scaled batch y: for mixture m and its
// factor s[m], μ ← s·μ and Σ ← s²·Σ while weights stay. Weights are
// integrals of normalised Gaussians, so scaling space this way preserves
// every component's integral.
func ScaleMixtures[T Float](y, x []T, l mixture.Layout, s []T) {
	parallel.For(l.Mixtures(), func(m int) {
		f := s[m]
		scaleGaussians(mixture.Mixture(y, l, m), mixture.Mixture(x, l, m), l.D, f, f*f)
	})
}

// scaleGaussians writes the packed Gaussians of src (dimension d) into dst
// with the weights as they are, the positions times f and the covariances
// times f2.
func scaleGaussians[T Float](dst, src []T, d int, f, f2 T) {
	st := mixture.PackedLen(d)
	for k := 0; k < len(src); k += st {
		dst[k] = src[k]
		for j := 1; j <= d; j++ {
			dst[k+j] = f * src[k+j]
		}
		for j := 1 + d; j < st; j++ {
			dst[k+j] = f2 * src[k+j]
		}
	}
}

// ScaleMixturesBackward writes ∂L/∂x for ScaleMixtures with the factors held
// constant (the detached running-average CovScaleNorm):
// ∂L/∂w = g_w, ∂L/∂μ = s·g_μ, ∂L/∂Σ = s²·g_Σ.
func ScaleMixturesBackward[T Float](dx, g []T, l mixture.Layout, s []T) {
	ScaleMixtures(dx, g, l, s)
}

// CovScaleBackward writes ∂L/∂x for the per-sample CovScaleNorm
// y = ScaleMixtures(x, s) with s = sqrt(D/τ), τ = (1/N) Σ_k tr Σ_k, including
// the path through s. With the incoming gradient g,
//
//	∂L/∂s  = Σ_k g_μk · μ_k,          ds/dτ  = −s/(2τ),
//	∂L/∂s² = Σ_k ⟨g_Σk, Σ_k⟩,         ds²/dτ = −s²/τ,
//	∂L/∂τ  = ∂L/∂s · ds/dτ + ∂L/∂s² · ds²/dτ,
//
// and since ∂τ/∂Σ_k = I/N, ∂L/∂Σ_k = s²·g_Σk + (∂L/∂τ / N)·I. Weights and
// positions get the detached terms of ScaleMixturesBackward. s holds the
// factors the forward used and tau the mean traces they came from.
func CovScaleBackward[T Float](dx, g, x []T, l mixture.Layout, s []T, tau []float64) {
	st, d := l.Stride(), l.D
	parallel.For(l.Mixtures(), func(m int) {
		src, gm, dst := mixture.Mixture(x, l, m), mixture.Mixture(g, l, m), mixture.Mixture(dx, l, m)
		f := float64(s[m])
		var dS, dS2 float64
		for k := 0; k < len(src); k += st {
			for j := 1; j <= d; j++ {
				dS += float64(gm[k+j]) * float64(src[k+j])
			}
			for j := 1 + d; j < st; j++ {
				dS2 += float64(gm[k+j]) * float64(src[k+j])
			}
		}
		dTau := -(dS*f/2 + dS2*f*f) / tau[m]
		diag := T(dTau / float64(l.N))
		scaleGaussians(dst, gm, d, T(f), T(f*f))
		for k := 0; k < len(src); k += st {
			for j := range d {
				dst[k+1+d+j*(d+1)] += diag
			}
		}
	})
}
