//go:build goexperiment.simd && amd64

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
	if !ok || !cpuAVX2FMA {
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
			pk := mixture.Prepare(d, mix[(8*b+j)*st:(8*b+j+1)*st])
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

// evalBackward holds the float32 backward kernels of one lane width w, each
// indexed by dimension − 2. Both put the points in the lanes, read from the
// blocks of evalTranspose with their incoming gradients g: mix sums one
// component over all points of a mixture, so its sums are vertical until
// one horizontal sum per component; point adds the gradients of one
// mixture's components to a run of points, so the sum over components needs
// no horizontal sum at all.
//
// mixLanes writes the same sums as mix for a block of w components, one per
// lane (evaluate_lanes_simd.go).
type evalBackward struct {
	w        int
	mix      [2]func(c *evalComp, xt, g []float32) mixSums
	point    [2]func(cs []evalComp, xt, g, acc []float32)
	mixLanes [2]func(blk, p, g, s []float32)
}

var (
	evalBackward8 = evalBackward{8,
		[2]func(*evalComp, []float32, []float32) mixSums{mixSums2x8, mixSums3x8},
		[2]func([]evalComp, []float32, []float32, []float32){pointGrads2x8, pointGrads3x8},
		[2]func([]float32, []float32, []float32, []float32){compMixSums2x8, compMixSums3x8}}
	evalBackward16 = evalBackward{16,
		[2]func(*evalComp, []float32, []float32) mixSums{mixSums2x16, mixSums3x16},
		[2]func([]evalComp, []float32, []float32, []float32){pointGrads2x16, pointGrads3x16},
		[2]func([]float32, []float32, []float32, []float32){compMixSums2x16, compMixSums3x16}}
)

// evalBackwardWide reports whether the backward kernels use sixteen AVX-512
// lanes; tests clear it to run the eight-lane kernels on AVX-512 machines.
var evalBackwardWide = cpuAVX512

// evalBackwardKernels returns the backward kernels for dtype T on this CPU,
// or nil where the generic code runs (float64, no AVX2 and FMA).
func evalBackwardKernels[T Float]() *evalBackward {
	var z T
	if _, ok := any(z).(float32); !ok || !cpuAVX2FMA {
		return nil
	}
	if evalBackwardWide {
		return &evalBackward16
	}
	return &evalBackward8
}

// evalTranspose returns the point sets pts [sets, m, d] in blocks of w
// points, d rows of w lanes each (x₀ of the w points, then x₁, …), and the
// length of one set's blocks. Padding lanes are zero: their exp is finite,
// and the kernels give them g = 0.
func evalTranspose(pts []float32, sets, m, d, w int) ([]float32, int) {
	n := (m + w - 1) / w * w * d
	xt := make([]float32, sets*n)
	parallel.For(sets, func(set int) {
		p, t := pts[set*m*d:(set+1)*m*d], xt[set*n:(set+1)*n]
		for i := range m {
			b := t[i/w*w*d+i%w:]
			for j := range d {
				b[j*w] = p[i*d+j]
			}
		}
	})
	return xt, n
}

// evalComp is one component prepared for the backward kernels: position,
// coef = w·norm, the upper triangle of H = −½ Σ⁻¹ (h00 h01 h11 in 2D,
// h00 h01 h02 h11 h12 h22 in 3D) and the same with the off-diagonal entries
// doubled, q, the coefficients of the exponent t·H t = Σ_{r≤c} q_rc t_r t_c
// (as in evalBlock3). The quadratic form is the cheaper exponent where only
// t is needed afterwards; where H t is needed, v = H t gives both the
// exponent t·v and Σ⁻¹ t = −2v.
type evalComp struct {
	mu   [3]float32
	h, q [6]float32
	coef float32
}

// newEvalComp returns pk as an evalComp. H is the symmetric part of −½ Σ⁻¹,
// as the forward's q is, which changes nothing for a symmetric covariance.
func newEvalComp(d int, pk *mixture.Prepared[float32]) evalComp {
	c := evalComp{mu: pk.Mu, coef: pk.Coef}
	j := 0
	for r := range d {
		for cc := r; cc < d; cc++ {
			c.h[j] = -0.25 * (pk.Inv[r*d+cc] + pk.Inv[cc*d+r])
			c.q[j] = 2 * c.h[j]
			if cc == r {
				c.q[j] = c.h[j]
			}
			j++
		}
	}
	return c
}

// evalSym maps entry r·d+c of a d×d matrix to its place in an upper
// triangle stored as evalComp.h is, by d − 2.
var evalSym = [2][9]int{{0, 1, 1, 2}, {0, 1, 2, 1, 3, 4, 2, 4, 5}}

// mixSums are one component's sums over the points of its mixture, with
// t = p − μ and e = exp(t·H t): Σ gᵢe, Σ gᵢe·t and the upper triangle of
// Σ gᵢe·t tᵀ. Summing t rather than Σ⁻¹ t leaves the matrix products to
// grad, once per component, and keeps the loop to one accumulator per sum.
type mixSums struct {
	e  float32
	t  [3]float32
	tt [6]float32
}

// grad writes the packed gradient of the component prepared as pk into dg:
// with A = Σ⁻¹ and f = coef·e, Σ gᵢf·A t = coef·A (Σ gᵢe·t) and
// Σ gᵢf·A t tᵀ A = coef·A (Σ gᵢe·t tᵀ) A.
func (s *mixSums) grad(d int, pk *mixture.Prepared[float32], dg []float32) {
	a, sym := pk.Inv[:d*d], evalSym[d-2]
	var at [9]float32 // A (Σ gᵢe·t tᵀ)
	for r := range d {
		for c := range d {
			var v float32
			for k := range d {
				v += a[r*d+k] * s.tt[sym[k*d+c]]
			}
			at[r*d+c] = v
		}
	}
	dg[0] = pk.Norm * s.e
	matVec(d, a, s.t[:d], dg[1:1+d])
	for r := range d {
		dg[1+r] *= pk.Coef
		for c := range d {
			var v float32
			for k := range d {
				v += at[r*d+k] * a[k*d+c]
			}
			dg[1+d+r*d+c] = 0.5 * pk.Coef * (v - s.e*a[r*d+c])
		}
	}
}

// evaluateBackwardMixtureFast runs EvaluateBackwardMixture with the SIMD
// kernels where evalBackwardKernels has them and reports whether it did.
func evaluateBackwardMixtureFast[T Float](dx, x, pts, g []T, l mixture.Layout, pb, pc, m int) bool {
	k := evalBackwardKernels[T]()
	if k == nil {
		return false
	}
	k.backwardMixture(any(dx).([]float32), any(x).([]float32), any(pts).([]float32), any(g).([]float32), l, pb, pc, m)
	return true
}

// backwardMixture is EvaluateBackwardMixture for float32: each component
// sweeps the transposed points of its mixture once.
func (k *evalBackward) backwardMixture(dx, x, pts, g []float32, l mixture.Layout, pb, pc, m int) {
	if k.mixtureOverComponents(l.N) {
		k.backwardMixtureLanes(dx, x, pts, g, l, pb, pc, m)
		return
	}
	d, s := l.D, l.Stride()
	sums := k.mix[d-2]
	xt, n := evalTranspose(pts, pb*pc, m, d, k.w)
	parallel.For(l.Mixtures(), func(mi int) {
		set := pointSet(mi/l.C, mi%l.C, pb, pc)
		mx, dmx := mixture.Mixture(x, l, mi), mixture.Mixture(dx, l, mi)
		for c := range l.N {
			pk := mixture.Prepare(d, mx[c*s:(c+1)*s])
			ec := newEvalComp(d, &pk)
			r := sums(&ec, xt[set*n:(set+1)*n], g[mi*m:(mi+1)*m])
			r.grad(d, &pk, dmx[c*s:(c+1)*s])
		}
	})
}

// evaluateBackwardPointsFast runs EvaluateBackwardPoints with the SIMD
// kernels where evalBackwardKernels has them and reports whether it did.
func evaluateBackwardPointsFast[T Float](dp, x, pts, g []T, l mixture.Layout, pb, pc, m int) bool {
	k := evalBackwardKernels[T]()
	if k == nil {
		return false
	}
	k.backwardPoints(any(dp).([]float32), any(x).([]float32), any(pts).([]float32), any(g).([]float32), l, pb, pc, m)
	return true
}

// backwardPoints is EvaluateBackwardPoints for float32 with the work split
// as in evaluateBackwardPointsGeneric. Every component is prepared once up
// front, not once per block of rows that reads it. An item adds g·Σ_k f_k v_k
// over each mixture that reads its rows, then writes 2× the sums
// (Σ⁻¹ t = −2v) into its rows of dp.
func (k *evalBackward) backwardPoints(dp, x, pts, g []float32, l mixture.Layout, pb, pc, m int) {
	d, s, w := l.D, l.Stride(), k.w
	grads := k.point[d-2]
	cs := make([]evalComp, l.Mixtures()*l.N)
	parallel.For(l.Mixtures(), func(mi int) {
		mx := mixture.Mixture(x, l, mi)
		for c := range l.N {
			pk := mixture.Prepare(d, mx[c*s:(c+1)*s])
			cs[mi*l.N+c] = newEvalComp(d, &pk)
		}
	})
	xt, n := evalTranspose(pts, pb*pc, m, d, w)
	blocks := (m + evaluatePointRows - 1) / evaluatePointRows
	items := pb * pc * blocks
	accs := make([][]float32, parallel.Workers(items))
	for i := range accs {
		accs[i] = make([]float32, evaluatePointRows*d)
	}
	bs, cn := l.B/pb, l.C/pc
	parallel.ForWorker(items, func(wk, it int) {
		set, blk := it/blocks, it%blocks
		// evaluatePointRows is a multiple of w, so the rows start a block.
		lo, hi := blk*evaluatePointRows, min((blk+1)*evaluatePointRows, m)
		nt := (hi - lo + w - 1) / w * w * d
		rows, acc := xt[set*n+lo*d:][:nt], accs[wk][:nt]
		clear(acc)
		b0, c0 := (set/pc)*bs, (set%pc)*cn
		for b := b0; b < b0+bs; b++ {
			for c := c0; c < c0+cn; c++ {
				mi := b*l.C + c
				grads(cs[mi*l.N:(mi+1)*l.N], rows, g[mi*m+lo:mi*m+hi], acc)
			}
		}
		out := dp[(set*m+lo)*d : (set*m+hi)*d]
		for i := range hi - lo {
			for j := range d {
				out[i*d+j] = 2 * acc[i/w*w*d+j*w+i%w]
			}
		}
	})
}
