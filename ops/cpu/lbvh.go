package cpu

import "math/bits"

// lbvh is a binary radix tree over n sorted, unique keys, built with Karras'
// method ("Maximizing parallelism in the construction of BVHs, octrees, and
// k-d trees", HPG 2012) as in the reference. Node ids: internal nodes
// [0, n−1) with the root at 0, then leaves [n−1, 2n−1); leaf n−1+j is the
// j-th key in sorted order.
type lbvh struct {
	left, right []int32 // children of internal node i
	// first and last, when not nil, receive the range of sorted keys
	// [first, last] that internal node i covers.
	first, last []int32
}

// build fills the children of the n−1 internal nodes for the sorted keys,
// and their ranges if t.first is not nil. n must be at least 2.
func (t *lbvh) build(keys []uint64) {
	n := len(keys)
	for i := range n - 1 {
		first, last := karrasRange(keys, i)
		if t.first != nil {
			t.first[i], t.last[i] = int32(first), int32(last)
		}
		split := karrasSplit(keys, first, last)
		l, r := int32(split), int32(split+1)
		if split == first {
			l += int32(n - 1)
		}
		if split+1 == last {
			r += int32(n - 1)
		}
		t.left[i], t.right[i] = l, r
	}
}

// karrasDelta returns the length of the common prefix of keys i and j, or
// −1 if j is out of range.
func karrasDelta(keys []uint64, i, j int) int {
	if j < 0 || j >= len(keys) {
		return -1
	}
	return bits.LeadingZeros64(keys[i] ^ keys[j])
}

// karrasRange returns the range of sorted keys [first, last] covered by
// internal node i: it grows from i in the direction of the neighbour with the
// longer common prefix, as far as the prefix stays longer than the one i
// shares with its other neighbour.
func karrasRange(keys []uint64, i int) (first, last int) {
	if i == 0 {
		return 0, len(keys) - 1
	}
	dl, dr := karrasDelta(keys, i, i-1), karrasDelta(keys, i, i+1)
	dir, dmin := 1, dl
	if dl > dr {
		dir, dmin = -1, dr
	}
	lmax := 2
	for karrasDelta(keys, i, i+lmax*dir) > dmin {
		lmax *= 2
	}
	l := 0
	for t := lmax / 2; t >= 1; t /= 2 {
		if karrasDelta(keys, i, i+(l+t)*dir) > dmin {
			l += t
		}
	}
	j := i + l*dir
	return min(i, j), max(i, j)
}

// karrasSplit returns the last index γ in [first, last) whose key shares a
// longer prefix with keys[first] than keys[last] does: the left child covers
// [first, γ], the right [γ+1, last].
func karrasSplit(keys []uint64, first, last int) int {
	if keys[first] == keys[last] {
		return (first + last) / 2
	}
	common := karrasDelta(keys, first, last)
	split, step := first, last-first
	for step > 1 {
		step = (step + 1) / 2
		if s := split + step; s < last && karrasDelta(keys, first, s) > common {
			split = s
		}
	}
	return split
}
