//go:build gmcuda

package cudaops

import "testing"

// TestWarpCollectives checks the device's warp shuffles and ballot against
// their CUDA definitions on two blocks of 64 threads: on a GPU this pins
// down the semantics the emulator must have, on the emulator it checks them.
func TestWarpCollectives(t *testing.T) {
	forTypes(t, testWarpCollectives[float32], testWarpCollectives[float64])
}

func testWarpCollectives[T Float](t *testing.T) {
	const blocksN, threads = 2, 64
	res := make([]T, blocksN*threads*6)
	must(t, dev.run(func(s *seq) {
		p := out[T](s, slotOut, len(res))
		s.launch("gm_test_warp"+suffix[T](), [2]int{blocksN, 1}, threads, 0, p)
		get(s, res, p)
	}))
	v := func(i int) T { return T(3*i + 1) }
	for i := range blocksN * threads {
		lane, base := i%32, i-i%32
		from := func(src int) T { return v(base + src) }
		down3, up2, seg := from(lane), from(lane), lane&^7
		if lane+3 < 32 {
			down3 = from(lane + 3)
		}
		if lane >= 2 {
			up2 = from(lane - 2)
		}
		down1w8 := from(lane)
		if lane+1 < seg+8 {
			down1w8 = from(lane + 1)
		}
		var ballot uint32
		for l := range 32 {
			if (base+l)%3 == 0 {
				ballot |= 1 << l
			}
		}
		want := []T{down3, from(lane ^ 5), up2, from(7), T(ballot), down1w8}
		for j, w := range want {
			if got := res[i*6+j]; got != w {
				t.Errorf("thread %d, collective %d: %v, want %v", i, j, got, w)
			}
		}
	}
}

// TestSharedSumAndAtomics sums 1000 values in each of 3 blocks through a
// shared-memory tree and counts the threads with an atomic add.
func TestSharedSumAndAtomics(t *testing.T) {
	forTypes(t, testSharedSum[float32], testSharedSum[float64])
}

func testSharedSum[T Float](t *testing.T) {
	const blocksN, threads, n = 3, 128, 1000
	x := make([]T, n)
	var want T
	for i := range x {
		x[i] = T(i % 7)
		want += x[i]
	}
	sum, count := make([]T, blocksN), []T{0}
	must(t, dev.run(func(s *seq) {
		px, pc := in(s, slotIn0, x), in(s, slotIn1, count)
		ps := out[T](s, slotOut, blocksN)
		s.launch("gm_test_sum"+suffix[T](), [2]int{blocksN, 1}, threads, threads*int(sizeOf[T]()), ps, pc, px, n)
		get(s, sum, ps)
		get(s, count, pc)
	}))
	for b, v := range sum {
		if v != want {
			t.Errorf("block %d summed %v, want %v", b, v, want)
		}
	}
	if count[0] != blocksN*threads {
		t.Errorf("atomic count %v, want %d", count[0], blocksN*threads)
	}
}
