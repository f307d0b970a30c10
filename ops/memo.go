package ops

import (
	"sync"

	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// memo carries what a forward run saved on its device (device.Saved: the
// ReLU fit's sums, TreeHEM's decisions, ConvFit's selection) to the grad
// ops of the same op, so the backward pass does not repeat the forward's
// work or re-validate the forward's inputs; the kernel assembly's state is
// the ops package's own, where its three grad ops share one backward
// computation (assembleGrads).
//
// SymDiff creates it, so an op in a graph without its gradient never saves.
// It holds the last forward run only: the saved state and a copy of that
// run's inputs, and at most one spare state (below), which bounds its
// memory by two runs' states. A grad op receives the
// state only for inputs bitwise equal to the copy; for any other inputs (the
// graph's inputs changed between the passes, or two machines run one graph
// concurrently) it recomputes as it would without a memo, so a memo can make
// the backward faster but never different.
//
// A state the next forward run replaces becomes the memo's spare if no
// grad run is using a state of the memo at that moment, and the forward run
// after that releases it (device.Releasable) just before it runs, so the
// device can hand its storage to that run instead of allocating and
// clearing it again. Released right then, on the goroutine that runs the
// forward computation, the state meets no garbage collection and no other
// processor's pool on its way back.
type memo struct {
	mu     sync.Mutex
	inputs any // [][]T: copies of the forward run's inputs
	saved  device.Saved
	spare  device.Saved // a replaced state no computation uses any more
	users  int          // grad runs using a state of this memo now
}

// saving is a kernel whose forward computation can save state for its grad
// kernels.
type saving[T Float] interface {
	kernel[T]
	// doSaving is do, also returning the device's saved state.
	doSaving(dev device.Kernels[T], out operand[T], in []operand[T]) (device.Saved, error)
}

// resuming is a grad computation that can use its forward's saved state.
type resuming[T Float] interface {
	// doSaved is do with the state saved by the forward run on the same
	// inputs, which that run has checked: doSaved need not check them again.
	// With saved nil it is do: it checks the inputs and recomputes.
	doSaved(dev device.Kernels[T], out operand[T], in []operand[T], saved device.Saved) error
}

// resumedMixture returns the layout of the packed mixture input x of a
// resuming computation, checking x's values only without saved state (see
// resuming.doSaved).
func resumedMixture[T Float](x operand[T], input string, saved device.Saved) (mixture.Layout, error) {
	if saved != nil {
		return mixture.LayoutOf(x.shape)
	}
	return checkedMixture(x, input)
}

// keep records the state saved by a forward run on in. The copies of in go
// into the buffers of the previous run's copies where those are large
// enough: a training step runs every op on inputs of the same sizes, and
// only recall, under the lock, reads them.
func keep[T Float](m *memo, in []operand[T], saved device.Saved) {
	m.mu.Lock()
	inputs, _ := m.inputs.([][]T)
	if len(inputs) != len(in) {
		inputs = make([][]T, len(in))
	}
	for i, a := range in {
		inputs[i] = append(inputs[i][:0], a.data...)
	}
	// Only a releasable state is worth keeping; compared as Releasable,
	// which pointers implement, in case a device hands the same state twice.
	if old, ok := m.saved.(device.Releasable); ok && m.users == 0 {
		if same, ok := saved.(device.Releasable); !ok || same != old {
			m.spare = old
		}
	}
	m.inputs, m.saved = inputs, saved
	m.mu.Unlock()
}

// releaseSpare releases the memo's spare state, if it has one, for the
// forward run about to start.
func (m *memo) releaseSpare() {
	m.mu.Lock()
	spare := m.spare
	m.spare = nil
	m.mu.Unlock()
	if r, ok := spare.(device.Releasable); ok {
		r.Release()
	}
}

// recall returns the state saved by the last forward run if in are bitwise
// its inputs, and nil otherwise. The caller calls m.done when it no longer
// uses a state it received.
func recall[T Float](m *memo, in []operand[T]) device.Saved {
	m.mu.Lock()
	defer m.mu.Unlock()
	inputs, ok := m.inputs.([][]T)
	if !ok || m.saved == nil || len(inputs) != len(in) {
		return nil
	}
	for i, a := range in {
		if !mixture.SameBits(inputs[i], a.data) {
			return nil
		}
	}
	m.users++
	return m.saved
}

// done records that a grad run stopped using the state recall gave it.
func (m *memo) done() {
	m.mu.Lock()
	m.users--
	m.mu.Unlock()
}
