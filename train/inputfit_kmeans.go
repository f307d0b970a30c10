package train

import (
	"math"
	"math/rand/v2"
)

// kmeans is the scratch space of 2D k-means on S points with K centres:
// k-means++ seeding followed by Lloyd iterations, as scikit-learn's KMeans
// (n_init=1, algorithm="lloyd") runs them. The Lloyd assignment uses
// Hamerly's bounds (one upper bound to the own centre, one lower bound to all
// others), which skips most distance computations once the centres settle and
// gives the same labels as the plain scan (up to exact distance ties).
type kmeans struct {
	k       int
	centres []float64 // [K][2]
	label   []int32   // [S]
	upper   []float64 // [S] ≥ distance to the own centre
	lower   []float64 // [S] ≤ distance to every other centre
	half    []float64 // [K] half the distance to the nearest other centre
	move    []float64 // [K] distance moved in the last update
	sum     []float64 // [K][2]
	count   []int     // [K]
	closest []float64 // [S] squared distance to the nearest seed so far
	cum     []float64 // [S] cumulative sum of closest
	trial   []int     // seeding candidates
	pot     []float64 // seeding candidate potentials
}

func newKMeans(s, k int) kmeans {
	// scikit-learn's number of seeding candidates per centre: 2 + ⌊ln K⌋.
	trials := 2 + int(math.Log(float64(k)))
	return kmeans{
		k:       k,
		centres: make([]float64, 2*k),
		label:   make([]int32, s),
		upper:   make([]float64, s),
		lower:   make([]float64, s),
		half:    make([]float64, k),
		move:    make([]float64, k),
		sum:     make([]float64, 2*k),
		count:   make([]int, k),
		closest: make([]float64, s),
		cum:     make([]float64, s),
		trial:   make([]int, trials),
		pot:     make([]float64, trials),
	}
}

func dist2(p []float64, i int, c []float64, j int) float64 {
	dx, dy := p[2*i]-c[2*j], p[2*i+1]-c[2*j+1]
	return dx*dx + dy*dy
}

// run clusters the points pts ([S][2]) into km.label and km.centres with at
// most maxIter Lloyd iterations. It stops early when no label changes
// (strict convergence) or when the squared centre movements sum to at most
// 1e-4 times the mean per-axis variance of the points (scikit-learn's tol);
// the returned labels always belong to the final centres.
func (km *kmeans) run(pts []float64, maxIter int, rng *rand.Rand) {
	km.seed(pts, rng)
	tol := 1e-4 * meanVariance(pts)
	km.assignAll(pts)
	for it := 1; ; it++ {
		shift := km.update(pts)
		if it >= maxIter || shift <= tol {
			km.assign(pts)
			return
		}
		if !km.assign(pts) {
			return
		}
	}
}

// meanVariance returns the mean over both axes of the (biased) variance of
// the points.
func meanVariance(pts []float64) float64 {
	n := float64(len(pts) / 2)
	var m, v [2]float64
	for i := 0; i < len(pts); i += 2 {
		m[0] += pts[i]
		m[1] += pts[i+1]
	}
	m[0] /= n
	m[1] /= n
	for i := 0; i < len(pts); i += 2 {
		dx, dy := pts[i]-m[0], pts[i+1]-m[1]
		v[0] += dx * dx
		v[1] += dy * dy
	}
	return (v[0] + v[1]) / (2 * n)
}

// seed chooses the initial centres by greedy k-means++ (scikit-learn's
// _kmeans_plusplus): the first centre is a uniformly random point; each
// further centre is the best, by the resulting potential Σ_i min_c d²(x_i, c),
// of 2+⌊ln K⌋ candidates drawn with probability ∝ d² to the nearest centre.
func (km *kmeans) seed(pts []float64, rng *rand.Rand) {
	s := len(km.label)
	first := rng.IntN(s)
	km.centres[0], km.centres[1] = pts[2*first], pts[2*first+1]
	var pot float64
	for i := range s {
		km.closest[i] = dist2(pts, i, km.centres, 0)
		pot += km.closest[i]
	}
	for c := 1; c < km.k; c++ {
		var acc float64
		for i, d := range km.closest {
			acc += d
			km.cum[i] = acc
		}
		for t := range km.trial {
			// First index whose cumulative sum reaches v (numpy searchsorted,
			// side left), clipped to the last point.
			v := rng.Float64() * pot
			lo, hi := 0, s-1
			for lo < hi {
				m := int(uint(lo+hi) >> 1)
				if km.cum[m] >= v {
					hi = m
				} else {
					lo = m + 1
				}
			}
			km.trial[t] = lo
			km.pot[t] = 0
		}
		for i, d := range km.closest {
			x, y := pts[2*i], pts[2*i+1]
			for t, j := range km.trial {
				dx, dy := x-pts[2*j], y-pts[2*j+1]
				km.pot[t] += min(d, dx*dx+dy*dy)
			}
		}
		best := 0
		for t := range km.pot {
			if km.pot[t] < km.pot[best] {
				best = t
			}
		}
		pot = km.pot[best]
		j := km.trial[best]
		km.centres[2*c], km.centres[2*c+1] = pts[2*j], pts[2*j+1]
		for i := range km.closest {
			km.closest[i] = min(km.closest[i], dist2(pts, i, km.centres, c))
		}
	}
}

// nearest returns the nearest centre of point i and the distances to it and
// to the second nearest (+Inf for K = 1).
func (km *kmeans) nearest(pts []float64, i int) (int32, float64, float64) {
	best, d1, d2 := int32(0), math.Inf(1), math.Inf(1)
	for c := range km.k {
		d := dist2(pts, i, km.centres, c)
		if d < d1 {
			best, d1, d2 = int32(c), d, d1
		} else if d < d2 {
			d2 = d
		}
	}
	return best, math.Sqrt(d1), math.Sqrt(d2)
}

// assignAll labels every point with its nearest centre and sets exact bounds.
func (km *kmeans) assignAll(pts []float64) {
	for i := range km.label {
		km.label[i], km.upper[i], km.lower[i] = km.nearest(pts, i)
	}
}

// assign relabels the points after the centres moved and reports whether any
// label changed. A point keeps its label without a scan when its upper bound
// is below both its lower bound and half the distance from its centre to the
// nearest other centre (Hamerly 2010).
func (km *kmeans) assign(pts []float64) bool {
	for c := range km.k {
		m := math.Inf(1)
		for o := range km.k {
			if o != c {
				m = min(m, dist2(km.centres, c, km.centres, o))
			}
		}
		km.half[c] = 0.5 * math.Sqrt(m)
	}
	changed := false
	for i, a := range km.label {
		bound := max(km.half[a], km.lower[i])
		if km.upper[i] <= bound {
			continue
		}
		km.upper[i] = math.Sqrt(dist2(pts, i, km.centres, int(a)))
		if km.upper[i] <= bound {
			continue
		}
		var b int32
		b, km.upper[i], km.lower[i] = km.nearest(pts, i)
		if b != a {
			km.label[i] = b
			changed = true
		}
	}
	return changed
}

// update moves every centre to the mean of its points and returns the sum of
// the squared movements. A centre without points stays where it is
// (scikit-learn instead relocates it to a far point; with intensity-sampled
// jittered points empty clusters are rare). The bounds follow the movements:
// the upper bound grows by the own centre's move, the lower bound shrinks by
// the largest move of any other centre.
func (km *kmeans) update(pts []float64) float64 {
	clear(km.sum)
	clear(km.count)
	for i, a := range km.label {
		km.sum[2*a] += pts[2*i]
		km.sum[2*a+1] += pts[2*i+1]
		km.count[a]++
	}
	var shift float64
	first, second, arg := 0.0, 0.0, -1
	for c := range km.k {
		km.move[c] = 0
		if n := km.count[c]; n > 0 {
			x, y := km.sum[2*c]/float64(n), km.sum[2*c+1]/float64(n)
			dx, dy := x-km.centres[2*c], y-km.centres[2*c+1]
			km.centres[2*c], km.centres[2*c+1] = x, y
			m2 := dx*dx + dy*dy
			shift += m2
			km.move[c] = math.Sqrt(m2)
		}
		switch m := km.move[c]; {
		case m > first:
			first, second, arg = m, first, c
		case m > second:
			second = m
		}
	}
	for i, a := range km.label {
		km.upper[i] += km.move[a]
		if int(a) == arg {
			km.lower[i] -= second
		} else {
			km.lower[i] -= first
		}
	}
	return shift
}
