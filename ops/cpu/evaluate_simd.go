//go:build goexperiment.simd

package cpu

import (
	"simd/archsimd"

	"github.com/gmcn-go/gmcn/internal/parallel"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// evaluateFast runs Evaluate for float32 on AVX2+FMA machines with 8-lane
// vectors over the components, and reports whether it did; float64 and other
// machines return false and take evaluateGeneric.
func evaluateFast[T Float](y, x, pts []T, l mixture.Layout, pb, pc, m int) bool {
	y32, ok := any(y).([]float32)
	if !ok || !archsimd.X86.AVX2() || !archsimd.X86.FMA() {
		return false
	}
	evaluate32x8(y32, any(x).([]float32), any(pts).([]float32), l, pb, pc, m)
	return true
}

// evalBlock2 holds 8 prepared 2D components, one per lane: positions and the
// coefficients q_rc of the exponent
//
//	−½ tᵀ A t = Σ_{r≤c} q_rc t_r t_c,  q_rr = −½ A_rr,  q_rc = −½ (A_rc + A_cr),
//
// so a component costs D subtractions and D(D+1)/2 multiply-adds before the
// exp.
type evalBlock2 struct {
	mu0, mu1, q00, q01, q11 archsimd.Float32x8
}

// evalBlock3 is evalBlock2 in 3D.
type evalBlock3 struct {
	mu0, mu1, mu2, q00, q01, q02, q11, q12, q22 archsimd.Float32x8
}

// evalLanes is one worker's prepared mixture in blocks of 8 components, with
// the coefficients w·norm per block, and rows of exponents for a run of points.
// Padding lanes of the last block have coefficient 0 and add nothing.
type evalLanes struct {
	b2   []evalBlock2
	b3   []evalBlock3
	coef []archsimd.Float32x8
	row  []archsimd.Float32x8
}

// prepare fills s with the n packed Gaussians of mix in dimension d.
func (s *evalLanes) prepare(d int, mix []float32, n int) {
	nb := (n + 7) / 8
	s.coef = s.coef[:0]
	s.b2, s.b3 = s.b2[:0], s.b3[:0]
	st := 1 + d + d*d
	// lane[r][j] is row r (coef, positions, q) of component j of the block.
	var lane [10][8]float32
	for b := range nb {
		lane = [10][8]float32{}
		for j := range min(8, n-8*b) {
			pk := Prepare(d, mix[(8*b+j)*st:(8*b+j+1)*st])
			lane[0][j] = pk.Coef
			r := 1
			for a := range d {
				lane[r][j] = pk.Mu[a]
				r++
			}
			for a := range d {
				for c := a; c < d; c++ {
					v := pk.Inv[a*d+c] + pk.Inv[c*d+a]
					if a == c {
						v = pk.Inv[a*d+a]
					}
					lane[r][j] = -0.5 * v
					r++
				}
			}
		}
		ld := func(r int) archsimd.Float32x8 { return archsimd.LoadFloat32x8(&lane[r]) }
		s.coef = append(s.coef, ld(0))
		if d == 2 {
			s.b2 = append(s.b2, evalBlock2{ld(1), ld(2), ld(3), ld(4), ld(5)})
		} else {
			s.b3 = append(s.b3, evalBlock3{ld(1), ld(2), ld(3), ld(4), ld(5), ld(6), ld(7), ld(8), ld(9)})
		}
	}
}

// evalRowVectors is how many exponent vectors one sweep of evaluate32x8
// buffers (4 KiB): with few components a sweep covers many points, so the
// exp constants are set up once per sweep, not once per point.
const evalRowVectors = 128

// evaluate32x8 is Evaluate for float32 with archsimd: per mixture the
// components are prepared into blocks of 8 lanes; then for a run of points
// one sweep writes the exponents of all blocks and a second (expDot8) sums
// coef·exp over them per point.
func evaluate32x8(y, x, pts []float32, l mixture.Layout, pb, pc, m int) {
	d := l.D
	nb := (l.N + 7) / 8
	run := max(1, evalRowVectors/nb)
	ws := make([]evalLanes, parallel.Workers(l.Mixtures()))
	for w := range ws {
		ws[w] = evalLanes{
			b2: make([]evalBlock2, 0, nb), b3: make([]evalBlock3, 0, nb),
			coef: make([]archsimd.Float32x8, 0, nb), row: make([]archsimd.Float32x8, run*nb),
		}
	}
	parallel.ForWorker(l.Mixtures(), func(w, mi int) {
		s := &ws[w]
		s.prepare(d, mixture.Mixture(x, l, mi), l.N)
		p := pts[pointSet(mi/l.C, mi%l.C, pb, pc)*m*d:][:m*d]
		out := y[mi*m : (mi+1)*m]
		for i0 := 0; i0 < m; i0 += run {
			i1 := min(i0+run, m)
			for i := i0; i < i1; i++ {
				row := s.row[(i-i0)*nb:]
				if d == 2 {
					exponents2(s.b2, p[2*i], p[2*i+1], row)
				} else {
					exponents3(s.b3, p[3*i], p[3*i+1], p[3*i+2], row)
				}
			}
			expDot8(s.coef, s.row, out[i0:i1])
		}
	})
}

// exponents2 writes −½ tᵀ A t with t = (x0, x1) − μ for every block of bs
// into row.
func exponents2(bs []evalBlock2, x0, x1 float32, row []archsimd.Float32x8) {
	v0, v1 := archsimd.BroadcastFloat32x8(x0), archsimd.BroadcastFloat32x8(x1)
	row = row[:len(bs)]
	for j := range bs {
		b := &bs[j]
		t0, t1 := v0.Sub(b.mu0), v1.Sub(b.mu1)
		// t0 (q00 t0 + q01 t1) + q11 t1².
		row[j] = b.q11.Mul(t1).MulAdd(t1, b.q00.MulAdd(t0, b.q01.Mul(t1)).Mul(t0))
	}
}

// exponents3 is exponents2 in 3D.
func exponents3(bs []evalBlock3, x0, x1, x2 float32, row []archsimd.Float32x8) {
	v0, v1, v2 := archsimd.BroadcastFloat32x8(x0), archsimd.BroadcastFloat32x8(x1), archsimd.BroadcastFloat32x8(x2)
	row = row[:len(bs)]
	for j := range bs {
		b := &bs[j]
		t0, t1, t2 := v0.Sub(b.mu0), v1.Sub(b.mu1), v2.Sub(b.mu2)
		// t0 (q00 t0 + q01 t1 + q02 t2) + t1 (q11 t1 + q12 t2) + q22 t2².
		a := b.q00.MulAdd(t0, b.q01.MulAdd(t1, b.q02.Mul(t2)))
		c := b.q11.MulAdd(t1, b.q12.Mul(t2))
		row[j] = b.q22.Mul(t2).MulAdd(t2, c.MulAdd(t1, a.Mul(t0)))
	}
}

// expDot8 writes out[i] = Σ_j Σ_lanes coef[j]·e^row[i·nb+j] with
// nb = len(coef), one point per row. The exp is expSlice32's Cephes
// polynomial on 8 lanes, written into the loop so that no call spills the
// vector registers: e^x = 2ⁿ·e^r with n rounded by the vector round
// instruction and 2ⁿ built in the exponent bits. Arguments are clamped to
// [−88, 88] as in expSlice32, so far-away components give exactly 0.
func expDot8(coef, row []archsimd.Float32x8, out []float32) {
	lo, hi := archsimd.BroadcastFloat32x8(expMinArg), archsimd.BroadcastFloat32x8(expMaxArg)
	log2e := archsimd.BroadcastFloat32x8(expLog2e)
	ln2Hi, ln2Lo := archsimd.BroadcastFloat32x8(-expLn2Hi), archsimd.BroadcastFloat32x8(-expLn2Lo)
	p0, p1 := archsimd.BroadcastFloat32x8(expP0), archsimd.BroadcastFloat32x8(expP1)
	p2, p3 := archsimd.BroadcastFloat32x8(expP2), archsimd.BroadcastFloat32x8(expP3)
	p4, p5 := archsimd.BroadcastFloat32x8(expP4), archsimd.BroadcastFloat32x8(expP5)
	one, bias := archsimd.BroadcastFloat32x8(1), archsimd.BroadcastInt32x8(expBias)
	nb := len(coef)
	for i := range out {
		r := row[i*nb : (i+1)*nb]
		r = r[:len(coef)]
		var acc archsimd.Float32x8
		for j, c := range coef {
			x := r[j].Max(lo).Min(hi)
			n := x.Mul(log2e).RoundToEven()
			t := n.MulAdd(ln2Lo, n.MulAdd(ln2Hi, x))
			p := p0.MulAdd(t, p1).MulAdd(t, p2).MulAdd(t, p3).MulAdd(t, p4).MulAdd(t, p5)
			p = p.MulAdd(t.Mul(t), t.Add(one))
			scale := n.ConvertToInt32().Add(bias).ShiftAllLeft(expMantLen).AsFloat32x8()
			acc = c.MulAdd(p.Mul(scale), acc)
		}
		s := acc.GetLo().Add(acc.GetHi())
		s = s.AddPairs(s)
		out[i] = s.AddPairs(s).GetElem(0)
	}
}
