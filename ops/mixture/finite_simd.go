//go:build goexperiment.simd && amd64

package mixture

import "simd/archsimd"

// avx512 reports whether the CPU runs the sixteen-lane finiteness check.
var avx512 = archsimd.X86.AVX512()

// allFinite reports whether every value of data is finite, and whether it
// could tell: on AVX-512 it sums v·0 over sixteen lanes at a time (±0 for a
// finite v, NaN for NaN and ±Inf, as CheckFinite's scalar sums), several
// times faster than the scalar loop; elsewhere it leaves the check to it.
func allFinite[T Float](data []T) (finite, ok bool) {
	if !avx512 {
		return false, false
	}
	switch d := any(data).(type) {
	case []float32:
		return allFinite32(d), true
	case []float64:
		return allFinite64(d), true
	}
	return false, false
}

func allFinite32(d []float32) bool {
	var s0, s1 archsimd.Float32x16
	z := archsimd.BroadcastFloat32x16(0)
	i := 0
	for ; i+32 <= len(d); i += 32 {
		s0 = archsimd.LoadFloat32x16Slice(d[i:i+16]).MulAdd(z, s0)
		s1 = archsimd.LoadFloat32x16Slice(d[i+16:i+32]).MulAdd(z, s1)
	}
	var lanes [16]float32
	s0.Add(s1).Store(&lanes)
	var s float32
	for _, v := range lanes {
		s += v
	}
	for _, v := range d[i:] {
		s += v * 0
	}
	return s == 0
}

func allFinite64(d []float64) bool {
	var s0, s1 archsimd.Float64x8
	z := archsimd.BroadcastFloat64x8(0)
	i := 0
	for ; i+16 <= len(d); i += 16 {
		s0 = archsimd.LoadFloat64x8Slice(d[i:i+8]).MulAdd(z, s0)
		s1 = archsimd.LoadFloat64x8Slice(d[i+8:i+16]).MulAdd(z, s1)
	}
	var lanes [8]float64
	s0.Add(s1).Store(&lanes)
	var s float64
	for _, v := range lanes {
		s += v
	}
	for _, v := range d[i:] {
		s += v * 0
	}
	return s == 0
}
