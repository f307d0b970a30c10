package cpu

import (
	"math"
	"unsafe"

	"github.com/gmcn-go/gmcn/internal/parallel"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// ConvFitNear writes the near-group corrections of a fused
// convolution-fitting into c (one value per slot of f, B·Fo·n values):
// for output mixture m and centroid μ_i of its selected node i,
//
//	c_i = Σ_{j near i} ( Σ_{v ∈ G_j} w_v N(μ_i; μ_v, Σ_v) − w_j N(μ_i; μ_j, Σ_j) )
//
// where node j = {w_j, μ_j, Σ_j} is f's slot j, G_j the virtual components
// below it (Conv's components, their weights times scale) and j is near i
// when j = i or, for r > 0, (μ_i − μ_j)ᵀ Σ_j⁻¹ (μ_i − μ_j) ≤ r² (computed in
// T). Added to the fit's value at μ_i it makes the value exact over the
// near nodes' components: with r = 0 over node i's own, with r = ∞ the
// sum is the convolution itself (times scale) at μ_i. A node that is a
// single component equals it and adds nothing; padding slots get 0.
//
// f is ConvFit's output for x, k and sel's selection with its weights
// multiplied by scale (the block's 1/Fi), sel the selection ConvFitSaving
// returned for x and k. Work is spread over the output mixtures; each
// mixture's sums run in a fixed order, so results do not depend on the
// number of workers. docs/fused.md ("Near-group targets") derives it.
func ConvFitNear[T Float](c, x, k, f []T, lx, lk mixture.Layout, sel *ConvFitSelection, r, scale float64) {
	n := sel.s.N
	ly := device.ConvFitLayout(lx, lk, n)
	work := make([]*nearWork[T], parallel.Workers(ly.Mixtures()))
	parallel.ForWorker(ly.Mixtures(), func(w, m int) {
		if work[w] == nil {
			work[w] = newNearWork[T](lx, lk, n)
		}
		nw := work[w]
		if r == 0 && lx.D == 2 {
			nw.loadNodes(x, k, mixture.Mixture(f, ly, m), sel, m, scale, nil)
			nw.ownForward2(c[m*n : (m+1)*n])
			return
		}
		nw.load(x, k, mixture.Mixture(f, ly, m), sel, m, scale, nil)
		if math.IsInf(r, 1) {
			nw.exactForward(c[m*n : (m+1)*n])
			return
		}
		nw.forward(c[m*n:(m+1)*n], r*r)
	})
}

// ConvFitNearBackward adds the gradients of ConvFitNear for the incoming
// gradient g (one value per slot, as c) to dx, dk and df, the gradient at f
// (a nil destination is not computed), with the near pairs and the
// selection held fixed. Each destination row of dx and dk is summed in a
// fixed order from per-mixture buffers, so the result is deterministic.
func ConvFitNearBackward[T Float](dx, dk, df, g, x, k, f []T, lx, lk mixture.Layout, sel *ConvFitSelection, r, scale float64) {
	n := sel.s.N
	ly := device.ConvFitLayout(lx, lk, n)
	fo, s := lk.B, lx.Stride()
	xrow, krow := lx.C*lx.N*s, lk.C*lk.N*s
	// Per output mixture, its terms for its data row and its kernel row.
	part := nearParts[T](ly.Mixtures() * (xrow + krow))
	work := make([]*nearWork[T], parallel.Workers(ly.Mixtures()))
	parallel.ForWorker(ly.Mixtures(), func(w, m int) {
		if work[w] == nil {
			work[w] = newNearWork[T](lx, lk, n)
		}
		nw := work[w]
		fm := mixture.Mixture(f, ly, m)
		var dfm []T
		if df != nil {
			dfm = mixture.Mixture(df, ly, m)
		}
		px := part[m*(xrow+krow):][:xrow]
		pk := part[m*(xrow+krow)+xrow:][:krow]
		clear(px)
		clear(pk)
		var idle []T // at radius 0 a node of zero gradient needs nothing
		if r == 0 {
			idle = g[m*n : (m+1)*n]
		}
		if r == 0 && lx.D == 2 {
			nw.loadNodes(x, k, fm, sel, m, scale, idle)
			nw.ownBackward2(dfm, px, pk, g[m*n:(m+1)*n])
			return
		}
		nw.load(x, k, fm, sel, m, scale, idle)
		if math.IsInf(r, 1) {
			nw.exactBackward(dfm, px, pk, g[m*n:(m+1)*n])
			return
		}
		nw.backward(dfm, px, pk, g[m*n:(m+1)*n], r*r)
	})
	if dx != nil {
		parallel.For(lx.B, func(b int) {
			dst := dx[lx.Offset(b, 0, 0):][:xrow]
			for o := range fo {
				for e, v := range part[(b*fo+o)*(xrow+krow):][:xrow] {
					dst[e] += v
				}
			}
		})
	}
	if dk != nil {
		parallel.For(fo, func(o int) {
			dst := dk[lk.Offset(o, 0, 0):][:krow]
			for b := range lx.B {
				for e, v := range part[(b*fo+o)*(xrow+krow)+xrow:][:krow] {
					dst[e] += v
				}
			}
		})
	}
	nearPartPool.put(nearPartKey{len(part), unsafe.Sizeof(T(0))}, any(part))
}

// nearPartKey keys the recycled per-mixture buffers of ConvFitNearBackward.
type nearPartKey struct {
	n    int
	size uintptr // of an element, as blockKey's
}

var nearPartPool keyedPool[nearPartKey, any]

// nearParts returns a buffer of n values, recycled if one of that size was
// put back; every mixture clears its part before use.
func nearParts[T Float](n int) []T {
	if v, ok := nearPartPool.get(nearPartKey{n, unsafe.Sizeof(T(0))}); ok {
		return v.([]T)
	}
	return make([]T, n)
}

// nearWork is one worker's copy of an output mixture for ConvFitNear as
// structures of arrays: its selected nodes (groups) and the virtual
// components of its non-leaf nodes in key order, each with its position,
// symmetrised inverse covariance, weight times normalisation and
// normalisation; scratch rows for one centroid; and the backward pass's
// per-component sums. Every term at a centroid is computed in T, in rows
// that the vectorised exponential takes whole: the quadratic forms of all
// nodes (which decide which are near), then those of all the near nodes'
// components, concatenated.
type nearWork[T Float] struct {
	lx, lk mixture.Layout
	at     convFitOffsets
	d, nv  int
	// Components, indexed by sorted position (only non-leaf nodes' are set).
	mu  [3][]T
	sym [6][]T // order 00 01 11 (2D) or 00 01 02 11 12 22 (3D)
	wn  []T    // w_v·nrm_v
	nrm []T
	// Nodes.
	gmu      [3][]T
	gsym     [6][]T
	gw, gnrm []T
	inert    []bool // a leaf, or a node of zero gradient in a backward pass at radius 0: adds nothing
	sp       []span
	ns       int
	gq, gexp []T    // per node: −½ quadratic form; per near node: its exponential
	gu       [3][]T // per node: Σ_j⁻¹(p − μ_j) (backward)
	near     []int32
	row      []T // the near nodes' components' exponents, then exponentials
	rowU     [3][]T
	perm     []int32
	x, k     []T
	xb, kb   int32
	scale    T
	// Backward sums per component: ∂/∂w, Σ E g w, Σ E g w u, Σ E g w u uᵀ.
	gwt, ge []T
	gus     [3][]T
	guu     [6][]T
	// The pass at radius ∞ (convfit_exact.go): the nodes' signed
	// coefficients and backward sums, the centroids' gradients, and the
	// vector kernels' per-centroid lanes.
	gcoef, nS []T
	nSu, gdp  [3][]T
	nSuu      [6][]T
	lanes     []T
	exact     [2]exactSet[T]
	cent      [3][]T
}

func newNearWork[T Float](lx, lk mixture.Layout, n int) *nearWork[T] {
	nv, d := lx.C*lx.N*lk.N, lx.D
	ns := symCount(d)
	buf := make([]T, padLanes(nv)*(2*d+2*ns+5+d)+padLanes(n)*(4*d+2*ns+6))
	next := func(k int) []T {
		// Padded to whole vectors for expPadded.
		s := buf[:k:padLanes(k)]
		buf = buf[padLanes(k):]
		return s
	}
	w := &nearWork[T]{lx: lx, lk: lk, at: newConvFitOffsets(lx, lk), d: d, nv: nv,
		inert: make([]bool, n), sp: make([]span, n), near: make([]int32, n)}
	for a := range d {
		w.mu[a], w.rowU[a], w.gus[a] = next(nv), next(nv), next(nv)
		w.gmu[a], w.gu[a] = next(n), next(n)
	}
	for i := range ns {
		w.sym[i], w.guu[i] = next(nv), next(nv)
		w.gsym[i], w.nSuu[i] = next(n), next(n)
	}
	w.wn, w.nrm, w.row, w.gwt, w.ge = next(nv), next(nv), next(nv), next(nv), next(nv)
	w.gw, w.gnrm, w.gq, w.gexp = next(n), next(n), next(n), next(n)
	w.gcoef, w.nS = next(n), next(n)
	for a := range d {
		w.nSu[a], w.gdp[a] = next(n), next(n)
	}
	w.lanes = make([]T, padLanes(n)*d*reluLanes)
	w.initExact(n)
	return w
}

// setGaussian stores the Gaussian of position mu and covariance cov
// (float64) at index j of the position and inverse arrays and returns its
// normalisation.
func setGaussian[T Float](d int, mu, cov []float64, pos *[3][]T, sym *[6][]T, j int) float64 {
	var inv [9]float64
	det := mixture.InvDet(d, cov[:d*d], inv[:d*d])
	for a := range d {
		pos[a][j] = T(mu[a])
	}
	for i, rc := range symIndex[d-2] {
		sym[i][j] = T((inv[rc[0]*d+rc[1]] + inv[rc[1]*d+rc[0]]) / 2)
	}
	return mixture.GaussNorm(d) / math.Sqrt(det)
}

// load reads output mixture m: its nodes from its packed fit fm and the
// components of its non-leaf nodes from x and k, but for those whose value
// in idle (unless nil) is 0.
func (w *nearWork[T]) load(x, k, fm []T, sel *ConvFitSelection, m int, scale float64, idle []T) {
	w.loadNodes(x, k, fm, sel, m, scale, idle)
	for j := range w.ns {
		switch {
		case w.inert[j]:
		case w.d == 2:
			w.loadRun2(w.sp[j], scale)
		default:
			w.loadRun(w.sp[j], scale)
		}
	}
}

// loadNodes is load without the components.
func (w *nearWork[T]) loadNodes(x, k, fm []T, sel *ConvFitSelection, m int, scale float64, idle []T) {
	d, n := w.d, sel.s.N
	st := w.lx.Stride()
	w.ns = int(sel.nsel[m])
	w.perm = sel.perm[m*w.nv : (m+1)*w.nv]
	w.xb, w.kb = w.at.bases(w.lx, w.lk, m)
	w.x, w.k, w.scale = x, k, T(scale)
	var mu [3]float64
	var cov [9]float64
	for j := range w.ns {
		p := fm[j*st : (j+1)*st]
		sp := sel.sel[m*n+j]
		w.sp[j], w.inert[j] = sp, sp.first == sp.last || idle != nil && idle[j] == 0
		for e := range d {
			mu[e] = float64(p[1+e])
		}
		for e := range d * d {
			cov[e] = float64(p[1+d+e])
		}
		nrm := setGaussian(d, mu[:], cov[:], &w.gmu, &w.gsym, j)
		w.gw[j], w.gnrm[j] = p[0], T(nrm)
	}
}

// loadRun sets the components of the node sp.
func (w *nearWork[T]) loadRun(sp span, scale float64) {
	d, st := w.d, w.lx.Stride()
	var mu [3]float64
	var cov [9]float64
	for v := sp.first; v <= sp.last; v++ {
		c := w.perm[v]
		xg := w.x[w.xb+w.at.x[c]:][:st]
		kg := w.k[w.kb+w.at.k[c]:][:st]
		for e := range d {
			mu[e] = float64(xg[1+e]) + float64(kg[1+e])
		}
		for e := range d * d {
			cov[e] = float64(xg[1+d+e]) + float64(kg[1+d+e])
		}
		nrm := setGaussian(d, mu[:], cov[:], &w.mu, &w.sym, int(v))
		w.nrm[v] = T(nrm)
		w.wn[v] = T(scale * float64(xg[0]) * float64(kg[0]) * nrm)
	}
}

// loadRun2 is loadRun in 2D, written out and in T: the components'
// inverses are most of the corrections' cost at radius 0.
func (w *nearWork[T]) loadRun2(sp span, scale float64) {
	xr, kr := w.x[w.xb:], w.k[w.kb:]
	f, l := int(sp.first), int(sp.last)+1
	m0, m1, a00, a01, a11 := w.mu[0][f:l], w.mu[1][f:l], w.sym[0][f:l], w.sym[1][f:l], w.sym[2][f:l]
	wn, nrm := w.wn[f:l], w.nrm[f:l]
	norm, sc := T(mixture.GaussNorm(2)), T(scale)
	for e, c := range w.perm[f:l] {
		xg, kg := xr[w.at.x[c]:][:7:7], kr[w.at.k[c]:][:7:7]
		d0, d1, b00, b01, b11, rs := component2(xg, kg, 0, 0)
		m0[e], m1[e] = -d0, -d1
		a00[e], a01[e], a11[e] = b00, b01, b11
		nrm[e] = norm * rs
		wn[e] = sc * xg[0] * kg[0] * nrm[e]
	}
}

// quadRow writes −½ (p − μ_j)ᵀ Σ_j⁻¹ (p − μ_j) of the Gaussians [f, l) of
// pos and sym into dst, and with u non-nil also Σ_j⁻¹(p − μ_j) into the
// rows of u from uo on.
func quadRow[T Float](dst []T, u *[3][]T, uo int, p *[3]T, pos *[3][]T, sym *[6][]T, d, f, l int) {
	dst = dst[:l-f]
	if d == 2 {
		m0, m1 := pos[0][f:l], pos[1][f:l]
		a00, a01, a11 := sym[0][f:l], sym[1][f:l], sym[2][f:l]
		if u == nil {
			for e := range dst {
				d0, d1 := p[0]-m0[e], p[1]-m1[e]
				dst[e] = -(d0*(a00[e]*d0+a01[e]*d1) + d1*(a01[e]*d0+a11[e]*d1)) / 2
			}
			return
		}
		u0, u1 := u[0][uo:uo+len(dst)], u[1][uo:uo+len(dst)]
		for e := range dst {
			d0, d1 := p[0]-m0[e], p[1]-m1[e]
			v0, v1 := a00[e]*d0+a01[e]*d1, a01[e]*d0+a11[e]*d1
			u0[e], u1[e] = v0, v1
			dst[e] = -(d0*v0 + d1*v1) / 2
		}
		return
	}
	m0, m1, m2 := pos[0][f:l], pos[1][f:l], pos[2][f:l]
	a00, a01, a02 := sym[0][f:l], sym[1][f:l], sym[2][f:l]
	a11, a12, a22 := sym[3][f:l], sym[4][f:l], sym[5][f:l]
	var u0, u1, u2 []T
	if u != nil {
		u0, u1, u2 = u[0][uo:uo+len(dst)], u[1][uo:uo+len(dst)], u[2][uo:uo+len(dst)]
	}
	for e := range dst {
		d0, d1, d2 := p[0]-m0[e], p[1]-m1[e], p[2]-m2[e]
		v0 := a00[e]*d0 + a01[e]*d1 + a02[e]*d2
		v1 := a01[e]*d0 + a11[e]*d1 + a12[e]*d2
		v2 := a02[e]*d0 + a12[e]*d1 + a22[e]*d2
		if u != nil {
			u0[e], u1[e], u2[e] = v0, v1, v2
		}
		dst[e] = -(d0*v0 + d1*v1 + d2*v2) / 2
	}
}

// centroid returns the position of node i.
func (w *nearWork[T]) centroid(i int) (p [3]T) {
	for a := range w.d {
		p[a] = w.gmu[a][i]
	}
	return p
}

// nearRows fills the rows of the centroid p: the nodes' quadratic forms
// (and with u their Σ_j⁻¹(p − μ_j)), the list of near non-leaf nodes with
// their exponentials, and the exponentials of their components,
// concatenated in the order of the list (with u also the components'
// Σ_v⁻¹(p − μ_v)). It returns the number of near nodes.
func (w *nearWork[T]) nearRows(i int, p *[3]T, r2 float64, u bool) int {
	var gu, ru *[3][]T
	if u {
		gu, ru = &w.gu, &w.rowU
	}
	nb := 0
	if r2 > 0 {
		quadRow(w.gq, gu, 0, p, &w.gmu, &w.gsym, w.d, 0, w.ns)
		for j, q := range w.gq[:w.ns] {
			// The test runs in T, the same in the forward and backward
			// passes; node i itself has q = 0.
			if !w.inert[j] && float64(-2*q) <= r2 {
				w.near[nb], w.gexp[nb] = int32(j), q
				nb++
			}
		}
		expPadded(w.gexp[:nb])
	} else if !w.inert[i] {
		// Radius 0: node i alone, at distance 0, where the quadratic form
		// above would give exactly 0, its exponential 1 and u = 0.
		w.near[0], w.gexp[0] = int32(i), 1
		for a := range w.d {
			w.gu[a][i] = 0
		}
		nb = 1
	}
	off := 0
	for _, j := range w.near[:nb] {
		sp := w.sp[j]
		quadRow(w.row[off:], ru, off, p, &w.mu, &w.sym, w.d, int(sp.first), int(sp.last)+1)
		off += int(sp.last-sp.first) + 1
	}
	expPadded(w.row[:off])
	return nb
}

// forward writes the corrections of the mixture's nodes into c (n values).
func (w *nearWork[T]) forward(c []T, r2 float64) {
	for i := range w.ns {
		p := w.centroid(i)
		nb := w.nearRows(i, &p, r2, false)
		var sum T
		off := 0
		for b, j := range w.near[:nb] {
			sum -= w.gw[j] * w.gnrm[j] * w.gexp[b]
			sp := w.sp[j]
			cnt := int(sp.last-sp.first) + 1
			row := w.row[off : off+cnt]
			for e, v := range w.wn[sp.first : sp.last+1] {
				sum += v * row[e]
			}
			off += cnt
		}
		c[i] = sum
	}
	clear(c[w.ns:])
}

// backward adds the gradient of the mixture's corrections for the incoming
// gradient g (n values) to dfm (the gradient at its packed fit, unless nil)
// and to px and pk, its terms for its data row and its kernel row.
func (w *nearWork[T]) backward(dfm, px, pk, g []T, r2 float64) {
	d := w.d
	st := w.lx.Stride()
	for j := range w.ns {
		if sp := w.sp[j]; !w.inert[j] {
			f, l := sp.first, sp.last+1
			clear(w.gwt[f:l])
			clear(w.ge[f:l])
			for a := range d {
				clear(w.gus[a][f:l])
			}
			for i := range symCount(d) {
				clear(w.guu[i][f:l])
			}
		}
	}
	for i := range w.ns {
		gi := g[i]
		if gi == 0 {
			continue
		}
		p := w.centroid(i)
		nb := w.nearRows(i, &p, r2, true)
		var dp [3]T
		off := 0
		for b, j := range w.near[:nb] {
			// The node's own term, subtracted.
			e := w.gexp[b]
			wn := gi * w.gw[j] * w.gnrm[j] * e
			for a := range d {
				dp[a] += wn * w.gu[a][j]
			}
			if dfm != nil {
				dj := dfm[int(j)*st : (int(j)+1)*st]
				dj[0] -= gi * w.gnrm[j] * e
				for a := range d {
					dj[1+a] -= wn * w.gu[a][j]
				}
				for s, rc := range symIndex[d-2] {
					t := wn * (w.gu[rc[0]][j]*w.gu[rc[1]][j] - w.gsym[s][j]) / 2
					dj[1+d+rc[0]*d+rc[1]] -= t
					if rc[0] != rc[1] {
						dj[1+d+rc[1]*d+rc[0]] -= t
					}
				}
			}
			// Its components' terms.
			sp := w.sp[j]
			cnt := int(sp.last-sp.first) + 1
			du := w.runBackward(int(sp.first), off, cnt, gi)
			for a := range d {
				dp[a] -= du[a]
			}
			off += cnt
		}
		if dfm != nil {
			for a := range d {
				dfm[i*st+1+a] += dp[a]
			}
		}
	}
	w.scatter(px, pk)
}

// runBackward adds the terms of the cnt components from sorted position f,
// whose exponentials and Σ_v⁻¹(p − μ_v) start at off in the rows, with
// incoming gradient gi, to the per-component sums and returns Σ_v E_v u_v,
// the components' part of the gradient at the centroid (negated).
func (w *nearWork[T]) runBackward(f, off, cnt int, gi T) (du [3]T) {
	d := w.d
	row := w.row[off : off+cnt]
	wn, nrm, gwt, ge := w.wn[f:f+cnt], w.nrm[f:f+cnt], w.gwt[f:f+cnt], w.ge[f:f+cnt]
	if d == 2 {
		// Written out: the loop over the dimension costs more than the
		// arithmetic.
		u0, u1 := w.rowU[0][off:off+cnt], w.rowU[1][off:off+cnt]
		gu0, gu1 := w.gus[0][f:f+cnt], w.gus[1][f:f+cnt]
		g00, g01, g11 := w.guu[0][f:f+cnt], w.guu[1][f:f+cnt], w.guu[2][f:f+cnt]
		for e, v := range row {
			et := v * gi
			gwt[e] += et * nrm[e]
			ww := et * wn[e]
			ge[e] += ww
			t0, t1 := ww*u0[e], ww*u1[e]
			gu0[e] += t0
			gu1[e] += t1
			du[0] += t0
			du[1] += t1
			g00[e] += t0 * u0[e]
			g01[e] += t0 * u1[e]
			g11[e] += t1 * u1[e]
		}
		return du
	}
	for e, v := range row {
		et := v * gi
		gwt[e] += et * nrm[e]
		ww := et * wn[e]
		ge[e] += ww
		for a := range d {
			t := ww * w.rowU[a][off+e]
			w.gus[a][f+e] += t
			du[a] += t
		}
		for s, rc := range symIndex[d-2] {
			w.guu[s][f+e] += ww * w.rowU[rc[0]][off+e] * w.rowU[rc[1]][off+e]
		}
	}
	return du
}

// scatter adds the gradients of the non-leaf nodes' components to their
// factors' terms px (the data row) and pk (the kernel row): a component's
// weight is scale·x_w·k_w, its position x_μ + k_μ and its covariance
// x_Σ + k_Σ, with ∂/∂Σ_v = ½ (Σ E g w u uᵀ − (Σ E g w) Σ_v⁻¹).
func (w *nearWork[T]) scatter(px, pk []T) {
	d := w.d
	st := w.lx.Stride()
	xr, kr := w.x[w.xb:], w.k[w.kb:]
	var grad [13]T
	for j := range w.ns {
		if w.inert[j] {
			continue
		}
		if d == 2 {
			w.scatter2(px, pk, w.sp[j])
			continue
		}
		for v := w.sp[j].first; v <= w.sp[j].last; v++ {
			c := w.perm[v]
			xo, ko := int(w.at.x[c]), int(w.at.k[c])
			grad[0] = w.gwt[v] * w.scale
			for a := range d {
				grad[1+a] = w.gus[a][v]
			}
			for s, rc := range symIndex[d-2] {
				t := (w.guu[s][v] - w.ge[v]*w.sym[s][v]) / 2
				grad[1+d+rc[0]*d+rc[1]] = t
				grad[1+d+rc[1]*d+rc[0]] = t
			}
			gx, gk := px[xo:xo+st], pk[ko:ko+st]
			gx[0] += grad[0] * kr[ko]
			gk[0] += grad[0] * xr[xo]
			for e := 1; e < st; e++ {
				gx[e] += grad[e]
				gk[e] += grad[e]
			}
		}
	}
}

// scatter2 is scatter's loop over the components of node sp in 2D,
// written out.
func (w *nearWork[T]) scatter2(px, pk []T, sp span) {
	xr, kr := w.x[w.xb:], w.k[w.kb:]
	f, l := int(sp.first), int(sp.last)+1
	gwt, ge, gu0, gu1 := w.gwt[f:l], w.ge[f:l], w.gus[0][f:l], w.gus[1][f:l]
	g00, g01, g11 := w.guu[0][f:l], w.guu[1][f:l], w.guu[2][f:l]
	a00, a01, a11 := w.sym[0][f:l], w.sym[1][f:l], w.sym[2][f:l]
	for e, c := range w.perm[f:l] {
		xo, ko := int(w.at.x[c]), int(w.at.k[c])
		gx, gk := px[xo:], pk[ko:]
		addFactors2(gx, gk, gwt[e]*w.scale, xr[xo], kr[ko], gu0[e], gu1[e],
			(g00[e]-ge[e]*a00[e])/2, (g01[e]-ge[e]*a01[e])/2, (g11[e]-ge[e]*a11[e])/2)
	}
}

// addFactors2 adds the gradient of a 2D component, made from the data
// Gaussian of weight xw and the kernel Gaussian of weight kw, to their terms
// gx and gk: gw for its weight (the product xw·kw times the block's scale),
// g0, g1 for its position and c00, c01, c11 for its covariance's entries.
func addFactors2[T Float](gx, gk []T, gw, xw, kw, g0, g1, c00, c01, c11 T) {
	gx, gk = gx[:7:7], gk[:7:7]
	gx[0] += gw * kw
	gk[0] += gw * xw
	gx[1] += g0
	gk[1] += g0
	gx[2] += g1
	gk[2] += g1
	gx[3] += c00
	gk[3] += c00
	gx[4] += c01
	gk[4] += c01
	gx[5] += c01
	gk[5] += c01
	gx[6] += c11
	gk[6] += c11
}

// ownForward2 is forward at radius 0 in 2D: each component meets only its
// own node's centroid, so its exponent is made with the component, all of
// the mixture's in one row (sorted positions) under one vector
// exponential, and summed per node.
func (w *nearWork[T]) ownForward2(c []T) {
	xr, kr := w.x[w.xb:], w.k[w.kb:]
	norm, sc := T(mixture.GaussNorm(2)), w.scale
	for i := range w.ns {
		if w.inert[i] {
			continue
		}
		f, l := int(w.sp[i].first), int(w.sp[i].last)+1
		p0, p1 := w.gmu[0][i], w.gmu[1][i]
		row, wn := w.row[f:l], w.wn[f:l]
		for e, v := range w.perm[f:l] {
			xg, kg := xr[w.at.x[v]:][:7:7], kr[w.at.k[v]:][:7:7]
			d0, d1, a00, a01, a11, rs := component2(xg, kg, p0, p1)
			row[e] = -(d0*(a00*d0+a01*d1) + d1*(a01*d0+a11*d1)) / 2
			wn[e] = sc * xg[0] * kg[0] * norm * rs
		}
	}
	// Inert nodes' entries hold stale finite values; their exponentials are
	// not read.
	expPadded(w.row[:w.nv])
	for i := range w.ns {
		c[i] = 0
		if w.inert[i] {
			continue
		}
		f, l := int(w.sp[i].first), int(w.sp[i].last)+1
		var sum T
		for e, v := range w.row[f:l] {
			sum += w.wn[f+e] * v
		}
		c[i] = sum - w.gw[i]*w.gnrm[i]
	}
	clear(c[w.ns:])
}

// component2 returns the offset p − μ of the 2D component made from the
// factors xg and kg (μ = μ_x + μ_k, Σ = Σ_x + Σ_k), the unique entries of
// its symmetrised Σ⁻¹ and 1/√det Σ.
func component2[T Float](xg, kg []T, p0, p1 T) (d0, d1, a00, a01, a11, rs T) {
	d0, d1 = p0-(xg[1]+kg[1]), p1-(xg[2]+kg[2])
	c00, c01, c10, c11 := xg[3]+kg[3], xg[4]+kg[4], xg[5]+kg[5], xg[6]+kg[6]
	rs = 1 / T(math.Sqrt(float64(c00*c11-c01*c10)))
	r := rs * rs
	return d0, d1, c11 * r, -(c01 + c10) * r / 2, c00 * r, rs
}

// ownBackward2 is backward at radius 0 in 2D: the components made and
// evaluated at their nodes' centroids as in ownForward2, then each one's
// gradient added to its factors' terms px and pk at once, since no other
// centroid meets it.
func (w *nearWork[T]) ownBackward2(dfm, px, pk, g []T) {
	xr, kr := w.x[w.xb:], w.k[w.kb:]
	norm, sc := T(mixture.GaussNorm(2)), w.scale
	a00, a01, a11 := w.sym[0], w.sym[1], w.sym[2]
	u0, u1 := w.rowU[0], w.rowU[1]
	for i := range w.ns {
		if g[i] == 0 || w.inert[i] {
			continue
		}
		f, l := int(w.sp[i].first), int(w.sp[i].last)+1
		p0, p1 := w.gmu[0][i], w.gmu[1][i]
		for v := f; v < l; v++ {
			c := w.perm[v]
			xg, kg := xr[w.at.x[c]:][:7:7], kr[w.at.k[c]:][:7:7]
			d0, d1, b00, b01, b11, rs := component2(xg, kg, p0, p1)
			a00[v], a01[v], a11[v] = b00, b01, b11
			u0[v], u1[v] = a00[v]*d0+a01[v]*d1, a01[v]*d0+a11[v]*d1
			w.row[v] = -(d0*u0[v] + d1*u1[v]) / 2
			w.nrm[v] = norm * rs
			w.wn[v] = sc * xg[0] * kg[0] * w.nrm[v]
		}
	}
	expPadded(w.row[:w.nv])
	for i := range w.ns {
		gi := g[i]
		if gi == 0 || w.inert[i] {
			continue
		}
		f, l := int(w.sp[i].first), int(w.sp[i].last)+1
		var dp0, dp1 T
		for v := f; v < l; v++ {
			c := w.perm[v]
			xo, ko := int(w.at.x[c]), int(w.at.k[c])
			gx, gk := px[xo:], pk[ko:]
			et := w.row[v] * gi
			gw := et * w.nrm[v] * sc
			ww := et * w.wn[v]
			t0, t1 := ww*u0[v], ww*u1[v]
			dp0 -= t0
			dp1 -= t1
			addFactors2(gx, gk, gw, xr[xo], kr[ko], t0, t1,
				(t0*u0[v]-ww*a00[v])/2, (t0*u1[v]-ww*a01[v])/2, (t1*u1[v]-ww*a11[v])/2)
		}
		if dfm == nil {
			continue
		}
		// The node's own term, w_i N(μ_i; μ_i, Σ_i), subtracted: at distance 0
		// only its weight and, through the normalisation, its covariance.
		own := gi * w.gw[i] * w.gnrm[i] / 2
		dj := dfm[i*7:][:7:7]
		dj[0] -= gi * w.gnrm[i]
		dj[1] += dp0
		dj[2] += dp1
		dj[3] += own * w.gsym[0][i]
		dj[4] += own * w.gsym[1][i]
		dj[5] += own * w.gsym[1][i]
		dj[6] += own * w.gsym[2][i]
	}
}
