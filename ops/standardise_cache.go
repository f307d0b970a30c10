package ops

import (
	"hash/maphash"
	"sync"

	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// sdCacheLimit is the most samples an sdCache holds; a full cache starts
// again empty. At one float64 per channel and a 16-byte key it bounds the
// memory to a few tens of MB while holding any of the data sets' inputs.
const sdCacheLimit = 1 << 20

// sdCache remembers the standard deviations of Standardise per sample,
// keyed by a 128-bit hash of the sample's bits and its layout: they depend
// on nothing else (StandardiseScale's grid spans the sample's own bounding
// box), and a model sees the same input samples every epoch, while each
// costs a grid of evaluations per channel (StandardisePoints^D · N). A
// cached value is the one the device computed for that sample, so results
// do not change.
type sdCache struct {
	mu    sync.Mutex
	seed  [2]maphash.Seed
	sd    map[sdKey][]float64
	limit int // sdCacheLimit; smaller in tests
}

type sdKey [2]uint64

func newSDCache() *sdCache {
	return &sdCache{seed: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}, sd: map[sdKey][]float64{}, limit: sdCacheLimit}
}

// sampleKey returns c's key of the sample v (all its channels) under
// layout l.
func sampleKey[T Float](c *sdCache, v []T, l mixture.Layout) sdKey {
	var k sdKey
	for i := range k {
		k[i] = mixture.HashBits(c.seed[i], v) ^ uint64(l.C)<<48 ^ uint64(l.N)<<8 ^ uint64(l.D)
	}
	return k
}

// standardiseScale is dev.StandardiseScale(sd, x, l) through the cache c
// (nil: no cache): the samples it has seen are copied from it, and the
// others are computed in one call and added.
func standardiseScale[T Float](c *sdCache, dev device.Kernels[T], sd []float64, x []T, l mixture.Layout) error {
	if c == nil {
		return dev.StandardiseScale(sd, x, l)
	}
	per := l.C * l.N * l.Stride()
	keys := make([]sdKey, l.B)
	var miss []int
	c.mu.Lock()
	for b := range l.B {
		keys[b] = sampleKey(c, x[b*per:(b+1)*per], l)
		if v, ok := c.sd[keys[b]]; ok {
			copy(sd[b*l.C:(b+1)*l.C], v)
		} else {
			miss = append(miss, b)
		}
	}
	c.mu.Unlock()
	if len(miss) == 0 {
		return nil
	}
	lm := l
	lm.B = len(miss)
	xm, sdm := x, sd
	if len(miss) < l.B {
		xm, sdm = make([]T, lm.B*per), make([]float64, lm.B*l.C)
		for i, b := range miss {
			copy(xm[i*per:(i+1)*per], x[b*per:(b+1)*per])
		}
	}
	if err := dev.StandardiseScale(sdm, xm, lm); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sd)+len(miss) > c.limit {
		clear(c.sd)
	}
	for i, b := range miss {
		v := append([]float64(nil), sdm[i*l.C:(i+1)*l.C]...)
		copy(sd[b*l.C:(b+1)*l.C], v)
		c.sd[keys[b]] = v
	}
	return nil
}
