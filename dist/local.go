package dist

import (
	"fmt"
	"sync"

	"github.com/pkg/errors"
)

// NewLocal returns the size ranks of a group inside one process, rank i at
// index i; each rank is meant for its own goroutine. Sums are taken in rank
// order, so a Local group's results are those of a serial loop over the
// ranks. A collective whose ranks disagree (another operation or another
// length) fails on every rank, naming both. NewLocal panics if size < 1.
func NewLocal(size int) []Comm {
	if size < 1 {
		panic(fmt.Sprintf("dist.NewLocal: size %d, want ≥ 1", size))
	}
	g := &localGroup{size: size, calls: make([]localCall, size)}
	g.cond = sync.NewCond(&g.mu)
	cs := make([]Comm, size)
	for r := range cs {
		cs[r] = &local{g: g, rank: r}
	}
	return cs
}

// localCall is one rank's part of a collective.
type localCall struct {
	op   string
	f32  []float32
	f64  []float64
	b    []byte
	root int
}

type localGroup struct {
	mu      sync.Mutex
	cond    *sync.Cond
	size    int
	arrived int
	round   uint64
	calls   []localCall
	err     error // of the round just completed
	aborted error
}

type local struct {
	g    *localGroup
	rank int
}

func (l *local) Rank() int { return l.rank }
func (l *local) Size() int { return l.g.size }

func (l *local) AllReduceFloat32(buf []float32) error {
	return l.g.join(l.rank, localCall{op: "AllReduceFloat32", f32: buf})
}

func (l *local) AllReduceFloat64(buf []float64) error {
	return l.g.join(l.rank, localCall{op: "AllReduceFloat64", f64: buf})
}

func (l *local) Broadcast(buf []byte, root int) error {
	if err := checkRoot(root, l.g.size); err != nil {
		return err
	}
	return l.g.join(l.rank, localCall{op: "Broadcast", b: buf, root: root})
}

func (l *local) Barrier() error { return l.g.join(l.rank, localCall{op: "Barrier"}) }

func (l *local) Abort(code int) {
	l.g.mu.Lock()
	defer l.g.mu.Unlock()
	if l.g.aborted == nil {
		l.g.aborted = errors.Errorf("dist: rank %d aborted the job (status %d)", l.rank, code)
	}
	l.g.cond.Broadcast()
}

func (l *local) Close() error { return nil }

// join adds rank's call to the current round; the last rank to arrive
// carries the round out on every rank's buffers while the others wait.
func (g *localGroup) join(rank int, c localCall) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.aborted != nil {
		return g.aborted
	}
	g.calls[rank] = c
	g.arrived++
	round := g.round
	if g.arrived == g.size {
		g.err = g.complete()
		g.arrived = 0
		g.round++
		g.cond.Broadcast()
		return g.err
	}
	for g.round == round && g.aborted == nil {
		g.cond.Wait()
	}
	if g.round == round {
		return g.aborted
	}
	return g.err
}

// complete checks that every rank called the same operation on buffers of
// one length and carries it out.
func (g *localGroup) complete() error {
	c0 := g.calls[0]
	for r, c := range g.calls {
		if c.op != c0.op || len(c.f32) != len(c0.f32) || len(c.f64) != len(c0.f64) || len(c.b) != len(c0.b) || c.root != c0.root {
			return errors.Errorf("dist: collective mismatch: rank 0 called %s (%d values, root %d), rank %d %s (%d values, root %d)",
				c0.op, max(len(c0.f32), len(c0.f64), len(c0.b)), c0.root, r, c.op, max(len(c.f32), len(c.f64), len(c.b)), c.root)
		}
	}
	switch c0.op {
	case "AllReduceFloat32":
		localSum(g.calls, func(c localCall) []float32 { return c.f32 })
	case "AllReduceFloat64":
		localSum(g.calls, func(c localCall) []float64 { return c.f64 })
	case "Broadcast":
		for _, c := range g.calls {
			copy(c.b, g.calls[c0.root].b)
		}
	}
	return nil
}

// localSum sums the buffers in rank order into rank 0's and copies the
// result to the others.
func localSum[T float32 | float64](calls []localCall, buf func(localCall) []T) {
	sum := buf(calls[0])
	for _, c := range calls[1:] {
		for i, v := range buf(c) {
			sum[i] += v
		}
	}
	for _, c := range calls[1:] {
		copy(buf(c), sum)
	}
}
