//go:build goexperiment.simd && amd64

package cpu

import "simd/archsimd"

// The dense ReLU fit's vector loops on sixteen AVX-512 lanes: reluForward2
// and reluBackward2 of relufit_loops.go, and their 3D versions, term for
// term, except that the exponent is computed in base 2: log₂e is folded into
// the quadratic form's coefficients once per mixture and exp2Vec16 replaces
// the exponential. That adds one float32 rounding of the exponent, as large
// as the ones the quadratic form already carries.

//lanegen:source-only
// This file is the source of relufit_simd8.go, its eight-lane AVX2 twin,
// which internal/lanegen writes from it (go generate, lanes.go): edit this
// file only.

// reluVec16 loads one field of a block.
func reluVec16(p *[16]float32) archsimd.Float32x16 { return archsimd.LoadFloat32x16(p) }

// broadcast16 sets every lane to v.
func broadcast16(v float32) archsimd.Float32x16 { return archsimd.BroadcastFloat32x16(v) }

// reluForward2x16 is reluForward2 with sixteen Gaussians j per vector; the
// padding Gaussians have an = xn = 0 and so add nothing.
func reluForward2x16(s *reluWork[float32]) {
	const nf = 7
	flat := reluBlocks(s, 16, s.mu[0], s.mu[1], s.q[0], s.q[1], s.q[2], s.an, s.xn)
	reluScaleFields(flat, 16, nf, 2, 5, expLog2e)
	v := blocks16(flat)
	c := newExp2Vec16()
	stage := reluConsts16(s, 2*16)
	for k := range s.n {
		p0, p1 := broadcast16(s.mu[0][k]), broadcast16(s.mu[1][k])
		var ta, te archsimd.Float32x16
		for b := 0; b+nf <= len(v); b += nf {
			g := (*[nf][16]float32)(v[b : b+nf])
			d0, d1 := p0.Sub(reluVec16(&g[0])), p1.Sub(reluVec16(&g[1]))
			h := reluVec16(&g[2]).MulAdd(d0, reluVec16(&g[3]).Mul(d1))
			x := reluVec16(&g[4]).Mul(d1).MulAdd(d1, d0.Mul(h))
			e := c.exp2(x)
			ta = reluVec16(&g[5]).MulAdd(e, ta)
			te = reluVec16(&g[6]).MulAdd(e, te)
		}
		ta.Store(&stage[k%16])
		te.Store(&stage[16+k%16])
		if (k+1)%16 == 0 || k == s.n-1 {
			reluFlush16(stage, k-k%16, k%16+1, s.t, s.e)
		}
	}
}

// reluForward3x16 is reluForward2x16 in 3D.
func reluForward3x16(s *reluWork[float32]) {
	const nf = 11
	flat := reluBlocks(s, 16, s.mu[0], s.mu[1], s.mu[2], s.q[0], s.q[1], s.q[2], s.q[3], s.q[4], s.q[5], s.an, s.xn)
	reluScaleFields(flat, 16, nf, 3, 9, expLog2e)
	v := blocks16(flat)
	c := newExp2Vec16()
	stage := reluConsts16(s, 2*16)
	for k := range s.n {
		p0, p1, p2 := broadcast16(s.mu[0][k]), broadcast16(s.mu[1][k]), broadcast16(s.mu[2][k])
		var ta, te archsimd.Float32x16
		for b := 0; b+nf <= len(v); b += nf {
			g := (*[nf][16]float32)(v[b : b+nf])
			d0, d1, d2 := p0.Sub(reluVec16(&g[0])), p1.Sub(reluVec16(&g[1])), p2.Sub(reluVec16(&g[2]))
			h := reluVec16(&g[3]).MulAdd(d0, reluVec16(&g[4]).MulAdd(d1, reluVec16(&g[5]).Mul(d2)))
			x := d0.Mul(h)
			h = reluVec16(&g[6]).MulAdd(d1, reluVec16(&g[7]).Mul(d2))
			x = reluVec16(&g[8]).Mul(d2).MulAdd(d2, d1.MulAdd(h, x))
			e := c.exp2(x)
			ta = reluVec16(&g[9]).MulAdd(e, ta)
			te = reluVec16(&g[10]).MulAdd(e, te)
		}
		ta.Store(&stage[k%16])
		te.Store(&stage[16+k%16])
		if (k+1)%16 == 0 || k == s.n-1 {
			reluFlush16(stage, k-k%16, k%16+1, s.t, s.e)
		}
	}
}

// reluConsts16 returns n aligned vectors of scratch for per-Gaussian
// constants and for the stage of reluFlush16.
func reluConsts16(s *reluWork[float32], n int) [][16]float32 {
	if len(s.consts) < 16*n {
		s.consts = align64(make([]float32, 16*n+alignSlack))
	}
	return blocks16(s.consts[:16*n])
}

// reluFlush16 writes the lane sums of staged vectors for the n ≤ 16
// consecutive Gaussians or centroids from j0 on: dst[q][j0+i] is the sum of
// the lanes of stage[q·16+i], bitwise what hsum16 gives, at a fraction of
// the cost of one hsum16 per vector.
func reluFlush16(stage [][16]float32, j0, n int, dst ...[]float32) {
	var r [16]float32
	for q, d := range dst {
		if n == 16 {
			laneSums16(stage[q*16:]).Store((*[16]float32)(d[j0 : j0+16]))
			continue
		}
		laneSums16(stage[q*16:]).Store(&r)
		copy(d[j0:j0+n], r[:n])
	}
}

// reluBackward2x16 is reluBackward2 with sixteen centroids k per vector; the
// padding centroids have gt = ge = 0 and so add nothing. The per-centroid
// sums kq accumulate in the blocks and are copied out at the end.
// The per-Gaussian constants are read from memory in every iteration rather
// than held in registers: the compiler gives vectors about fifteen
// registers, fewer than the loop's accumulators, constants and temporaries,
// and a load costs less than the spill and reload it would otherwise insert.
func reluBackward2x16(s *reluWork[float32]) {
	const nf = 6
	clear(s.kq[0])
	clear(s.kq[1])
	flat := reluBlocks(s, 16, s.mu[0], s.mu[1], s.gt, s.ge, s.kq[0], s.kq[1])
	v := blocks16(flat)
	c := newExp2Vec16()
	cj := reluConsts16(s, 8+7*16) // μ_j, A_j (00 01 11), an_j, xn_j, −½·log₂e; the stage
	stage := cj[8:]
	broadcast16(-0.5 * expLog2e).Store(&cj[7])
	for j := range s.n {
		for i, x := range [7]float32{s.mu[0][j], s.mu[1][j], s.sym[0][j], s.sym[1][j], s.sym[2][j], s.an[j], s.xn[j]} {
			broadcast16(x).Store(&cj[i])
		}
		var ga, gx, u0, u1, uu00, uu01, uu11 archsimd.Float32x16
		for b := 0; b+nf <= len(v); b += nf {
			g := (*[nf][16]float32)(v[b : b+nf])
			d0, d1 := reluVec16(&g[0]).Sub(reluVec16(&cj[0])), reluVec16(&g[1]).Sub(reluVec16(&cj[1]))
			v0 := reluVec16(&cj[2]).MulAdd(d0, reluVec16(&cj[3]).Mul(d1))
			v1 := reluVec16(&cj[3]).MulAdd(d0, reluVec16(&cj[4]).Mul(d1))
			e := c.exp2(d0.MulAdd(v0, d1.Mul(v1)).Mul(reluVec16(&cj[7])))
			et, ee := e.Mul(reluVec16(&g[2])), e.Mul(reluVec16(&g[3]))
			ga, gx = ga.Add(et), gx.Add(ee)
			w := et.MulAdd(reluVec16(&cj[5]), ee.Mul(reluVec16(&cj[6])))
			w0, w1 := w.Mul(v0), w.Mul(v1)
			u0, u1 = u0.Add(w0), u1.Add(w1)
			uu00 = w0.MulAdd(v0, uu00)
			uu01 = w0.MulAdd(v1, uu01)
			uu11 = w1.MulAdd(v1, uu11)
			reluVec16(&g[4]).Add(w0).Store(&g[4])
			reluVec16(&g[5]).Add(w1).Store(&g[5])
		}
		for q, a := range [...]archsimd.Float32x16{ga, gx, u0, u1, uu00, uu01, uu11} {
			a.Store(&stage[q*16+j%16])
		}
		if (j+1)%16 == 0 || j == s.n-1 {
			j0 := j - j%16
			reluFlush16(stage, j0, j%16+1, s.ga, s.gx, s.u[0], s.u[1], s.uu[0], s.uu[1], s.uu[2])
			reluNormalise(s, j0, j+1)
		}
	}
	reluUnblock(s.kq[0], flat, 16, nf, 4)
	reluUnblock(s.kq[1], flat, 16, nf, 5)
}

// reluBackward3x16 is reluBackward2x16 in 3D.
func reluBackward3x16(s *reluWork[float32]) {
	const nf = 8
	clear(s.kq[0])
	clear(s.kq[1])
	clear(s.kq[2])
	flat := reluBlocks(s, 16, s.mu[0], s.mu[1], s.mu[2], s.gt, s.ge, s.kq[0], s.kq[1], s.kq[2])
	v := blocks16(flat)
	c := newExp2Vec16()
	cj := reluConsts16(s, 12+11*16) // μ_j, A_j (00 01 02 11 12 22), an_j, xn_j, −½·log₂e; the stage
	stage := cj[12:]
	broadcast16(-0.5 * expLog2e).Store(&cj[11])
	for j := range s.n {
		for i, x := range [11]float32{s.mu[0][j], s.mu[1][j], s.mu[2][j], s.sym[0][j], s.sym[1][j], s.sym[2][j],
			s.sym[3][j], s.sym[4][j], s.sym[5][j], s.an[j], s.xn[j]} {
			broadcast16(x).Store(&cj[i])
		}
		var ga, gx, u0, u1, u2, uu00, uu01, uu02, uu11, uu12, uu22 archsimd.Float32x16
		for b := 0; b+nf <= len(v); b += nf {
			g := (*[nf][16]float32)(v[b : b+nf])
			d0 := reluVec16(&g[0]).Sub(reluVec16(&cj[0]))
			d1 := reluVec16(&g[1]).Sub(reluVec16(&cj[1]))
			d2 := reluVec16(&g[2]).Sub(reluVec16(&cj[2]))
			v0 := reluVec16(&cj[3]).MulAdd(d0, reluVec16(&cj[4]).MulAdd(d1, reluVec16(&cj[5]).Mul(d2)))
			v1 := reluVec16(&cj[4]).MulAdd(d0, reluVec16(&cj[6]).MulAdd(d1, reluVec16(&cj[7]).Mul(d2)))
			v2 := reluVec16(&cj[5]).MulAdd(d0, reluVec16(&cj[7]).MulAdd(d1, reluVec16(&cj[8]).Mul(d2)))
			e := c.exp2(d0.MulAdd(v0, d1.MulAdd(v1, d2.Mul(v2))).Mul(reluVec16(&cj[11])))
			et, ee := e.Mul(reluVec16(&g[3])), e.Mul(reluVec16(&g[4]))
			ga, gx = ga.Add(et), gx.Add(ee)
			w := et.MulAdd(reluVec16(&cj[9]), ee.Mul(reluVec16(&cj[10])))
			w0, w1, w2 := w.Mul(v0), w.Mul(v1), w.Mul(v2)
			u0, u1, u2 = u0.Add(w0), u1.Add(w1), u2.Add(w2)
			uu00 = w0.MulAdd(v0, uu00)
			uu01 = w0.MulAdd(v1, uu01)
			uu02 = w0.MulAdd(v2, uu02)
			uu11 = w1.MulAdd(v1, uu11)
			uu12 = w1.MulAdd(v2, uu12)
			uu22 = w2.MulAdd(v2, uu22)
			reluVec16(&g[5]).Add(w0).Store(&g[5])
			reluVec16(&g[6]).Add(w1).Store(&g[6])
			reluVec16(&g[7]).Add(w2).Store(&g[7])
		}
		for q, a := range [...]archsimd.Float32x16{ga, gx, u0, u1, u2, uu00, uu01, uu02, uu11, uu12, uu22} {
			a.Store(&stage[q*16+j%16])
		}
		if (j+1)%16 == 0 || j == s.n-1 {
			j0 := j - j%16
			reluFlush16(stage, j0, j%16+1, s.ga, s.gx, s.u[0], s.u[1], s.u[2],
				s.uu[0], s.uu[1], s.uu[2], s.uu[3], s.uu[4], s.uu[5])
			reluNormalise(s, j0, j+1)
		}
	}
	reluUnblock(s.kq[0], flat, 16, nf, 5)
	reluUnblock(s.kq[1], flat, 16, nf, 6)
	reluUnblock(s.kq[2], flat, 16, nf, 7)
}
