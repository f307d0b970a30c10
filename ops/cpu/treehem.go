package cpu

import (
	"math"
	"slices"
	"unsafe"

	"github.com/gmcn-go/gmcn/internal/parallel"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
)

// hemNode is the frozen state of one internal tree node: how many Gaussians
// its cache holds, which entries of its children's caches it collected
// (bit j of keep for the j-th entry of [left cache, right cache]; entries
// with |w| < 1e−7 are dropped), and whether it fitted them (with the EM
// decisions of hemMixture.em).
type hemNode struct {
	n    uint8
	fit  bool
	keep uint16
}

// hemMixture is the frozen state of one mixture: the tree, the node states
// and the top-down selection.
type hemMixture struct {
	obj  []int32 // component index of leaf n−1+j
	tree lbvh
	// order lists the internal nodes by descending height (a leaf has
	// height 0, an internal node one more than its higher child), so
	// parents come before children; the nodes of height h are
	// order[lvEnd[h+1]:lvEnd[h]].
	order []int32
	lvEnd []int32
	nodes []hemNode
	// EM decisions of the fitting nodes, T initial components and 2T masks
	// per node, stored apart from nodes so that they take T + 4T bytes
	// whatever hemMaxT.
	emInit []uint8
	emMask []uint16
	sel    []int32 // selected nodes, in output order
	// refit is the position in sel of the node that fills the last slots by a
	// fit of its children's entries to refitK components, or −1.
	refit     int
	refitK    int
	refitInit [hemMaxM]uint8
	refitMask [hemMaxM]uint16
}

// em returns the EM decisions of internal node x, a fit to t components.
func (dm *hemMixture) em(x int32, t int) emDecision {
	k := int(x) * t
	return emDecision{dm.emInit[k : k+t], dm.emMask[2*k : 2*k+2*t]}
}

// refitEM returns the EM decisions of the refit.
func (dm *hemMixture) refitEM() emDecision {
	return emDecision{dm.refitInit[:], dm.refitMask[:]}
}

// Decisions holds every discrete choice TreeHEM made for a batch: per
// mixture the tree, the collection filters, the initial EM components and KL
// masks of every node, and the selection. TreeHEMBackwardSaved replays them,
// and the tests' TreeHEMFrozen too, which makes the reduction a smooth
// function of the input that finite differences can check.
//
// Per mixture the tree and the choices take about (20 + 5T)·N bytes.
// Decisions from TreeHEMSaving also keep what TreeHEMBackwardSaved needs again for the
// same input: a copy of the input and the caches of all internal nodes,
// N·S + (N−1)·T·S values of the input's type per mixture with
// S = 1 + D + D², about T + 1 times the input. Decisions are Releasable,
// like ConvFitSelection: TreeHEMSaving takes released ones over.
type Decisions struct {
	l    mixture.Layout
	np   int
	o    device.TreeHEMOptions
	mix  []hemMixture
	pass bool // N ≤ Np: every mixture passes through unreduced
	kept any  // *hemKept[T] from TreeHEMSaving, else nil
}

// hemSizes keys recycled decisions: everything that fixes their sizes.
type hemSizes struct {
	l  mixture.Layout
	np int
	o  device.TreeHEMOptions
}

// hemDecisions holds released decisions.
var hemDecisions keyedPool[hemSizes, *Decisions]

// Release hands dec's storage to a later TreeHEMSaving of the same sizes,
// whose forward pass records every decision and kept value anew for each
// mixture; dec is not used after.
func (dec *Decisions) Release() {
	hemDecisions.put(hemSizes{dec.l, dec.np, dec.o}, dec)
}

// hemKept is what TreeHEMSaving keeps of its forward pass for TreeHEMBackwardSaved: the
// input x it made the decisions for, by which the backward recognises it,
// and per mixture the caches of the N−1 internal nodes, T packed entries
// each, that x's pre-scaled components produced.
type hemKept[T Float] struct {
	x, cache []T
}

// caches returns the node caches of mixture m, n values.
func (k *hemKept[T]) caches(m, n int) []T { return k.cache[m*n : (m+1)*n] }

func newDecisions(l mixture.Layout, np int, o device.TreeHEMOptions) *Decisions {
	if dec, ok := hemDecisions.get(hemSizes{l, np, o}); ok {
		return dec
	}
	dec := &Decisions{l: l, np: np, o: o, pass: l.N <= np}
	if dec.pass {
		return dec
	}
	n, nm := l.N, l.Mixtures()
	dec.mix = make([]hemMixture, nm)
	obj := make([]int32, nm*n)
	links := make([]int32, 3*nm*(n-1))
	nodes := make([]hemNode, nm*(n-1))
	t := o.Reduction
	emInit, emMask := make([]uint8, nm*(n-1)*t), make([]uint16, nm*(n-1)*2*t)
	sel := make([]int32, nm*np)
	for m := range dec.mix {
		dm := &dec.mix[m]
		dm.obj = obj[m*n : (m+1)*n]
		k := 3 * m * (n - 1)
		dm.tree.left = links[k : k+n-1]
		dm.tree.right = links[k+n-1 : k+2*(n-1)]
		dm.order = links[k+2*(n-1) : k+3*(n-1)]
		dm.nodes = nodes[m*(n-1) : (m+1)*(n-1)]
		dm.emInit = emInit[m*(n-1)*t : (m+1)*(n-1)*t]
		dm.emMask = emMask[m*(n-1)*2*t : (m+1)*(n-1)*2*t]
		dm.sel = sel[m*np : m*np : (m+1)*np]
	}
	return dec
}

// TreeHEMSaving reduces every mixture of the packed batch x (layout l) to np
// components written to y [B, C, np, ·], and returns the decisions it made.
//
// Per mixture (reference bvh_mhem_fit with the driver of fitting.py):
//  1. Pre-scale positions by 1/√s and covariances by 1/s with
//     s = mean_k tr(Σ_k)/D, so the likelihood exponent is scale-free.
//  2. Build a Karras LBVH over the Morton codes of the positions.
//  3. Bottom up, every internal node caches at most T Gaussians: the
//     collected caches of its children (|w| ≥ 1e−7) if there are at most T,
//     else their 2T → T EM fit.
//  4. Top down, starting from the root, repeatedly replace the selected node
//     with full cache and largest |integral| by its two children until np
//     slots are filled; a split that would overshoot is replaced by a fit of
//     that node's children to exactly the missing count. With
//     o.UnderFill the reference's loop (n < np − T) is used instead.
//  5. Write the selected caches scaled back by √s and s, pad with
//     {w = 0, μ = 0, Σ = I}; with o.UnderFill with {0, 0, s·I}, the
//     reference's identity of the pre-scaled space scaled back.
//
// Mixtures with N ≤ np pass through unchanged and are padded the same way.
func TreeHEMSaving[T Float](y, x []T, l mixture.Layout, np int, o device.TreeHEMOptions) (*Decisions, error) {
	if err := checkTreeHEMData(len(y), len(x), l, np, o); err != nil {
		return nil, err
	}
	dec := newDecisions(l, np, o)
	if _, ok := dec.kept.(*hemKept[T]); !ok && !dec.pass {
		dec.kept = &hemKept[T]{x: make([]T, len(x)), cache: make([]T, l.Mixtures()*(l.N-1)*o.Reduction*l.Stride())}
	}
	return dec, runTreeHEM(hemRecord, y, nil, x, nil, dec)
}

// TreeHEM is TreeHEMSaving without keeping the decisions, for callers that
// only need the output.
func TreeHEM[T Float](y, x []T, l mixture.Layout, np int, o device.TreeHEMOptions) error {
	if err := checkTreeHEMData(len(y), len(x), l, np, o); err != nil {
		return err
	}
	return runTreeHEM(hemRecord, y, nil, x, nil, &Decisions{l: l, np: np, o: o, pass: l.N <= np})
}

// TreeHEMBackwardSaved writes ∂L/∂x into dx given g = ∂L/∂y, differentiating
// TreeHEM at x with the decisions dec held fixed: exact reverse mode through
// the scaling (s included), every EM step and the copies, with no gradient
// through clips where they are active; with UnderFill also through the
// padding s·I, whose s depends on every input covariance.
//
// A mixture of x that equals (==, value by value) the input TreeHEMSaving made dec
// for, as in a training step whose backward follows its forward, starts from
// the node caches TreeHEMSaving kept and is not validated again; any other mixture,
// and every mixture with decisions that kept none, is validated and its
// forward pass replayed first. The result is the same either way.
func TreeHEMBackwardSaved[T Float](dx, x, g []T, dec *Decisions) error {
	if err := checkTreeHEMData(len(g), len(x), dec.l, dec.np, dec.o); err != nil {
		return err
	}
	if len(dx) != len(x) {
		return errors.Errorf("gradient has %d values, the input %d", len(dx), len(x))
	}
	return runTreeHEM(hemReplay|hemBackward, nil, dx, x, g, dec)
}

// TreeHEMBackward is TreeHEMBackwardSaved with the decisions recomputed from
// x, one mixture at a time, instead of stored: TreeHEM is deterministic, so
// they are the ones the forward pass made.
func TreeHEMBackward[T Float](dx, x, g []T, l mixture.Layout, np int, o device.TreeHEMOptions) error {
	if err := checkTreeHEMData(len(g), len(x), l, np, o); err != nil {
		return err
	}
	if len(dx) != len(x) {
		return errors.Errorf("gradient has %d values, the input %d", len(dx), len(x))
	}
	return runTreeHEM(hemRecord|hemBackward, nil, dx, x, g, &Decisions{l: l, np: np, o: o, pass: l.N <= np})
}

func checkTreeHEMData(ny, nx int, l mixture.Layout, np int, o device.TreeHEMOptions) error {
	if err := o.Check(l, np); err != nil {
		return err
	}
	if nx != l.Len() {
		return errors.Errorf("input has %d values, layout %v needs %d", nx, l.Shape(), l.Len())
	}
	if want := l.Mixtures() * np * l.Stride(); ny != want {
		return errors.Errorf("output has %d values, [%d, %d, %d, %d] needs %d", ny, l.B, l.C, np, l.Stride(), want)
	}
	return nil
}

type hemMode int

const (
	hemRecord   hemMode = 0      // make the decisions
	hemReplay   hemMode = 1 << 0 // read them from Decisions
	hemBackward hemMode = 1 << 1 // compute ∂L/∂x instead of y
)

// runTreeHEM runs mode on every mixture, each validated before it is
// reduced, and checks every result for finiteness. It reports the error of
// the first mixture that has one.
func runTreeHEM[T Float](mode hemMode, y, dx, x, g []T, dec *Decisions) error {
	l, np := dec.l, dec.np
	outLen := np * l.Stride()
	errs := make([]error, l.Mixtures())
	if dec.pass {
		parallel.For(l.Mixtures(), func(m int) {
			in := mixture.Mixture(x, l, m)
			if errs[m] = validMixture(in, l, m); errs[m] != nil {
				return
			}
			if mode&hemBackward != 0 {
				out := mixture.Mixture(dx, l, m)
				gm := g[m*outLen : (m+1)*outLen]
				copy(out, gm[:len(in)])
				if dec.o.UnderFill {
					addTraceGrad(out, l.D, traceSum(gm[len(in):], l.D))
				}
				errs[m] = finiteResult("gradient", out, l, m)
				return
			}
			out := y[m*outLen : (m+1)*outLen]
			copy(out, in)
			v := T(1)
			if dec.o.UnderFill {
				v = hemScale(in, l.D)
			}
			padDiag(l.D, out[len(in):], v)
		})
	} else {
		kept, _ := dec.kept.(*hemKept[T])
		workers := make([]*hemWorker[T], parallel.Workers(l.Mixtures()))
		for w := range workers {
			workers[w] = newHEMWorker[T](l, np, dec.o)
		}
		parallel.ForWorker(l.Mixtures(), func(w, m int) {
			errs[m] = workers[w].run(mode, m, y, dx, x, g, dec, kept)
		})
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// validMixture validates mixture m, the packed components in.
func validMixture[T Float](in []T, l mixture.Layout, m int) error {
	if n, err := mixture.ValidateComponents(in, l.D); err != nil {
		return errors.Wrapf(err, "TreeHEM input: component (b=%d, c=%d, n=%d)", m/l.C, m%l.C, n)
	}
	return nil
}

// finiteResult reports NaN or Inf in out, the output or gradient (what) of
// mixture m: TreeHEM's clips keep valid input finite, so a non-finite value
// means the input was not a valid mixture (or has weights of both signs
// extreme enough to overflow the likelihood).
func finiteResult[T Float](what string, out []T, l mixture.Layout, m int) error {
	if mixture.CheckFinite(out) == nil {
		return nil
	}
	i := 0
	for ; i < len(out); i++ {
		if v := float64(out[i]); math.IsNaN(v) || math.IsInf(v, 0) {
			break
		}
	}
	err := errors.Errorf("non-finite value %v at flat index %d", out[i], m*len(out)+i)
	return errors.Wrapf(err, "TreeHEM %s of mixture (b=%d, c=%d) component %d is not finite; the input must be finite with SPD covariances", what, m/l.C, m%l.C, i/l.Stride())
}

// padIdentity fills the packed slots in out with {w = 0, μ = 0, Σ = I}.
func padIdentity[T Float](d int, out []T) { padDiag(d, out, 1) }

// padDiag fills the packed slots in out with {w = 0, μ = 0, Σ = v·I}.
func padDiag[T Float](d int, out []T, v T) {
	clear(out)
	s := 1 + d + d*d
	for k := 0; k < len(out); k += s {
		for c := range d {
			out[k+1+d+c*d+c] = v
		}
	}
}

// traceSum returns Σ_k tr(Σ_k) over the packed slots x. Of an output
// gradient it is ∂L/∂v of padding {0, 0, v·I} in those slots.
func traceSum[T Float](x []T, d int) T {
	var tr T
	s := 1 + d + d*d
	for k := 1 + d; k < len(x); k += s {
		for c := 0; c < d*d; c += d + 1 {
			tr += x[k+c]
		}
	}
	return tr
}

// hemScale returns s = mean_k tr(Σ_k)/D of the packed mixture mix, TreeHEM's
// pre-scaling factor.
func hemScale[T Float](mix []T, d int) T {
	return traceSum(mix, d) / T(len(mix)/(1+d+d*d)*d)
}

// addTraceGrad adds gs·∂s/∂Σ_k to the gradient dx of the packed mixture the
// hemScale s was taken of: gs/(N·D) on every diagonal covariance entry.
func addTraceGrad[T Float](dx []T, d int, gs T) {
	s := 1 + d + d*d
	gtr := gs / T(len(dx)/s*d)
	for k := 1 + d; k < len(dx); k += s {
		for c := 0; c < d*d; c += d + 1 {
			dx[k+c] += gtr
		}
	}
}

// hemWorker is the scratch of one goroutine, sized once for the layout.
type hemWorker[T Float] struct {
	d, s, t, n, np int
	under          bool

	scale, sqrt T // s and √s of the current mixture

	keys, kbuf []uint64
	xs         []T // pre-scaled input, N·stride
	cache      []T // per internal node T packed Gaussians
	integ      []T // |integral| rating input per node (2N−1)
	gxs        []T // ∂L/∂xs
	gcache     []T // ∂L/∂cache
	active     []bool
	stack      []int32
	rcache     [hemMaxM * 13]T // output of the refit node
	// loc holds the collected entries: k ≥ 0 for cache[k:], ^k for xs[k:].
	loc     [hemMaxM]int
	em      emFit[T]
	scratch hemMixture // decisions of the current mixture when not stored
	// With lanes (float32 where hemLanesOK), nodes are fitted height by
	// height, hemLanesN at a time; see treehem_levels.go.
	lanes *hemLanes
	batch
	height, sorted []int32 // scratch of sortByHeight
}

func newHEMWorker[T Float](l mixture.Layout, np int, o device.TreeHEMOptions) *hemWorker[T] {
	n, s, t := l.N, l.Stride(), o.Reduction
	w := &hemWorker[T]{
		d: l.D, s: s, t: t, n: n, np: np, under: o.UnderFill,
		keys: make([]uint64, n), kbuf: make([]uint64, n),
		xs:     make([]T, n*s),
		cache:  make([]T, (n-1)*t*s),
		integ:  make([]T, 2*n-1),
		gxs:    make([]T, n*s),
		gcache: make([]T, (n-1)*t*s),
		active: make([]bool, n-1),
		stack:  make([]int32, 0, 64),
	}
	w.height, w.sorted = make([]int32, 2*n-1), make([]int32, n-1)
	if hemLanesOK && unsafe.Sizeof(T(0)) == 4 {
		w.lanes = newHEMLanes()
	}
	w.em.d = l.D
	links := make([]int32, 3*(n-1))
	w.scratch = hemMixture{
		obj:    make([]int32, n),
		tree:   lbvh{left: links[:n-1], right: links[n-1 : 2*(n-1)]},
		order:  links[2*(n-1):],
		nodes:  make([]hemNode, n-1),
		emInit: make([]uint8, (n-1)*t),
		emMask: make([]uint16, (n-1)*2*t),
		sel:    make([]int32, 0, np),
	}
	return w
}

// entries returns the cache of node c (a leaf holds its pre-scaled input
// Gaussian) and the matching gradient slice.
func (w *hemWorker[T]) entries(c int32, dm *hemMixture) (vals, grads []T) {
	if int(c) >= w.n-1 {
		k := int(dm.obj[int(c)-(w.n-1)]) * w.s
		return w.xs[k : k+w.s], w.gxs[k : k+w.s]
	}
	k := int(c) * w.t * w.s
	cnt := int(dm.nodes[c].n) * w.s
	return w.cache[k : k+cnt], w.gcache[k : k+cnt]
}

func (w *hemWorker[T]) size(c int32, dm *hemMixture) int {
	if int(c) >= w.n-1 {
		return 1
	}
	return int(dm.nodes[c].n)
}

// collect lists the kept entries of x's children in loc[:m] and returns m.
// In record mode it decides what is kept first.
func (w *hemWorker[T]) collect(x int32, dm *hemMixture, record bool) int {
	node := &dm.nodes[x]
	keep := node.keep
	if record {
		keep = 0
	}
	m, bit := 0, 0
	for _, c := range [2]int32{dm.tree.left[x], dm.tree.right[x]} {
		// A leaf holds its pre-scaled input Gaussian.
		vals, loc, cnt := w.cache, int(c)*w.t*w.s, 0
		if int(c) >= w.n-1 {
			vals, loc, cnt = w.xs, int(dm.obj[int(c)-(w.n-1)])*w.s, 1
		} else {
			cnt = int(dm.nodes[c].n)
		}
		for range cnt {
			if record && abs(vals[loc]) >= hemEpsLarge {
				keep |= 1 << bit
			}
			if keep&(1<<bit) != 0 {
				w.loc[m] = loc
				if int(c) >= w.n-1 {
					w.loc[m] = ^loc
				}
				m++
			}
			bit++
			loc += w.s
		}
	}
	if record {
		node.keep = keep
	}
	return m
}

// value returns the collected entry i, packed.
func (w *hemWorker[T]) value(i int) []T { return w.valueAt(w.loc[i]) }

// grad returns the gradient of the collected entry i.
func (w *hemWorker[T]) grad(i int) []T { return w.gradAt(w.loc[i]) }

// valueAt returns the packed entry at k, a location as in loc.
func (w *hemWorker[T]) valueAt(k int) []T {
	if k < 0 {
		return w.xs[^k : ^k+w.s]
	}
	return w.cache[k : k+w.s]
}

// gradAt returns the gradient of the entry at k, a location as in loc.
func (w *hemWorker[T]) gradAt(k int) []T {
	if k < 0 {
		return w.gxs[^k : ^k+w.s]
	}
	return w.gcache[k : k+w.s]
}

// fit runs the EM step of the m collected entries to k components with the
// decisions dec, making them in record mode.
func (w *hemWorker[T]) fit(m, k int, dec emDecision, record bool) {
	w.em.m, w.em.k = m, k
	for i := range m {
		w.em.setTarget(i, w.value(i))
	}
	w.em.fit(dec, record)
}

// fitNode computes the cache of internal node x from its children: their
// kept entries if there are at most T, else their EM fit to T. In record
// mode it decides and stores the entry count and whether it fits.
func (w *hemWorker[T]) fitNode(x int32, dm *hemMixture, record bool) {
	node := &dm.nodes[x]
	m := w.collect(x, dm, record)
	if record {
		node.n, node.fit = uint8(min(m, w.t)), m > w.t
	}
	out := w.cache[int(x)*w.t*w.s : (int(x)+1)*w.t*w.s]
	if !node.fit {
		w.copyEntries(m, out)
		return
	}
	w.fit(m, w.t, dm.em(x, w.t), record)
	w.em.covariances()
	for s := range w.t {
		w.em.output(s, out[s*w.s:(s+1)*w.s])
	}
}

// copyEntries copies the m collected entries into out.
func (w *hemWorker[T]) copyEntries(m int, out []T) {
	for i := range m {
		copy(out[i*w.s:(i+1)*w.s], w.value(i))
	}
}

// addGrads adds the gradients g of m copied entries to those of the m
// collected entries.
func (w *hemWorker[T]) addGrads(m int, g []T) {
	for i := range m {
		gi := w.grad(i)
		for j, v := range g[i*w.s : (i+1)*w.s] {
			gi[j] += v
		}
	}
}

// backNode propagates the gradients g of the entries of node x, fitted to k
// components with decisions dec (the node's or the refit's), to its
// children's: by the EM's reverse pass where there were more than k kept
// entries, else as copies. It recomputes the fit from the children's caches
// for the intermediates, and marks the internal children active.
func (w *hemWorker[T]) backNode(x int32, dm *hemMixture, g []T, k int, dec emDecision) {
	m := w.collect(x, dm, false)
	if m <= k {
		w.addGrads(m, g)
	} else {
		w.fit(m, k, dec, false)
		for c := range k {
			w.em.setOutputGrad(c, g[c*w.s:(c+1)*w.s])
		}
		w.em.backward(dec)
		for i := range m {
			w.em.addTargetGrad(i, w.grad(i))
		}
	}
	w.activate(x, dm)
}

// activate marks the internal children of x as receiving gradient.
func (w *hemWorker[T]) activate(x int32, dm *hemMixture) {
	for _, c := range [2]int32{dm.tree.left[x], dm.tree.right[x]} {
		if int(c) < w.n-1 {
			w.active[c] = true
		}
	}
}

// run reduces mixture m of x into y, or with hemBackward writes its
// gradient into dx, after validating it. It starts from the caches in kept
// where TreeHEM recorded dec for this very mixture (see TreeHEMBackwardSaved),
// and stores them there when it records.
func (w *hemWorker[T]) run(mode hemMode, m int, y, dx, x, g []T, dec *Decisions, kept *hemKept[T]) error {
	l := dec.l
	mix := mixture.Mixture(x, l, m)
	dm := &w.scratch
	if dec.mix != nil {
		dm = &dec.mix[m]
	}
	record := mode&hemReplay == 0
	switch {
	case kept != nil && mode == hemReplay|hemBackward && slices.Equal(mixture.Mixture(kept.x, l, m), mix):
		// One sequential copy of the caches beats reading the large array in
		// tree order.
		copy(w.cache, kept.caches(m, len(w.cache)))
		w.prescale(mix)
	default:
		if err := validMixture(mix, l, m); err != nil {
			return err
		}
		w.forward(record, mix, dm)
		if kept != nil && record {
			copy(mixture.Mixture(kept.x, l, m), mix)
			copy(kept.caches(m, len(w.cache)), w.cache)
		}
	}
	outLen := dec.np * w.s
	if mode&hemBackward != 0 {
		dxm := mixture.Mixture(dx, l, m)
		w.backward(mix, g[m*outLen:(m+1)*outLen], dxm, dm)
		return finiteResult("gradient", dxm, l, m)
	}
	ym := y[m*outLen : (m+1)*outLen]
	w.write(ym, dm)
	return finiteResult("output", ym, l, m)
}

// prescale sets s = mean_k tr(Σ_k)/D and √s of mix, and its components with
// positions divided by √s and covariances by s into xs.
func (w *hemWorker[T]) prescale(mix []T) {
	s, d := w.s, w.d
	sc := hemScale(mix, d)
	sq := T(math.Sqrt(float64(sc)))
	w.scale, w.sqrt = sc, sq
	xs := w.xs[:len(mix)]
	if unsafe.Sizeof(sc) == 4 {
		// float32 multiplies by the reciprocals: the divisions cost more
		// than the rest of the loop, and the extra rounding is below the
		// tolerance float32 is held to. float64 divides, as the reference.
		isq, isc := 1/sq, 1/sc
		for k := 0; k+s <= len(mix); k += s {
			g, o := mix[k:k+s], xs[k:k+s]
			o[0] = g[0]
			for c := 1; c <= d; c++ {
				o[c] = g[c] * isq
			}
			for c := 1 + d; c < len(o); c++ {
				o[c] = g[c] * isc
			}
		}
		return
	}
	for k := 0; k+s <= len(mix); k += s {
		g, o := mix[k:k+s], xs[k:k+s]
		o[0] = g[0]
		for c := 1; c <= d; c++ {
			o[c] = g[c] / sq
		}
		for c := 1 + d; c < len(o); c++ {
			o[c] = g[c] / sc
		}
	}
}

// forward pre-scales the mixture, builds (record) or reads (replay) the tree,
// runs the bottom-up pass into the node caches, and selects (record) the
// output nodes.
func (w *hemWorker[T]) forward(record bool, mix []T, dm *hemMixture) {
	d := w.d
	w.prescale(mix)
	if record {
		mortonKeys(d, mix, w.n, w.keys, w.kbuf)
		for j, k := range w.keys {
			dm.obj[j] = int32(k & 0xFFFF)
		}
		dm.tree.build(w.keys)
		w.preorder(dm)
		w.sortByHeight(dm)
	}
	if w.lanes != nil {
		w.forwardLevels(dm, record)
	} else {
		for i := len(dm.order) - 1; i >= 0; i-- {
			x := dm.order[i]
			w.fitNode(x, dm, record)
			if record {
				w.rate(x, dm)
			}
		}
	}
	if record {
		w.selectNodes(dm)
	}
	if dm.refit >= 0 {
		w.refitNode(dm, record)
	}
}

// rate sets the |integral| rating input of internal node x.
func (w *hemWorker[T]) rate(x int32, dm *hemMixture) {
	w.integ[x] = w.integral(dm.tree.left[x], dm) + w.integral(dm.tree.right[x], dm)
}

func (w *hemWorker[T]) integral(c int32, dm *hemMixture) T {
	if int(c) >= w.n-1 {
		return w.xs[int(dm.obj[int(c)-(w.n-1)])*w.s]
	}
	return w.integ[c]
}

// preorder lists the internal nodes in pre-order, parents first.
func (w *hemWorker[T]) preorder(dm *hemMixture) {
	stack := append(w.stack[:0], 0)
	i := 0
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		dm.order[i] = x
		i++
		for _, c := range [2]int32{dm.tree.right[x], dm.tree.left[x]} {
			if int(c) < w.n-1 {
				stack = append(stack, c)
			}
		}
	}
	w.stack = stack
}

// selectNodes runs the top-down greedy selection: the selected node with a
// full cache (T entries) and the largest |integral| is replaced by its left
// child in place and its right child appended.
func (w *hemWorker[T]) selectNodes(dm *hemMixture) {
	dm.sel = append(dm.sel[:0], 0)
	dm.refit = -1
	cnt := int(dm.nodes[0].n)
	limit := w.np
	if w.under {
		limit = w.np - w.t
	}
	for cnt < limit {
		best, bestR := -1, T(-1)
		for i, x := range dm.sel {
			if int(x) < w.n-1 && int(dm.nodes[x].n) == w.t {
				if r := abs(w.integ[x]); r > bestR {
					best, bestR = i, r
				}
			}
		}
		if best < 0 {
			return
		}
		x := dm.sel[best]
		l, r := dm.tree.left[x], dm.tree.right[x]
		delta := w.size(l, dm) + w.size(r, dm) - w.t
		if !w.under && delta > w.np-cnt {
			dm.refit = best
			dm.refitK = w.t + w.np - cnt
			return
		}
		dm.sel[best] = l
		dm.sel = append(dm.sel, r)
		cnt += delta
	}
}

// refitNode fits the children of the refit node to refitK components (or
// copies them if there are no more), into rcache.
func (w *hemWorker[T]) refitNode(dm *hemMixture, record bool) {
	x := dm.sel[dm.refit]
	m := w.collect(x, dm, false)
	if record {
		dm.refitK = min(dm.refitK, m)
	}
	if m <= dm.refitK {
		w.copyEntries(m, w.rcache[:])
		return
	}
	w.fit(m, dm.refitK, dm.refitEM(), record)
	w.em.covariances()
	for s := range dm.refitK {
		w.em.output(s, w.rcache[s*w.s:(s+1)*w.s])
	}
}

// selected returns the packed output entries of selection slot i.
func (w *hemWorker[T]) selected(i int, dm *hemMixture) (vals, grads []T) {
	if i == dm.refit {
		k := dm.refitK * w.s
		return w.rcache[:k], w.gcache[:0]
	}
	return w.entries(dm.sel[i], dm)
}

// write scales the selected entries back (μ·√s, Σ·s) into out and pads:
// with {0, 0, I}, or with UnderFill as the reference, whose padding is the
// identity of the pre-scaled space, scaled back like the entries to s·I.
func (w *hemWorker[T]) write(out []T, dm *hemMixture) {
	d, o := w.d, 0
	for i := range dm.sel {
		vals, _ := w.selected(i, dm)
		for k := 0; k < len(vals); k += w.s {
			g, y := vals[k:k+w.s], out[o:o+w.s]
			y[0] = g[0]
			for c := range d {
				y[1+c] = g[1+c] * w.sqrt
			}
			for c := range d * d {
				y[1+d+c] = g[1+d+c] * w.scale
			}
			o += w.s
		}
	}
	v := T(1)
	if w.under {
		v = w.scale
	}
	padDiag(d, out[o:], v)
}

// backward propagates g (∂L/∂output) to dx, given the node caches and the
// pre-scaled mix: unscaling, the selected caches, top-down through every
// copying or fitting node (refitting each from its children's caches for the
// intermediates of the reverse pass), and finally the pre-scaling with
// s = mean_k tr(Σ_k)/D.
//
// With μ' = μ/√s and Σ' = Σ/s on input and μ = √s μ', Σ = s Σ' on output:
// ∂L/∂s = Σ_out [gμ·μ'/(2√s) + ⟨gΣ, Σ'⟩] − Σ_in [gμ'·μ/(2 s√s) + ⟨gΣ', Σ⟩/s²],
// and ∂s/∂Σ_k,cc = 1/(N·D). With UnderFill the padding s·I is an output
// with Σ' = I and adds the trace of its gradient to ∂L/∂s.
func (w *hemWorker[T]) backward(mix, g, dx []T, dm *hemMixture) {
	d, s := w.d, w.s
	clear(w.gxs)
	clear(w.gcache)
	clear(w.active)
	if dm.refit >= 0 {
		w.refitNode(dm, false) // rcache
	}
	var gs T
	o := 0
	var gref [hemMaxM * 13]T
	for i := range dm.sel {
		vals, grads := w.selected(i, dm)
		if i == dm.refit {
			grads = gref[:len(vals)]
		}
		for k := 0; k < len(vals); k += s {
			gy, v, gv := g[o:o+s], vals[k:k+s], grads[k:k+s]
			gv[0] += gy[0]
			for c := range d {
				gv[1+c] += gy[1+c] * w.sqrt
				gs += gy[1+c] * v[1+c] / (2 * w.sqrt)
			}
			for c := range d * d {
				gv[1+d+c] += gy[1+d+c] * w.scale
				gs += gy[1+d+c] * v[1+d+c]
			}
			o += s
		}
		if x := dm.sel[i]; int(x) < w.n-1 && i != dm.refit {
			w.active[x] = true
		}
	}
	if w.under {
		gs += traceSum(g[o:], d)
	}
	if dm.refit >= 0 {
		k := dm.refitK
		w.backNode(dm.sel[dm.refit], dm, gref[:k*s], k, dm.refitEM())
	}
	if w.lanes != nil {
		w.backwardLevels(dm)
	} else {
		for _, x := range dm.order {
			if w.active[x] {
				_, grads := w.entries(x, dm)
				w.backNode(x, dm, grads, w.t, dm.em(x, w.t))
			}
		}
	}
	// Reciprocals: a division per value would dominate this loop.
	isq, isc := 1/w.sqrt, 1/w.scale
	isc2sq, isc2 := isc*isq/2, isc*isc
	gxs := w.gxs[:len(mix)]
	for k := 0; k+s <= len(mix); k += s {
		gk, xk, dk := gxs[k:k+s], mix[k:k+s], dx[k:k+s]
		dk[0] = gk[0]
		// Per-component partial sums: one running sum over all values
		// would make a chain of dependent additions as long as the input.
		var pm, pc T
		for c := 1; c <= d; c++ {
			dk[c] = gk[c] * isq
			pm += gk[c] * xk[c]
		}
		for c := 1 + d; c < len(dk); c++ {
			dk[c] = gk[c] * isc
			pc += gk[c] * xk[c]
		}
		gs -= pm*isc2sq + pc*isc2
	}
	addTraceGrad(dx, d, gs)
}
