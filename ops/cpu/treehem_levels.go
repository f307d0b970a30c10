package cpu

// sortByHeight reorders dm.order, a pre-order, by descending height and
// sets dm.lvEnd: the nodes of one height depend only on lower ones, so
// their EM fits can run side by side. Within a height, nodes keep their
// pre-order.
func (w *hemWorker[T]) sortByHeight(dm *hemMixture) {
	// The leaves' zero heights (after the internal nodes in height) make
	// the loop branch-free: whether a child is a leaf is as good as random.
	height, top := w.height, int32(0)
	for i := len(dm.order) - 1; i >= 0; i-- {
		x := dm.order[i]
		h := max(height[dm.tree.left[x]], height[dm.tree.right[x]]) + 1
		height[x] = h
		top = max(top, h)
	}
	// Counting sort: lvEnd[h] ends up as the end of height h, which starts
	// where height h+1 ends.
	dm.lvEnd = append(dm.lvEnd[:0], make([]int32, top+2)...)
	for _, x := range dm.order {
		dm.lvEnd[height[x]]++
	}
	for h := top - 1; h >= 1; h-- {
		dm.lvEnd[h] += dm.lvEnd[h+1]
	}
	for i := len(dm.order) - 1; i >= 0; i-- { // back to front: stable
		x := dm.order[i]
		dm.lvEnd[height[x]]--
		w.sorted[dm.lvEnd[height[x]]] = x
	}
	// Now lvEnd[h] is where height h starts, which is where h−1 ends;
	// height 1 ends at the end.
	copy(dm.lvEnd[2:], dm.lvEnd[1:top+1])
	dm.lvEnd[1] = int32(len(dm.order))
	copy(dm.order, w.sorted)
}

// level returns the internal nodes of height h ≥ 1.
func (dm *hemMixture) level(h int) []int32 { return dm.order[dm.lvEnd[h+1]:dm.lvEnd[h]] }

// heights returns the largest height.
func (dm *hemMixture) heights() int { return len(dm.lvEnd) - 2 }

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
	e := w.lanes
	for h := 1; h <= dm.heights(); h++ {
		e.start(w.d, w.t)
		for _, x := range dm.level(h) {
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
	w.fitStaged(record)
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
	e := w.lanes
	for h := dm.heights(); h >= 1; h-- {
		e.start(w.d, w.t)
		for _, x := range dm.level(h) {
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
	w.fitStaged(false)
	e.backward()
	for j := range e.n {
		for i, k := range w.batch.loc[j][:w.bm[j]] {
			laneAddTargetGrad(e, j, i, w.gradAt(k))
		}
	}
}

// fitStaged pads the staged lanes and runs their fits.
func (w *hemWorker[T]) fitStaged(record bool) {
	e := w.lanes
	for j := range e.n {
		e.padLane(j, int(w.bm[j]))
	}
	e.fit(record)
}
