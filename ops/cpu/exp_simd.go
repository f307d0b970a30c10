//go:build goexperiment.simd && amd64

package cpu

import "simd/archsimd"

// expVec8 is expSlice32 on eight lanes: the same clamping, range reduction
// and polynomial, with n rounded by VROUNDPS and 2ⁿ assembled in the
// exponent bits.
func expVec8(x archsimd.Float32x8) archsimd.Float32x8 {
	x = x.Max(archsimd.BroadcastFloat32x8(expMinArg)).Min(archsimd.BroadcastFloat32x8(expMaxArg))
	n := x.Mul(archsimd.BroadcastFloat32x8(expLog2e)).RoundToEven()
	r := n.MulAdd(archsimd.BroadcastFloat32x8(-expLn2Lo), n.MulAdd(archsimd.BroadcastFloat32x8(-expLn2Hi), x))
	p := archsimd.BroadcastFloat32x8(expP0).MulAdd(r, archsimd.BroadcastFloat32x8(expP1)).
		MulAdd(r, archsimd.BroadcastFloat32x8(expP2)).MulAdd(r, archsimd.BroadcastFloat32x8(expP3)).
		MulAdd(r, archsimd.BroadcastFloat32x8(expP4)).MulAdd(r, archsimd.BroadcastFloat32x8(expP5)).
		MulAdd(r.Mul(r), r.Add(archsimd.BroadcastFloat32x8(1)))
	return p.Mul(n.ConvertToInt32().Add(archsimd.BroadcastInt32x8(expBias)).ShiftAllLeft(expMantLen).AsFloat32x8())
}

// reluHsum8 returns the sum of the eight lanes.
func reluHsum8(v archsimd.Float32x8) float32 {
	h := v.GetLo().Add(v.GetHi())
	h = h.AddPairs(h)
	return h.AddPairs(h).GetElem(0)
}
