package cpu

import (
	"github.com/gmcn-go/gmcn/internal/parallel"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// Conv writes the analytic convolution of the data x (layout lx
// [B, Fi, Ni, ·]) with the kernels k (layout lk [Fo, Fi, Nk, ·]) into y
// (layout device.ConvLayout(lx, lk)). The convolution of two normalised Gaussians is
// the normalised Gaussian with summed moments,
//
//	N(μ_x, Σ_x) ⊛ N(μ_k, Σ_k) = N(μ_x + μ_k, Σ_x + Σ_k),
//
// so output component n = i + Ni·(c + Fi·j) of mixture (b, o) is
// w = w_x[b,c,i]·w_k[o,c,j], μ = μ_x + μ_k, Σ = Σ_x + Σ_k: data component
// fastest, then input channel, kernel component slowest, as in the reference.
// The caller guarantees lx.C == lk.C, lx.D == lk.D and the slice lengths.
// Work is spread over the B·Fo output mixtures.
func Conv[T Float](y, x, k []T, lx, lk mixture.Layout) {
	ly := device.ConvLayout(lx, lk)
	s := lx.Stride()
	fi, fo := lx.C, lk.B
	parallel.For(ly.Mixtures(), func(m int) {
		b, o := m/fo, m%fo
		out := mixture.Mixture(y, ly, m)
		n := 0
		for j := range lk.N {
			for c := range fi {
				kg := k[lk.Offset(o, c, j):][:s]
				xm := mixture.Mixture(x, lx, b*fi+c)
				for i := 0; i < len(xm); i += s {
					convPair(out[n:n+s], xm[i:i+s], kg)
					n += s
				}
			}
		}
	})
}

// convPair writes the convolution of the packed Gaussians xg and kg into yg.
func convPair[T Float](yg, xg, kg []T) {
	xg, kg = xg[:len(yg)], kg[:len(yg)] // lets the compiler drop bounds checks below
	yg[0] = xg[0] * kg[0]
	for j := 1; j < len(yg); j++ {
		yg[j] = xg[j] + kg[j]
	}
}

// ConvBackwardData writes ∂L/∂x for Conv into dx (layout lx) from the
// incoming gradient g (layout device.ConvLayout(lx, lk)) and the kernels k. Data
// component (b, c, i) enters output n = i + Ni·(c + Fi·j) of every output
// channel o and kernel component j, hence
//
//	∂L/∂w_x[b,c,i] = Σ_{o,j} g_w[b,o,n]·w_k[o,c,j],
//	∂L/∂μ_x[b,c,i] = Σ_{o,j} g_μ[b,o,n],  ∂L/∂Σ_x[b,c,i] = Σ_{o,j} g_Σ[b,o,n].
//
// Each data mixture (b, c) is owned by one worker, so the sums need no locks.
func ConvBackwardData[T Float](dx, g, k []T, lx, lk mixture.Layout) {
	ly := device.ConvLayout(lx, lk)
	s := lx.Stride()
	fi, fo := lx.C, lk.B
	parallel.For(lx.Mixtures(), func(m int) {
		b, c := m/fi, m%fi
		d := mixture.Mixture(dx, lx, m)
		clear(d)
		for o := range fo {
			gm := mixture.Mixture(g, ly, b*fo+o)
			for j := range lk.N {
				wk := k[lk.Offset(o, c, j)]
				gs := gm[(c+fi*j)*len(d):][:len(d)]
				for i := 0; i < len(d); i += s {
					accumulatePair(d[i:i+s], gs[i:i+s], wk)
				}
			}
		}
	})
}

// ConvBackwardKernels writes ∂L/∂k for Conv into dk (layout lk) from the
// incoming gradient g (layout device.ConvLayout(lx, lk)) and the data x. Kernel
// component (o, c, j) enters output n = i + Ni·(c + Fi·j) of every batch
// entry b and data component i, hence
//
//	∂L/∂w_k[o,c,j] = Σ_{b,i} g_w[b,o,n]·w_x[b,c,i],
//	∂L/∂μ_k[o,c,j] = Σ_{b,i} g_μ[b,o,n],  ∂L/∂Σ_k[o,c,j] = Σ_{b,i} g_Σ[b,o,n].
//
// Each kernel mixture (o, c) is owned by one worker, so the sums need no locks.
func ConvBackwardKernels[T Float](dk, g, x []T, lx, lk mixture.Layout) {
	ly := device.ConvLayout(lx, lk)
	s := lx.Stride()
	fi, fo := lx.C, lk.B
	run := lx.N * s // one input channel's block of a (b, o, j) output slab
	parallel.For(lk.Mixtures(), func(m int) {
		o, c := m/fi, m%fi
		d := mixture.Mixture(dk, lk, m)
		clear(d)
		for b := range lx.B {
			xm := mixture.Mixture(x, lx, b*fi+c)
			gm := mixture.Mixture(g, ly, b*fo+o)
			for j := range lk.N {
				dj := d[j*s : (j+1)*s]
				gs := gm[(c+fi*j)*run:][:run]
				for i := 0; i < run; i += s {
					accumulatePair(dj, gs[i:i+s], xm[i])
				}
			}
		}
	})
}

// accumulatePair adds the gradient share of one operand of convPair to d:
// the weight gradient times the other operand's weight w, and the moment
// gradients unchanged.
func accumulatePair[T Float](d, gg []T, w T) {
	gg = gg[:len(d)] // lets the compiler drop bounds checks below
	d[0] += gg[0] * w
	for j := 1; j < len(d); j++ {
		d[j] += gg[j]
	}
}
