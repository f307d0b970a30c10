//go:build goexperiment.simd && amd64

package cpu

import "unsafe"

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
		s.vec = align64(make([]float32, nf*nb*w+alignSlack))
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

// alignSlack is the number of spare values a buffer needs for align64.
const alignSlack = 16

// align64 returns the longest suffix of buf that starts on a 64-byte
// boundary; buf needs 15 spare values (alignSlack).
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

// reluScaleFields multiplies fields [f0, f1) of the nf-field blocks v of w
// lanes by c.
func reluScaleFields(v []float32, w, nf, f0, f1 int, c float32) {
	for b := 0; b < len(v); b += nf * w {
		for i := range v[b+f0*w : b+f1*w] {
			v[b+f0*w+i] *= c
		}
	}
}

// expPadded replaces v[i] by e^v[i] as expRow does, sixteen lanes at a time
// for float32 on AVX-512, for rows the fused loops above do not cover: the
// refined fit's at points that are not centroids, and the near-group
// corrections' (convfit_near.go). v's capacity must reach the next multiple
// of reluLanes (reluWork's and nearWork's rows do); the padding is
// overwritten.
func expPadded[T Float](v []T) {
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

// reluNormalise multiplies the gradient sums ga and gx of Gaussians
// j0 ≤ j < j1 by their normalisations, once the vector kernels have
// written them.
func reluNormalise(s *reluWork[float32], j0, j1 int) {
	for j := j0; j < j1; j++ {
		s.ga[j] *= s.nrm[j]
		s.gx[j] *= s.nrm[j]
	}
}
