package cpu

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"unsafe"

	"github.com/gmcn-go/gmcn/internal/parallel"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// ConvFit writes the fused convolution-fitting of the data x (layout lx
// [B, Fi, Ni, ·]) with the kernels k (layout lk [Fo, Fi, Nk, ·]) into y
// (layout device.ConvFitLayout(lx, lk, n)): output mixture (b, o) holds n
// Gaussians that stand for the Nv = Fi·Ni·Nk components of Conv's output
// mixture (b, o), which are never stored.
//
// Per output mixture, the Nv virtual components (Conv's component v, made on
// the fly from one data and one kernel Gaussian) are the leaves of a binary
// radix tree over keys that sort by the sign of the weight first and by the
// Morton code of the position second, so the root separates negative from
// positive weights and every other node is single-signed. Starting from the
// root, the selected node with the largest |Σ w| (the first one on ties) is
// replaced by its two children until n nodes are selected or all are leaves;
// each selected node, in selection order, becomes the moment match of the
// components below it (see convFitMoments). Slots beyond Nv are
// {0, 0, I}. docs/fused.md derives it and says what differs from the
// reference's unevaluated version.
//
// The caller guarantees lx.C == lk.C, lx.D == lk.D, n ≥ 1, Nv < 2³¹ and the
// slice lengths. Work is spread over the B·Fo output mixtures.
func ConvFit[T Float](y, x, k []T, lx, lk mixture.Layout, n int) {
	convFitInto(y, x, k, lx, lk, n, nil)
}

// ConvFitSelection holds the discrete decisions of one ConvFit call, which
// ConvFitBackward needs: per output mixture the order of the virtual
// components under the sort keys and the selected nodes, and the moments
// of those nodes, which the backward pass needs again. Its size is
// B·Fo·(4·Nv + 128·n) bytes, plus B·Fo·Nv·(24 + 8·D) bytes between the two
// calls of a backward pass that computes ∂L/∂x and ∂L/∂k one at a time.
type ConvFitSelection struct {
	lx, lk mixture.Layout
	n      int
	perm   []int32 // [B·Fo][Nv]
	sel    []span  // [B·Fo][n], the first nsel[m] used
	nsel   []int32
	mom    []convFitMoments // [B·Fo][n]: the moment match of each selected node

	mu   sync.Mutex
	kept any // *convFitTerms[T] for one later ConvFitBackwardSaved, or nil
}

func newConvFitSelection(lx, lk mixture.Layout, n int) *ConvFitSelection {
	nm, nv := lx.B*lk.B, lx.C*lx.N*lk.N
	return &ConvFitSelection{lx: lx, lk: lk, n: n,
		perm: make([]int32, nm*nv), sel: make([]span, nm*n), nsel: make([]int32, nm), mom: make([]convFitMoments, nm*n)}
}

// ConvFitSaving is ConvFit that also returns its selection, so that
// ConvFitBackwardSaved can skip making the sort keys, sorting them and
// selecting the nodes again.
func ConvFitSaving[T Float](y, x, k []T, lx, lk mixture.Layout, n int) *ConvFitSelection {
	sel := newConvFitSelection(lx, lk, n)
	convFitInto(y, x, k, lx, lk, n, sel)
	return sel
}

// convFitInto is ConvFit, recording its selection into save unless it is
// nil, and writing no output if y is nil.
func convFitInto[T Float](y, x, k []T, lx, lk mixture.Layout, n int, save *ConvFitSelection) {
	ly := device.ConvFitLayout(lx, lk, n)
	work := make([]*convFit[T], parallel.Workers(ly.Mixtures()))
	parallel.ForWorker(ly.Mixtures(), func(w, m int) {
		if work[w] == nil {
			work[w] = newConvFit(x, k, lx, lk)
		}
		cf := work[w]
		cf.selectNodes(m, n)
		var mom []convFitMoments
		if save != nil {
			copy(save.perm[m*cf.nv:], cf.perm)
			copy(save.sel[m*n:], cf.sel)
			save.nsel[m] = int32(len(cf.sel))
			mom = cf.moments(save.mom[m*n : m*n+n : m*n+n])
		} else {
			mom = cf.moments(cf.mom)
			cf.mom = mom
		}
		if y != nil {
			writeNodes(mixture.Mixture(y, ly, m), mom, lx.D)
		}
	})
}

// ConvFitBackward writes ∂L/∂x into dx and ∂L/∂k into dk for ConvFit from
// the incoming gradient g (layout device.ConvFitLayout(lx, lk, n)), with the
// tree and the selection that ConvFit takes for x and k held fixed; a nil
// destination is not computed. Padding slots carry no gradient.
//
// Data mixture (b, c) feeds every output channel and kernel (o, c) every
// batch entry, so ∂L/∂x is spread over the batch entries and ∂L/∂k over the
// output channels. The gradient of every virtual component is computed
// once (see convFitTerms); then each destination row has one owner that sums
// its terms in a fixed order, which keeps the result deterministic.
func ConvFitBackward[T Float](dx, dk, g, x, k []T, lx, lk mixture.Layout, n int) {
	ConvFitBackwardSaved(dx, dk, g, x, k, lx, lk, n, nil)
}

// ConvFitBackwardSaved is ConvFitBackward with the selection that
// ConvFitSaving returned for the same x, k and n instead of a recomputed
// one; with sel nil it recomputes. It panics if sel was made for other
// layouts or another n (a caller's bug: the ops pass a selection only to the
// computation it was made for).
//
// A call for one destination leaves the virtual components' gradients in
// sel, and the next call for bitwise the same g takes them instead of
// computing them again: the graph's two grad ops, one per destination,
// share that work. The caller guarantees that g does not change while a
// call runs.
func ConvFitBackwardSaved[T Float](dx, dk, g, x, k []T, lx, lk mixture.Layout, n int, sel *ConvFitSelection) {
	if sel != nil && (sel.lx != lx || sel.lk != lk || sel.n != n) {
		panic(fmt.Sprintf("cpu: ConvFit selection made for %v ⊛ %v → %d, used for %v ⊛ %v → %d", sel.lx.Shape(), sel.lk.Shape(), sel.n, lx.Shape(), lk.Shape(), n))
	}
	fo := lk.B
	var dests []convFitDest[T]
	if dx != nil {
		dests = append(dests, convFitDest[T]{dst: dx, other: k, rows: lx.B, data: true, mix: func(b, o int) int { return b*fo + o }})
	}
	if dk != nil {
		dests = append(dests, convFitDest[T]{dst: dk, other: x, rows: fo, mix: func(o, b int) int { return b*fo + o }})
	}
	if len(dests) == 0 {
		return
	}
	fresh := sel == nil
	if fresh {
		sel = newConvFitSelection(lx, lk, n)
		convFitInto(nil, x, k, lx, lk, n, sel)
	}
	sel.mu.Lock()
	defer sel.mu.Unlock()
	tm, ok := sel.kept.(*convFitTerms[T])
	sel.kept = nil
	if !ok || !sameBits(tm.g, g) {
		// The first destination's pass computes the terms and sums its own
		// rows while they are in cache; they are stored only for another
		// destination: the second one of this call, or a later call's.
		keep := !fresh && len(dests) == 1
		tm = newConvFitTerms(g, x, k, sel, &dests[0], keep || len(dests) == 2)
		dests = dests[1:]
		if keep {
			tm.g = slices.Clone(g)
			sel.kept = tm
		}
	}
	for _, d := range dests {
		tm.reduce(&d, g)
	}
	if sel.kept != tm {
		tm.release()
	}
}

// convFitDest is a destination of ConvFitBackward: ∂L/∂x (data) or ∂L/∂k,
// whose factors' gradients need the other factor's weight from other. Row
// r < rows of dst sums the output mixtures mix(r, i) for every i, in order.
type convFitDest[T Float] struct {
	dst, other []T
	rows       int
	data       bool
	mix        func(r, i int) int
}

// convFitTerms holds, for one incoming gradient g, the gradient of every
// virtual component of every output mixture m, in key order: at
// (m·Nv + j)·(2 + D) the weight's gradient g_w, the share a_v/A of the node's
// position and covariance gradients, and the position's gradient g_μ; and
// where the component's data and kernel factors sit in x and k. A factor's
// gradient is then g_w times the other factor's weight, g_μ, and share times
// the node's covariance gradient, as in ConvBackwardData and
// ConvBackwardKernels.
type convFitTerms[T Float] struct {
	sel    *ConvFitSelection
	g      []T // the incoming gradient the terms are for, while kept in sel
	terms  []float64
	xo, ko []int32
	buf    *convFitBuf // where terms, xo and ko live, if stored
}

// convFitBuf is the storage of stored terms. The buffers, as large as
// Conv's output, are recycled (convFitBufs) once their terms are used:
// making them new for every backward pass took a tenth of its time in
// clearing and first touching the memory.
type convFitBuf struct {
	terms  []float64
	xo, ko []int32
}

var convFitBufs sync.Pool // *convFitBuf

// getConvFitBuf returns a buffer for the terms of nc components with ts
// values each, recycled if one large enough is free. Its contents are
// undefined.
func getConvFitBuf(nc, ts int) *convFitBuf {
	b, _ := convFitBufs.Get().(*convFitBuf)
	if b == nil || cap(b.terms) < nc*ts || cap(b.xo) < nc {
		b = &convFitBuf{terms: make([]float64, nc*ts), xo: make([]int32, nc), ko: make([]int32, nc)}
	}
	b.terms, b.xo, b.ko = b.terms[:nc*ts], b.xo[:nc], b.ko[:nc]
	return b
}

// release gives tm's storage back for reuse; tm is not used after.
func (tm *convFitTerms[T]) release() {
	if tm.buf != nil {
		convFitBufs.Put(tm.buf)
		tm.buf, tm.terms, tm.xo, tm.ko = nil, nil, nil, nil
	}
}

// sameBits reports whether a and b hold bitwise the same values.
func sameBits[T Float](a, b []T) bool {
	bytes := func(v []T) []byte {
		return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), len(v)*int(unsafe.Sizeof(T(0))))
	}
	return len(a) == len(b) && string(bytes(a)) == string(bytes(b))
}

// newConvFitTerms computes the terms for g with the selection sel in
// parallel over the rows of the destination d, which it writes; it keeps
// them in the result only if store.
func newConvFitTerms[T Float](g, x, k []T, sel *ConvFitSelection, d *convFitDest[T], store bool) *convFitTerms[T] {
	lx, lk, n := sel.lx, sel.lk, sel.n
	ly := device.ConvFitLayout(lx, lk, n)
	s, nm, nv, ts := ly.Stride(), ly.Mixtures(), lx.C*lx.N*lk.N, 2+lx.D
	tm := &convFitTerms[T]{sel: sel}
	if store {
		tm.buf = getConvFitBuf(nm*nv, ts)
		tm.terms, tm.xo, tm.ko = tm.buf.terms, tm.buf.xo, tm.buf.ko
	}
	type worker struct {
		cf     *convFit[T]
		terms  []float64
		xo, ko []int32
	}
	work := make([]*worker, parallel.Workers(d.rows))
	clear(d.dst)
	parallel.ForWorker(d.rows, func(w, r int) {
		if work[w] == nil {
			work[w] = &worker{cf: newConvFit(x, k, lx, lk)}
			if !store {
				work[w].terms, work[w].xo, work[w].ko = make([]float64, nv*ts), make([]int32, nv), make([]int32, nv)
			}
		}
		wk := work[w]
		cf := wk.cf
		for i := range nm / d.rows {
			m := d.mix(r, i)
			terms, xo, ko := wk.terms, wk.xo, wk.ko
			if store {
				terms, xo, ko = tm.terms[m*nv*ts:(m+1)*nv*ts], tm.xo[m*nv:(m+1)*nv], tm.ko[m*nv:(m+1)*nv]
			}
			cf.replay(m, sel.perm[m*nv:(m+1)*nv], sel.sel[m*n:m*n+int(sel.nsel[m])])
			for j, v := range cf.perm {
				xo[j], ko[j] = cf.xo[v], cf.ko[v]
			}
			gm := mixture.Mixture(g, ly, m)
			for j, sp := range cf.sel {
				cf.backward(terms, &sel.mom[m*n+j], sp, gm[j*s:(j+1)*s])
			}
			tm.add(d, gm, m, terms, xo, ko)
		}
	})
	return tm
}

// reduce writes the destination d from the stored terms, in parallel over
// its rows.
func (tm *convFitTerms[T]) reduce(d *convFitDest[T], g []T) {
	lx, lk, n := tm.sel.lx, tm.sel.lk, tm.sel.n
	ly := device.ConvFitLayout(lx, lk, n)
	nm, nv, ts := ly.Mixtures(), lx.C*lx.N*lk.N, 2+lx.D
	clear(d.dst)
	parallel.For(d.rows, func(r int) {
		for i := range nm / d.rows {
			m := d.mix(r, i)
			tm.add(d, mixture.Mixture(g, ly, m), m, tm.terms[m*nv*ts:(m+1)*nv*ts], tm.xo[m*nv:(m+1)*nv], tm.ko[m*nv:(m+1)*nv])
		}
	})
}

// add adds to d the gradients of the factors of output mixture m, whose
// incoming gradient is gm, from its terms and its factors' offsets xo, ko
// in key order, node by node in selection order.
func (tm *convFitTerms[T]) add(d *convFitDest[T], gm []T, m int, terms []float64, xo, ko []int32) {
	lx, n := tm.sel.lx, tm.sel.n
	dim, s, ts := lx.D, lx.Stride(), 2+lx.D
	at, from := xo, ko
	if !d.data {
		at, from = ko, xo
	}
	for j, sp := range tm.sel.sel[m*n : m*n+int(tm.sel.nsel[m])] {
		var gcov [9]float64
		for e := range dim * dim {
			gcov[e] = float64(gm[j*s+1+dim+e])
		}
		for c := int(sp.first); c <= int(sp.last); c++ {
			t := terms[c*ts : (c+1)*ts]
			o := d.dst[at[c] : int(at[c])+s]
			o[0] += T(t[0] * float64(d.other[from[c]]))
			for a := range dim {
				o[1+a] += T(t[2+a])
			}
			for e := range dim * dim {
				o[1+dim+e] += T(t[1] * gcov[e])
			}
		}
	}
}

// convFit is one worker's state for the fused convolution-fitting: the
// operands and, for the current output mixture (b, o), its virtual
// components in key order, the keys and the selected nodes.
type convFit[T Float] struct {
	x, k   []T
	lx, lk mixture.Layout
	nv     int
	b, o   int

	keys, buf []uint64
	// vg holds the virtual components {w, μ, Σ} in float64, packed, in
	// index order, and sg the same in key order; perm[j] is the index of
	// the j-th sorted component, whose factors sit at xo[perm[j]] in x and
	// ko[perm[j]] in k.
	vg, sg       []float64
	perm, xo, ko []int32
	// prefix[j] is the signed weight sum of the first j sorted components,
	// so a node covering [f, l] has mass prefix[l+1] − prefix[f].
	prefix []float64
	// sel holds the selected nodes as ranges of sorted components, and heap
	// those that choose may split next; mom is scratch for their moments.
	sel  []span
	heap splitHeap
	mom  []convFitMoments
}

// span is a node of the radix tree over the sorted keys: the sorted
// components [first, last] below it. A leaf has first == last.
type span struct{ first, last int32 }

func newConvFit[T Float](x, k []T, lx, lk mixture.Layout) *convFit[T] {
	nv, s := lx.C*lx.N*lk.N, lx.Stride()
	return &convFit[T]{
		x: x, k: k, lx: lx, lk: lk, nv: nv,
		keys: make([]uint64, nv), buf: make([]uint64, nv),
		vg: make([]float64, nv*s), sg: make([]float64, nv*s),
		perm: make([]int32, nv), xo: make([]int32, nv), ko: make([]int32, nv),
		prefix: make([]float64, nv+1),
	}
}

// selectNodes makes the virtual components of output mixture m = b·Fo + o,
// sorts them by key and selects n nodes.
//
// The radix tree over the sorted keys is never built as a whole: a node
// [f, l] splits where its keys' common prefix ends (karrasSplit), which is
// the split of Karras' construction, so splitting only the selected nodes
// walks the same tree in O(n log Nv) instead of building its Nv − 1 nodes.
func (cf *convFit[T]) selectNodes(m, n int) {
	cf.b, cf.o = m/cf.lk.B, m%cf.lk.B
	box := cf.bounds()
	cf.virtual(&box)
	// The keys were made in index order, so the stable radix sort over the
	// sign and Morton bits leaves equal codes in index order.
	sortKeyBits(cf.keys, cf.buf, 32, 63)
	for j, key := range cf.keys {
		cf.perm[j] = int32(uint32(key))
		// The sorted position replaces the index in the low bits: keys stay
		// unique, and runs of equal codes split in the middle.
		cf.keys[j] = key&^0xFFFFFFFF | uint64(j)
	}
	cf.gather()
	cf.choose(n)
}

// replay is selectNodes with the order perm and the selection sel recorded
// by an earlier selectNodes of output mixture m.
func (cf *convFit[T]) replay(m int, perm []int32, sel []span) {
	cf.b, cf.o = m/cf.lk.B, m%cf.lk.B
	cf.virtual(nil)
	copy(cf.perm, perm)
	cf.gather()
	cf.sel = append(cf.sel[:0], sel...)
}

// virtual makes the virtual components of output mixture (cf.b, cf.o) in
// index order, and their sort keys under box unless box is nil.
func (cf *convFit[T]) virtual(box *mortonBox) {
	fi, ni, nk, d := cf.lx.C, cf.lx.N, cf.lk.N, cf.lx.D
	s := cf.lx.Stride()
	v := 0
	for j := range nk {
		for c := range fi {
			ko := cf.lk.Offset(cf.o, c, j)
			kg := cf.k[ko : ko+s]
			xo := cf.lx.Offset(cf.b, c, 0)
			for i := range ni {
				xg := cf.x[xo+i*s : xo+(i+1)*s]
				g := cf.vg[v*s : (v+1)*s]
				g[0] = float64(xg[0]) * float64(kg[0])
				var p [3]float64
				for a := range d {
					p[a] = float64(xg[1+a]) + float64(kg[1+a])
					g[1+a] = p[a]
				}
				for e := 1 + d; e < s; e++ {
					g[e] = float64(xg[e]) + float64(kg[e])
				}
				if box != nil {
					// The sign of the product, exactly: no underflow to 0.
					var sign uint64
					if (xg[0] > 0 && kg[0] > 0) || (xg[0] < 0 && kg[0] < 0) {
						sign = 1
					}
					cf.keys[v] = sign<<62 | uint64(box.code(p))<<32 | uint64(v)
				}
				cf.xo[v], cf.ko[v] = int32(xo+i*s), int32(ko)
				v++
			}
		}
	}
}

// gather puts the virtual components into key order (sg) and sums their
// weights (prefix).
func (cf *convFit[T]) gather() {
	s := cf.lx.Stride()
	for j, v := range cf.perm {
		copy(cf.sg[j*s:(j+1)*s], cf.vg[int(v)*s:int(v+1)*s])
		cf.prefix[j+1] = cf.prefix[j] + cf.sg[j*s]
	}
}

// choose selects n nodes greedily, starting from the root and splitting
// the heaviest selected node (the first one on ties) until there are n or
// only leaves.
func (cf *convFit[T]) choose(n int) {
	cf.sel = append(cf.sel[:0], span{0, int32(cf.nv - 1)})
	h := &cf.heap
	h.reset(n)
	consider := func(slot int) {
		if sp := cf.sel[slot]; sp.first < sp.last { // a leaf cannot be split
			h.push(int32(slot), math.Abs(cf.prefix[sp.last+1]-cf.prefix[sp.first]))
		}
	}
	consider(0)
	for len(cf.sel) < n && len(h.slots) > 0 {
		best := int(h.pop())
		sp := cf.sel[best]
		split := int32(karrasSplit(cf.keys, int(sp.first), int(sp.last)))
		cf.sel[best] = span{sp.first, split}
		cf.sel = append(cf.sel, span{split + 1, sp.last})
		consider(best)
		consider(len(cf.sel) - 1)
	}
}

// bounds returns the Morton map of the exact bounding box of the virtual
// positions μ_x + μ_k: per input channel the extremes of the sums are the
// sums of the extremes, so the box costs Fi·(Ni + Nk) instead of Nv.
func (cf *convFit[T]) bounds() mortonBox {
	d := cf.lx.D
	var lower, upper [3]float64
	for a := range d {
		lower[a], upper[a] = math.Inf(1), math.Inf(-1)
	}
	for c := range cf.lx.C {
		xl, xu := positionBounds(mixture.Mixture(cf.x, cf.lx, cf.b*cf.lx.C+c), d)
		kl, ku := positionBounds(mixture.Mixture(cf.k, cf.lk, cf.o*cf.lk.C+c), d)
		for a := range d {
			lower[a] = math.Min(lower[a], xl[a]+kl[a])
			upper[a] = math.Max(upper[a], xu[a]+ku[a])
		}
	}
	return newMortonBox(d, lower, upper)
}

// convFitMoments is the moment match of the components below one node:
// their weight sum w, and the mean μ and covariance Σ of the mixture with
// weights |w_v| (or equal weights if all are 0),
//
//	μ = Σ_v a_v μ_v / A,  Σ = Σ_v a_v (Σ_v + (μ_v − μ)(μ_v − μ)ᵀ) / A,
//
// with a_v = |w_v| and A = Σ_v a_v. On a single-signed node this is the
// moment match of the signed mixture; |w| keeps the root of a mixed-signed
// convolution (n = 1) SPD, where Σ w_v Σ_v / Σ w_v need not be.
type convFitMoments struct {
	w, a    float64
	uniform bool
	mu      [3]float64
	cov     [9]float64
}

// match computes the moments of the sorted components of sp.
func (cf *convFit[T]) match(mm *convFitMoments, sp span) {
	d, s := cf.lx.D, cf.lx.Stride()
	g := cf.sg[int(sp.first)*s : int(sp.last+1)*s]
	*mm = convFitMoments{}
	for v := 0; v < len(g); v += s {
		w := g[v]
		mm.w += w
		mm.a += math.Abs(w)
		for a := range d {
			mm.mu[a] += math.Abs(w) * g[v+1+a]
		}
	}
	if mm.a == 0 {
		mm.uniform, mm.a = true, float64(sp.last-sp.first+1)
		for v := 0; v < len(g); v += s {
			for a := range d {
				mm.mu[a] += g[v+1+a]
			}
		}
	}
	for a := range d {
		mm.mu[a] /= mm.a
	}
	for v := 0; v < len(g); v += s {
		av := mm.weight(g[v])
		var dv [3]float64
		for a := range d {
			dv[a] = g[v+1+a] - mm.mu[a]
		}
		for r := range d {
			for c := range d {
				mm.cov[r*d+c] += av * (g[v+1+d+r*d+c] + dv[r]*dv[c])
			}
		}
	}
	for e := range d * d {
		mm.cov[e] /= mm.a
	}
}

// moments returns the moment match of every selected node, in mom's
// storage if it suffices.
func (cf *convFit[T]) moments(mom []convFitMoments) []convFitMoments {
	mom = slices.Grow(mom[:0], len(cf.sel))[:len(cf.sel)]
	for i, sp := range cf.sel {
		cf.match(&mom[i], sp)
	}
	return mom
}

// writeNodes writes the Gaussians of the moments mom into the slots of out,
// one output mixture, and pads the slots after them with {0, 0, I}.
func writeNodes[T Float](out []T, mom []convFitMoments, d int) {
	s := 1 + d + d*d
	for i := range mom {
		writeMoments(out[i*s:(i+1)*s], &mom[i], d)
	}
	padIdentity(d, out[len(mom)*s:])
}

// weight returns a_v for a component of weight w.
func (mm *convFitMoments) weight(w float64) float64 {
	if mm.uniform {
		return 1
	}
	return math.Abs(w)
}

// writeMoments writes the Gaussian {w, μ, Σ} of mm into the packed slot out.
func writeMoments[T Float](out []T, mm *convFitMoments, d int) {
	out[0] = T(mm.w)
	for a := range d {
		out[1+a] = T(mm.mu[a])
	}
	for e := range d * d {
		out[1+d+e] = T(mm.cov[e])
	}
}

// backward writes the terms (see convFitTerms) of the sorted components of
// node sp into terms, one output mixture's, given the gradient g of the
// node's packed output slot. With d_v = μ_v − μ, the moment match has
//
//	∂μ/∂a_v = d_v/A,  ∂Σ/∂a_v = (Σ_v + d_v d_vᵀ − Σ)/A,
//	∂μ/∂μ_v = a_v/A,  ∂Σ/∂μ_v: a_v/A (e_p d_vᵀ + d_v e_pᵀ),  ∂Σ/∂Σ_v = a_v/A,
//
// (μ's own dependence on μ_v drops out of Σ because Σ_v a_v d_v = 0), and
// ∂w/∂w_v = 1, ∂a_v/∂w_v = sign(w_v) (0 for equal weights).
func (cf *convFit[T]) backward(terms []float64, mm *convFitMoments, sp span, g []T) {
	d, s := cf.lx.D, cf.lx.Stride()
	gw := float64(g[0])
	var gmu [3]float64
	var gcov, gsym [9]float64
	for a := range d {
		gmu[a] = float64(g[1+a])
	}
	for e := range d * d {
		gcov[e] = float64(g[1+d+e])
	}
	for r := range d {
		for c := range d {
			gsym[r*d+c] = gcov[r*d+c] + gcov[c*d+r]
		}
	}
	for j := sp.first; j <= sp.last; j++ {
		v := cf.sg[int(j)*s : int(j+1)*s]
		w := v[0]
		var dv [3]float64
		for a := range d {
			dv[a] = v[1+a] - mm.mu[a]
		}
		gv := gw
		if !mm.uniform && w != 0 {
			var ga float64
			for a := range d {
				ga += gmu[a] * dv[a]
			}
			for r := range d {
				for c := range d {
					ga += gcov[r*d+c] * (v[1+d+r*d+c] + dv[r]*dv[c] - mm.cov[r*d+c])
				}
			}
			if w < 0 {
				ga = -ga
			}
			gv += ga / mm.a
		}
		share := mm.weight(w) / mm.a
		t := terms[int(j)*(2+d) : int(j+1)*(2+d)]
		t[0], t[1] = gv, share
		for r := range d {
			gp := gmu[r]
			for c := range d {
				gp += gsym[r*d+c] * dv[c]
			}
			t[2+r] = gp * share
		}
	}
}
