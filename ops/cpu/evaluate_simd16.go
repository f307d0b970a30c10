//go:build goexperiment.simd && amd64

package cpu

import "simd/archsimd"

// The backward kernels of the evaluation on sixteen AVX-512 lanes.

//lanegen:source-only
// This file is the source of evaluate_simd8.go, its eight-lane AVX2 twin,
// which internal/lanegen writes from it (go generate, lanes.go): edit this
// file only.

// mixParams16 are one component's position and exponent coefficients q
// broadcast to sixteen lanes. The mixSums kernels read them from memory, as
// operands: held in registers they crowd out the accumulators (the compiler
// allocates fifteen vector registers), and the spills and reloads that
// follow inside the loop cost up to half the speed.
type mixParams16 struct {
	mu [3]archsimd.Float32x16
	q  [6]archsimd.Float32x16
}

func newMixParams16(d int, c *evalComp) mixParams16 {
	var p mixParams16
	for j := range d {
		p.mu[j] = archsimd.BroadcastFloat32x16(c.mu[j])
	}
	for j := range d * (d + 1) / 2 {
		p.q[j] = archsimd.BroadcastFloat32x16(c.q[j])
	}
	return p
}

// mixSums2x16 returns the sums of c over the points xt of its mixture,
// transposed by evalTranspose, with incoming gradients g, on sixteen lanes
// in 2D.
func mixSums2x16(c *evalComp, xt, g []float32) mixSums {
	const w, d = 16, 2
	ex := newExpVec16()
	p := newMixParams16(d, c)
	var se, s0, s1, s00, s01, s11 archsimd.Float32x16
	for i := 0; len(xt) >= d*w; xt, i = xt[d*w:], i+w {
		t0 := archsimd.LoadFloat32x16Slice(xt[0:w]).Sub(p.mu[0])
		t1 := archsimd.LoadFloat32x16Slice(xt[w : 2*w]).Sub(p.mu[1])
		x := p.q[2].Mul(t1).MulAdd(t1, p.q[0].MulAdd(t0, p.q[1].Mul(t1)).Mul(t0))
		e := ex.exp(x).Mul(loadPart16(g[i:]))
		se = se.Add(e)
		e0, e1 := e.Mul(t0), e.Mul(t1)
		s0, s1 = s0.Add(e0), s1.Add(e1)
		s00 = e0.MulAdd(t0, s00)
		s01 = e0.MulAdd(t1, s01)
		s11 = e1.MulAdd(t1, s11)
	}
	return mixSums{
		e:  hsum16(se),
		t:  [3]float32{hsum16(s0), hsum16(s1)},
		tt: [6]float32{hsum16(s00), hsum16(s01), hsum16(s11)},
	}
}

// mixSums3x16 is mixSums2x16 in 3D.
func mixSums3x16(c *evalComp, xt, g []float32) mixSums {
	const w, d = 16, 3
	ex := newExpVec16()
	p := newMixParams16(d, c)
	var se, s0, s1, s2, s00, s01, s02, s11, s12, s22 archsimd.Float32x16
	for i := 0; len(xt) >= d*w; xt, i = xt[d*w:], i+w {
		t0 := archsimd.LoadFloat32x16Slice(xt[0:w]).Sub(p.mu[0])
		t1 := archsimd.LoadFloat32x16Slice(xt[w : 2*w]).Sub(p.mu[1])
		t2 := archsimd.LoadFloat32x16Slice(xt[2*w : 3*w]).Sub(p.mu[2])
		a := p.q[0].MulAdd(t0, p.q[1].MulAdd(t1, p.q[2].Mul(t2)))
		x := p.q[5].Mul(t2).MulAdd(t2, p.q[3].MulAdd(t1, p.q[4].Mul(t2)).MulAdd(t1, a.Mul(t0)))
		e := ex.exp(x).Mul(loadPart16(g[i:]))
		se = se.Add(e)
		e0, e1, e2 := e.Mul(t0), e.Mul(t1), e.Mul(t2)
		s0, s1, s2 = s0.Add(e0), s1.Add(e1), s2.Add(e2)
		s00 = e0.MulAdd(t0, s00)
		s01 = e0.MulAdd(t1, s01)
		s02 = e0.MulAdd(t2, s02)
		s11 = e1.MulAdd(t1, s11)
		s12 = e1.MulAdd(t2, s12)
		s22 = e2.MulAdd(t2, s22)
	}
	return mixSums{
		e:  hsum16(se),
		t:  [3]float32{hsum16(s0), hsum16(s1), hsum16(s2)},
		tt: [6]float32{hsum16(s00), hsum16(s01), hsum16(s02), hsum16(s11), hsum16(s12), hsum16(s22)},
	}
}

// pointGrads2x16 adds g·Σ_k f_k v_k over the components cs of one mixture
// to acc, laid out as xt, for the points xt (blocks of evalTranspose) with
// incoming gradients g, on sixteen lanes in 2D.
func pointGrads2x16(cs []evalComp, xt, g, acc []float32) {
	const w, d = 16, 2
	ex := newExpVec16()
	bc := archsimd.BroadcastFloat32x16
	for i := 0; len(xt) >= d*w; i += w {
		x0, x1 := archsimd.LoadFloat32x16Slice(xt[0:w]), archsimd.LoadFloat32x16Slice(xt[w:2*w])
		var s0, s1 archsimd.Float32x16
		for k := range cs {
			c := &cs[k]
			t0, t1 := x0.Sub(bc(c.mu[0])), x1.Sub(bc(c.mu[1]))
			v0 := bc(c.h[0]).MulAdd(t0, bc(c.h[1]).Mul(t1))
			v1 := bc(c.h[1]).MulAdd(t0, bc(c.h[2]).Mul(t1))
			f := ex.exp(t0.MulAdd(v0, t1.Mul(v1))).Mul(bc(c.coef))
			s0, s1 = f.MulAdd(v0, s0), f.MulAdd(v1, s1)
		}
		gi := loadPart16(g[i:])
		a := acc[0 : d*w]
		gi.MulAdd(s0, archsimd.LoadFloat32x16Slice(a[0:w])).StoreSlice(a[0:w])
		gi.MulAdd(s1, archsimd.LoadFloat32x16Slice(a[w:2*w])).StoreSlice(a[w : 2*w])
		xt, acc = xt[d*w:], acc[d*w:]
	}
}

// pointGrads3x16 is pointGrads2x16 in 3D.
func pointGrads3x16(cs []evalComp, xt, g, acc []float32) {
	const w, d = 16, 3
	ex := newExpVec16()
	bc := archsimd.BroadcastFloat32x16
	for i := 0; len(xt) >= d*w; i += w {
		x0, x1, x2 := archsimd.LoadFloat32x16Slice(xt[0:w]), archsimd.LoadFloat32x16Slice(xt[w:2*w]), archsimd.LoadFloat32x16Slice(xt[2*w:3*w])
		var s0, s1, s2 archsimd.Float32x16
		for k := range cs {
			c := &cs[k]
			t0, t1, t2 := x0.Sub(bc(c.mu[0])), x1.Sub(bc(c.mu[1])), x2.Sub(bc(c.mu[2]))
			v0 := bc(c.h[0]).MulAdd(t0, bc(c.h[1]).MulAdd(t1, bc(c.h[2]).Mul(t2)))
			v1 := bc(c.h[1]).MulAdd(t0, bc(c.h[3]).MulAdd(t1, bc(c.h[4]).Mul(t2)))
			v2 := bc(c.h[2]).MulAdd(t0, bc(c.h[4]).MulAdd(t1, bc(c.h[5]).Mul(t2)))
			f := ex.exp(t0.MulAdd(v0, t1.MulAdd(v1, t2.Mul(v2)))).Mul(bc(c.coef))
			s0, s1, s2 = f.MulAdd(v0, s0), f.MulAdd(v1, s1), f.MulAdd(v2, s2)
		}
		gi := loadPart16(g[i:])
		a := acc[0 : d*w]
		gi.MulAdd(s0, archsimd.LoadFloat32x16Slice(a[0:w])).StoreSlice(a[0:w])
		gi.MulAdd(s1, archsimd.LoadFloat32x16Slice(a[w:2*w])).StoreSlice(a[w : 2*w])
		gi.MulAdd(s2, archsimd.LoadFloat32x16Slice(a[2*w:3*w])).StoreSlice(a[2*w : 3*w])
		xt, acc = xt[d*w:], acc[d*w:]
	}
}

// compMixSums2x16 writes the sums of mixSums of the sixteen components of
// the block blk (evalLaneBlock's rows, one component per lane) over the
// points p of their mixture (D coordinates each, as given) with incoming
// gradients g into s: rows e, t0, t1, t00, t01, t11 of sixteen lanes. Every
// sum is vertical, so a component costs no horizontal sum and no broadcast
// of its parameters, whatever the number of points.
func compMixSums2x16(blk, p, g, s []float32) {
	b := (*[evalLaneRows2][16]float32)(blocks16(blk))
	out := (*[6][16]float32)(blocks16(s))
	c := newExp2Vec16()
	p = p[:2*len(g)]
	var se, s0, s1, s00, s01, s11 archsimd.Float32x16
	for i, gi := range g {
		t0 := broadcast16(p[2*i]).Sub(reluVec16(&b[0]))
		t1 := broadcast16(p[2*i+1]).Sub(reluVec16(&b[1]))
		x := reluVec16(&b[4]).Mul(t1).MulAdd(t1, reluVec16(&b[2]).MulAdd(t0, reluVec16(&b[3]).Mul(t1)).Mul(t0))
		e := c.exp2(x).Mul(broadcast16(gi))
		se = se.Add(e)
		e0, e1 := e.Mul(t0), e.Mul(t1)
		s0, s1 = s0.Add(e0), s1.Add(e1)
		s00 = e0.MulAdd(t0, s00)
		s01 = e0.MulAdd(t1, s01)
		s11 = e1.MulAdd(t1, s11)
	}
	se.Store(&out[0])
	s0.Store(&out[1])
	s1.Store(&out[2])
	s00.Store(&out[3])
	s01.Store(&out[4])
	s11.Store(&out[5])
}

// compMixSums3x16 is compMixSums2x16 in 3D, with rows e, t0, t1, t2, t00,
// t01, t02, t11, t12, t22.
func compMixSums3x16(blk, p, g, s []float32) {
	b := (*[evalLaneRows3][16]float32)(blocks16(blk))
	out := (*[10][16]float32)(blocks16(s))
	c := newExp2Vec16()
	p = p[:3*len(g)]
	var se, s0, s1, s2, s00, s01, s02, s11, s12, s22 archsimd.Float32x16
	for i, gi := range g {
		t0 := broadcast16(p[3*i]).Sub(reluVec16(&b[0]))
		t1 := broadcast16(p[3*i+1]).Sub(reluVec16(&b[1]))
		t2 := broadcast16(p[3*i+2]).Sub(reluVec16(&b[2]))
		a := reluVec16(&b[3]).MulAdd(t0, reluVec16(&b[4]).MulAdd(t1, reluVec16(&b[5]).Mul(t2)))
		x := reluVec16(&b[8]).Mul(t2).MulAdd(t2, reluVec16(&b[6]).MulAdd(t1, reluVec16(&b[7]).Mul(t2)).MulAdd(t1, a.Mul(t0)))
		e := c.exp2(x).Mul(broadcast16(gi))
		se = se.Add(e)
		e0, e1, e2 := e.Mul(t0), e.Mul(t1), e.Mul(t2)
		s0, s1, s2 = s0.Add(e0), s1.Add(e1), s2.Add(e2)
		s00 = e0.MulAdd(t0, s00)
		s01 = e0.MulAdd(t1, s01)
		s02 = e0.MulAdd(t2, s02)
		s11 = e1.MulAdd(t1, s11)
		s12 = e1.MulAdd(t2, s12)
		s22 = e2.MulAdd(t2, s22)
	}
	for r, v := range [10]archsimd.Float32x16{se, s0, s1, s2, s00, s01, s02, s11, s12, s22} {
		v.Store(&out[r])
	}
}
