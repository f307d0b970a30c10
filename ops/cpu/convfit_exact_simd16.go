//go:build goexperiment.simd && amd64

package cpu

import "simd/archsimd"

// The vector kernels of the near-group corrections at radius ∞
// (convfit_exact.go) on sixteen AVX-512 lanes, one Gaussian per lane.

//lanegen:source-only
// This file is the source of convfit_exact_simd8.go, its eight-lane AVX2
// twin, which internal/lanegen writes from it (go generate, lanes.go): edit
// this file only.

// exactSum2x16 adds Σ_v coef_v N_v(p_i) over the rows r to out[i] for each
// centroid i of p, in 2D: per centroid one sweep over the rows, each lane
// summing its Gaussians, and one horizontal sum.
func exactSum2x16(r *gaussRows[float32], p *[3][]float32, out []float32) {
	c := newExp2Vec16()
	h := broadcast16(exactHalfLog2e)
	m0, m1 := blocks16(r.mu[0]), blocks16(r.mu[1])
	a00, a01, a11 := blocks16(r.sym[0]), blocks16(r.sym[1]), blocks16(r.sym[2])
	cf := blocks16(r.coef)
	px, py := p[0][:len(out)], p[1][:len(out)]
	for i := range out {
		x0, x1 := broadcast16(px[i]), broadcast16(py[i])
		var acc archsimd.Float32x16
		for j := range cf {
			t0, t1 := x0.Sub(reluVec16(&m0[j])), x1.Sub(reluVec16(&m1[j]))
			u0 := reluVec16(&a00[j]).MulAdd(t0, reluVec16(&a01[j]).Mul(t1))
			u1 := reluVec16(&a01[j]).MulAdd(t0, reluVec16(&a11[j]).Mul(t1))
			acc = reluVec16(&cf[j]).MulAdd(c.exp2(t0.MulAdd(u0, t1.Mul(u1)).Mul(h)), acc)
		}
		out[i] += hsum16(acc)
	}
}

// exactSum3x16 is exactSum2x16 in 3D.
func exactSum3x16(r *gaussRows[float32], p *[3][]float32, out []float32) {
	c := newExp2Vec16()
	h := broadcast16(exactHalfLog2e)
	m0, m1, m2 := blocks16(r.mu[0]), blocks16(r.mu[1]), blocks16(r.mu[2])
	a00, a01, a02 := blocks16(r.sym[0]), blocks16(r.sym[1]), blocks16(r.sym[2])
	a11, a12, a22 := blocks16(r.sym[3]), blocks16(r.sym[4]), blocks16(r.sym[5])
	cf := blocks16(r.coef)
	px, py, pz := p[0][:len(out)], p[1][:len(out)], p[2][:len(out)]
	for i := range out {
		x0, x1, x2 := broadcast16(px[i]), broadcast16(py[i]), broadcast16(pz[i])
		var acc archsimd.Float32x16
		for j := range cf {
			t0, t1, t2 := x0.Sub(reluVec16(&m0[j])), x1.Sub(reluVec16(&m1[j])), x2.Sub(reluVec16(&m2[j]))
			u0 := reluVec16(&a00[j]).MulAdd(t0, reluVec16(&a01[j]).MulAdd(t1, reluVec16(&a02[j]).Mul(t2)))
			u1 := reluVec16(&a01[j]).MulAdd(t0, reluVec16(&a11[j]).MulAdd(t1, reluVec16(&a12[j]).Mul(t2)))
			u2 := reluVec16(&a02[j]).MulAdd(t0, reluVec16(&a12[j]).MulAdd(t1, reluVec16(&a22[j]).Mul(t2)))
			x := t0.MulAdd(u0, t1.MulAdd(u1, t2.Mul(u2)))
			acc = reluVec16(&cf[j]).MulAdd(c.exp2(x.Mul(h)), acc)
		}
		out[i] += hsum16(acc)
	}
}

// exactGrad2x16 writes the sums S, S_u and S_uu of the rows r over the
// centroids p with incoming gradients g into s and adds Σ_v coef_v g_i E_iv
// u_iv to dp[·][i], in 2D: each block of sixteen Gaussians sweeps the
// centroids once with its sums in the lanes, and the centroids' sums
// gather in lanes (d vectors per centroid), summed across once at the end.
func exactGrad2x16(r *gaussRows[float32], p *[3][]float32, g []float32, s *gaussSums[float32], dp *[3][]float32, lanes []float32) {
	const d = 2
	c := newExp2Vec16()
	h := broadcast16(exactHalfLog2e)
	m0, m1 := blocks16(r.mu[0]), blocks16(r.mu[1])
	a00, a01, a11 := blocks16(r.sym[0]), blocks16(r.sym[1]), blocks16(r.sym[2])
	cf := blocks16(r.coef)
	ss, su0, su1 := blocks16(s.s), blocks16(s.u[0]), blocks16(s.u[1])
	s00, s01, s11 := blocks16(s.uu[0]), blocks16(s.uu[1]), blocks16(s.uu[2])
	px, py := p[0][:len(g)], p[1][:len(g)]
	ln := blocks16(lanes[:d*16*len(g)])
	clear(ln)
	for j := range cf {
		var se, e0, e1, e00, e01, e11 archsimd.Float32x16
		for i, gi := range g {
			if gi == 0 {
				continue
			}
			t0, t1 := broadcast16(px[i]).Sub(reluVec16(&m0[j])), broadcast16(py[i]).Sub(reluVec16(&m1[j]))
			u0 := reluVec16(&a00[j]).MulAdd(t0, reluVec16(&a01[j]).Mul(t1))
			u1 := reluVec16(&a01[j]).MulAdd(t0, reluVec16(&a11[j]).Mul(t1))
			f := c.exp2(t0.MulAdd(u0, t1.Mul(u1)).Mul(h)).Mul(broadcast16(gi))
			se = se.Add(f)
			f0, f1 := f.Mul(u0), f.Mul(u1)
			e0, e1 = e0.Add(f0), e1.Add(f1)
			e00 = f0.MulAdd(u0, e00)
			e01 = f0.MulAdd(u1, e01)
			e11 = f1.MulAdd(u1, e11)
			a, l := reluVec16(&cf[j]), ln[d*i:d*i+d]
			a.MulAdd(f0, reluVec16(&l[0])).Store(&l[0])
			a.MulAdd(f1, reluVec16(&l[1])).Store(&l[1])
		}
		se.Store(&ss[j])
		e0.Store(&su0[j])
		e1.Store(&su1[j])
		e00.Store(&s00[j])
		e01.Store(&s01[j])
		e11.Store(&s11[j])
	}
	for i := range g {
		dp[0][i] += hsum16(reluVec16(&ln[d*i]))
		dp[1][i] += hsum16(reluVec16(&ln[d*i+1]))
	}
}

// exactGrad3x16 is exactGrad2x16 in 3D.
func exactGrad3x16(r *gaussRows[float32], p *[3][]float32, g []float32, s *gaussSums[float32], dp *[3][]float32, lanes []float32) {
	const d = 3
	c := newExp2Vec16()
	h := broadcast16(exactHalfLog2e)
	m0, m1, m2 := blocks16(r.mu[0]), blocks16(r.mu[1]), blocks16(r.mu[2])
	a00, a01, a02 := blocks16(r.sym[0]), blocks16(r.sym[1]), blocks16(r.sym[2])
	a11, a12, a22 := blocks16(r.sym[3]), blocks16(r.sym[4]), blocks16(r.sym[5])
	cf := blocks16(r.coef)
	ss, su0, su1, su2 := blocks16(s.s), blocks16(s.u[0]), blocks16(s.u[1]), blocks16(s.u[2])
	s00, s01, s02 := blocks16(s.uu[0]), blocks16(s.uu[1]), blocks16(s.uu[2])
	s11, s12, s22 := blocks16(s.uu[3]), blocks16(s.uu[4]), blocks16(s.uu[5])
	px, py, pz := p[0][:len(g)], p[1][:len(g)], p[2][:len(g)]
	ln := blocks16(lanes[:d*16*len(g)])
	clear(ln)
	for j := range cf {
		var se, e0, e1, e2, e00, e01, e02, e11, e12, e22 archsimd.Float32x16
		for i, gi := range g {
			if gi == 0 {
				continue
			}
			t0 := broadcast16(px[i]).Sub(reluVec16(&m0[j]))
			t1 := broadcast16(py[i]).Sub(reluVec16(&m1[j]))
			t2 := broadcast16(pz[i]).Sub(reluVec16(&m2[j]))
			u0 := reluVec16(&a00[j]).MulAdd(t0, reluVec16(&a01[j]).MulAdd(t1, reluVec16(&a02[j]).Mul(t2)))
			u1 := reluVec16(&a01[j]).MulAdd(t0, reluVec16(&a11[j]).MulAdd(t1, reluVec16(&a12[j]).Mul(t2)))
			u2 := reluVec16(&a02[j]).MulAdd(t0, reluVec16(&a12[j]).MulAdd(t1, reluVec16(&a22[j]).Mul(t2)))
			f := c.exp2(t0.MulAdd(u0, t1.MulAdd(u1, t2.Mul(u2))).Mul(h)).Mul(broadcast16(gi))
			se = se.Add(f)
			f0, f1, f2 := f.Mul(u0), f.Mul(u1), f.Mul(u2)
			e0, e1, e2 = e0.Add(f0), e1.Add(f1), e2.Add(f2)
			e00 = f0.MulAdd(u0, e00)
			e01 = f0.MulAdd(u1, e01)
			e02 = f0.MulAdd(u2, e02)
			e11 = f1.MulAdd(u1, e11)
			e12 = f1.MulAdd(u2, e12)
			e22 = f2.MulAdd(u2, e22)
			a, l := reluVec16(&cf[j]), ln[d*i:d*i+d]
			a.MulAdd(f0, reluVec16(&l[0])).Store(&l[0])
			a.MulAdd(f1, reluVec16(&l[1])).Store(&l[1])
			a.MulAdd(f2, reluVec16(&l[2])).Store(&l[2])
		}
		se.Store(&ss[j])
		e0.Store(&su0[j])
		e1.Store(&su1[j])
		e2.Store(&su2[j])
		e00.Store(&s00[j])
		e01.Store(&s01[j])
		e02.Store(&s02[j])
		e11.Store(&s11[j])
		e12.Store(&s12[j])
		e22.Store(&s22[j])
	}
	for i := range g {
		for a := range d {
			dp[a][i] += hsum16(reluVec16(&ln[d*i+a]))
		}
	}
}
