package cpu

import (
	"math"

	"github.com/gmcn-go/gmcn/internal/parallel"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// StandardiseScale writes sd[b·C+c], the sample standard deviation (N−1) of
// mixture (b, c) evaluated on a regular grid over the bounding box of all
// component positions of sample b (all channels), enlarged by 15% per side in
// 2D (docs/algorithms.md, "Weight standardisation"). The reference draws
// fresh uniform random points on every forward pass; a fixed cell-centred
// grid gives the same statistic without making evaluation and resumed
// training depend on hidden random state.
// A standard deviation below 0.001 is raised to 0.001, as in the reference.
func StandardiseScale[T Float](sd []float64, x []T, l mixture.Layout) {
	n := device.StandardisePoints(l.D)
	total := 1
	for range l.D {
		total *= n
	}
	s := l.Stride()
	type scratch struct {
		ps []mixture.Prepared[float64]
		g  []float64
	}
	ws := make([]scratch, parallel.Workers(l.Mixtures()))
	for i := range ws {
		ws[i] = scratch{make([]mixture.Prepared[float64], l.N), make([]float64, s)}
	}
	parallel.ForWorker(l.Mixtures(), func(w, m int) {
		ps, g := ws[w].ps, ws[w].g
		b := m / l.C
		lo, hi := [3]float64{}, [3]float64{}
		for j := range l.D {
			lo[j], hi[j] = math.Inf(1), math.Inf(-1)
		}
		for c := range l.C {
			mx := mixture.Mixture(x, l, b*l.C+c)
			for k := 0; k < len(mx); k += s {
				for j := range l.D {
					lo[j] = math.Min(lo[j], float64(mx[k+1+j]))
					hi[j] = math.Max(hi[j], float64(mx[k+1+j]))
				}
			}
		}
		if l.D == 2 {
			for j := range 2 {
				e := hi[j] - lo[j]
				lo[j], hi[j] = lo[j]-0.15*e, hi[j]+0.15*e
			}
		}
		mx := mixture.Mixture(x, l, m)
		for k := range ps {
			for j := range g {
				g[j] = float64(mx[k*s+j])
			}
			ps[k] = mixture.Prepare(l.D, g)
		}
		var sum, sum2 float64
		var p [3]float64
		for i := range total {
			r := i
			for j := range l.D {
				p[j] = lo[j] + (hi[j]-lo[j])*(float64(r%n)+0.5)/float64(n)
				r /= n
			}
			v := mixture.EvalMixture(l.D, ps, p[:l.D])
			sum += v
			sum2 += v * v
		}
		mean := sum / float64(total)
		variance := (sum2 - float64(total)*mean*mean) / float64(total-1)
		sd[m] = math.Max(math.Sqrt(math.Max(variance, 0)), 0.001)
	})
}

// Standardise writes y = x with every weight of mixture m multiplied by
// gain/sd[m]; positions and covariances pass through.
func Standardise[T Float](y, x []T, sd []float64, gain T, l mixture.Layout) {
	copy(y, x)
	s := l.Stride()
	for m := range l.Mixtures() {
		f := gain / T(sd[m])
		my := mixture.Mixture(y, l, m)
		for k := 0; k < len(my); k += s {
			my[k] *= f
		}
	}
}

// StandardiseBackward returns ∂L/∂x and ∂L/∂gain for Standardise with sd
// held constant (the reference detaches it): ∂L/∂w = g_w·gain/sd, positions
// and covariances receive g unchanged, ∂L/∂gain = Σ g_w·w/sd.
func StandardiseBackward[T Float](dx, x, g []T, sd []float64, gain T, l mixture.Layout) (dgain T) {
	copy(dx, g)
	s := l.Stride()
	for m := range l.Mixtures() {
		inv := 1 / T(sd[m])
		mx, mg, md := mixture.Mixture(x, l, m), mixture.Mixture(g, l, m), mixture.Mixture(dx, l, m)
		for k := 0; k < len(md); k += s {
			md[k] = mg[k] * gain * inv
			dgain += mg[k] * mx[k] * inv
		}
	}
	return dgain
}
