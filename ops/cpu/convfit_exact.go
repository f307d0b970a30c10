package cpu

// The near-group corrections at radius ∞, where every group is near every
// centroid and the corrected targets are the convolution itself at the
// centroids (the exact targets). The general pass of convfit_near.go
// gathers the near groups' components per centroid and evaluates them one
// at a time; at radius ∞ there is nothing to gather, so this pass runs over
// all of a mixture's components at once, as structure-of-arrays rows that
// the vector kernels read whole. The correction is one signed sum
//
//	c_i = Σ_v a_v N_v(μ_i) + Σ_j b_j N_j(μ_i)
//
// over the components v (a_v = w_v·nrm_v, 0 for a component that is its
// node alone) and the nodes j (b_j = −w_j·nrm_j, 0 for such a node), with
// N(p) = exp(−½ (p − μ)ᵀ Σ⁻¹ (p − μ)). Its backward pass visits each pair
// once: per Gaussian it sums over the centroids i
//
//	S = Σ_i g_i E_i,   S_u = Σ_i g_i E_i u_i,   S_uu = Σ_i g_i E_i u_i u_iᵀ,   u_i = Σ⁻¹(μ_i − μ)
//
// from which the Gaussian's gradients follow (∂/∂w = nrm·S for a
// component, −nrm·S for a node; ∂/∂μ = a·S_u; ∂/∂Σ = ½ a (S_uu − S Σ⁻¹)),
// and per centroid Σ a g E u, whose negative is the gradient at μ_i.

// gaussRows are n Gaussians as rows: positions, the unique entries of their
// symmetrised inverse covariances (symIndex order) and signed coefficients.
// The vector kernels read them in whole vectors, so n is a multiple of
// reluLanes and the rows beyond the Gaussians hold coefficient 0 and finite
// values.
type gaussRows[T Float] struct {
	mu   [3][]T
	sym  [6][]T
	coef []T
}

// gaussSums are the backward sums S, S_u and S_uu of gaussRows' Gaussians,
// one row each (S_uu's unique entries in symIndex order).
type gaussSums[T Float] struct {
	s  []T
	u  [3][]T
	uu [6][]T
}

// gaussRowsOf returns the rows of the first n Gaussians of pos and sym
// with the coefficients coef.
func gaussRowsOf[T Float](d, n int, pos *[3][]T, sym *[6][]T, coef []T) gaussRows[T] {
	r := gaussRows[T]{coef: coef[:n]}
	for a := range d {
		r.mu[a] = pos[a][:n]
	}
	for k := range symCount(d) {
		r.sym[k] = sym[k][:n]
	}
	return r
}

// gaussSumsOf returns the sums in the first n entries of s, u and uu.
func gaussSumsOf[T Float](d, n int, s []T, u *[3][]T, uu *[6][]T) gaussSums[T] {
	r := gaussSums[T]{s: s[:n]}
	for a := range d {
		r.u[a] = u[a][:n]
	}
	for k := range symCount(d) {
		r.uu[k] = uu[k][:n]
	}
	return r
}

// padLanes rounds n up to whole vectors of reluLanes.
func padLanes(n int) int { return (n + reluLanes - 1) / reluLanes * reluLanes }

// exactSet is one set of Gaussians of the pass at radius ∞, as rows, and
// their backward sums: views of nearWork's arrays.
type exactSet[T Float] struct {
	rows gaussRows[T]
	sums gaussSums[T]
}

// initExact makes w's two sets for the pass at radius ∞ once: the
// components (all N_v, whose sums are the gradient rows scatter reads) and
// the nodes (as many as a selection can hold, min(n, N_v); those beyond a
// mixture's selection get coefficient 0).
func (w *nearWork[T]) initExact(n int) {
	d, nv, np := w.d, padLanes(w.nv), padLanes(min(n, w.nv))
	w.exact = [2]exactSet[T]{
		{gaussRowsOf(d, nv, &w.mu, &w.sym, w.wn), gaussSumsOf(d, nv, w.ge, &w.gus, &w.guu)},
		{gaussRowsOf(d, np, &w.gmu, &w.gsym, w.gcoef), gaussSumsOf(d, np, w.nS, &w.nSu, &w.nSuu)},
	}
}

// exactRows prepares the loaded mixture's rows for the passes at radius ∞:
// the components' coefficients (with those of leaf nodes 0), the nodes'
// coefficients b_j, and benign values in the node rows beyond them.
func (w *nearWork[T]) exactRows() {
	ns := symCount(w.d)
	for j := range w.ns {
		if !w.inert[j] {
			w.gcoef[j] = -w.gw[j] * w.gnrm[j]
			continue
		}
		// A leaf: its component equals its node, and neither adds anything.
		// Their rows may hold another mixture's values; give them a
		// coefficient of 0 and a finite exponent.
		w.gcoef[j] = 0
		for v := w.sp[j].first; v <= w.sp[j].last; v++ {
			w.wn[v] = 0
			for k := range ns {
				w.sym[k][v] = 0
			}
		}
	}
	nodes := &w.exact[1].rows
	for j := w.ns; j < len(nodes.coef); j++ {
		nodes.coef[j] = 0
		for k := range ns {
			nodes.sym[k][j] = 0
		}
	}
}

// centroidRows returns the rows of the loaded mixture's centroids, the
// positions of its ns nodes.
func (w *nearWork[T]) centroidRows() *[3][]T {
	for a := range w.d {
		w.cent[a] = w.gmu[a][:w.ns]
	}
	return &w.cent
}

// exactForward writes the corrections at radius ∞ of the loaded mixture
// into c (n values; padding slots 0).
func (w *nearWork[T]) exactForward(c []T) {
	w.exactRows()
	clear(c)
	p := w.centroidRows()
	for i := range w.exact {
		r := &w.exact[i].rows
		if !exactSumFast(w.d, r, p, c[:w.ns]) {
			w.exactSum(r, c[:w.ns])
		}
	}
}

// exactSum adds Σ_v coef_v N_v(μ_i) over the rows r to out[i] for each
// centroid μ_i, one centroid at a time with the exponentials of a row in a
// vector pass.
func (w *nearWork[T]) exactSum(r *gaussRows[T], out []T) {
	n := len(r.coef)
	for i := range out {
		pi := w.centroid(i)
		quadRow(w.row, nil, 0, &pi, &r.mu, &r.sym, w.d, 0, n)
		expPadded(w.row[:n])
		var s T
		for v, e := range w.row[:n] {
			s += r.coef[v] * e
		}
		out[i] += s
	}
}

// exactGrad writes the sums S, S_u and S_uu of the rows r over the centroids
// with incoming gradients g into s, and adds Σ_v coef_v g_i E_iv u_iv to
// dp[·][i] for each centroid i. Centroids of gradient 0 add nothing.
func (w *nearWork[T]) exactGrad(r *gaussRows[T], g []T, s *gaussSums[T], dp *[3][]T) {
	d, n := w.d, len(r.coef)
	clear(s.s)
	for a := range d {
		clear(s.u[a])
	}
	for k := range symCount(d) {
		clear(s.uu[k])
	}
	var u [3][]T // the rows of Σ⁻¹(p − μ), as long as the Gaussians' padded rows
	for a := range d {
		u[a] = w.rowU[a][:n]
	}
	for i, gi := range g {
		if gi == 0 {
			continue
		}
		pi := w.centroid(i)
		quadRow(w.row, &w.rowU, 0, &pi, &r.mu, &r.sym, d, 0, n)
		expPadded(w.row[:n])
		var du [3]T
		for v, e := range w.row[:n] {
			f := gi * e
			s.s[v] += f
			var fu [3]T
			for a := range d {
				fu[a] = f * u[a][v]
				s.u[a][v] += fu[a]
				du[a] += r.coef[v] * fu[a]
			}
			for k, rc := range symIndex[d-2] {
				s.uu[k][v] += fu[rc[0]] * u[rc[1]][v]
			}
		}
		for a := range d {
			dp[a][i] += du[a]
		}
	}
}

// exactBackward adds the gradient of the loaded mixture's corrections at
// radius ∞ for the incoming gradient g (n values) to dfm (the gradient at its
// packed fit, unless nil) and to px and pk, its terms for its data row and
// its kernel row.
func (w *nearWork[T]) exactBackward(dfm, px, pk, g []T) {
	d, st := w.d, w.lx.Stride()
	w.exactRows()
	p := w.centroidRows()
	var dp [3][]T
	for a := range d {
		dp[a] = w.gdp[a][:w.ns]
		clear(dp[a])
	}
	gm := g[:w.ns]
	for i := range w.exact {
		e := &w.exact[i]
		if !exactGradFast(d, &e.rows, p, gm, &e.sums, &dp, w.lanes) {
			w.exactGrad(&e.rows, gm, &e.sums, &dp)
		}
	}
	// Components: ∂/∂w = nrm·S, and scatter's Σ E g w u (uᵀ) = a·S_u (S_uu).
	for v := range w.nv {
		a := w.wn[v]
		w.gwt[v] = w.nrm[v] * w.ge[v]
		w.ge[v] *= a
		for e := range d {
			w.gus[e][v] *= a
		}
		for k := range symCount(d) {
			w.guu[k][v] *= a
		}
	}
	w.scatter(px, pk)
	if dfm == nil {
		return
	}
	for j := range w.ns {
		dj := dfm[j*st : (j+1)*st]
		for a := range d {
			dj[1+a] -= dp[a][j]
		}
		if w.inert[j] {
			continue
		}
		b := w.gcoef[j]
		dj[0] -= w.gnrm[j] * w.nS[j]
		for a := range d {
			dj[1+a] += b * w.nSu[a][j]
		}
		for k, rc := range symIndex[d-2] {
			t := b * (w.nSuu[k][j] - w.nS[j]*w.gsym[k][j]) / 2
			dj[1+d+rc[0]*d+rc[1]] += t
			if rc[0] != rc[1] {
				dj[1+d+rc[1]*d+rc[0]] += t
			}
		}
	}
}
