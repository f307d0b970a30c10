//go:build goexperiment.simd && amd64

package cpu

import (
	"math"

	"github.com/gmcn-go/gmcn/internal/parallel"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// The backward kernels of evaluate_simd.go put a mixture's points in the
// lanes and sweep them once per component. With few points per mixture, as
// where a fused block's exact targets evaluate a convolution of 1,280
// Gaussians at 64–256 centroids, a sweep is a few vectors long and the
// component's setup (its parameters broadcast, the exp's constants, nine
// horizontal sums) costs more than its evaluations. The kernels here put the
// components in the lanes instead: the mixture backward sweeps the points
// once per block of w components with every sum vertical, and the point
// backward sweeps a point's mixture with one horizontal sum per coordinate.
// Both read the components as evalLaneBlock writes them.

// Field counts of evalLaneBlock in 2D and 3D.
const (
	evalLaneFields2 = 9
	evalLaneFields3 = 16
)

// evalLaneFields returns the number of fields of an evalLaneBlock in
// dimension d: the position, the exponent coefficients q and the matrix H
// (upper triangles, in base 2) and coef.
func evalLaneFields(d int) int { return d + d*(d+1) + 1 }

// evalLaneBlock writes the components ps (at most w) into blk, nf rows of w
// lanes, one component per lane: μ, log₂e·q, log₂e·H (evalComp's q and H,
// so that 2^(t·q t) = e^(t·H t)) and coef. Padding lanes are zero: their
// coef is 0, so they add nothing.
func evalLaneBlock(d, w int, ps []mixture.Prepared[float32], blk []float32) {
	clear(blk)
	nt := d * (d + 1) / 2
	for j := range ps {
		c := newEvalComp(d, &ps[j])
		for r := range d {
			blk[r*w+j] = c.mu[r]
		}
		for r := range nt {
			blk[(d+r)*w+j] = expLog2e * c.q[r]
			blk[(d+nt+r)*w+j] = expLog2e * c.h[r]
		}
		blk[(d+2*nt)*w+j] = c.coef
	}
}

// evalLaneChoice is how the backward kernels lay out their lanes.
type evalLaneChoice int

const (
	evalLanesByShape        evalLaneChoice = iota // components where m < N, else points
	evalLanesOverPoints                           // always the points
	evalLanesOverComponents                       // always the components
)

// evalLaneLayout chooses the float32 backward kernels' lanes; tests set it to run
// both layouts on every shape.
var evalLaneLayout = evalLanesByShape

// overComponents reports whether the backward kernels for mixtures of n
// components, each evaluated at m points, put the components in the lanes.
// Points in the lanes pay a setup per component and point sweep, components
// in the lanes one per point and component sweep, so the fewer of the two
// goes without lanes.
func overComponents(n, m int) bool {
	switch evalLaneLayout {
	case evalLanesOverPoints:
		return false
	case evalLanesOverComponents:
		return true
	}
	return m < n
}

// backwardMixtureLanes is backwardMixture with the components in the lanes:
// per block of w components it sweeps the points of the mixture once, then
// turns each lane's sums into that component's gradient.
func (k *evalBackward) backwardMixtureLanes(dx, x, pts, g []float32, l mixture.Layout, pb, pc, m int) {
	d, s, w := l.D, l.Stride(), k.w
	nf, ns := evalLaneFields(d), 1+d+d*(d+1)/2
	type scratch struct {
		prep      []mixture.Prepared[float32]
		blk, sums []float32
	}
	ws := make([]scratch, parallel.Workers(l.Mixtures()))
	for i := range ws {
		ws[i] = scratch{
			prep: make([]mixture.Prepared[float32], w),
			blk:  align64(make([]float32, nf*w+alignSlack))[:nf*w],
			sums: align64(make([]float32, ns*w+alignSlack))[:ns*w],
		}
	}
	parallel.ForWorker(l.Mixtures(), func(wk, mi int) {
		sc := &ws[wk]
		set := pointSet(mi/l.C, mi%l.C, pb, pc)
		p, gm := pts[set*m*d:(set+1)*m*d], g[mi*m:(mi+1)*m]
		mx, dmx := mixture.Mixture(x, l, mi), mixture.Mixture(dx, l, mi)
		for c0 := 0; c0 < l.N; c0 += w {
			ps := sc.prep[:min(w, l.N-c0)]
			for j := range ps {
				ps[j] = mixture.Prepare(d, mx[(c0+j)*s:(c0+j+1)*s])
			}
			evalLaneBlock(d, w, ps, sc.blk)
			k.mixLanes[d-2](sc.blk, p, gm, sc.sums)
			for j := range ps {
				var r mixSums
				r.e = sc.sums[j]
				for a := range d {
					r.t[a] = sc.sums[(1+a)*w+j]
				}
				for a := range ns - 1 - d {
					r.tt[a] = sc.sums[(1+d+a)*w+j]
				}
				r.grad(d, &ps[j], dmx[(c0+j)*s:(c0+j+1)*s])
			}
		}
	})
}

// backwardPointsLanes is backwardPoints with the components in the lanes,
// the work split as in evaluateBackwardPointsGeneric. Every mixture is
// written into blocks once up front; an item adds, for each of its rows and
// each mixture that reads them, 2·ln 2·g times the kernel's sum (Σ⁻¹ t =
// −2 H t, and the blocks' H carries log₂e).
func (k *evalBackward) backwardPointsLanes(dp, x, pts, g []float32, l mixture.Layout, pb, pc, m int) {
	d, s, w := l.D, l.Stride(), k.w
	nf, nb := evalLaneFields(d), (l.N+w-1)/w
	mb := nb * nf * w // one mixture's blocks
	bs := align64(make([]float32, l.Mixtures()*mb+alignSlack))
	parallel.For(l.Mixtures(), func(mi int) {
		mx := mixture.Mixture(x, l, mi)
		ps := make([]mixture.Prepared[float32], w)
		for c0 := 0; c0 < l.N; c0 += w {
			ps := ps[:min(w, l.N-c0)]
			for j := range ps {
				ps[j] = mixture.Prepare(d, mx[(c0+j)*s:(c0+j+1)*s])
			}
			evalLaneBlock(d, w, ps, bs[mi*mb+c0*nf:][:nf*w])
		}
	})
	grad := k.pointLanes[d-2]
	blocks := (m + evaluatePointRows - 1) / evaluatePointRows
	bn, cn := l.B/pb, l.C/pc
	parallel.For(pb*pc*blocks, func(it int) {
		set, blk := it/blocks, it%blocks
		lo, hi := blk*evaluatePointRows, min((blk+1)*evaluatePointRows, m)
		p, out := pts[set*m*d:(set+1)*m*d], dp[set*m*d:(set+1)*m*d]
		clear(out[lo*d : hi*d])
		b0, c0 := (set/pc)*bn, (set%pc)*cn
		for b := b0; b < b0+bn; b++ {
			for c := c0; c < c0+cn; c++ {
				mi := b*l.C + c
				for i := lo; i < hi; i++ {
					v := grad(bs[mi*mb:(mi+1)*mb], p[i*d:(i+1)*d])
					f := 2 * math.Ln2 * g[mi*m+i]
					for j := range d {
						out[i*d+j] += f * v[j]
					}
				}
			}
		}
	})
}
