package cpu

// splitHeap orders the selected nodes of a greedy top-down selection by
// the mass that decides which one is split next: largest first, and on
// ties the lowest slot, which is the node that a first-wins scan over the
// slots in order finds. It replaces that scan's O(n) per split by
// O(log n) and so takes the same decisions.
type splitHeap struct {
	slots []int32   // the heap, of slots
	mass  []float64 // mass[slot]
}

// reset empties h for slots below n.
func (h *splitHeap) reset(n int) {
	h.slots = h.slots[:0]
	if cap(h.mass) < n {
		h.mass = make([]float64, n)
	}
	h.mass = h.mass[:n]
}

// before reports whether slot a is split before slot b.
func (h *splitHeap) before(a, b int32) bool {
	return h.mass[a] > h.mass[b] || (h.mass[a] == h.mass[b] && a < b)
}

// push adds slot with its mass.
func (h *splitHeap) push(slot int32, mass float64) {
	h.mass[slot] = mass
	h.slots = append(h.slots, slot)
	i := len(h.slots) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.before(h.slots[i], h.slots[p]) {
			break
		}
		h.slots[i], h.slots[p] = h.slots[p], h.slots[i]
		i = p
	}
}

// pop removes and returns the slot to split next; h is not empty.
func (h *splitHeap) pop() int32 {
	top := h.slots[0]
	last := len(h.slots) - 1
	h.slots[0] = h.slots[last]
	h.slots = h.slots[:last]
	for i := 0; ; {
		c := 2*i + 1
		if c >= last {
			break
		}
		if c+1 < last && h.before(h.slots[c+1], h.slots[c]) {
			c++
		}
		if !h.before(h.slots[c], h.slots[i]) {
			break
		}
		h.slots[i], h.slots[c] = h.slots[c], h.slots[i]
		i = c
	}
	return top
}
