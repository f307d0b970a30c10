package cpu

import (
	"sync"
	"unsafe"

	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
)

// BlockState is what BlockSaving keeps for BlockBackward: the block's
// intermediates (the convolution after ÷Fi, the ReLU fit's output, the
// reduced mixtures of a block that integrates them), the
// saved states of its parts, and the gradient at the convolution's output
// for the last incoming gradient, which the op's two gradient nodes (data
// and kernels) share. It is Releasable: its buffers go to the next
// BlockSaving of the same sizes, its parts' states to theirs.
type BlockState[T Float] struct {
	key             blockKey // the layouts and spec it was made for
	v, r, y         []T      // ÷Fi-scaled convolution, ReLU fit output, reduced mixtures
	conv, relu, red device.Saved
	// mu guards the gradient part, which the op's two gradient nodes
	// share: g, the last incoming gradient, dy, dr and dv its gradients at
	// the reduced mixtures (of a block that integrates them), at the ReLU
	// fit's output and at the convolution's.
	mu            sync.Mutex
	g, dy, dr, dv []T
	haveDV        bool
	// c and dc are the near-group corrections of a fused block's ReLU fit
	// targets and their gradient, ndx and ndk the corrections' part of
	// ∂L/∂x and ∂L/∂k for the last incoming gradient (nil without b.NearTargets).
	c, dc, ndx, ndk []T
}

// blockKey keys recycled block states: everything that fixes their sizes.
type blockKey struct {
	lx, lk mixture.Layout
	b      device.BlockSpec
	size   uintptr
}

var blockStates keyedPool[blockKey, any]

// Release hands the state's buffers to a later BlockSaving of the same
// sizes and releases its parts' states.
func (st *BlockState[T]) Release() {
	for _, s := range []device.Saved{st.conv, st.relu, st.red} {
		if r, ok := s.(device.Releasable); ok {
			r.Release()
		}
	}
	st.conv, st.relu, st.red, st.haveDV = nil, nil, nil, false
	blockStates.put(st.key, st)
}

func newBlockState[T Float](lx, lk mixture.Layout, b device.BlockSpec) *BlockState[T] {
	key := blockKey{lx, lk, b, unsafe.Sizeof(T(0))}
	if v, ok := blockStates.get(key); ok {
		return v.(*BlockState[T])
	}
	lv, ly := b.ConvLayout(lx, lk), b.Layout(lx, lk)
	st := &BlockState[T]{
		key: key,
		v:   make([]T, lv.Len()), r: make([]T, lv.Len()),
		g: make([]T, b.OutLen(lx, lk)), dr: make([]T, lv.Len()), dv: make([]T, lv.Len()),
	}
	if b.NearTargets {
		n := lv.Mixtures() * lv.N
		st.c, st.dc, st.ndx, st.ndk = make([]T, n), make([]T, n), make([]T, lx.Len()), make([]T, lk.Len())
	}
	if b.Integrate {
		st.dy = make([]T, ly.Len())
		if b.Reduce != device.BlockUnreduced {
			st.y = make([]T, ly.Len())
		}
	}
	return st
}

// Block computes device.Kernels.Block by its parts, one after another:
// Conv or ConvFit, ScaleWeights(1/Fi), ReLUFit without constants,
// TreeHEM, KeepLargest, MEM or nothing, and Integrate if b.Integrate. b must
// have passed b.Check(lx, lk).
func Block[T Float](y, x, k []T, lx, lk mixture.Layout, b device.BlockSpec) error {
	st := newBlockState[T](lx, lk, b)
	defer st.Release()
	return st.forward(y, x, k, false)
}

// BlockSaving is Block that keeps its intermediates and its parts' saved
// states for BlockBackward.
func BlockSaving[T Float](y, x, k []T, lx, lk mixture.Layout, b device.BlockSpec) (*BlockState[T], error) {
	st := newBlockState[T](lx, lk, b)
	if err := st.forward(y, x, k, true); err != nil {
		st.Release()
		return nil, err
	}
	return st, nil
}

// forward runs the block into y through st's buffers, keeping its parts'
// saved states in st if save.
func (st *BlockState[T]) forward(y, x, k []T, save bool) error {
	lx, lk, b := st.key.lx, st.key.lk, st.key.b
	lv := b.ConvLayout(lx, lk)
	var sel *ConvFitSelection
	switch {
	case b.Fused() && (save || b.NearTargets):
		sel = ConvFitSaving(st.v, x, k, lx, lk, b.Fit)
		if save {
			st.conv = sel
		}
	case b.Fused():
		ConvFit(st.v, x, k, lx, lk, b.Fit)
	default:
		Conv(st.v, x, k, lx, lk)
	}
	ScaleWeights(st.v, st.v, lv, T(b.Scale(lx)))
	if b.NearTargets {
		ConvFitNear(st.c, x, k, st.v, lx, lk, sel, b.Near, b.Scale(lx))
		if !save {
			sel.Release()
		}
	}
	var sums *ReLUFitSums[T]
	if save {
		sums = newReLUFitSums[T](lv)
		st.relu = sums
	}
	if err := reluFit(st.r, st.v, nil, st.c, true, lv, b.ReLU, sums); err != nil {
		return errors.Wrap(err, "block's ReLU fit")
	}
	red := y // the reduced mixtures
	if b.Integrate {
		red = st.y
	}
	switch b.Reduce {
	case device.BlockTreeHEM:
		if !save {
			if err := TreeHEM(red, st.r, lv, b.Np, b.TreeHEM); err != nil {
				return errors.Wrap(err, "block's TreeHEM")
			}
			break
		}
		dec, err := TreeHEMSaving(red, st.r, lv, b.Np, b.TreeHEM)
		if err != nil {
			return errors.Wrap(err, "block's TreeHEM")
		}
		st.red = dec
	case device.BlockKeepLargest:
		KeepLargest(red, st.r, lv, b.Np)
	case device.BlockMEM:
		MEM(red, st.r, lv, b.Np)
	default:
		if !b.Integrate {
			copy(y, st.r)
		}
		red = st.r
	}
	if b.Integrate {
		Integrate(y, red, b.Layout(lx, lk))
	}
	return nil
}

// BlockBackward writes ∂L/∂x and ∂L/∂k of Block (a nil destination is not
// computed) through its parts' backward computations. With st from
// BlockSaving for these x and k it starts from st's intermediates, and
// reuses st's gradient at the convolution when g is the one it was made
// for (the op's data and kernel gradients); with st nil it runs the
// forward first.
func BlockBackward[T Float](dx, dk, g, x, k []T, lx, lk mixture.Layout, b device.BlockSpec, st *BlockState[T]) error {
	if st == nil {
		var err error
		if st, err = BlockSaving(make([]T, b.OutLen(lx, lk)), x, k, lx, lk, b); err != nil {
			return err
		}
		defer st.Release()
	} else if sk := st.key; sk.lx != lx || sk.lk != lk || sk.b != b {
		return errors.Errorf("BlockBackward: state made for %v ⊛ %v (%v), used for %v ⊛ %v (%v)", sk.lx.Shape(), sk.lk.Shape(), sk.b, lx.Shape(), lk.Shape(), b)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.haveDV || !mixture.SameBits(st.g, g) {
		if err := st.convGrad(g, x, k); err != nil {
			return err
		}
	}
	if b.Fused() {
		sel, _ := st.conv.(*ConvFitSelection)
		ConvFitBackwardSaved(dx, dk, st.dv, x, k, lx, lk, b.Fit, sel)
		if b.NearTargets {
			addTo(dx, st.ndx)
			addTo(dk, st.ndk)
		}
		return nil
	}
	if dx != nil {
		ConvBackwardData(dx, st.dv, k, lx, lk)
	}
	if dk != nil {
		ConvBackwardKernels(dk, st.dv, x, lx, lk)
	}
	return nil
}

// addTo adds a to dst unless dst is nil.
func addTo[T Float](dst, a []T) {
	if dst == nil {
		return
	}
	for i, v := range a {
		dst[i] += v
	}
}

// convGrad sets st.dv, the gradient at the convolution's output for the
// incoming gradient g (and for a block with near-group targets st.ndx and
// st.ndk, their part of the gradients of x and k), and remembers g.
func (st *BlockState[T]) convGrad(g, x, k []T) error {
	lx, lk, b := st.key.lx, st.key.lk, st.key.b
	lv := b.ConvLayout(lx, lk)
	dy := g
	if b.Integrate {
		IntegrateBackward(st.dy, g, b.Layout(lx, lk))
		dy = st.dy
	}
	dr := dy
	switch b.Reduce {
	case device.BlockTreeHEM:
		dec, _ := st.red.(*Decisions)
		if err := TreeHEMBackwardSaved(st.dr, st.r, dy, dec); err != nil {
			return errors.Wrap(err, "block's TreeHEM")
		}
		dr = st.dr
	case device.BlockKeepLargest:
		KeepLargestBackward(st.dr, st.r, dy, lv, b.Np)
		dr = st.dr
	case device.BlockMEM:
		MEMBackward(st.dr, st.r, dy, lv, b.Np)
		dr = st.dr
	}
	sums, _ := st.relu.(*ReLUFitSums[T])
	if err := reluFitBackward(st.dv, nil, st.dc, st.v, nil, st.c, true, dr, lv, b.ReLU, sums); err != nil {
		return errors.Wrap(err, "block's ReLU fit")
	}
	if b.NearTargets {
		sel, _ := st.conv.(*ConvFitSelection)
		clear(st.ndx)
		clear(st.ndk)
		ConvFitNearBackward(st.ndx, st.ndk, st.dv, st.dc, x, k, st.v, lx, lk, sel, b.Near, b.Scale(lx))
	}
	ScaleWeights(st.dv, st.dv, lv, T(b.Scale(lx)))
	copy(st.g, g)
	st.haveDV = true
	return nil
}
