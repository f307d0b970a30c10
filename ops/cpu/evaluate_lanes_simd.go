//go:build goexperiment.simd && amd64

package cpu

import (
	"github.com/gmcn-go/gmcn/internal/parallel"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// The mixture gradient of Evaluate with the components in the lanes. The
// kernels of evaluate_simd.go put a mixture's points in the lanes and sweep
// them once per component, paying a setup per component: its parameters
// broadcast, the exponential's constants and nine horizontal sums. With few
// points per mixture, as where a fused block's exact targets evaluate a
// convolution of 1,280 Gaussians at 64–256 centroids, that setup costs more
// than the evaluations. Here a block of w components sweeps the points once,
// one component per lane, with every sum vertical; each lane's sums then
// become its component's gradient as in the points' layout (mixSums.grad).
//
// The point gradient keeps the points in the lanes: its sum over the
// components needs no horizontal sum there, and a kernel with the components
// in the lanes measured no faster on the targets' shapes and 15× slower with
// 32 components at 1,000 points (docs/perf.md).

// Row counts of evalLaneBlock in 2D and 3D.
const (
	evalLaneRows2 = 5
	evalLaneRows3 = 9
)

// evalLaneBlock writes the components ps (at most w) into blk, d + d(d+1)/2
// rows of w lanes, one component per lane: μ and log₂e·q, evalComp's
// exponent coefficients in base 2, so that 2^(Σ q_rc t_r t_c) is the
// component's e^(tᵀ H t). Padding lanes are zero; the kernels' sums of
// those lanes are not read.
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
		}
	}
}

// evalLaneChoice is how the mixture gradient lays out its lanes.
type evalLaneChoice int

const (
	evalLanesByShape        evalLaneChoice = iota // as mixtureOverComponents decides
	evalLanesOverPoints                           // always the points
	evalLanesOverComponents                       // always the components
)

// evalLaneLayout chooses the float32 mixture gradient's lanes; tests set it
// to run both layouts on every shape.
var evalLaneLayout = evalLanesByShape

// mixtureOverComponents reports whether the mixture gradient for mixtures
// of n components puts the components in the lanes: wherever they fill at
// least half a vector. Measured at 16 lanes (docs/perf.md): 2.3× faster
// from 16 components up, whatever the number of points, 4.0× at the
// targets' 1,280 components and 128 points, about equal at 8 components and
// slower at 4.
func (k *evalBackward) mixtureOverComponents(n int) bool {
	switch evalLaneLayout {
	case evalLanesOverPoints:
		return false
	case evalLanesOverComponents:
		return true
	}
	return 2*n >= k.w
}

// backwardMixtureLanes is backwardMixture with the components in the lanes:
// per block of w components it sweeps the points of the mixture once, then
// turns each lane's sums into that component's gradient.
func (k *evalBackward) backwardMixtureLanes(dx, x, pts, g []float32, l mixture.Layout, pb, pc, m int) {
	d, s, w := l.D, l.Stride(), k.w
	nr, ns := d+d*(d+1)/2, 1+d+d*(d+1)/2
	type scratch struct {
		prep      []mixture.Prepared[float32]
		blk, sums []float32
	}
	ws := make([]scratch, parallel.Workers(l.Mixtures()))
	for i := range ws {
		ws[i] = scratch{
			prep: make([]mixture.Prepared[float32], w),
			blk:  align64(make([]float32, nr*w+alignSlack))[:nr*w],
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
