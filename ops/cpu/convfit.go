package cpu

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/gmcn-go/gmcn/internal/parallel"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// ConvFit writes the fused convolution-fitting of the data x (layout lx
// [B, Fi, Ni, ·]) with the kernels k (layout lk [Fo, Fi, Nk, ·]) into y
// (layout device.ConvFitLayout(lx, lk, s.N)): output mixture (b, o) holds
// n = s.N Gaussians that stand for the Nv = Fi·Ni·Nk components of Conv's
// output mixture (b, o), which are never stored.
//
// Per output mixture, the Nv virtual components (Conv's component v, made on
// the fly from one data and one kernel Gaussian) are the leaves of a binary
// radix tree over keys that sort by the sign of the weight first and by the
// Morton code of the position second, so the root separates negative from
// positive weights and every other node is single-signed. Starting from the
// root, the selected node of highest priority (|Σ w|, times s.Negative for
// a node of negative weights; the first one on ties) is replaced by its two
// children until n nodes are selected or all are leaves;
// each selected node, in selection order, becomes the moment match of the
// components below it (see convFitMoments). Slots beyond Nv are
// {0, 0, I}. docs/fused.md derives it and says what differs from the
// reference's unevaluated version.
//
// The caller guarantees lx.C == lk.C, lx.D == lk.D, s.Check() == nil,
// Nv < 2³¹ and the slice lengths. Work is spread over the B·Fo output
// mixtures.
func ConvFit[T Float](y, x, k []T, lx, lk mixture.Layout, s device.ConvFitSelect) {
	convFitInto(y, x, k, lx, lk, s, nil)
}

// ConvFitSelection holds the discrete decisions of one ConvFit call, which
// ConvFitBackward needs: per output mixture the order of the virtual
// components under the sort keys and the selected nodes, and the moments
// of those nodes, which the backward pass needs again. Its size is
// B·Fo·(4·Nv + 128·n) bytes, plus B·Fo·Nv·(4 + (2 + D)·E) bytes (E the size
// of an element) once a backward pass computed ∂L/∂x and ∂L/∂k one at a time
// (the terms one call leaves for the other).
//
// A selection is Releasable: the ops release the one the next forward run
// replaces, and ConvFitSaving takes it over for the next call of the same
// sizes, which spares allocating and clearing tens of megabytes per step.
type ConvFitSelection struct {
	lx, lk mixture.Layout
	s      device.ConvFitSelect
	perm   []int32 // [B·Fo][Nv]
	sel    []span  // [B·Fo][n], the first nsel[m] used
	nsel   []int32
	mom    []convFitMoments // [B·Fo][n]: the moment match of each selected node
	at     convFitOffsets

	mu   sync.Mutex
	kept any // *convFitTerms[T] for one later ConvFitBackwardSaved, or nil
	// terms ([]T) and nodes are the storage of stored terms, made by the
	// first backward pass that stores, and grad ([]T) that of the incoming
	// gradient kept with them: fresh allocations of these sizes cost more
	// in page faults than the copies themselves.
	terms any
	nodes []int32
	grad  any
}

// convFitSizes keys recycled selections: everything that fixes their sizes.
type convFitSizes struct {
	lx, lk mixture.Layout
	n      int
}

// convFitSelections holds released selections.
var convFitSelections keyedPool[convFitSizes, *ConvFitSelection]

// newConvFitSelection returns a selection for the layouts and s, released
// storage if there is some of these sizes; ConvFit overwrites every value
// the backward pass reads.
func newConvFitSelection(lx, lk mixture.Layout, s device.ConvFitSelect) *ConvFitSelection {
	if sel, ok := convFitSelections.get(convFitSizes{lx, lk, s.N}); ok {
		sel.s = s
		return sel
	}
	nm, nv, n := lx.B*lk.B, lx.C*lx.N*lk.N, s.N
	return &ConvFitSelection{lx: lx, lk: lk, s: s,
		perm: make([]int32, nm*nv), sel: make([]span, nm*n), nsel: make([]int32, nm), mom: make([]convFitMoments, nm*n),
		at: newConvFitOffsets(lx, lk)}
}

// Release hands sel's storage to a later ConvFitSaving of the same sizes;
// sel is not used after.
func (sel *ConvFitSelection) Release() {
	sel.mu.Lock()
	sel.kept = nil
	sel.mu.Unlock()
	convFitSelections.put(convFitSizes{sel.lx, sel.lk, sel.s.N}, sel)
}

// convFitOffsets locates the factors of the virtual components: component v
// of output mixture (b, o) is the convolution of the data Gaussian at
// x[lx.Offset(b, 0, 0) + x[v]] with the kernel Gaussian at
// k[lk.Offset(o, 0, 0) + k[v]].
type convFitOffsets struct{ x, k []int32 }

func newConvFitOffsets(lx, lk mixture.Layout) convFitOffsets {
	fi, ni, nk, s := lx.C, lx.N, lk.N, lx.Stride()
	at := convFitOffsets{x: make([]int32, fi*ni*nk), k: make([]int32, fi*ni*nk)}
	v := 0
	for j := range nk {
		for c := range fi {
			for i := range ni {
				at.x[v], at.k[v] = int32((c*ni+i)*s), int32((c*nk+j)*s)
				v++
			}
		}
	}
	return at
}

// bases returns where the factors of output mixture m's components start in
// x and in k.
func (at *convFitOffsets) bases(lx, lk mixture.Layout, m int) (xb, kb int32) {
	return int32(lx.Offset(m/lk.B, 0, 0)), int32(lk.Offset(m%lk.B, 0, 0))
}

// ConvFitSaving is ConvFit that also returns its selection, so that
// ConvFitBackwardSaved can skip making the sort keys, sorting them and
// selecting the nodes again.
func ConvFitSaving[T Float](y, x, k []T, lx, lk mixture.Layout, s device.ConvFitSelect) *ConvFitSelection {
	sel := newConvFitSelection(lx, lk, s)
	convFitInto(y, x, k, lx, lk, s, sel)
	return sel
}

// convFitInto is ConvFit, recording its selection into save unless it is
// nil, and writing no output if y is nil.
func convFitInto[T Float](y, x, k []T, lx, lk mixture.Layout, s device.ConvFitSelect, save *ConvFitSelection) {
	n := s.N
	ly := device.ConvFitLayout(lx, lk, n)
	work := make([]*convFit[T], parallel.Workers(ly.Mixtures()))
	parallel.ForWorker(ly.Mixtures(), func(w, m int) {
		if work[w] == nil {
			work[w] = newConvFit(x, k, lx, lk)
		}
		cf := work[w]
		cf.selectNodes(m, s)
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
// the incoming gradient g (layout device.ConvFitLayout(lx, lk, s.N)), with the
// tree and the selection that ConvFit takes for x and k held fixed; a nil
// destination is not computed. Padding slots carry no gradient.
//
// Data mixture (b, c) feeds every output channel and kernel (o, c) every
// batch entry, so ∂L/∂x is spread over the batch entries and ∂L/∂k over the
// output channels. The gradient of every virtual component is computed
// once (see convFitTerms); then each destination row has one owner that sums
// its terms in a fixed order, which keeps the result deterministic.
func ConvFitBackward[T Float](dx, dk, g, x, k []T, lx, lk mixture.Layout, s device.ConvFitSelect) {
	ConvFitBackwardSaved(dx, dk, g, x, k, lx, lk, s, nil)
}

// ConvFitBackwardSaved is ConvFitBackward with the selection that
// ConvFitSaving returned for the same x, k and s instead of a recomputed
// one; with sel nil it recomputes. It panics if sel was made for other
// layouts or another s (a caller's bug: the ops pass a selection only to the
// computation it was made for).
//
// A call for one destination leaves the virtual components' gradients in
// sel, and the next call for bitwise the same g takes them instead of
// computing them again: the graph's two grad ops, one per destination,
// share that work. The caller guarantees that g does not change while a
// call runs.
func ConvFitBackwardSaved[T Float](dx, dk, g, x, k []T, lx, lk mixture.Layout, s device.ConvFitSelect, sel *ConvFitSelection) {
	if sel != nil && (sel.lx != lx || sel.lk != lk || sel.s != s) {
		panic(fmt.Sprintf("cpu: ConvFit selection made for %v ⊛ %v (%v), used for %v ⊛ %v (%v)", sel.lx.Shape(), sel.lk.Shape(), sel.s, lx.Shape(), lk.Shape(), s))
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
		sel = newConvFitSelection(lx, lk, s)
		defer sel.Release()
		convFitInto(nil, x, k, lx, lk, s, sel)
	}
	sel.mu.Lock()
	defer sel.mu.Unlock()
	tm, ok := sel.kept.(*convFitTerms[T])
	sel.kept = nil
	if !ok || !mixture.SameBits(tm.g, g) {
		// The first destination's pass computes the terms and sums its own
		// rows while they are in cache; they are stored only for another
		// destination: the second one of this call, or a later call's.
		keep := !fresh && len(dests) == 1
		tm = newConvFitTerms(g, x, k, sel, &dests[0], keep || len(dests) == 2)
		dests = dests[1:]
		if keep {
			buf, _ := sel.grad.([]T)
			tm.g = append(buf[:0], g...)
			sel.grad, sel.kept = tm.g, tm
		}
	}
	for _, d := range dests {
		tm.reduce(&d, g)
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
// virtual component of every output mixture m, in index order (the order of
// Conv's output): at (m·Nv + v)·(2 + D) the weight's gradient g_w, the share
// a_v/A of the node's position and covariance gradients and the position's
// gradient g_μ, and at m·Nv + v in node the index of the component's node. A
// factor's gradient is then g_w times the other factor's weight, g_μ, and
// share times the node's covariance gradient, as in ConvBackwardData and
// ConvBackwardKernels. The terms are of the operands' type: in float32 they
// take half the memory traffic, which bounds the backward pass of the
// blocks with many output channels.
type convFitTerms[T Float] struct {
	sel   *ConvFitSelection
	g     []T // the incoming gradient the terms are for, while kept in sel
	terms []T // in sel.terms, if stored
	node  []int32
}

// newConvFitTerms computes the terms for g with the selection sel in
// parallel over the rows of the destination d, which it writes; it keeps
// them in the result only if store.
func newConvFitTerms[T Float](g, x, k []T, sel *ConvFitSelection, d *convFitDest[T], store bool) *convFitTerms[T] {
	lx, lk, n := sel.lx, sel.lk, sel.s.N
	ly := device.ConvFitLayout(lx, lk, n)
	s, nm, nv, ts := ly.Stride(), ly.Mixtures(), lx.C*lx.N*lk.N, 2+lx.D
	tm := &convFitTerms[T]{sel: sel}
	if store {
		// The storage serves every pass of sel that stores: a call holds
		// sel.mu, and its terms replace any kept ones.
		if buf, ok := sel.terms.([]T); ok && len(buf) == nm*nv*ts {
			tm.terms, tm.node = buf, sel.nodes
		} else {
			tm.terms, tm.node = make([]T, nm*nv*ts), make([]int32, nm*nv)
			sel.terms, sel.nodes = tm.terms, tm.node
		}
	}
	type scratch struct {
		terms []T
		node  []int32
	}
	work := make([]scratch, parallel.Workers(d.rows))
	clear(d.dst)
	parallel.ForWorker(d.rows, func(w, r int) {
		if work[w].terms == nil && !store {
			work[w] = scratch{make([]T, nv*ts), make([]int32, nv)}
		}
		for i := range nm / d.rows {
			m := d.mix(r, i)
			terms, node := work[w].terms, work[w].node
			if store {
				terms, node = tm.terms[m*nv*ts:(m+1)*nv*ts], tm.node[m*nv:(m+1)*nv]
			}
			xb, kb := sel.at.bases(lx, lk, m)
			f := convFitFactors[T]{x: x[xb:], k: k[kb:], xo: sel.at.x, ko: sel.at.k}
			perm := sel.perm[m*nv : (m+1)*nv]
			gm := mixture.Mixture(g, ly, m)
			for j, sp := range sel.sel[m*n : m*n+int(sel.nsel[m])] {
				convFitNodeTerms(terms, node, f, perm, &sel.mom[m*n+j], sp, j, gm[j*s:(j+1)*s])
			}
			tm.add(d, gm, m, terms, node)
		}
	})
	return tm
}

// reduce writes the destination d from the stored terms, in parallel over
// its rows.
func (tm *convFitTerms[T]) reduce(d *convFitDest[T], g []T) {
	lx, lk, n := tm.sel.lx, tm.sel.lk, tm.sel.s.N
	ly := device.ConvFitLayout(lx, lk, n)
	nm, nv, ts := ly.Mixtures(), lx.C*lx.N*lk.N, 2+lx.D
	clear(d.dst)
	parallel.For(d.rows, func(r int) {
		for i := range nm / d.rows {
			m := d.mix(r, i)
			tm.add(d, mixture.Mixture(g, ly, m), m, tm.terms[m*nv*ts:(m+1)*nv*ts], tm.node[m*nv:(m+1)*nv])
		}
	})
}

// add adds to d the gradients of the factors of output mixture m, whose
// incoming gradient is gm, from its terms.
//
// Each factor Gaussian of the destination sums its virtual components in
// float64 and adds the sum once: a data Gaussian (c, i) has the components
// (j, c, i) of every kernel Gaussian j, a kernel Gaussian (c, j) those of
// every data Gaussian i. Summing them in key order instead, straight into
// the destination, put a read-modify-write of T per component on the
// destination, a tenth of the fused paper step.
func (tm *convFitTerms[T]) add(d *convFitDest[T], gm []T, m int, terms []T, node []int32) {
	lx, lk := tm.sel.lx, tm.sel.lk
	fi, ni, nk, s := lx.C, lx.N, lk.N, lx.Stride()
	xb, kb := tm.sel.at.bases(lx, lk, m)
	// Destination Gaussian (c, p), p < pn, sums np components,
	// v = v0 + q·vstep for q < np, whose other factors lie at ob + q·s.
	db, ob0, pn, np, vstep := kb, xb, nk, ni, 1
	if d.data {
		db, ob0, pn, np, vstep = xb, kb, ni, nk, fi*ni
	}
	dst, other := d.dst[db:], d.other[ob0:]
	var acc [13]float64
	for c := range fi {
		for p := range pn {
			v0, ob := (p*fi+c)*ni, c*ni*s
			if d.data {
				v0, ob = c*ni+p, c*nk*s
			}
			convFitSum(&acc, terms, node, v0, vstep, np, other[ob:], s, gm)
			o := dst[(c*pn+p)*s:][:s:s]
			for e := range o {
				o[e] += T(acc[e])
			}
		}
	}
}

// convFitSum writes into acc the gradient of one factor Gaussian: the sum
// over its n virtual components v = v0 + q·vstep (terms and node, see
// convFitTerms)
// whose other factors lie at other[q·s:], with gm the output mixture's
// incoming gradient. Written out for 2D, which the models train.
func convFitSum[T Float](acc *[13]float64, terms []T, node []int32, v0, vstep, n int, other []T, s int, gm []T) {
	if s == 7 {
		var a0, a1, a2, a3, a4, a5, a6 float64
		for q := range n {
			v := v0 + q*vstep
			t := terms[v*4:][:4:4]
			g := gm[int(node[v])*7+3:][:4:4]
			share := float64(t[1])
			a0 += float64(t[0]) * float64(other[q*7])
			a1 += float64(t[2])
			a2 += float64(t[3])
			a3 += share * float64(g[0])
			a4 += share * float64(g[1])
			a5 += share * float64(g[2])
			a6 += share * float64(g[3])
		}
		acc[0], acc[1], acc[2], acc[3], acc[4], acc[5], acc[6] = a0, a1, a2, a3, a4, a5, a6
		return
	}
	*acc = [13]float64{}
	for q := range n {
		v := v0 + q*vstep
		t := terms[v*5:][:5:5]
		g := gm[int(node[v])*13+4:][:9:9]
		acc[0] += float64(t[0]) * float64(other[q*13])
		acc[1] += float64(t[2])
		acc[2] += float64(t[3])
		acc[3] += float64(t[4])
		for e, ge := range g {
			acc[4+e] += float64(t[1]) * float64(ge)
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
	at     convFitOffsets
	// xbox and kbox are the position bounds of every data and kernel
	// mixture (mixtureBounds), made by the first selectNodes.
	xbox, kbox [][2][3]float64

	keys, buf []uint64
	// sg holds the virtual components {w, μ, Σ} in float64, packed, in key
	// order; perm[j] is the index of the j-th sorted component.
	sg   []float64
	perm []int32
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
		x: x, k: k, lx: lx, lk: lk, nv: nv, at: newConvFitOffsets(lx, lk),
		keys: make([]uint64, nv), buf: make([]uint64, nv),
		sg: make([]float64, nv*s), perm: make([]int32, nv),
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
func (cf *convFit[T]) selectNodes(m int, s device.ConvFitSelect) {
	cf.b, cf.o = m/cf.lk.B, m%cf.lk.B
	if cf.xbox == nil {
		cf.xbox, cf.kbox = mixtureBounds(cf.x, cf.lx), mixtureBounds(cf.k, cf.lk)
	}
	box := cf.bounds()
	sign := cf.makeKeys(&box)
	// The keys were made in index order, so the stable radix sort over the
	// sign and Morton bits leaves equal codes in index order.
	sortKeyBits(cf.keys, cf.buf, 32, sign+1)
	for j, key := range cf.keys {
		cf.perm[j] = int32(uint32(key))
		// The sorted position replaces the index in the low bits: keys stay
		// unique, and runs of equal codes split in the middle.
		cf.keys[j] = key&^0xFFFFFFFF | uint64(j)
	}
	cf.gather(m)
	cf.choose(s)
}

// makeKeys writes the sort keys of the virtual components of output mixture
// (cf.b, cf.o) under box into keys, in index order, and returns the bit that
// holds the sign: key = sign·2^bit + Morton·2³² + index, with the compact
// Morton code of 10·D bits below the sign bit.
func (cf *convFit[T]) makeKeys(box *mortonBox) (bit uint) {
	fi, ni, nk, d := cf.lx.C, cf.lx.N, cf.lk.N, cf.lx.D
	s := cf.lx.Stride()
	bit = 32 + mortonBits*uint(d)
	v := 0
	for j := range nk {
		for c := range fi {
			ko := cf.lk.Offset(cf.o, c, j)
			kg := cf.k[ko : ko+s]
			xo := cf.lx.Offset(cf.b, c, 0)
			for i := range ni {
				xg := cf.x[xo+i*s : xo+(i+1)*s]
				px, py := float64(xg[1])+float64(kg[1]), float64(xg[2])+float64(kg[2])
				var pz float64
				if d == 3 {
					pz = float64(xg[3]) + float64(kg[3])
				}
				// The sign of the product, exactly: no underflow to 0.
				var sign uint64
				if (xg[0] > 0 && kg[0] > 0) || (xg[0] < 0 && kg[0] < 0) {
					sign = 1
				}
				cf.keys[v] = sign<<bit | uint64(box.compactCode(px, py, pz))<<32 | uint64(v)
				v++
			}
		}
	}
	return bit
}

// gather makes the virtual components of output mixture m in key order (sg)
// and sums their weights (prefix).
func (cf *convFit[T]) gather(m int) {
	s := cf.lx.Stride()
	xb, kb := cf.at.bases(cf.lx, cf.lk, m)
	for j, v := range cf.perm {
		xg := cf.x[xb+cf.at.x[v]:][:s]
		kg := cf.k[kb+cf.at.k[v]:][:s]
		g := cf.sg[j*s : (j+1)*s]
		g[0] = float64(xg[0]) * float64(kg[0])
		for e := 1; e < s; e++ {
			g[e] = float64(xg[e]) + float64(kg[e])
		}
		cf.prefix[j+1] = cf.prefix[j] + g[0]
	}
}

// choose selects s.N nodes greedily, starting from the root and splitting
// the selected node of highest priority (the first one on ties) until there
// are s.N or only leaves. A node's priority is its mass, times −s.Negative
// if that is not positive; for the root, the only node when it is chosen,
// it does not matter.
func (cf *convFit[T]) choose(s device.ConvFitSelect) {
	n := s.N
	cf.sel = append(cf.sel[:0], span{0, int32(cf.nv - 1)})
	h := &cf.heap
	h.reset(n)
	consider := func(slot int) {
		if sp := cf.sel[slot]; sp.first < sp.last { // a leaf cannot be split
			mass := cf.prefix[sp.last+1] - cf.prefix[sp.first]
			if !(mass > 0) {
				mass *= -s.Negative
			}
			h.push(int32(slot), mass)
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

// mixtureBounds returns the per-axis extremes of the positions of every
// mixture of the packed a (layout l).
func mixtureBounds[T Float](a []T, l mixture.Layout) [][2][3]float64 {
	box := make([][2][3]float64, l.Mixtures())
	for m := range box {
		box[m][0], box[m][1] = positionBounds(mixture.Mixture(a, l, m), l.D)
	}
	return box
}

// bounds returns the Morton map of the exact bounding box of the virtual
// positions μ_x + μ_k: per input channel the extremes of the sums are the
// sums of the extremes, so the box costs Fi·D instead of Nv.
func (cf *convFit[T]) bounds() mortonBox {
	d := cf.lx.D
	var lower, upper [3]float64
	for a := range d {
		lower[a], upper[a] = math.Inf(1), math.Inf(-1)
	}
	for c := range cf.lx.C {
		xb, kb := &cf.xbox[cf.b*cf.lx.C+c], &cf.kbox[cf.o*cf.lk.C+c]
		for a := range d {
			lower[a] = math.Min(lower[a], xb[0][a]+kb[0][a])
			upper[a] = math.Max(upper[a], xb[1][a]+kb[1][a])
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

// match computes the moments of the sorted components of sp. Its two
// passes are written out per dimension, as convFitNodeTerms' loop is.
func (cf *convFit[T]) match(mm *convFitMoments, sp span) {
	d, s := cf.lx.D, cf.lx.Stride()
	g := cf.sg[int(sp.first)*s : int(sp.last+1)*s]
	*mm = convFitMoments{}
	if d == 2 {
		matchSums2(mm, g)
	} else {
		matchSums3(mm, g)
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
	if d == 2 {
		matchCov2(mm, g)
	} else {
		matchCov3(mm, g)
	}
	for e := range d * d {
		mm.cov[e] /= mm.a
	}
}

// matchSums2 sums the weights w_v, a_v = |w_v| and a_v μ_v of the packed 2D
// components g into mm.
func matchSums2(mm *convFitMoments, g []float64) {
	var w, a, m0, m1 float64
	for ; len(g) >= 7; g = g[7:] {
		v := g[:7:7]
		w += v[0]
		av := math.Abs(v[0])
		a += av
		m0 += av * v[1]
		m1 += av * v[2]
	}
	mm.w, mm.a, mm.mu[0], mm.mu[1] = w, a, m0, m1
}

// matchSums3 is matchSums2 in 3D.
func matchSums3(mm *convFitMoments, g []float64) {
	var w, a, m0, m1, m2 float64
	for ; len(g) >= 13; g = g[13:] {
		v := g[:13:13]
		w += v[0]
		av := math.Abs(v[0])
		a += av
		m0 += av * v[1]
		m1 += av * v[2]
		m2 += av * v[3]
	}
	mm.w, mm.a, mm.mu[0], mm.mu[1], mm.mu[2] = w, a, m0, m1, m2
}

// matchCov2 sums a_v (Σ_v + d_v d_vᵀ) of the packed 2D components g into
// mm.cov, with d_v = μ_v − mm.mu.
func matchCov2(mm *convFitMoments, g []float64) {
	mu0, mu1 := mm.mu[0], mm.mu[1]
	var c00, c01, c10, c11 float64
	for ; len(g) >= 7; g = g[7:] {
		v := g[:7:7]
		av := mm.weight(v[0])
		d0, d1 := v[1]-mu0, v[2]-mu1
		c00 += av * (v[3] + d0*d0)
		c01 += av * (v[4] + d0*d1)
		c10 += av * (v[5] + d1*d0)
		c11 += av * (v[6] + d1*d1)
	}
	mm.cov[0], mm.cov[1], mm.cov[2], mm.cov[3] = c00, c01, c10, c11
}

// matchCov3 is matchCov2 in 3D.
func matchCov3(mm *convFitMoments, g []float64) {
	mu0, mu1, mu2 := mm.mu[0], mm.mu[1], mm.mu[2]
	var c [9]float64
	for ; len(g) >= 13; g = g[13:] {
		v := g[:13:13]
		av := mm.weight(v[0])
		d0, d1, d2 := v[1]-mu0, v[2]-mu1, v[3]-mu2
		c[0] += av * (v[4] + d0*d0)
		c[1] += av * (v[5] + d0*d1)
		c[2] += av * (v[6] + d0*d2)
		c[3] += av * (v[7] + d1*d0)
		c[4] += av * (v[8] + d1*d1)
		c[5] += av * (v[9] + d1*d2)
		c[6] += av * (v[10] + d2*d0)
		c[7] += av * (v[11] + d2*d1)
		c[8] += av * (v[12] + d2*d2)
	}
	mm.cov = c
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

// convFitNodeTerms writes the terms (see convFitTerms) of the sorted
// components of node sp, the node-th selected node of one output mixture,
// whose factors are f and order perm, into that mixture's terms, given the
// gradient g of the node's packed output slot. With d_v = μ_v − μ, the
// moment match has
//
//	∂μ/∂a_v = d_v/A,  ∂Σ/∂a_v = (Σ_v + d_v d_vᵀ − Σ)/A,
//	∂μ/∂μ_v = a_v/A,  ∂Σ/∂μ_v: a_v/A (e_p d_vᵀ + d_v e_pᵀ),  ∂Σ/∂Σ_v = a_v/A,
//
// (μ's own dependence on μ_v drops out of Σ because Σ_v a_v d_v = 0), and
// ∂w/∂w_v = 1, ∂a_v/∂w_v = sign(w_v) (0 for equal weights).
//
// The components are made from their factors as gather makes them, in the
// loop that uses them: storing them first cost as much as the terms. The
// loops are written out for 2D and 3D with the operands in scalars: loops
// over a run-time dimension kept d_v and the sums in memory, and the loop
// control cost more than the arithmetic. Both do the arithmetic of the
// formulas above in the same order.
func convFitNodeTerms[T Float](terms []T, nodes []int32, f convFitFactors[T], perm []int32, mm *convFitMoments, sp span, node int, g []T) {
	perm = perm[sp.first : sp.last+1]
	for _, v := range perm {
		nodes[v] = int32(node)
	}
	if len(g) == 1+2+4 {
		convFitBackward2(terms, perm, f, mm, g)
	} else {
		convFitBackward3(terms, perm, f, mm, g)
	}
}

// convFitFactors locates the factors of one output mixture's virtual
// components: component v is made from x[xo[v]:] and k[ko[v]:].
type convFitFactors[T Float] struct {
	x, k   []T
	xo, ko []int32
}

// convFitBackward2 writes into t, the terms of one output mixture, those of
// the 2D components perm of one node with moments mm and output gradient g
// (see convFitNodeTerms).
func convFitBackward2[T Float](t []T, perm []int32, f convFitFactors[T], mm *convFitMoments, g []T) {
	gw, gm0, gm1 := float64(g[0]), float64(g[1]), float64(g[2])
	g00, g01, g10, g11 := float64(g[3]), float64(g[4]), float64(g[5]), float64(g[6])
	s00, s01, s10, s11 := g00+g00, g01+g10, g10+g01, g11+g11
	mu0, mu1 := mm.mu[0], mm.mu[1]
	c00, c01, c10, c11 := mm.cov[0], mm.cov[1], mm.cov[2], mm.cov[3]
	inv, signed := 1/mm.a, !mm.uniform
	for _, v := range perm {
		xg, kg, tt := f.x[f.xo[v]:][:7:7], f.k[f.ko[v]:][:7:7], t[v*4:][:4:4]
		w := float64(xg[0]) * float64(kg[0])
		d0 := float64(xg[1]) + float64(kg[1]) - mu0
		d1 := float64(xg[2]) + float64(kg[2]) - mu1
		var ga float64
		if signed && w != 0 {
			ga += gm0 * d0
			ga += gm1 * d1
			ga += g00 * (float64(xg[3]) + float64(kg[3]) + d0*d0 - c00)
			ga += g01 * (float64(xg[4]) + float64(kg[4]) + d0*d1 - c01)
			ga += g10 * (float64(xg[5]) + float64(kg[5]) + d1*d0 - c10)
			ga += g11 * (float64(xg[6]) + float64(kg[6]) + d1*d1 - c11)
		}
		gv, share := convFitWeightTerms(gw, ga, w, inv, signed)
		tt[0], tt[1] = T(gv), T(share)
		tt[2] = T((gm0 + s00*d0 + s01*d1) * share)
		tt[3] = T((gm1 + s10*d0 + s11*d1) * share)
	}
}

// convFitWeightTerms returns the weight gradient gv and the share a_v/A of
// a component of weight w in a node of moments with 1/A = inv and weight
// gradient gw: gv = gw + sign(w_v)·ga/A, where ga (0 unless signed and
// w ≠ 0) is the sum of the moment terms of ∂/∂a_v.
func convFitWeightTerms(gw, ga, w, inv float64, signed bool) (gv, share float64) {
	gv, share = gw, inv
	if signed {
		if w != 0 {
			if w < 0 {
				ga = -ga
			}
			gv += ga * inv
		}
		share = math.Abs(w) * inv
	}
	return gv, share
}

// convFitBackward3 is convFitBackward2 in 3D.
func convFitBackward3[T Float](t []T, perm []int32, f convFitFactors[T], mm *convFitMoments, g []T) {
	gw, gm0, gm1, gm2 := float64(g[0]), float64(g[1]), float64(g[2]), float64(g[3])
	g00, g01, g02 := float64(g[4]), float64(g[5]), float64(g[6])
	g10, g11, g12 := float64(g[7]), float64(g[8]), float64(g[9])
	g20, g21, g22 := float64(g[10]), float64(g[11]), float64(g[12])
	s00, s01, s02 := g00+g00, g01+g10, g02+g20
	s10, s11, s12 := g10+g01, g11+g11, g12+g21
	s20, s21, s22 := g20+g02, g21+g12, g22+g22
	mu0, mu1, mu2 := mm.mu[0], mm.mu[1], mm.mu[2]
	c := &mm.cov
	inv, signed := 1/mm.a, !mm.uniform
	for _, v := range perm {
		xg, kg, tt := f.x[f.xo[v]:][:13:13], f.k[f.ko[v]:][:13:13], t[v*5:][:5:5]
		w := float64(xg[0]) * float64(kg[0])
		d0 := float64(xg[1]) + float64(kg[1]) - mu0
		d1 := float64(xg[2]) + float64(kg[2]) - mu1
		d2 := float64(xg[3]) + float64(kg[3]) - mu2
		cv := func(e int) float64 { return float64(xg[4+e]) + float64(kg[4+e]) }
		var ga float64
		if signed && w != 0 {
			ga += gm0 * d0
			ga += gm1 * d1
			ga += gm2 * d2
			ga += g00 * (cv(0) + d0*d0 - c[0])
			ga += g01 * (cv(1) + d0*d1 - c[1])
			ga += g02 * (cv(2) + d0*d2 - c[2])
			ga += g10 * (cv(3) + d1*d0 - c[3])
			ga += g11 * (cv(4) + d1*d1 - c[4])
			ga += g12 * (cv(5) + d1*d2 - c[5])
			ga += g20 * (cv(6) + d2*d0 - c[6])
			ga += g21 * (cv(7) + d2*d1 - c[7])
			ga += g22 * (cv(8) + d2*d2 - c[8])
		}
		gv, share := convFitWeightTerms(gw, ga, w, inv, signed)
		tt[0], tt[1] = T(gv), T(share)
		tt[2] = T((gm0 + s00*d0 + s01*d1 + s02*d2) * share)
		tt[3] = T((gm1 + s10*d0 + s11*d1 + s12*d2) * share)
		tt[4] = T((gm2 + s20*d0 + s21*d1 + s22*d2) * share)
	}
}
