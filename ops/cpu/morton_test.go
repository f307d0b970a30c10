package cpu

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMortonCompactCode checks that the compact code of a 2D position is
// its full code without the always-zero z bits, so both order positions
// alike and differ first at the same level, and that in 3D it is the full
// code; positions include the box's edges and points outside it.
func TestMortonCompactCode(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 37))
	for _, d := range []int{2, 3} {
		box := newMortonBox(d, [3]float64{-1, 2, 0}, [3]float64{3, 2.5, 1})
		for i := range 100000 {
			var p [3]float64
			for a := range d {
				p[a] = box.lower[a] + (rng.Float64()*1.2-0.1)/box.scale[a]
				if i%50 == 0 {
					p[a] = box.lower[a] + float64(rng.IntN(2))/box.scale[a]
				}
			}
			full, got := box.code(p), box.compactCode(p[0], p[1], p[2])
			want := full
			if d == 2 {
				want = 0
				for l := range mortonBits {
					want |= (full>>(3*l+2)&1)<<(2*l+1) | (full>>(3*l+1)&1)<<(2*l)
				}
				if full&0x09249249 != 0 {
					t.Fatalf("2D code %#x of %v has z bits", full, p)
				}
			}
			if got != want {
				t.Fatalf("%dD compact code of %v = %#x, want %#x (full %#x)", d, p, got, want, full)
			}
		}
	}
	for v := range uint32(1 << mortonBits) {
		if spread3[v] != expandBits(v) {
			t.Fatalf("spread3[%#x] = %#x, want %#x", v, spread3[v], expandBits(v))
		}
	}
}

// TestSortKeyBits checks the radix sort against a stable sort of the keys
// by their bits [lo, hi), for sizes on both sides of the insertion sort and
// of the digit widths, and for keys whose digits are constant in some
// passes (which are skipped).
func TestSortKeyBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 43))
	for _, c := range []struct {
		n      int
		lo, hi uint
		fixed  uint64 // bits set in every key
		spread uint   // random bits above lo
	}{
		{50, 32, 53, 0, 21}, {1280, 32, 53, 0, 21}, {1280, 32, 63, 0, 31}, {1280, 32, 53, 1 << 52, 8},
		{5000, 16, 46, 0, 30}, {5000, 16, 46, 0x3FF << 36, 20}, {300, 32, 53, 0, 0},
	} {
		keys := make([]uint64, c.n)
		for i := range keys {
			keys[i] = c.fixed | (rng.Uint64()&(1<<c.spread-1))<<c.lo | uint64(i)
		}
		want := slices.Clone(keys)
		slices.SortStableFunc(want, func(a, b uint64) int {
			return int(a>>c.lo) - int(b>>c.lo)
		})
		sortKeyBits(keys, make([]uint64, c.n), c.lo, c.hi)
		if !slices.Equal(keys, want) {
			t.Errorf("n %d, bits [%d, %d), fixed %#x: sorted keys differ", c.n, c.lo, c.hi, c.fixed)
		}
	}
}
