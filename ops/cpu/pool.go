package cpu

import "sync"

// keyedPool recycles values by a key that fixes their sizes, so that the
// storage of one op's state is handed out again only to a computation of
// the same sizes. Per key it holds the last value put until a get takes it,
// whatever the garbage collector does: a training step allocates tens of
// megabytes, collections come every step or two, and a sync.Pool alone
// dropped most states between one step's release and the next step's get,
// so they were allocated (and their pages faulted in) again. Further values
// of a key go to a sync.Pool, which may drop them. The held values stay
// until the process ends: one state per size of op the process has run.
type keyedPool[K comparable, V any] struct{ slots sync.Map } // K → *keyedSlot[V]

// keyedSlot is the storage of one key.
type keyedSlot[V any] struct {
	mu   sync.Mutex
	held V
	has  bool
	more sync.Pool
}

// get returns a value put for k, if the pool holds one.
func (p *keyedPool[K, V]) get(k K) (v V, ok bool) {
	s, found := p.slots.Load(k)
	if !found {
		return v, false
	}
	sl := s.(*keyedSlot[V])
	sl.mu.Lock()
	if sl.has {
		v, sl.has = sl.held, false
		var zero V
		sl.held = zero
		sl.mu.Unlock()
		return v, true
	}
	sl.mu.Unlock()
	v, ok = sl.more.Get().(V)
	return v, ok
}

// put offers v for a later get of k; v is not used after.
func (p *keyedPool[K, V]) put(k K, v V) {
	s, found := p.slots.Load(k)
	if !found {
		s, _ = p.slots.LoadOrStore(k, new(keyedSlot[V]))
	}
	sl := s.(*keyedSlot[V])
	sl.mu.Lock()
	if !sl.has {
		sl.held, sl.has = v, true
		sl.mu.Unlock()
		return
	}
	sl.mu.Unlock()
	sl.more.Put(v)
}
