package cpu

import "math"

// mortonBits is the resolution of one axis of a Morton code: 10 bits per
// axis, 30 bits for the interleaved code, as in the reference LBVH.
const mortonBits = 10

// mortonKeys writes one sortable key per component of the packed mixture mix
// (n Gaussians of dimension d) into keys[:n] and sorts them ascending;
// buf[:n] is scratch for the sort.
//
// Positions are normalised to the mixture's own bounding box,
// p = (μ − lower)/(upper − lower) per axis, quantised to 10 bits and
// interleaved with x most significant. 2D positions are lifted to 3D with
// z = 0. An axis without extent (all positions equal on it) maps to 0: the
// reference divides 0/0 there and relies on the NaN→0 integer cast, which Go
// does not define. The low 16 bits of a key hold the component index, so keys
// are unique and the index breaks Morton ties: key = morton30·2¹⁶ + index.
func mortonKeys[T Float](d int, mix []T, n int, keys, buf []uint64) {
	s := 1 + d + d*d
	lower, upper := positionBounds(mix[:n*s], d)
	box := newMortonBox(d, lower, upper)
	for k := range n {
		var p [3]float64
		for j := range d {
			p[j] = float64(mix[k*s+1+j])
		}
		keys[k] = uint64(box.code(p))<<16 | uint64(k)
	}
	// The keys were made in index order: only the Morton bits need sorting.
	sortKeyBits(keys[:n], buf[:n], 16, 16+3*mortonBits)
}

// positionBounds returns the per-axis extremes of the positions of the
// packed d-dimensional Gaussians mx.
func positionBounds[T Float](mx []T, d int) (lower, upper [3]float64) {
	for a := range d {
		lower[a], upper[a] = math.Inf(1), math.Inf(-1)
	}
	for g := 0; g < len(mx); g += 1 + d + d*d {
		for a := range d {
			// The builtins, inlined, instead of math.Min and Max: same
			// results, NaN included, at a fraction of the cost.
			p := float64(mx[g+1+a])
			lower[a], upper[a] = min(lower[a], p), max(upper[a], p)
		}
	}
	return lower, upper
}

// mortonBox maps positions in a bounding box to 30-bit Morton codes.
type mortonBox struct {
	d            int
	lower, scale [3]float64
}

// newMortonBox returns the map for the box [lower, upper] in d dimensions.
// An axis without extent maps to 0.
func newMortonBox(d int, lower, upper [3]float64) mortonBox {
	b := mortonBox{d: d, lower: lower}
	for j := range d {
		if ext := upper[j] - lower[j]; ext > 0 {
			b.scale[j] = 1 / ext
		}
	}
	return b
}

// code returns the Morton code of position p: every axis normalised to the
// box, quantised to 10 bits and interleaved, x most significant; axes from
// d on are 0.
func (b *mortonBox) code(p [3]float64) uint32 {
	var c uint32
	for j := range b.d {
		c |= spread3[b.quantise(j, p[j])] << (2 - j)
	}
	return c
}

// compactCode returns the code of the position (x, y) in 2D or (x, y, z) in
// 3D without the bits of the axes from d on, which code leaves 0: 10·d bits
// in the same order, so compact codes compare as the full ones do and
// differ first at the same axis and level. It takes the axes as scalars,
// which the caller has in registers: an array argument cost a stalled
// store-to-load forwarding per call.
func (b *mortonBox) compactCode(x, y, z float64) uint32 {
	if b.d == 2 {
		return spread2[b.quantise(0, x)]<<1 | spread2[b.quantise(1, y)]
	}
	return spread3[b.quantise(0, x)]<<2 | spread3[b.quantise(1, y)]<<1 | spread3[b.quantise(2, z)]
}

// quantise returns coordinate p of axis a normalised to the box and
// quantised to [0, 2¹⁰ − 1].
func (b *mortonBox) quantise(a int, p float64) uint32 {
	// Clamped and truncated by branches: Go's float min and max, which
	// order ±0 and propagate NaN, and the conversion to an unsigned integer
	// cost several times more. Positions are finite.
	switch v := (p - b.lower[a]) * b.scale[a] * (1 << mortonBits); {
	case v >= (1<<mortonBits)-1:
		return (1 << mortonBits) - 1
	case v > 0:
		return uint32(int32(v)) & (1<<mortonBits - 1)
	}
	return 0
}

// spread3[v] and spread2[v] are v's 10 bits spread so that two zero bits
// (spread3) or one (spread2) follow each: a table lookup costs less than
// the shifts and masks per axis.
var spread3, spread2 [1 << mortonBits]uint32

func init() {
	for v := range uint32(1 << mortonBits) {
		spread3[v] = expandBits(v)
		for i := range mortonBits {
			spread2[v] |= (v >> i & 1) << (2 * i)
		}
	}
}

// expandBits spreads the low 10 bits of v so that two zero bits follow each
// bit: bit i moves to bit 3i.
func expandBits(v uint32) uint32 {
	v = (v * 0x00010001) & 0xFF0000FF
	v = (v * 0x00000101) & 0x0F00F00F
	v = (v * 0x00000011) & 0xC30C30C3
	v = (v * 0x00000005) & 0x49249249
	return v
}

// sortKeyBits sorts keys ascending, given that the bits below lo are
// already in ascending order for equal higher bits and the bits from hi up
// are zero: a stable LSD radix sort over [lo, hi) through buf (len(keys)),
// or an insertion sort of the whole keys for at most 64 of them. Digits are
// at most 8 bits below 4096 keys, where clearing and summing 4096 counters
// per pass would cost more than the keys, and at most 12 bits above; a pass
// whose digit is the same for every key is skipped.
func sortKeyBits(keys, buf []uint64, lo, hi uint) {
	if len(keys) <= 64 {
		for i := 1; i < len(keys); i++ {
			for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
				keys[j], keys[j-1] = keys[j-1], keys[j]
			}
		}
		return
	}
	digit := uint(12)
	if len(keys) < 1<<12 {
		digit = 8
	}
	// As few passes as the widest digit allows, their digits as even as
	// can be: 21 bits in three passes of 7 rather than 8, 8 and 5.
	passes := (hi - lo + digit - 1) / digit
	digit = (hi - lo + passes - 1) / passes
	mask := uint64(1)<<digit - 1
	src, dst := keys, buf
	var count [1 << 12]int
	for shift := lo; shift < hi; shift += digit {
		clear(count[:mask+1])
		for _, k := range src {
			count[(k>>shift)&mask]++
		}
		if count[(src[0]>>shift)&mask] == len(src) {
			continue // one digit for all: the pass would copy the keys
		}
		sum := 0
		for i, c := range count[:mask+1] {
			count[i] = sum
			sum += c
		}
		for _, k := range src {
			b := (k >> shift) & mask
			dst[count[b]] = k
			count[b]++
		}
		src, dst = dst, src
	}
	if &src[0] != &keys[0] {
		copy(keys, src)
	}
}
