//go:build goexperiment.simd && amd64

package cpu

import "simd/archsimd"

// The vector exponentials return exactly 0 below e^expFlushE = 2^expFlush2
// (about 7.9e−31) instead of rounding towards the subnormal range. A
// subnormal result, or a product of it that underflows, costs a microcode
// assist on each instruction that meets it, and the kernels' far-apart
// Gaussians meet them all the time: flushing made the paper model's
// training step 1.6× faster on AVX-512 (docs/perf.md). What is lost is
// below 2⁻¹⁰⁰ of a Gaussian's peak.
const (
	expFlush2 = -100.0
	expFlushE = expFlush2 / expLog2e
)

// expVec8 holds the broadcast constants of the eight-lane expSlice32. A loop
// makes one before it starts and calls exp per vector: written as a plain
// function the exponential would re-materialise thirteen broadcasts (two
// instructions each) on every call.
type expVec8 struct {
	lo, hi, log2e, ln2Hi, ln2Lo, p0, p1, p2, p3, p4, p5, one archsimd.Float32x8
	bias                                                     archsimd.Int32x8
}

func newExpVec8() expVec8 {
	b := archsimd.BroadcastFloat32x8
	return expVec8{
		lo: b(expFlushE), hi: b(expMaxArg), log2e: b(expLog2e), ln2Hi: b(-expLn2Hi), ln2Lo: b(-expLn2Lo),
		p0: b(expP0), p1: b(expP1), p2: b(expP2), p3: b(expP3), p4: b(expP4), p5: b(expP5), one: b(1),
		bias: archsimd.BroadcastInt32x8(expBias),
	}
}

// exp is expSlice32 on eight lanes: the same range reduction and
// polynomial, with n rounded by VROUNDPS and 2ⁿ assembled in the exponent
// bits; it flushes below expFlushE instead of expSlice32's −88.
func (c *expVec8) exp(x archsimd.Float32x8) archsimd.Float32x8 {
	x = x.Max(c.lo).Min(c.hi)
	n := x.Mul(c.log2e).RoundToEven()
	r := n.MulAdd(c.ln2Lo, n.MulAdd(c.ln2Hi, x))
	p := c.p0.MulAdd(r, c.p1).MulAdd(r, c.p2).MulAdd(r, c.p3).MulAdd(r, c.p4).MulAdd(r, c.p5).MulAdd(r.Mul(r), r.Add(c.one))
	return p.Mul(n.ConvertToInt32().Add(c.bias).ShiftAllLeft(expMantLen).AsFloat32x8()).Masked(x.Greater(c.lo))
}

// hsum8 returns the sum of the eight lanes.
func hsum8(v archsimd.Float32x8) float32 {
	h := v.GetLo().Add(v.GetHi())
	h = h.AddPairs(h)
	return h.AddPairs(h).GetElem(0)
}

// loadPart8 is archsimd.LoadFloat32x8SlicePart: the first eight values of
// s, lanes beyond len(s) 0. It copies a short s into an array first: the
// library's masked load converts the short slice to an array pointer,
// which the pointer checks of race-detector builds (checkptr) reject.
func loadPart8(s []float32) archsimd.Float32x8 {
	if len(s) >= 8 {
		return archsimd.LoadFloat32x8Slice(s)
	}
	var a [8]float32
	copy(a[:], s)
	return archsimd.LoadFloat32x8(&a)
}

// loadPart16 is loadPart8 on sixteen lanes.
func loadPart16(s []float32) archsimd.Float32x16 {
	if len(s) >= 16 {
		return archsimd.LoadFloat32x16Slice(s)
	}
	var a [16]float32
	copy(a[:], s)
	return archsimd.LoadFloat32x16(&a)
}

// storePart8 is Float32x8.StoreSlicePart, through an array for the reason
// loadPart8 gives: it stores the first min(8, len(s)) lanes of x into s.
func storePart8(x archsimd.Float32x8, s []float32) {
	if len(s) >= 8 {
		x.StoreSlice(s)
		return
	}
	var a [8]float32
	x.Store(&a)
	copy(s, a[:])
}

// laneSums8 returns the vector whose lane i is hsum8(v[i]), bitwise: the
// same additions in the same order, for eight vectors at once, which costs
// about what two hsum8 calls do. A kernel with a per-Gaussian sum stages
// eight accumulators and reduces them here instead of calling hsum8 eight
// times. v holds at least eight vectors.
func laneSums8(v [][8]float32) archsimd.Float32x8 {
	// Lanes i and i+4 first, as hsum8 adds them: vectors i and i+4 share a
	// step, which leaves vector i's four partial sums in the low half and
	// vector i+4's in the high half.
	var h [4]archsimd.Float32x8
	for i := range h {
		a, b := archsimd.LoadFloat32x8(&v[i]), archsimd.LoadFloat32x8(&v[i+4])
		h[i] = a.Select128FromPair(0, 2, b).Add(a.Select128FromPair(1, 3, b))
	}
	// Then adjacent pairs, twice, as hsum8's AddPairs.
	return h[0].AddPairsGrouped(h[1]).AddPairsGrouped(h[2].AddPairsGrouped(h[3]))
}

// laneSumIdx holds the VPERMI2PS indices of laneSums16's four steps: per
// step the lanes to add first and second, taken from a pair of vectors x, y
// (indices 16–31 are y's lanes). Each step halves the lanes that hold a
// vector's partial sums and doubles the vectors per register. The first
// two steps add the upper half of a vector's lanes to the lower half, the
// last two adjacent pairs, as hsum16 does.
var laneSumIdx = func() (idx [4][2][16]uint32) {
	for step := range idx {
		g := 16 >> step // lanes per vector in each input
		k := 16 / g     // vectors per input register
		for l := range 16 {
			q, r := l/(g/2), l%(g/2) // output vector q, its partial r
			base := uint32(q * g)
			if q >= k {
				base = uint32(16 + (q-k)*g)
			}
			if step < 2 {
				idx[step][0][l], idx[step][1][l] = base+uint32(r), base+uint32(r+g/2)
			} else {
				idx[step][0][l], idx[step][1][l] = base+uint32(2*r), base+uint32(2*r+1)
			}
		}
	}
	return idx
}()

// laneSums16 is laneSums8 on sixteen AVX-512 lanes: lane i is hsum16(v[i]),
// bitwise, for sixteen vectors in 45 instructions. v holds at least sixteen
// vectors.
func laneSums16(v [][16]float32) archsimd.Float32x16 {
	var h [16]archsimd.Float32x16
	for i := range h {
		h[i] = archsimd.LoadFloat32x16(&v[i])
	}
	for step, n := 0, 8; n >= 1; step, n = step+1, n/2 {
		lo, hi := archsimd.LoadUint32x16(&laneSumIdx[step][0]), archsimd.LoadUint32x16(&laneSumIdx[step][1])
		for i := range n {
			h[i] = h[2*i].ConcatPermute(h[2*i+1], lo).Add(h[2*i].ConcatPermute(h[2*i+1], hi))
		}
	}
	return h[0]
}

// expVec16 is expVec8 on sixteen AVX-512 lanes. AVX-512 rounds with
// VRNDSCALEPS and applies 2ⁿ with VSCALEFPS, which replaces the four integer
// operations that assemble 2ⁿ in expVec8.
type expVec16 struct {
	lo, hi, log2e, ln2Hi, ln2Lo, p0, p1, p2, p3, p4, p5, one archsimd.Float32x16
}

func newExpVec16() expVec16 {
	b := archsimd.BroadcastFloat32x16
	return expVec16{
		lo: b(expFlushE), hi: b(expMaxArg), log2e: b(expLog2e), ln2Hi: b(-expLn2Hi), ln2Lo: b(-expLn2Lo),
		p0: b(expP0), p1: b(expP1), p2: b(expP2), p3: b(expP3), p4: b(expP4), p5: b(expP5), one: b(1),
	}
}

// exp is expSlice32 on sixteen lanes (same reduction and polynomial).
func (c *expVec16) exp(x archsimd.Float32x16) archsimd.Float32x16 {
	x = x.Max(c.lo).Min(c.hi)
	n := x.Mul(c.log2e).RoundToEvenScaled(0)
	r := n.MulAdd(c.ln2Lo, n.MulAdd(c.ln2Hi, x))
	p := c.p0.MulAdd(r, c.p1).MulAdd(r, c.p2).MulAdd(r, c.p3).MulAdd(r, c.p4).MulAdd(r, c.p5).MulAdd(r.Mul(r), r.Add(c.one))
	return p.Scale(n).Masked(x.Greater(c.lo))
}

// hsum16 returns the sum of the sixteen lanes.
func hsum16(v archsimd.Float32x16) float32 { return hsum8(v.GetLo().Add(v.GetHi())) }

// exp2Vec16 computes 2^x on sixteen AVX-512 lanes: x = n + r with n =
// round(x) and |r| ≤ ½ exactly (no Cody–Waite split is needed in base 2),
// 2^r by a degree-5 minimax polynomial for the relative error (7e−8 in
// exact arithmetic, 2.1e−7, under 2 ulp, in float32 with FMA; degree 6
// reaches 0.7 ulp for one more FMA per term, a gain smaller than the
// rounding error the callers' exponents already carry), and
// 2ⁿ by VSCALEFPS. Loops whose exponent is a quadratic form fold log₂e into
// its coefficients and so get e^x for the price of 2^x: ten vector
// operations instead of expVec16's fifteen. Arguments are clamped to
// [expFlush2, 127]; at the lower end the result is 0.
type exp2Vec16 struct {
	lo, hi, c0, c1, c2, c3, c4, c5 archsimd.Float32x16
}

// Minimax coefficients of 2^r on [−½, ½], constant term first.
const (
	exp2C0 = 1.0000000717e+00
	exp2C1 = 6.9314696706e-01
	exp2C2 = 2.4022119724e-01
	exp2C3 = 5.5507132735e-02
	exp2C4 = 9.6755413344e-03
	exp2C5 = 1.3276471993e-03
)

func newExp2Vec16() exp2Vec16 {
	b := archsimd.BroadcastFloat32x16
	return exp2Vec16{
		lo: b(expFlush2), hi: b(127),
		c0: b(exp2C0), c1: b(exp2C1), c2: b(exp2C2), c3: b(exp2C3), c4: b(exp2C4), c5: b(exp2C5),
	}
}

// exp2 returns 2^x per lane.
func (c *exp2Vec16) exp2(x archsimd.Float32x16) archsimd.Float32x16 {
	x = x.Max(c.lo).Min(c.hi)
	n := x.RoundToEvenScaled(0)
	r := x.Sub(n)
	p := c.c5.MulAdd(r, c.c4).MulAdd(r, c.c3).MulAdd(r, c.c2).MulAdd(r, c.c1).MulAdd(r, c.c0)
	return p.Scale(n).Masked(x.Greater(c.lo))
}

// exp2Vec8 is exp2Vec16 on eight AVX2 lanes. AVX2 has no VSCALEFPS, so 2ⁿ
// is assembled in the exponent bits as in expVec8; it flushes below
// expFlush2 as exp2Vec16 does.
type exp2Vec8 struct {
	lo, hi, c0, c1, c2, c3, c4, c5 archsimd.Float32x8
	bias                           archsimd.Int32x8
}

func newExp2Vec8() exp2Vec8 {
	b := archsimd.BroadcastFloat32x8
	return exp2Vec8{
		lo: b(expFlush2), hi: b(127),
		c0: b(exp2C0), c1: b(exp2C1), c2: b(exp2C2), c3: b(exp2C3), c4: b(exp2C4), c5: b(exp2C5),
		bias: archsimd.BroadcastInt32x8(expBias),
	}
}

// exp2 returns 2^x per lane.
func (c *exp2Vec8) exp2(x archsimd.Float32x8) archsimd.Float32x8 {
	x = x.Max(c.lo).Min(c.hi)
	n := x.RoundToEven()
	r := x.Sub(n)
	p := c.c5.MulAdd(r, c.c4).MulAdd(r, c.c3).MulAdd(r, c.c2).MulAdd(r, c.c1).MulAdd(r, c.c0)
	return p.Mul(n.ConvertToInt32().Add(c.bias).ShiftAllLeft(expMantLen).AsFloat32x8()).Masked(x.Greater(c.lo))
}
