package mnist

import (
	"math"
	"math/rand/v2"
)

// kmeans is the scratch space of 2D k-means on S points with K centres:
// k-means++ seeding followed by Lloyd iterations, as scikit-learn's KMeans
// (n_init=1, algorithm="lloyd") runs them.
//
// The points come grouped by pixel (cell): the points of cell p are
// pts[2·start[p] : 2·start[p+1]], and cell p covers [col, col+1)×[row,
// row+1). Both phases use the cells to skip work without changing the
// result (exact pruning by the triangle inequality on the cell rectangles):
//
//   - seeding: a candidate centre can only lower the distance of a point in a
//     cell whose rectangle is closer to it than the cell's largest current
//     distance;
//   - assignment: the nearest centre of any point of a cell is among the
//     centres whose minimum distance to the rectangle is at most the
//     smallest maximum distance of any centre to it (Kanungo et al.'s
//     filtering), usually one to three of the K centres.
type kmeans struct {
	k       int
	start   []int     // [cells+1] first point of each cell
	cells   []int     // non-empty cells
	centreX []float64 // [cells] x of each cell's centre, column + ½
	centreY []float64 // [cells] y of each cell's centre, row + ½
	centres []float64 // [K][2]
	label   []int32   // [S]
	sum     []float64 // [K][2]
	count   []int     // [K]
	lo      []float64 // [K] smallest squared distance of each centre to the current cell

	// Candidate centres per cell, kept while the centres move little: cell
	// p = cells[q] has the candidates cand[q·K : q·K+nCand[q]], computed
	// when the drift was stamp[q], which stay a superset of the possible
	// nearest centres while drift − stamp[q] < margin[q] (see assign).
	// Indexing by q bounds the memory by min(cells, S)·K.
	cand    []int32
	nCand   []int
	margin  []float64
	stamp   []float64
	drift   float64   // Σ over updates of twice the largest centre move
	closest []float64 // [S] squared distance to the nearest seed so far
	cellMax []float64 // [cells] largest closest of the cell's points
	cum     []float64 // [S] cumulative sum of closest
	trial   []int     // seeding candidates
	pot     []float64 // seeding candidate potentials
}

func newKMeans(s, k, rows, cols int) kmeans {
	// scikit-learn's number of seeding candidates per centre: 2 + ⌊ln K⌋.
	trials := 2 + int(math.Log(float64(k)))
	return kmeans{
		k:       k,
		start:   make([]int, rows*cols+1),
		cells:   make([]int, 0, rows*cols),
		centreX: make([]float64, rows*cols),
		centreY: make([]float64, rows*cols),
		centres: make([]float64, 2*k),
		label:   make([]int32, s),
		sum:     make([]float64, 2*k),
		count:   make([]int, k),
		lo:      make([]float64, k),
		cand:    make([]int32, min(rows*cols, s)*k),
		nCand:   make([]int, min(rows*cols, s)),
		margin:  make([]float64, min(rows*cols, s)),
		stamp:   make([]float64, min(rows*cols, s)),
		closest: make([]float64, s),
		cellMax: make([]float64, rows*cols),
		cum:     make([]float64, s),
		trial:   make([]int, trials),
		pot:     make([]float64, trials),
	}
}

func dist2(p []float64, i int, c []float64, j int) float64 {
	dx, dy := p[2*i]-c[2*j], p[2*i+1]-c[2*j+1]
	return dx*dx + dy*dy
}

// rectDist2 returns the smallest and largest squared distance from (x, y) to
// the unit cell p, from the distances to the cell's centre: per axis the
// nearest point is |Δ| − ½ away (0 inside) and the farthest |Δ| + ½.
func (km *kmeans) rectDist2(p int, x, y float64) (lo, hi float64) {
	dx := math.Abs(x - km.centreX[p])
	dy := math.Abs(y - km.centreY[p])
	nx, ny := max(dx-0.5, 0), max(dy-0.5, 0)
	return nx*nx + ny*ny, (dx+0.5)*(dx+0.5) + (dy+0.5)*(dy+0.5)
}

// run clusters the points pts ([S][2], grouped by cell as in km.start) into
// km.label and km.centres: k-means++ seeding, then lloyd.
func (km *kmeans) run(pts []float64, maxIter int, rng *rand.Rand) {
	km.seed(pts, rng)
	km.lloyd(pts, maxIter)
}

// lloyd runs at most maxIter Lloyd iterations from the current centres. It
// stops early when no label changes (strict convergence) or when the squared
// centre movements sum to at most 1e-4 times the mean per-axis variance of
// the points (scikit-learn's tol); the labels always belong to the final
// centres.
func (km *kmeans) lloyd(pts []float64, maxIter int) {
	tol := 1e-4 * meanVariance(pts)
	km.drift = 0
	for q := range km.cells {
		km.margin[q] = math.Inf(-1) // no valid candidates yet
	}
	km.assign(pts)
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
// A candidate's potential is the current one minus the reductions it brings,
// which only points of cells near it can have.
func (km *kmeans) seed(pts []float64, rng *rand.Rand) {
	s := len(km.label)
	first := rng.IntN(s)
	km.centres[0], km.centres[1] = pts[2*first], pts[2*first+1]
	var pot float64
	for i := range s {
		km.closest[i] = dist2(pts, i, km.centres, 0)
		pot += km.closest[i]
	}
	km.updateCellMax()
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
			km.pot[t] = pot - km.reduction(pts, pts[2*lo], pts[2*lo+1], false)
		}
		best := 0
		for t := range km.pot {
			if km.pot[t] < km.pot[best] {
				best = t
			}
		}
		j := km.trial[best]
		km.centres[2*c], km.centres[2*c+1] = pts[2*j], pts[2*j+1]
		pot -= km.reduction(pts, pts[2*j], pts[2*j+1], true)
	}
}

// reduction returns Σ_i max(0, closest_i − d²(x_i, (x, y))), the drop of the
// potential if (x, y) became a centre, and applies it to closest if apply is
// set.
func (km *kmeans) reduction(pts []float64, x, y float64, apply bool) float64 {
	var red float64
	for _, p := range km.cells {
		if lo, _ := km.rectDist2(p, x, y); lo >= km.cellMax[p] {
			continue
		}
		cellMax := 0.0
		for i := km.start[p]; i < km.start[p+1]; i++ {
			dx, dy := pts[2*i]-x, pts[2*i+1]-y
			d := dx*dx + dy*dy
			if c := km.closest[i]; d < c {
				red += c - d
				if apply {
					km.closest[i] = d
				}
			}
			cellMax = max(cellMax, km.closest[i])
		}
		if apply {
			km.cellMax[p] = cellMax
		}
	}
	return red
}

func (km *kmeans) updateCellMax() {
	for _, p := range km.cells {
		m := 0.0
		for i := km.start[p]; i < km.start[p+1]; i++ {
			m = max(m, km.closest[i])
		}
		km.cellMax[p] = m
	}
}

// assign labels every point with its nearest centre (ties to the lower
// index, as a plain scan does) and reports whether any label changed.
//
// A cell's candidate set stays valid while the centres drift: every distance
// changes by at most the move of its centre, so the smallest distance of a
// non-candidate falls and the bound rises by at most the sum D of the largest
// moves since the set was computed; while 2D is below the set's margin (the
// gap between the nearest non-candidate and the bound) no non-candidate can
// become nearest.
func (km *kmeans) assign(pts []float64) bool {
	changed := false
	for q, p := range km.cells {
		if km.drift-km.stamp[q] >= km.margin[q] {
			km.candidates(q)
		}
		cand := km.cand[q*km.k : q*km.k+km.nCand[q]]
		if len(cand) == 1 {
			for i := km.start[p]; i < km.start[p+1]; i++ {
				if km.label[i] != cand[0] {
					km.label[i] = cand[0]
					changed = true
				}
			}
			continue
		}
		for i := km.start[p]; i < km.start[p+1]; i++ {
			best, bd := cand[0], math.Inf(1)
			for _, c := range cand {
				if d := dist2(pts, i, km.centres, int(c)); d < bd {
					best, bd = c, d
				}
			}
			if km.label[i] != best {
				km.label[i] = best
				changed = true
			}
		}
	}
	return changed
}

// candidates computes the centres that can be nearest to some point of cell
// p = cells[q], those whose smallest distance to the cell is at most the
// smallest largest distance of any centre, with the margin of the set.
func (km *kmeans) candidates(q int) {
	p := km.cells[q]
	bound := math.Inf(1)
	for c := range km.k {
		var hi float64
		km.lo[c], hi = km.rectDist2(p, km.centres[2*c], km.centres[2*c+1])
		bound = min(bound, hi)
	}
	cand := km.cand[q*km.k : (q+1)*km.k]
	n, outside := 0, math.Inf(1)
	for c, lo := range km.lo {
		if lo <= bound {
			cand[n] = int32(c)
			n++
		} else {
			outside = min(outside, lo)
		}
	}
	km.nCand[q] = n
	km.margin[q] = math.Sqrt(outside) - math.Sqrt(bound)
	km.stamp[q] = km.drift
}

// update moves every centre to the mean of its points and returns the sum of
// the squared movements. A centre without points stays where it is
// (scikit-learn instead relocates it to a far point; with intensity-sampled
// jittered points empty clusters are rare).
func (km *kmeans) update(pts []float64) float64 {
	clear(km.sum)
	clear(km.count)
	for i, a := range km.label {
		km.sum[2*a] += pts[2*i]
		km.sum[2*a+1] += pts[2*i+1]
		km.count[a]++
	}
	var shift, largest float64
	for c := range km.k {
		if n := km.count[c]; n > 0 {
			x, y := km.sum[2*c]/float64(n), km.sum[2*c+1]/float64(n)
			dx, dy := x-km.centres[2*c], y-km.centres[2*c+1]
			km.centres[2*c], km.centres[2*c+1] = x, y
			m2 := dx*dx + dy*dy
			shift += m2
			largest = max(largest, m2)
		}
	}
	// The slack covers the rounding of the distances in the margins.
	km.drift += 2*math.Sqrt(largest) + 1e-9
	return shift
}
