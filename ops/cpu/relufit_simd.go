//go:build goexperiment.simd && amd64

package cpu

import (
	"simd/archsimd"
	"unsafe"
)

// reluForwardFast runs the forward sums with AVX-512 or AVX2 for float32 and
// reports whether it did; other types and CPUs take the scalar loops.
func reluForwardFast[T Float](s *reluWork[T]) bool {
	return reluFast(s, reluForward2x16, reluForward3x16, reluForward2x8, reluForward3x8)
}

// reluBackwardFast is reluForwardFast for the backward sums.
func reluBackwardFast[T Float](s *reluWork[T]) bool {
	return reluFast(s, reluBackward2x16, reluBackward3x16, reluBackward2x8, reluBackward3x8)
}

// reluFast runs, for float32, the loop of the widest vectors the CPU has in
// s's dimension (2D or 3D, 16 or 8 lanes) and reports whether it ran one.
func reluFast[T Float](s *reluWork[T], d2x16, d3x16, d2x8, d3x8 func(*reluWork[float32])) bool {
	f, ok := any(s).(*reluWork[float32])
	switch {
	case !ok:
		return false
	case reluWide && f.d == 2:
		d2x16(f)
	case reluWide:
		d3x16(f)
	case cpuAVX2FMA && f.d == 2:
		d2x8(f)
	case cpuAVX2FMA:
		d3x8(f)
	default:
		return false
	}
	return true
}

// reluWide reports whether the ReLU fit's loops use sixteen AVX-512 lanes;
// tests and benchmarks clear it to run the eight-lane loops on AVX-512
// machines.
var reluWide = cpuAVX512

// reluBlocks interleaves the padded arrays fields into blocks of w lanes,
// block b holding lanes wb…wb+w−1 of every field in order, so the vector
// loops walk one pointer with constant offsets instead of one bounds-checked
// slice per field. The blocks live in the worker's scratch s.vec, aligned to
// 64 bytes so that no vector load straddles two cache lines; blocks8 and
// blocks16 view them as vectors.
func reluBlocks(s *reluWork[float32], w int, fields ...[]float32) []float32 {
	nf, nb := len(fields), len(s.row)/w
	if cap(s.vec) < nf*nb*w {
		s.vec = align64(make([]float32, nf*nb*w+16))
	}
	v := s.vec[:nf*nb*w]
	for b := range nb {
		for f, src := range fields {
			copy(v[(b*nf+f)*w:], src[w*b:w*(b+1)])
		}
	}
	return v
}

// reluUnblock copies field f of the nf-field blocks v of w lanes into dst.
func reluUnblock(dst, v []float32, w, nf, f int) {
	for b := range len(v) / (nf * w) {
		copy(dst[w*b:], v[(b*nf+f)*w:(b*nf+f+1)*w])
	}
}

// align64 returns the longest suffix of buf that starts on a 64-byte
// boundary; buf needs 15 spare values.
func align64(buf []float32) []float32 {
	off := -uintptr(unsafe.Pointer(unsafe.SliceData(buf))) % 64 / 4
	return buf[off:]
}

func blocks8(v []float32) [][8]float32 {
	return unsafe.Slice((*[8]float32)(unsafe.Pointer(unsafe.SliceData(v))), len(v)/8)
}

func blocks16(v []float32) [][16]float32 {
	return unsafe.Slice((*[16]float32)(unsafe.Pointer(unsafe.SliceData(v))), len(v)/16)
}

// reluVec loads one field of a block.
func reluVec(p *[8]float32) archsimd.Float32x8 { return archsimd.LoadFloat32x8(p) }

// reluForward2x8 is reluForward2 with eight Gaussians j per vector; the
// padding Gaussians have an = xn = 0 and so add nothing.
func reluForward2x8(s *reluWork[float32]) {
	const nf = 7
	v := blocks8(reluBlocks(s, 8, s.mu[0], s.mu[1], s.q[0], s.q[1], s.q[2], s.an, s.xn))
	c := newExpVec8()
	for k := range s.n {
		p0, p1 := archsimd.BroadcastFloat32x8(s.mu[0][k]), archsimd.BroadcastFloat32x8(s.mu[1][k])
		var ta, te archsimd.Float32x8
		for b := 0; b+nf <= len(v); b += nf {
			g := (*[nf][8]float32)(v[b : b+nf])
			d0, d1 := p0.Sub(reluVec(&g[0])), p1.Sub(reluVec(&g[1]))
			h := reluVec(&g[2]).MulAdd(d0, reluVec(&g[3]).Mul(d1))
			x := reluVec(&g[4]).Mul(d1).MulAdd(d1, d0.Mul(h))
			e := c.exp(x)
			ta = reluVec(&g[5]).MulAdd(e, ta)
			te = reluVec(&g[6]).MulAdd(e, te)
		}
		s.t[k], s.e[k] = hsum8(ta), hsum8(te)
	}
}

// reluForward3x8 is reluForward2x8 in 3D.
func reluForward3x8(s *reluWork[float32]) {
	const nf = 11
	v := blocks8(reluBlocks(s, 8, s.mu[0], s.mu[1], s.mu[2], s.q[0], s.q[1], s.q[2], s.q[3], s.q[4], s.q[5], s.an, s.xn))
	c := newExpVec8()
	for k := range s.n {
		p0, p1, p2 := archsimd.BroadcastFloat32x8(s.mu[0][k]), archsimd.BroadcastFloat32x8(s.mu[1][k]), archsimd.BroadcastFloat32x8(s.mu[2][k])
		var ta, te archsimd.Float32x8
		for b := 0; b+nf <= len(v); b += nf {
			g := (*[nf][8]float32)(v[b : b+nf])
			d0, d1, d2 := p0.Sub(reluVec(&g[0])), p1.Sub(reluVec(&g[1])), p2.Sub(reluVec(&g[2]))
			h := reluVec(&g[3]).MulAdd(d0, reluVec(&g[4]).MulAdd(d1, reluVec(&g[5]).Mul(d2)))
			x := d0.Mul(h)
			h = reluVec(&g[6]).MulAdd(d1, reluVec(&g[7]).Mul(d2))
			x = reluVec(&g[8]).Mul(d2).MulAdd(d2, d1.MulAdd(h, x))
			e := c.exp(x)
			ta = reluVec(&g[9]).MulAdd(e, ta)
			te = reluVec(&g[10]).MulAdd(e, te)
		}
		s.t[k], s.e[k] = hsum8(ta), hsum8(te)
	}
}

// reluBackward2x8 is reluBackward2 with the centroids k in the lanes; the
// padding centroids have gt = ge = 0 and so add nothing. The per-centroid
// sums kq accumulate in the blocks and are copied out at the end.
func reluBackward2x8(s *reluWork[float32]) {
	const nf = 6
	clear(s.kq[0])
	clear(s.kq[1])
	flat := reluBlocks(s, 8, s.mu[0], s.mu[1], s.gt, s.ge, s.kq[0], s.kq[1])
	v := blocks8(flat)
	c := newExpVec8()
	negHalf := archsimd.BroadcastFloat32x8(-0.5)
	for j := range s.n {
		p0, p1 := archsimd.BroadcastFloat32x8(s.mu[0][j]), archsimd.BroadcastFloat32x8(s.mu[1][j])
		a00 := archsimd.BroadcastFloat32x8(s.sym[0][j])
		a01 := archsimd.BroadcastFloat32x8(s.sym[1][j])
		a11 := archsimd.BroadcastFloat32x8(s.sym[2][j])
		anj, xnj := archsimd.BroadcastFloat32x8(s.an[j]), archsimd.BroadcastFloat32x8(s.xn[j])
		var ga, gx, u0, u1, uu00, uu01, uu11 archsimd.Float32x8
		for b := 0; b+nf <= len(v); b += nf {
			g := (*[nf][8]float32)(v[b : b+nf])
			d0, d1 := reluVec(&g[0]).Sub(p0), reluVec(&g[1]).Sub(p1)
			v0 := a00.MulAdd(d0, a01.Mul(d1))
			v1 := a01.MulAdd(d0, a11.Mul(d1))
			e := c.exp(d0.MulAdd(v0, d1.Mul(v1)).Mul(negHalf))
			et, ee := e.Mul(reluVec(&g[2])), e.Mul(reluVec(&g[3]))
			ga, gx = ga.Add(et), gx.Add(ee)
			w := et.MulAdd(anj, ee.Mul(xnj))
			w0, w1 := w.Mul(v0), w.Mul(v1)
			u0, u1 = u0.Add(w0), u1.Add(w1)
			uu00 = w0.MulAdd(v0, uu00)
			uu01 = w0.MulAdd(v1, uu01)
			uu11 = w1.MulAdd(v1, uu11)
			reluVec(&g[4]).Add(w0).Store(&g[4])
			reluVec(&g[5]).Add(w1).Store(&g[5])
		}
		s.ga[j], s.gx[j] = hsum8(ga)*s.nrm[j], hsum8(gx)*s.nrm[j]
		s.u[0][j], s.u[1][j] = hsum8(u0), hsum8(u1)
		s.uu[0][j], s.uu[1][j], s.uu[2][j] = hsum8(uu00), hsum8(uu01), hsum8(uu11)
	}
	reluUnblock(s.kq[0], flat, 8, nf, 4)
	reluUnblock(s.kq[1], flat, 8, nf, 5)
}

// reluBackward3x8 is reluBackward2x8 in 3D.
func reluBackward3x8(s *reluWork[float32]) {
	const nf = 8
	clear(s.kq[0])
	clear(s.kq[1])
	clear(s.kq[2])
	flat := reluBlocks(s, 8, s.mu[0], s.mu[1], s.mu[2], s.gt, s.ge, s.kq[0], s.kq[1], s.kq[2])
	v := blocks8(flat)
	c := newExpVec8()
	negHalf := archsimd.BroadcastFloat32x8(-0.5)
	for j := range s.n {
		p0, p1, p2 := archsimd.BroadcastFloat32x8(s.mu[0][j]), archsimd.BroadcastFloat32x8(s.mu[1][j]), archsimd.BroadcastFloat32x8(s.mu[2][j])
		a00 := archsimd.BroadcastFloat32x8(s.sym[0][j])
		a01 := archsimd.BroadcastFloat32x8(s.sym[1][j])
		a02 := archsimd.BroadcastFloat32x8(s.sym[2][j])
		a11 := archsimd.BroadcastFloat32x8(s.sym[3][j])
		a12 := archsimd.BroadcastFloat32x8(s.sym[4][j])
		a22 := archsimd.BroadcastFloat32x8(s.sym[5][j])
		anj, xnj := archsimd.BroadcastFloat32x8(s.an[j]), archsimd.BroadcastFloat32x8(s.xn[j])
		var ga, gx, u0, u1, u2, uu00, uu01, uu02, uu11, uu12, uu22 archsimd.Float32x8
		for b := 0; b+nf <= len(v); b += nf {
			g := (*[nf][8]float32)(v[b : b+nf])
			d0, d1, d2 := reluVec(&g[0]).Sub(p0), reluVec(&g[1]).Sub(p1), reluVec(&g[2]).Sub(p2)
			v0 := a00.MulAdd(d0, a01.MulAdd(d1, a02.Mul(d2)))
			v1 := a01.MulAdd(d0, a11.MulAdd(d1, a12.Mul(d2)))
			v2 := a02.MulAdd(d0, a12.MulAdd(d1, a22.Mul(d2)))
			e := c.exp(d0.MulAdd(v0, d1.MulAdd(v1, d2.Mul(v2))).Mul(negHalf))
			et, ee := e.Mul(reluVec(&g[3])), e.Mul(reluVec(&g[4]))
			ga, gx = ga.Add(et), gx.Add(ee)
			w := et.MulAdd(anj, ee.Mul(xnj))
			w0, w1, w2 := w.Mul(v0), w.Mul(v1), w.Mul(v2)
			u0, u1, u2 = u0.Add(w0), u1.Add(w1), u2.Add(w2)
			uu00 = w0.MulAdd(v0, uu00)
			uu01 = w0.MulAdd(v1, uu01)
			uu02 = w0.MulAdd(v2, uu02)
			uu11 = w1.MulAdd(v1, uu11)
			uu12 = w1.MulAdd(v2, uu12)
			uu22 = w2.MulAdd(v2, uu22)
			reluVec(&g[5]).Add(w0).Store(&g[5])
			reluVec(&g[6]).Add(w1).Store(&g[6])
			reluVec(&g[7]).Add(w2).Store(&g[7])
		}
		s.ga[j], s.gx[j] = hsum8(ga)*s.nrm[j], hsum8(gx)*s.nrm[j]
		s.u[0][j], s.u[1][j], s.u[2][j] = hsum8(u0), hsum8(u1), hsum8(u2)
		s.uu[0][j], s.uu[1][j], s.uu[2][j] = hsum8(uu00), hsum8(uu01), hsum8(uu02)
		s.uu[3][j], s.uu[4][j], s.uu[5][j] = hsum8(uu11), hsum8(uu12), hsum8(uu22)
	}
	reluUnblock(s.kq[0], flat, 8, nf, 5)
	reluUnblock(s.kq[1], flat, 8, nf, 6)
	reluUnblock(s.kq[2], flat, 8, nf, 7)
}

// refineExp replaces v[i] by e^v[i] as expRow does, sixteen lanes at a time
// for float32 on AVX-512: the refined fit evaluates rows at points that are
// not centroids, which the fused loops above do not cover. v's capacity must
// reach the next multiple of reluLanes (reluWork's rows do); the padding is
// overwritten.
func refineExp[T Float](v []T) {
	if !cpuAVX512 || len(v) == 0 || unsafe.Sizeof(v[0]) != 4 {
		expRow(v)
		return
	}
	n := (len(v) + reluLanes - 1) / reluLanes * reluLanes
	f := unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(v))), n)
	c := newExpVec16()
	bs := blocks16(f)
	for i := range bs {
		c.exp(reluVec16(&bs[i])).Store(&bs[i])
	}
}
