package cpu

import (
	"math"

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
// when (μ_i − μ_j)ᵀ Σ_j⁻¹ (μ_i − μ_j) ≤ r². Added to the fit's value at μ_i
// it makes the value exact over the near nodes' components: with r = ∞ the
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
		nw.load(x, k, mixture.Mixture(f, ly, m), sel, m, scale)
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
		nw.load(x, k, fm, sel, m, scale)
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
	nearPartPool.put(nearPartKey{len(part), isFloat32[T]()}, any(part))
}

// nearPartKey keys the recycled per-mixture buffers of ConvFitNearBackward.
type nearPartKey struct {
	n    int
	is32 bool
}

var nearPartPool keyedPool[nearPartKey, any]

// nearParts returns a buffer of n values, recycled if one of that size was
// put back; every mixture clears its part before use.
func nearParts[T Float](n int) []T {
	if v, ok := nearPartPool.get(nearPartKey{n, isFloat32[T]()}); ok {
		return v.([]T)
	}
	return make([]T, n)
}

func isFloat32[T Float]() bool {
	var z T
	_, ok := any(z).(float32)
	return ok
}

// nearGroup is a selected node of the fit in float64: its weight, position,
// inverse covariance and normalisation.
type nearGroup struct {
	w, nrm float64
	mu     [3]float64
	inv    [9]float64
	leaf   bool
	sp     span
}

// at returns N(p; μ, Σ) and u = Σ⁻¹(p − μ).
func (g *nearGroup) at(d int, p *[3]float64) (n float64, u [3]float64) {
	q := 0.0
	for a := range d {
		for b := range d {
			u[a] += g.inv[a*d+b] * (p[b] - g.mu[b])
		}
		q += (p[a] - g.mu[a]) * u[a]
	}
	return g.nrm * math.Exp(-q/2), u
}

// maha returns (p − μ)ᵀ Σ⁻¹ (p − μ).
func (g *nearGroup) maha(d int, p *[3]float64) float64 {
	q := 0.0
	for a := range d {
		s := 0.0
		for b := range d {
			s += g.inv[a*d+b] * (p[b] - g.mu[b])
		}
		q += (p[a] - g.mu[a]) * s
	}
	return q
}

// nearWork is one worker's copy of an output mixture for ConvFitNear: the
// virtual components of its non-leaf nodes in key order as structure of
// arrays (positions, symmetrised inverse covariances, weight times
// normalisation, normalisation), its nodes, and the backward pass's
// per-component sums.
type nearWork[T Float] struct {
	lx, lk mixture.Layout
	at     convFitOffsets
	d, nv  int
	mu     [3][]T
	sym    [6][]T // order 00 01 11 (2D) or 00 01 02 11 12 22 (3D)
	wn     []T    // w_v·nrm_v
	nrm    []T
	row    []T // scratch: one run's exponents, then their exponentials
	rowU   [3][]T
	groups []nearGroup
	perm   []int32
	x, k   []T
	xb, kb int32
	scale  T
	// Backward sums per component: ∂/∂w, Σ E g, Σ E g u, Σ E g u uᵀ.
	gw, ge []T
	gu     [3][]T
	guu    [6][]T
}

func newNearWork[T Float](lx, lk mixture.Layout, n int) *nearWork[T] {
	nv, d := lx.C*lx.N*lk.N, lx.D
	ns := symCount(d)
	buf := make([]T, nv*(2*d+2*ns+5+d))
	next := func() []T {
		s := buf[:nv:nv]
		buf = buf[nv:]
		return s
	}
	w := &nearWork[T]{lx: lx, lk: lk, at: newConvFitOffsets(lx, lk), d: d, nv: nv, groups: make([]nearGroup, n)}
	for a := range d {
		w.mu[a], w.rowU[a], w.gu[a] = next(), next(), next()
	}
	for i := range ns {
		w.sym[i], w.guu[i] = next(), next()
	}
	w.wn, w.nrm, w.row, w.gw, w.ge = next(), next(), next(), next(), next()
	return w
}

// load reads output mixture m: its nodes from its packed fit fm and the
// components of its non-leaf nodes from x and k.
func (w *nearWork[T]) load(x, k, fm []T, sel *ConvFitSelection, m int, scale float64) {
	d, n := w.d, sel.s.N
	st := w.lx.Stride()
	ns := int(sel.nsel[m])
	w.groups = w.groups[:ns]
	w.perm = sel.perm[m*w.nv : (m+1)*w.nv]
	w.xb, w.kb = w.at.bases(w.lx, w.lk, m)
	w.x, w.k, w.scale = x, k, T(scale)
	var cov, inv [9]float64
	for j := range ns {
		g := &w.groups[j]
		p := fm[j*st : (j+1)*st]
		g.sp = sel.sel[m*n+j]
		g.leaf = g.sp.first == g.sp.last
		g.w = float64(p[0])
		for a := range d {
			g.mu[a] = float64(p[1+a])
		}
		for e := range d * d {
			cov[e] = float64(p[1+d+e])
		}
		det := mixture.InvDet(d, cov[:d*d], g.inv[:d*d])
		g.nrm = mixture.GaussNorm(d) / math.Sqrt(det)
		if g.leaf {
			continue
		}
		for v := g.sp.first; v <= g.sp.last; v++ {
			c := w.perm[v]
			xg := x[w.xb+w.at.x[c]:][:st]
			kg := k[w.kb+w.at.k[c]:][:st]
			for a := range d {
				w.mu[a][v] = T(float64(xg[1+a]) + float64(kg[1+a]))
			}
			for e := range d * d {
				cov[e] = float64(xg[1+d+e]) + float64(kg[1+d+e])
			}
			det := mixture.InvDet(d, cov[:d*d], inv[:d*d])
			nrm := mixture.GaussNorm(d) / math.Sqrt(det)
			w.nrm[v] = T(nrm)
			w.wn[v] = T(scale * float64(xg[0]) * float64(kg[0]) * nrm)
			for i, rc := range symIndex[d-2] {
				w.sym[i][v] = T((inv[rc[0]*d+rc[1]] + inv[rc[1]*d+rc[0]]) / 2)
			}
		}
	}
}

// centroid returns the position of node i.
func (w *nearWork[T]) centroid(i int) (p [3]float64) {
	copy(p[:], w.groups[i].mu[:w.d])
	return p
}

// near reports whether node j is a non-leaf node near the point p.
func (w *nearWork[T]) near(j int, p *[3]float64, r2 float64) bool {
	g := &w.groups[j]
	return !g.leaf && g.maha(w.d, p) <= r2
}

// forward writes the corrections of the mixture's nodes into c (n values).
func (w *nearWork[T]) forward(c []T, r2 float64) {
	ns := len(w.groups)
	for i := range ns {
		p := w.centroid(i)
		sum := 0.0
		for j := range ns {
			if !w.near(j, &p, r2) {
				continue
			}
			g := &w.groups[j]
			row := w.exponents(&p, g.sp, false)
			expRow(row)
			var t T
			for e, v := range w.wn[g.sp.first : g.sp.last+1] {
				t += v * row[e]
			}
			nj, _ := g.at(w.d, &p)
			sum += float64(t) - g.w*nj
		}
		c[i] = T(sum)
	}
	clear(c[ns:])
}

// exponents writes −½ (p − μ_v)ᵀ Σ_v⁻¹ (p − μ_v) of the components of sp
// into the scratch row and returns it, and with u also u_v = Σ_v⁻¹(p − μ_v)
// into rowU.
func (w *nearWork[T]) exponents(p *[3]float64, sp span, u bool) []T {
	f, l := int(sp.first), int(sp.last)+1
	row := w.row[:l-f]
	if w.d == 2 {
		p0, p1 := T(p[0]), T(p[1])
		m0, m1 := w.mu[0][f:l], w.mu[1][f:l]
		a00, a01, a11 := w.sym[0][f:l], w.sym[1][f:l], w.sym[2][f:l]
		u0, u1 := w.rowU[0][:l-f], w.rowU[1][:l-f]
		for e := range row {
			d0, d1 := p0-m0[e], p1-m1[e]
			v0 := a00[e]*d0 + a01[e]*d1
			v1 := a01[e]*d0 + a11[e]*d1
			row[e] = -(d0*v0 + d1*v1) / 2
			if u {
				u0[e], u1[e] = v0, v1
			}
		}
		return row
	}
	p0, p1, p2 := T(p[0]), T(p[1]), T(p[2])
	m0, m1, m2 := w.mu[0][f:l], w.mu[1][f:l], w.mu[2][f:l]
	a00, a01, a02 := w.sym[0][f:l], w.sym[1][f:l], w.sym[2][f:l]
	a11, a12, a22 := w.sym[3][f:l], w.sym[4][f:l], w.sym[5][f:l]
	u0, u1, u2 := w.rowU[0][:l-f], w.rowU[1][:l-f], w.rowU[2][:l-f]
	for e := range row {
		d0, d1, d2 := p0-m0[e], p1-m1[e], p2-m2[e]
		v0 := a00[e]*d0 + a01[e]*d1 + a02[e]*d2
		v1 := a01[e]*d0 + a11[e]*d1 + a12[e]*d2
		v2 := a02[e]*d0 + a12[e]*d1 + a22[e]*d2
		row[e] = -(d0*v0 + d1*v1 + d2*v2) / 2
		if u {
			u0[e], u1[e], u2[e] = v0, v1, v2
		}
	}
	return row
}

// backward adds the gradient of the mixture's corrections for the incoming
// gradient g (n values) to dfm (the gradient at its packed fit, unless nil)
// and to px and pk, its terms for its data row and its kernel row.
func (w *nearWork[T]) backward(dfm, px, pk, g []T, r2 float64) {
	d, ns := w.d, len(w.groups)
	st := w.lx.Stride()
	nsym := symCount(d)
	for j := range ns {
		if sp := w.groups[j].sp; !w.groups[j].leaf {
			f, l := sp.first, sp.last+1
			clear(w.gw[f:l])
			clear(w.ge[f:l])
			for a := range d {
				clear(w.gu[a][f:l])
			}
			for i := range nsym {
				clear(w.guu[i][f:l])
			}
		}
	}
	for i := range ns {
		gi := float64(g[i])
		if gi == 0 {
			continue
		}
		p := w.centroid(i)
		var dp [3]float64
		for j := range ns {
			if !w.near(j, &p, r2) {
				continue
			}
			gr := &w.groups[j]
			du := w.runBackward(&p, gr.sp, T(gi))
			nj, u := gr.at(d, &p)
			wn := gi * gr.w * nj
			for a := range d {
				dp[a] += wn*u[a] - float64(du[a])
			}
			if dfm == nil {
				continue
			}
			dj := dfm[j*st : (j+1)*st]
			dj[0] -= T(gi * nj)
			for a := range d {
				dj[1+a] -= T(wn * u[a])
				for b := range d {
					dj[1+d+a*d+b] -= T(wn * (u[a]*u[b] - gr.inv[a*d+b]) / 2)
				}
			}
		}
		if dfm != nil {
			for a := range d {
				dfm[i*st+1+a] += T(dp[a])
			}
		}
	}
	w.scatter(px, pk)
}

// runBackward adds the terms of the components of sp at the point p, with
// incoming gradient gi, to the per-component sums and returns Σ_v E_v u_v,
// the components' part of the gradient at p (negated).
func (w *nearWork[T]) runBackward(p *[3]float64, sp span, gi T) (du [3]T) {
	d := w.d
	f, l := int(sp.first), int(sp.last)+1
	row := w.exponents(p, sp, true)
	expRow(row)
	wn, nrm, gw, ge := w.wn[f:l], w.nrm[f:l], w.gw[f:l], w.ge[f:l]
	for e, v := range row {
		et := v * gi
		gw[e] += et * nrm[e]
		ww := et * wn[e]
		ge[e] += ww
		for a := range d {
			t := ww * w.rowU[a][e]
			w.gu[a][f+e] += t
			du[a] += t
		}
		for s, rc := range symIndex[d-2] {
			w.guu[s][f+e] += ww * w.rowU[rc[0]][e] * w.rowU[rc[1]][e]
		}
	}
	return du
}

// scatter adds the gradients of the non-leaf nodes' components to their
// factors' terms px (the data row) and pk (the kernel row): a component's
// weight is scale·x_w·k_w, its position x_μ + k_μ and its covariance
// x_Σ + k_Σ, with ∂/∂Σ_v = ½ (Σ E g u uᵀ − (Σ E g) Σ_v⁻¹).
func (w *nearWork[T]) scatter(px, pk []T) {
	d := w.d
	st := w.lx.Stride()
	xr, kr := w.x[w.xb:], w.k[w.kb:]
	var grad [13]T
	for gi := range w.groups {
		gr := &w.groups[gi]
		if gr.leaf {
			continue
		}
		for v := gr.sp.first; v <= gr.sp.last; v++ {
			c := w.perm[v]
			xo, ko := int(w.at.x[c]), int(w.at.k[c])
			grad[0] = w.gw[v] * w.scale
			for a := range d {
				grad[1+a] = w.gu[a][v]
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
