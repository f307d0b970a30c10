package cpu

import "sync"

// keyedPool recycles values by a key that fixes their sizes, so that the
// storage of one op's state is handed out again only to a computation of
// the same sizes. Like sync.Pool it may drop its values at any garbage
// collection; it holds one sync.Pool per key it has seen.
type keyedPool[K comparable, V any] struct{ pools sync.Map } // K → *sync.Pool

// get returns a value put for k, if the pool holds one.
func (p *keyedPool[K, V]) get(k K) (v V, ok bool) {
	if sp, found := p.pools.Load(k); found {
		v, ok = sp.(*sync.Pool).Get().(V)
	}
	return v, ok
}

// put offers v for a later get of k; v is not used after.
func (p *keyedPool[K, V]) put(k K, v V) {
	sp, _ := p.pools.LoadOrStore(k, new(sync.Pool))
	sp.(*sync.Pool).Put(v)
}
