//go:build gmcuda

package cudaops

import (
	"math/bits"

	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
)

// maxScratch is the most bytes of global-memory scratch one ConvFit
// launch takes.
const maxScratch = 1 << 30

// convFitBlock and convFitBackBlock are the thread counts of the forward's
// and the backward's blocks (powers of two from 32: the bounding box is
// reduced in shared memory, and the moment matches' lane groups must fill
// whole warps). Few threads let several blocks share an SM: each waits
// through its one warp's greedy split, and the kernels' registers allow
// one block of 256 threads per SM. On an H200 (2026-11-28) the forward
// took 0.59–0.72 of its time at 256 threads with 128, the backward
// 0.44–0.63 with 64 (docs/cuda.md). convFitGrid is the most blocks one
// launch runs; each block loops over the output mixtures m with
// m ≡ blockIdx.x (mod the grid), so global scratch is sized by the grid,
// not by B·Fo. Variables so that the tests can make blocks loop on small
// inputs and the benchmarks try other block sizes.
var convFitBlock, convFitBackBlock, convFitGrid = 128, 64, 4096

// convFitSaved is what ConvFitSaving keeps on the GPU: nothing but the
// call's shapes and selection rule. The backward makes the same selection again on the
// device, which costs less than moving the Nv-long sorted order across the
// bus and back; a non-nil saved state tells the op that the inputs are the
// forward's, already checked.
type convFitSaved struct {
	lx, lk mixture.Layout
	sel    device.ConvFitSelect
}

// cfSel are device arrays for ConvFit's selection of every mixture, as
// cf_saved in convfit.cu lays them out: the sorted order [B·Fo, Nv], the
// selected nodes' bounds [B·Fo, 2n] and their counts [B·Fo], int32. The
// forward given them writes its selection there, the backward given them
// reads it instead of selecting again; zero: none.
type cfSel struct{ perm, sel, cnt devPtr }

// cfSelBytes returns the bytes of cfSel's arrays for data lx, kernels lk
// and n selected nodes: perm, sel, cnt.
func cfSelBytes(lx, lk mixture.Layout, n int) (perm, sel, cnt int64) {
	nm, nv := int64(lx.B*lk.B), int64(lx.C*lx.N*lk.N)
	return 4 * nm * nv, 8 * nm * int64(n), 4 * nm
}

// maxShared is the dynamic shared memory a block gets without opting in on
// every GPU since compute 3.0, and all the emulator gives.
const maxShared = 48 << 10

// convFitArgs places the selection scratch for a call on the device
// operands px and pk and returns the grid, the shared-memory bytes and the
// kernel arguments that follow the destination (and, in the backward, the
// incoming gradient).
func convFitArgs(s *seq, px, pk devPtr, lx, lk mixture.Layout, sel device.ConvFitSelect, threads int) (grid, smem int, args []any) {
	n := sel.N
	nm, nv := lx.B*lk.B, lx.C*lx.N*lk.N
	p := 1 << bits.Len(uint(nv-1)) // the sort's padded length, ≥ nv
	grid = min(nm, convFitGrid)
	// The layout cf_scratch in convfit.cu reads: keys (whose region the
	// bounding box's reduction of 6 doubles per thread uses first), nv + 1
	// prefix sums, n masses, nv sorted indices, 2n node bounds, a count.
	local := 8*max(p, 6*threads) + 8*(nv+1) + 8*n + 4*nv + 8*n + 8
	if local <= maxShared {
		var none devPtr // the kernel reads no global scratch
		return grid, local, []any{px, pk, lx.B, lx.C, lx.N, lk.B, lk.N, lx.D, n, sel.Negative, 1, none, p, none, none, none, none}
	}
	// Per block in global memory: p keys, nv + 1 prefix sums and n masses
	// (8 bytes each), nv sorted indices and 2n node bounds (4 bytes each),
	// in that order so that every part is aligned.
	per := int64(8*(p+nv+1+n) + 4*(nv+2*n))
	// Fewer blocks, each looping over more mixtures, where the scratch of
	// a full grid would pass maxScratch.
	grid = int(max(1, min(int64(grid), maxScratch/per)))
	var base devPtr
	if s.err == nil {
		base, s.err = s.d.buf(slotScratch, int64(grid)*per)
	}
	keys := base
	prefix := keys + devPtr(8*grid*p)
	mass := prefix + devPtr(8*grid*(nv+1))
	perm := mass + devPtr(8*grid*n)
	nodes := perm + devPtr(4*grid*nv)
	return grid, (6*threads + 1) * 8,
		[]any{px, pk, lx.B, lx.C, lx.N, lk.B, lk.N, lx.D, n, sel.Negative, 0, keys, p, perm, prefix, nodes, mass}
}

// ConvFit is device.Kernels.ConvFit on the GPU: one block per output
// mixture makes the keys, sorts them, selects the nodes and writes their
// moment matches (convfit.cu).
func (c Kernels[T]) ConvFit(y, x, k []T, lx, lk mixture.Layout, sel device.ConvFitSelect) error {
	return c.d.run(func(s *seq) {
		px, pk := in(s, slotIn0, x), in(s, slotIn1, k)
		py := out[T](s, slotOut, len(y))
		launchConvFit[T](s, py, px, pk, lx, lk, sel, cfSel{})
		get(s, y, py)
	})
}

// launchConvFit runs ConvFit's kernel on device operands, saving its
// selection into save if given.
func launchConvFit[T Float](s *seq, py, px, pk devPtr, lx, lk mixture.Layout, sel device.ConvFitSelect, save cfSel) {
	grid, smem, args := convFitArgs(s, px, pk, lx, lk, sel, convFitBlock)
	args = append(append([]any{py}, args...), save.perm, save.sel, save.cnt)
	s.launch("gm_convfit"+suffix[T](), [2]int{grid, 1}, convFitBlock, smem, args...)
}

// ConvFitSaving is ConvFit; its saved state holds only the shapes (see
// convFitSaved).
func (c Kernels[T]) ConvFitSaving(y, x, k []T, lx, lk mixture.Layout, sel device.ConvFitSelect) (device.Saved, error) {
	if err := c.ConvFit(y, x, k, lx, lk, sel); err != nil {
		return nil, err
	}
	return convFitSaved{lx, lk, sel}, nil
}

// ConvFitBackward is device.Kernels.ConvFitBackward on the GPU: a first
// launch makes the selection again and writes the gradient of every virtual
// component, in Conv's output layout, into device scratch that never leaves
// the GPU; the convolution's backward kernels then reduce it to ∂L/∂x and
// ∂L/∂k, each only when asked for.
func (c Kernels[T]) ConvFitBackward(dx, dk, g, x, k []T, lx, lk mixture.Layout, sel device.ConvFitSelect, saved device.Saved) error {
	if saved != nil {
		sv, ok := saved.(convFitSaved)
		if !ok {
			return errors.Errorf("ConvFitBackward: saved state %T is not the GPU's %T", saved, sv)
		}
		if sv.lx != lx || sv.lk != lk || sv.sel != sel {
			return errors.Errorf("ConvFitBackward: saved state made for %v ⊛ %v (%v), used for %v ⊛ %v (%v)", sv.lx.Shape(), sv.lk.Shape(), sv.sel, lx.Shape(), lk.Shape(), sel)
		}
	}
	return c.d.run(func(s *seq) {
		px, pk, pg := in(s, slotIn0, x), in(s, slotIn1, k), in(s, slotIn2, g)
		pdx, pdk := launchConvFitBackward[T](s, dx != nil, dk != nil, slotWork, pg, px, pk, lx, lk, sel, cfSel{})
		if dx != nil {
			get(s, dx, pdx)
		}
		if dk != nil {
			get(s, dk, pdk)
		}
	})
}

// launchConvFitBackward runs ConvFit's backward on device operands
// (launchConvFitGrad into slot, then the convolution's backward kernels)
// into slotOut (∂L/∂x, if wantX) and slotOut1 (∂L/∂k, if wantK), which it
// returns.
func launchConvFitBackward[T Float](s *seq, wantX, wantK bool, slot int, pg, px, pk devPtr, lx, lk mixture.Layout, sel device.ConvFitSelect, saved cfSel) (pdx, pdk devPtr) {
	pv := launchConvFitGrad[T](s, slot, pg, px, pk, lx, lk, sel, saved)
	return launchConvBackward[T](s, wantX, wantK, pv, px, pk, lx, lk)
}

// launchConvFitGrad writes the gradient of every virtual component, in
// Conv's output layout, into slot, which it returns: the first part of
// ConvFit's backward for the gradient pg of its output, with the forward's
// selection saved, if given.
func launchConvFitGrad[T Float](s *seq, slot int, pg, px, pk devPtr, lx, lk mixture.Layout, sel device.ConvFitSelect, saved cfSel) devPtr {
	lv := device.ConvLayout(lx, lk)
	grid, smem, args := convFitArgs(s, px, pk, lx, lk, sel, convFitBackBlock)
	pv := out[T](s, slot, lv.Len())
	args = append(append([]any{pv, pg}, args...), saved.perm, saved.sel, saved.cnt)
	s.launch("gm_convfit_backward"+suffix[T](), [2]int{grid, 1}, convFitBackBlock, smem, args...)
	return pv
}

// launchConvBackward runs the convolution's backward kernels for the
// gradient pv of its output on device operands, into slotOut (∂L/∂x, if
// wantX) and slotOut1 (∂L/∂k, if wantK), which it returns.
func launchConvBackward[T Float](s *seq, wantX, wantK bool, pv, px, pk devPtr, lx, lk mixture.Layout) (pdx, pdk devPtr) {
	if wantX {
		pdx = out[T](s, slotOut, lx.Len())
		launchConv[T](s, "gm_conv_backward_data", blocks(lx.Len(), flatBlock), flatBlock, 0, pdx, pv, pk, lx, lk)
	}
	if wantK {
		pdk = out[T](s, slotOut1, lk.Len())
		launchConv[T](s, "gm_conv_backward_kernels", lk.B*lk.C*lk.N, reduceBlock, reduceBlock*int(sizeOf[T]()), pdk, pv, px, lx, lk)
	}
	return pdx, pdk
}
