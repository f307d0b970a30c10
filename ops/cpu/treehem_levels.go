package cpu

// levels orders a tree's internal nodes by height (a leaf has height 0, an
// internal node one more than its higher child): the nodes of one height
// depend only on lower ones, so their EM fits can run side by side.
type levels struct {
	height []int32 // per node: internal nodes, then the leaves at height 0
	// byLevel lists the internal nodes by height, those of height h in
	// byLevel[end[h−1]:end[h]].
	byLevel, end []int32
}

func newLevels(n int) levels {
	return levels{height: make([]int32, 2*n-1), byLevel: make([]int32, n-1), end: make([]int32, 0, 64)}
}

// level returns the internal nodes of height h ≥ 1.
func (lv *levels) level(h int) []int32 { return lv.byLevel[lv.end[h-1]:lv.end[h]] }

// order sorts the internal nodes of dm by height (counting sort; within a
// height, in dm.order's order).
func (w *hemWorker[T]) order(dm *hemMixture) {
	lv, n1 := &w.levels, int32(w.n-1)
	top := int32(0)
	for i := len(dm.order) - 1; i >= 0; i-- {
		// The leaves' zero heights make this branch-free: whether a child
		// is a leaf is as good as random.
		x := dm.order[i]
		h := max(lv.height[dm.tree.left[x]], lv.height[dm.tree.right[x]]) + 1
		lv.height[x] = h
		top = max(top, h)
	}
	lv.end = append(lv.end[:0], make([]int32, top+1)...)
	for _, x := range dm.order {
		lv.end[lv.height[x]]++
	}
	for h := 1; h <= int(top); h++ {
		lv.end[h] += lv.end[h-1]
	}
	for i := len(dm.order) - 1; i >= 0; i-- { // back to front: stable
		x := dm.order[i]
		h := lv.height[x]
		lv.end[h]--
		lv.byLevel[lv.end[h]] = x
	}
	// Now end[h] is where height h starts; shift to ends.
	copy(lv.end, lv.end[1:])
	lv.end[top] = n1
}

// batch is the bookkeeping of the nodes staged in the lanes: node, number
// of collected entries and their locations (as in hemWorker.loc), per lane.
type batch struct {
	bx  [hemLanesN]int32
	bm  [hemLanesN]uint8
	loc [hemLanesN][hemMaxM]int
}

// stage adds node x, with its m collected entries in w.loc and, unless
// recording (then the lanes' fit makes them), the EM decisions dec, to the
// next lane.
func (w *hemWorker[T]) stage(x int32, m int, dec emDecision, record bool) {
	e := w.lanes
	j := e.n
	e.n++
	e.m = max(e.m, m)
	w.bx[j], w.bm[j], w.batch.loc[j] = x, uint8(m), w.loc
	for i := range m {
		laneSetTarget(e, j, i, w.value(i))
	}
	e.mj[j] = int32(m)
	if !record {
		e.setMask(j, dec.mask[:m])
		e.setInit(j, dec.init)
	}
}

// forwardLevels is forward's bottom-up pass with the lanes: per height, the
// nodes that copy do so at once, those that fit are staged and fitted
// hemLanesN at a time.
func (w *hemWorker[T]) forwardLevels(dm *hemMixture, record bool) {
	w.order(dm)
	e := w.lanes
	for h := 1; h < len(w.end); h++ {
		e.start(w.d, w.t)
		for _, x := range w.level(h) {
			node := &dm.nodes[x]
			m := w.collect(x, dm, record)
			if record {
				node.n, node.fit = uint8(min(m, w.t)), m > w.t
				w.rate(x, dm)
			}
			if !node.fit {
				w.copyEntries(m, w.cache[int(x)*w.t*w.s:(int(x)+1)*w.t*w.s])
				continue
			}
			w.stage(x, m, dm.em(x, w.t), record)
			if e.n == hemLanesN {
				w.flushFit(dm, record)
				e.start(w.d, w.t)
			}
		}
		if e.n > 0 {
			w.flushFit(dm, record)
		}
	}
}

// flushFit fits the staged nodes and writes their caches (and, recording,
// their KL masks).
func (w *hemWorker[T]) flushFit(dm *hemMixture, record bool) {
	e := w.lanes
	for j := range e.n {
		e.padLane(j, int(w.bm[j]))
	}
	e.fit(record)
	e.covariances()
	for j := range e.n {
		x := w.bx[j]
		out := w.cache[int(x)*w.t*w.s : (int(x)+1)*w.t*w.s]
		for s := range w.t {
			laneOutput(e, j, s, out[s*w.s:(s+1)*w.s])
		}
		if record {
			dec := dm.em(x, w.t)
			e.getInit(j, dec.init)
			e.getMask(j, dec.mask[:w.bm[j]])
		}
	}
}

// backwardLevels is backward's top-down pass with the lanes: per height from
// the top, the active nodes that copied pass their gradients on at once,
// those that fitted are staged and run through the EM's reverse pass
// hemLanesN at a time.
func (w *hemWorker[T]) backwardLevels(dm *hemMixture) {
	w.order(dm)
	e := w.lanes
	for h := len(w.end) - 1; h >= 1; h-- {
		e.start(w.d, w.t)
		for _, x := range w.level(h) {
			if !w.active[x] {
				continue
			}
			_, g := w.entries(x, dm)
			m := w.collect(x, dm, false)
			w.activate(x, dm)
			if m <= w.t {
				w.addGrads(m, g)
				continue
			}
			j := e.n
			w.stage(x, m, dm.em(x, w.t), false)
			for s := range w.t {
				laneSetOutputGrad(e, j, s, g[s*w.s:(s+1)*w.s])
			}
			if e.n == hemLanesN {
				w.flushBack()
				e.start(w.d, w.t)
			}
		}
		if e.n > 0 {
			w.flushBack()
		}
	}
}

// flushBack runs the staged nodes' fits and reverse passes and adds the
// gradients of their entries to their children's.
func (w *hemWorker[T]) flushBack() {
	e := w.lanes
	for j := range e.n {
		e.padLane(j, int(w.bm[j]))
	}
	e.fit(false)
	e.backward()
	for j := range e.n {
		for i, k := range w.batch.loc[j][:w.bm[j]] {
			laneAddTargetGrad(e, j, i, w.gradAt(k))
		}
	}
}
