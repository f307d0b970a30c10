package cpu

import (
	"math"

	"github.com/gmcn-go/gmcn/internal/parallel"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// gram writes A·Aᵀ of the d×d row-major matrix a into out, which must not
// alias a.
func gram[T Float](d int, a, out []T) {
	var at [9]T
	for i := range d {
		for j := range d {
			at[j*d+i] = a[i*d+j]
		}
	}
	matMul(d, a, at[:], out)
}

// KernelEpsilon returns ε = CovEpsilon · max(1, max |A·Aᵀ|), the maximum taken
// over every entry of every factor in a (d×d matrices, back to back), rounded
// as cfg.Epsilon says. The regulariser is relative so that it stays
// significant when the factors grow during training; the reference detaches
// it, so callers treat it as a constant and AssembleKernel takes it as an
// argument.
func KernelEpsilon[T Float](a []T, d int, cfg device.KernelConfig) float64 {
	var m [9]T
	mx := 0.0
	dd := d * d
	for i := 0; i+dd <= len(a); i += dd {
		gram(d, a[i:i+dd], m[:dd])
		for _, v := range m[:dd] {
			mx = math.Max(mx, math.Abs(float64(v)))
		}
	}
	return cfg.Epsilon(mx)
}

// AssembleKernel writes the packed kernel batch out of layout l
// (B = F_o, C = F_i, N = N_k) from the raw tensors w [F_o·F_i·N_k],
// p [F_o·F_i·N_k·D] and a [F_o·F_i·N_k·D·D]:
//
//	weight   = w·WeightSD + WeightMean,
//	position = r·p,
//	Σ        = (r/3)²·(A·Aᵀ + ε·I),
//
// with ε from KernelEpsilon. A·Aᵀ is positive semi-definite and ε > 0, so
// every Σ is positive definite whatever the factors.
func AssembleKernel[T Float](out, w, p, a []T, l mixture.Layout, cfg device.KernelConfig, eps float64) {
	st, d := l.Stride(), l.D
	sd, mean, r, cr := T(cfg.WeightSD), T(cfg.WeightMean), T(cfg.Radius), T(cfg.CovRange())
	e := T(eps)
	parallel.For(l.Mixtures(), func(m int) {
		for k := range l.N {
			i := m*l.N + k
			g := out[i*st : (i+1)*st]
			g[0] = w[i]*sd + mean
			for j := range d {
				g[1+j] = r * p[i*d+j]
			}
			cov := g[1+d:]
			gram(d, a[i*d*d:(i+1)*d*d], cov)
			for j := range d * d {
				cov[j] *= cr
			}
			for j := range d {
				cov[j*(d+1)] += cr * e
			}
		}
	})
}

// KernelWeightsBackward writes ∂L/∂w = WeightSD·g_w from the gradient g of
// the packed kernel of layout l.
func KernelWeightsBackward[T Float](dw, g []T, l mixture.Layout, cfg device.KernelConfig) {
	st, sd := l.Stride(), T(cfg.WeightSD)
	for i := range dw {
		dw[i] = sd * g[i*st]
	}
}

// KernelPositionsBackward writes ∂L/∂p = r·g_μ from the gradient g of the
// packed kernel of layout l.
func KernelPositionsBackward[T Float](dp, g []T, l mixture.Layout, cfg device.KernelConfig) {
	st, d, r := l.Stride(), l.D, T(cfg.Radius)
	for i := 0; i < len(dp)/d; i++ {
		for j := range d {
			dp[i*d+j] = r * g[i*st+1+j]
		}
	}
}

// KernelFactorsBackward writes ∂L/∂A from the gradient g of the packed kernel
// of layout l. With M = A·Aᵀ, ∂M_ij/∂A_ab = δ_ia A_jb + δ_ja A_ib, so
// ∂L/∂A = (r/3)²·(G + Gᵀ)·A for G = g_Σ; ε is a constant and contributes
// nothing.
func KernelFactorsBackward[T Float](da, g, a []T, l mixture.Layout, cfg device.KernelConfig) {
	st, d, cr := l.Stride(), l.D, T(cfg.CovRange())
	dd := d * d
	parallel.For(l.Mixtures(), func(m int) {
		for k := range l.N {
			i := m*l.N + k
			symGradFactor(d, g[i*st+1+d:(i+1)*st], a[i*dd:(i+1)*dd], da[i*dd:(i+1)*dd], cr)
		}
	})
}

// symGradFactor writes c·(G + Gᵀ)·A into out for d×d row-major matrices: the
// gradient of L with respect to A when ∂L/∂(A·Aᵀ) = c·G.
func symGradFactor[T Float](d int, g, a, out []T, c T) {
	for i := range d {
		for j := range d {
			var s T
			for k := range d {
				s += (g[i*d+k] + g[k*d+i]) * a[k*d+j]
			}
			out[i*d+j] = c * s
		}
	}
}
