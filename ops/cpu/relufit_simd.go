//go:build goexperiment.simd && amd64

package cpu

import "simd/archsimd"

// reluSIMD reports whether the CPU runs the 8-lane float32 loops: they need
// AVX2 (integer shifts of the exponent, masks) and FMA.
var reluSIMD = archsimd.X86.AVX2() && archsimd.X86.FMA()

// reluForwardFast runs the forward sums with AVX2 for float32 and reports
// whether it did; other types and CPUs take the scalar loops.
func reluForwardFast[T Float](s *reluWork[T]) bool {
	f, ok := any(s).(*reluWork[float32])
	if !ok || !reluSIMD {
		return false
	}
	if f.d == 2 {
		reluForward2x8(f)
	} else {
		reluForward3x8(f)
	}
	return true
}

// reluBackwardFast is reluForwardFast for the backward sums.
func reluBackwardFast[T Float](s *reluWork[T]) bool {
	f, ok := any(s).(*reluWork[float32])
	if !ok || !reluSIMD {
		return false
	}
	if f.d == 2 {
		reluBackward2x8(f)
	} else {
		reluBackward3x8(f)
	}
	return true
}

// reluLoad8 loads s[i:i+8]; the padded arrays always hold them. The vector
// exponential exp32x8 and reluHsum8 live in exp_simd.go.
func reluLoad8(s []float32, i int) archsimd.Float32x8 {
	return archsimd.LoadFloat32x8((*[8]float32)(s[i : i+8]))
}

func reluForward2x8(s *reluWork[float32]) {
	np := len(s.row)
	m0, m1 := s.mu[0][:np], s.mu[1][:np]
	q00, q01, q11 := s.q[0][:np], s.q[1][:np], s.q[2][:np]
	ln, a, x := s.ln[:np], s.a[:np], s.x[:np]
	for k := range s.n {
		p0, p1 := archsimd.BroadcastFloat32x8(m0[k]), archsimd.BroadcastFloat32x8(m1[k])
		var ta, te archsimd.Float32x8
		for j := 0; j < np; j += 8 {
			d0, d1 := p0.Sub(reluLoad8(m0, j)), p1.Sub(reluLoad8(m1, j))
			h := reluLoad8(q00, j).MulAdd(d0, reluLoad8(q01, j).Mul(d1))
			v := d0.MulAdd(h, reluLoad8(ln, j))
			v = reluLoad8(q11, j).Mul(d1).MulAdd(d1, v)
			e := expVec8(v)
			ta = reluLoad8(a, j).MulAdd(e, ta)
			te = reluLoad8(x, j).MulAdd(e, te)
		}
		s.t[k], s.e[k] = reluHsum8(ta), reluHsum8(te)
	}
}

func reluForward3x8(s *reluWork[float32]) {
	np := len(s.row)
	m0, m1, m2 := s.mu[0][:np], s.mu[1][:np], s.mu[2][:np]
	q00, q01, q02 := s.q[0][:np], s.q[1][:np], s.q[2][:np]
	q11, q12, q22 := s.q[3][:np], s.q[4][:np], s.q[5][:np]
	ln, a, x := s.ln[:np], s.a[:np], s.x[:np]
	for k := range s.n {
		p0, p1, p2 := archsimd.BroadcastFloat32x8(m0[k]), archsimd.BroadcastFloat32x8(m1[k]), archsimd.BroadcastFloat32x8(m2[k])
		var ta, te archsimd.Float32x8
		for j := 0; j < np; j += 8 {
			d0, d1, d2 := p0.Sub(reluLoad8(m0, j)), p1.Sub(reluLoad8(m1, j)), p2.Sub(reluLoad8(m2, j))
			h := reluLoad8(q00, j).MulAdd(d0, reluLoad8(q01, j).MulAdd(d1, reluLoad8(q02, j).Mul(d2)))
			v := d0.MulAdd(h, reluLoad8(ln, j))
			h = reluLoad8(q11, j).MulAdd(d1, reluLoad8(q12, j).Mul(d2))
			v = d1.MulAdd(h, v)
			v = reluLoad8(q22, j).Mul(d2).MulAdd(d2, v)
			e := expVec8(v)
			ta = reluLoad8(a, j).MulAdd(e, ta)
			te = reluLoad8(x, j).MulAdd(e, te)
		}
		s.t[k], s.e[k] = reluHsum8(ta), reluHsum8(te)
	}
}

// reluBackward2x8 is reluBackward2 with the centroids k in the lanes; the
// padding centroids have gt = ge = 0 and so add nothing.
func reluBackward2x8(s *reluWork[float32]) {
	np := len(s.row)
	m0, m1 := s.mu[0][:np], s.mu[1][:np]
	gt, ge := s.gt[:np], s.ge[:np]
	k0, k1 := s.kq[0][:np], s.kq[1][:np]
	clear(k0)
	clear(k1)
	half := archsimd.BroadcastFloat32x8(-0.5)
	for j := range s.n {
		p0, p1 := archsimd.BroadcastFloat32x8(m0[j]), archsimd.BroadcastFloat32x8(m1[j])
		a00 := archsimd.BroadcastFloat32x8(s.sym[0][j])
		a01 := archsimd.BroadcastFloat32x8(s.sym[1][j])
		a11 := archsimd.BroadcastFloat32x8(s.sym[2][j])
		ln := archsimd.BroadcastFloat32x8(s.ln[j])
		aj, xj := archsimd.BroadcastFloat32x8(s.a[j]), archsimd.BroadcastFloat32x8(s.x[j])
		var ga, gx, u0, u1, uu00, uu01, uu11 archsimd.Float32x8
		for k := 0; k < np; k += 8 {
			d0, d1 := reluLoad8(m0, k).Sub(p0), reluLoad8(m1, k).Sub(p1)
			v0 := a00.MulAdd(d0, a01.Mul(d1))
			v1 := a01.MulAdd(d0, a11.Mul(d1))
			e := expVec8(d0.MulAdd(v0, d1.Mul(v1)).MulAdd(half, ln))
			et, ee := e.Mul(reluLoad8(gt, k)), e.Mul(reluLoad8(ge, k))
			ga, gx = ga.Add(et), gx.Add(ee)
			w := et.MulAdd(aj, ee.Mul(xj))
			w0, w1 := w.Mul(v0), w.Mul(v1)
			u0, u1 = u0.Add(w0), u1.Add(w1)
			uu00 = w0.MulAdd(v0, uu00)
			uu01 = w0.MulAdd(v1, uu01)
			uu11 = w1.MulAdd(v1, uu11)
			reluLoad8(k0, k).Add(w0).Store((*[8]float32)(k0[k : k+8]))
			reluLoad8(k1, k).Add(w1).Store((*[8]float32)(k1[k : k+8]))
		}
		s.ga[j], s.gx[j] = reluHsum8(ga), reluHsum8(gx)
		s.u[0][j], s.u[1][j] = reluHsum8(u0), reluHsum8(u1)
		s.uu[0][j], s.uu[1][j], s.uu[2][j] = reluHsum8(uu00), reluHsum8(uu01), reluHsum8(uu11)
	}
}

func reluBackward3x8(s *reluWork[float32]) {
	np := len(s.row)
	m0, m1, m2 := s.mu[0][:np], s.mu[1][:np], s.mu[2][:np]
	gt, ge := s.gt[:np], s.ge[:np]
	k0, k1, k2 := s.kq[0][:np], s.kq[1][:np], s.kq[2][:np]
	clear(k0)
	clear(k1)
	clear(k2)
	half := archsimd.BroadcastFloat32x8(-0.5)
	for j := range s.n {
		p0, p1, p2 := archsimd.BroadcastFloat32x8(m0[j]), archsimd.BroadcastFloat32x8(m1[j]), archsimd.BroadcastFloat32x8(m2[j])
		a00 := archsimd.BroadcastFloat32x8(s.sym[0][j])
		a01 := archsimd.BroadcastFloat32x8(s.sym[1][j])
		a02 := archsimd.BroadcastFloat32x8(s.sym[2][j])
		a11 := archsimd.BroadcastFloat32x8(s.sym[3][j])
		a12 := archsimd.BroadcastFloat32x8(s.sym[4][j])
		a22 := archsimd.BroadcastFloat32x8(s.sym[5][j])
		ln := archsimd.BroadcastFloat32x8(s.ln[j])
		aj, xj := archsimd.BroadcastFloat32x8(s.a[j]), archsimd.BroadcastFloat32x8(s.x[j])
		var ga, gx, u0, u1, u2, uu00, uu01, uu02, uu11, uu12, uu22 archsimd.Float32x8
		for k := 0; k < np; k += 8 {
			d0, d1, d2 := reluLoad8(m0, k).Sub(p0), reluLoad8(m1, k).Sub(p1), reluLoad8(m2, k).Sub(p2)
			v0 := a00.MulAdd(d0, a01.MulAdd(d1, a02.Mul(d2)))
			v1 := a01.MulAdd(d0, a11.MulAdd(d1, a12.Mul(d2)))
			v2 := a02.MulAdd(d0, a12.MulAdd(d1, a22.Mul(d2)))
			e := expVec8(d0.MulAdd(v0, d1.MulAdd(v1, d2.Mul(v2))).MulAdd(half, ln))
			et, ee := e.Mul(reluLoad8(gt, k)), e.Mul(reluLoad8(ge, k))
			ga, gx = ga.Add(et), gx.Add(ee)
			w := et.MulAdd(aj, ee.Mul(xj))
			w0, w1, w2 := w.Mul(v0), w.Mul(v1), w.Mul(v2)
			u0, u1, u2 = u0.Add(w0), u1.Add(w1), u2.Add(w2)
			uu00 = w0.MulAdd(v0, uu00)
			uu01 = w0.MulAdd(v1, uu01)
			uu02 = w0.MulAdd(v2, uu02)
			uu11 = w1.MulAdd(v1, uu11)
			uu12 = w1.MulAdd(v2, uu12)
			uu22 = w2.MulAdd(v2, uu22)
			reluLoad8(k0, k).Add(w0).Store((*[8]float32)(k0[k : k+8]))
			reluLoad8(k1, k).Add(w1).Store((*[8]float32)(k1[k : k+8]))
			reluLoad8(k2, k).Add(w2).Store((*[8]float32)(k2[k : k+8]))
		}
		s.ga[j], s.gx[j] = reluHsum8(ga), reluHsum8(gx)
		s.u[0][j], s.u[1][j], s.u[2][j] = reluHsum8(u0), reluHsum8(u1), reluHsum8(u2)
		s.uu[0][j], s.uu[1][j], s.uu[2][j] = reluHsum8(uu00), reluHsum8(uu01), reluHsum8(uu02)
		s.uu[3][j], s.uu[4][j], s.uu[5][j] = reluHsum8(uu11), reluHsum8(uu12), reluHsum8(uu22)
	}
}
