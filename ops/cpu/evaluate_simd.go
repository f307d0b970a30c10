//go:build goexperiment.simd

package cpu

import (
	"simd/archsimd"

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

// evalSoALen returns how many rows evalSoA writes for dimension d: the
// coefficient w·norm, the D position coordinates and the D(D+1)/2 distinct
// entries of the exponent's quadratic form.
func evalSoALen(d int) int { return 1 + d + d*(d+1)/2 }

// evalSoA prepares the n packed Gaussians of mix as structure-of-arrays rows
// of length np ≥ n (a multiple of 8) in soa: row 0 holds w·norm, rows 1…D the
// positions, the remaining rows the coefficients q_rc of the exponent
//
//	−½ tᵀ A t = Σ_{r≤c} q_rc t_r t_c,  q_rr = −½ A_rr,  q_rc = −½ (A_rc + A_cr),
//
// so one component costs D subtractions and D(D+1)/2 fused multiply-adds
// before the exp. Padding lanes get zeros: coefficient 0 makes them add 0.
func evalSoA(d int, mix []float32, n, np int, soa []float32) {
	clear(soa)
	s := 1 + d + d*d
	for k := range n {
		pk := Prepare(d, mix[k*s:(k+1)*s])
		soa[k] = pk.Coef
		row := 1
		for j := range d {
			soa[row*np+k] = pk.Mu[j]
			row++
		}
		for r := range d {
			for c := r; c < d; c++ {
				v := pk.Inv[r*d+c] + pk.Inv[c*d+r]
				if r == c {
					v = pk.Inv[r*d+r]
				}
				soa[row*np+k] = -0.5 * v
				row++
			}
		}
	}
}

// evaluate32x8 is Evaluate for float32 with archsimd: per mixture the
// components are laid out by evalSoA, and each point sums 8 components per
// step, reducing the lanes once at the end.
func evaluate32x8(y, x, pts []float32, l mixture.Layout, pb, pc, m int) {
	d := l.D
	np := (l.N + 7) &^ 7
	rows := evalSoALen(d)
	scratch := make([][]float32, Workers(l.Mixtures()))
	for w := range scratch {
		scratch[w] = make([]float32, rows*np)
	}
	ParallelForWorker(l.Mixtures(), func(w, mi int) {
		soa := scratch[w]
		evalSoA(d, mixture.Mixture(x, l, mi), l.N, np, soa)
		p := pts[pointSet(mi/l.C, mi%l.C, pb, pc)*m*d:][:m*d]
		out := y[mi*m : (mi+1)*m]
		if d == 2 {
			evalPoints2(soa, np, p, out)
		} else {
			evalPoints3(soa, np, p, out)
		}
	})
}

// evalPoints2 writes the 2D mixture in soa (np components per row) evaluated
// at the points p (x, y interleaved) into out.
func evalPoints2(soa []float32, np int, p, out []float32) {
	coef, mu0, mu1 := soa[:np], soa[np:2*np], soa[2*np:3*np]
	q00, q01, q11 := soa[3*np:4*np], soa[4*np:5*np], soa[5*np:6*np]
	for i := range out {
		x0 := archsimd.BroadcastFloat32x8(p[2*i])
		x1 := archsimd.BroadcastFloat32x8(p[2*i+1])
		var acc archsimd.Float32x8
		for k := 0; k < np; k += 8 {
			t0 := x0.Sub(archsimd.LoadFloat32x8Slice(mu0[k:]))
			t1 := x1.Sub(archsimd.LoadFloat32x8Slice(mu1[k:]))
			// q = t0 (q00 t0 + q01 t1) + q11 t1².
			e := archsimd.LoadFloat32x8Slice(q00[k:]).MulAdd(t0, archsimd.LoadFloat32x8Slice(q01[k:]).Mul(t1))
			e = archsimd.LoadFloat32x8Slice(q11[k:]).Mul(t1).MulAdd(t1, e.Mul(t0))
			acc = archsimd.LoadFloat32x8Slice(coef[k:]).MulAdd(exp32x8(e), acc)
		}
		out[i] = hsum8(acc)
	}
}

// evalPoints3 is evalPoints2 in 3D (points x, y, z interleaved).
func evalPoints3(soa []float32, np int, p, out []float32) {
	coef, mu0, mu1, mu2 := soa[:np], soa[np:2*np], soa[2*np:3*np], soa[3*np:4*np]
	q00, q01, q02 := soa[4*np:5*np], soa[5*np:6*np], soa[6*np:7*np]
	q11, q12, q22 := soa[7*np:8*np], soa[8*np:9*np], soa[9*np:10*np]
	for i := range out {
		x0 := archsimd.BroadcastFloat32x8(p[3*i])
		x1 := archsimd.BroadcastFloat32x8(p[3*i+1])
		x2 := archsimd.BroadcastFloat32x8(p[3*i+2])
		var acc archsimd.Float32x8
		for k := 0; k < np; k += 8 {
			t0 := x0.Sub(archsimd.LoadFloat32x8Slice(mu0[k:]))
			t1 := x1.Sub(archsimd.LoadFloat32x8Slice(mu1[k:]))
			t2 := x2.Sub(archsimd.LoadFloat32x8Slice(mu2[k:]))
			// q = t0 (q00 t0 + q01 t1 + q02 t2) + t1 (q11 t1 + q12 t2) + q22 t2².
			a := archsimd.LoadFloat32x8Slice(q00[k:]).MulAdd(t0,
				archsimd.LoadFloat32x8Slice(q01[k:]).MulAdd(t1, archsimd.LoadFloat32x8Slice(q02[k:]).Mul(t2)))
			b := archsimd.LoadFloat32x8Slice(q11[k:]).MulAdd(t1, archsimd.LoadFloat32x8Slice(q12[k:]).Mul(t2))
			e := archsimd.LoadFloat32x8Slice(q22[k:]).Mul(t2).MulAdd(t2, b.MulAdd(t1, a.Mul(t0)))
			acc = archsimd.LoadFloat32x8Slice(coef[k:]).MulAdd(exp32x8(e), acc)
		}
		out[i] = hsum8(acc)
	}
}

// hsum8 returns the sum of the 8 lanes of v.
func hsum8(v archsimd.Float32x8) float32 {
	s := v.GetLo().Add(v.GetHi())
	s = s.AddPairs(s)
	return s.AddPairs(s).GetElem(0)
}

// exp32x8 is expPoly32 on 8 lanes: the same Cephes reduction e^x = 2ⁿ·e^r
// and polynomial, with n rounded by the vector round instruction and 2ⁿ
// built in the exponent bits. Arguments are clamped to [−88, 88] as in
// expPoly32, so far-away components give exactly 0, never NaN.
func exp32x8(x archsimd.Float32x8) archsimd.Float32x8 {
	x = x.Max(archsimd.BroadcastFloat32x8(expMinArg)).Min(archsimd.BroadcastFloat32x8(expMaxArg))
	n := x.Mul(archsimd.BroadcastFloat32x8(expLog2e)).RoundToEven()
	r := n.MulAdd(archsimd.BroadcastFloat32x8(-expLn2Hi), x)
	r = n.MulAdd(archsimd.BroadcastFloat32x8(-expLn2Lo), r)
	p := archsimd.BroadcastFloat32x8(expP0)
	p = p.MulAdd(r, archsimd.BroadcastFloat32x8(expP1))
	p = p.MulAdd(r, archsimd.BroadcastFloat32x8(expP2))
	p = p.MulAdd(r, archsimd.BroadcastFloat32x8(expP3))
	p = p.MulAdd(r, archsimd.BroadcastFloat32x8(expP4))
	p = p.MulAdd(r, archsimd.BroadcastFloat32x8(expP5))
	p = p.MulAdd(r.Mul(r), r.Add(archsimd.BroadcastFloat32x8(1)))
	bits := n.ConvertToInt32().Add(archsimd.BroadcastInt32x8(expBias)).ShiftAllLeft(expMantLen)
	return p.Mul(bits.AsFloat32x8())
}
