//go:build gmcuda

package cudaops

import (
	"runtime"
	"sync"

	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
)

// blockSaved is what BlockSaving keeps on the GPU: the call's shapes and
// spec, the forward's intermediates in device memory it owns (fwd), and
// which incoming gradient g the device's slotBlockDV holds the gradient at
// the convolution's output for (and, in a fused block, slotBlockDC the
// gradient of every convolved Gaussian, which ConvFit's backward computes
// from it). The first of the op's two gradient nodes (data, kernels) runs
// the block's backward from fwd down to those gradients; the second finds
// them in the slots, as long as no other block's backward ran in between
// (gen), and runs only the convolution's backward kernel it needs. It is
// Releasable: fwd goes back to the Device's pool for the next forward.
type blockSaved[T Float] struct {
	lx, lk mixture.Layout
	b      device.BlockSpec
	fwd    *blockBufs
	mu     sync.Mutex
	g      []T
	gen    uint64 // the Device's blockGen when slotBlockDV was written for g; 0: never
}

// Release gives the state's device memory back to the Device's pool.
func (sv *blockSaved[T]) Release() {
	if sv.fwd != nil {
		sv.fwd.giveBack()
	}
}

// blockPtrs are the device operands of one block call: its data and
// kernels (x, k), its ÷Fi-scaled convolution or fused convolution-fitting
// (v), the ReLU fit's output (r), in a fused block ConvFit's selection (cf),
// in a block reducing with TreeHEM or MEM the scratch its forward leaves for
// its backward (hem, mem; 0: none, the backward makes the forward's
// decisions again), and in a
// fused block with exact targets the ÷Fi-scaled convolution itself (c),
// v's positions (p) and the convolution's values there, the targets (t).
type blockPtrs struct {
	x, k, v, r, hem, mem devPtr
	cf                   cfSel
	c, p, t              devPtr
}

// placeBlock gives p device memory for the intermediates of block b with
// data lx and kernels lk: place(slot, count) returns room for count values
// of T, from the Device's slot in a call without a saved state.
func placeBlock[T Float](p *blockPtrs, place func(slot, count int) devPtr, lx, lk mixture.Layout, b device.BlockSpec) {
	lv := b.ConvLayout(lx, lk)
	p.v, p.r = place(slotBlockV, lv.Len()), place(slotBlockR, lv.Len())
	if b.ExactTargets() {
		n := lv.Mixtures() * lv.N
		p.c, p.p, p.t = place(slotBlockC, device.ConvLayout(lx, lk).Len()), place(slotBlockP, n*lv.D), place(slotBlockT, n)
	}
}

// slotBlock uploads x and k and returns the operands of a call of block b
// without a saved state: in the Device's slots.
func slotBlock[T Float](s *seq, x, k []T, lx, lk mixture.Layout, b device.BlockSpec) blockPtrs {
	p := blockPtrs{x: in(s, slotIn0, x), k: in(s, slotIn1, k)}
	placeBlock[T](&p, func(slot, count int) devPtr { return out[T](s, slot, count) }, lx, lk, b)
	return p
}

// blockBufs is device memory a saved block state owns: the forward's
// operands (blockPtrs), so that its backward need not upload x and k again
// nor run the forward again (hem and mem may be 0 where TreeHEM's or MEM's
// scratch would be too large). It goes back to the pool once, on Release or, for a state
// dropped unreleased, when the state is collected.
type blockBufs struct {
	d     *Device
	owned []ownedBuf
	blockPtrs
	once sync.Once
}

// ownedBuf is one buffer from Device's pool and its size.
type ownedBuf struct {
	bytes int64
	p     devPtr
}

func (o *blockBufs) giveBack() {
	o.once.Do(func() {
		for _, b := range o.owned {
			o.d.giveBack(b.bytes, b.p)
		}
	})
}

// take returns a buffer of bytes (at least 8) from the pool, owned by o.
func (o *blockBufs) take(s *seq, bytes int64) devPtr {
	bytes = max(bytes, 8)
	p := s.own(bytes)
	if p != 0 {
		o.owned = append(o.owned, ownedBuf{bytes, p})
	}
	return p
}

// ownBlockBufs gives sv device memory for the forward's intermediates of
// block b with data lx and kernels lk.
func ownBlockBufs[T Float](s *seq, sv *blockSaved[T], lx, lk mixture.Layout, b device.BlockSpec) {
	o := &blockBufs{d: s.d}
	take := func(_, count int) devPtr { return o.take(s, int64(count)*sizeOf[T]()) }
	o.x, o.k = take(slotIn0, lx.Len()), take(slotIn1, lk.Len())
	placeBlock[T](&o.blockPtrs, take, lx, lk, b)
	if b.Fused() {
		perm, sel, cnt := cfSelBytes(lx, lk, b.Fit.N)
		o.cf = cfSel{perm: o.take(s, perm), sel: o.take(s, sel), cnt: o.take(s, cnt)}
	}
	switch lv, z := b.ConvLayout(lx, lk), int(sizeOf[T]()); b.Reduce {
	case device.BlockTreeHEM:
		if bytes := hemKeptBytes(lv, b.Np, b.TreeHEM, z); bytes > 0 {
			o.hem = o.take(s, bytes)
		}
	case device.BlockMEM:
		if bytes := memKeptBytes(lv, b.Np, z); bytes > 0 {
			o.mem = o.take(s, bytes)
		}
	}
	if s.err != nil {
		o.giveBack()
		return
	}
	sv.fwd = o
	runtime.AddCleanup(sv, (*blockBufs).giveBack, o)
}

// blockOnGPU reports whether every part of b has GPU kernels: all but the
// refined ReLU fit (the block has no constants) and the near-group targets
// of a finite radius. Other blocks run on the fallback.
func blockOnGPU(b device.BlockSpec) bool {
	return (!b.NearTargets || b.ExactTargets()) && onGPU(device.ReLUFitCall("ReLUFit", false, b.ExactTargets(), b.ReLU))
}

// launchBlockFit runs the block's convolution (or fused
// convolution-fitting, saving its selection into p.cf if given), ÷Fi, its
// exact targets if it has them, and the ReLU fit on the device operands
// p.x and p.k, leaving the ÷Fi-scaled convolution in p.v and the ReLU
// fit's output in p.r.
func launchBlockFit[T Float](s *seq, p blockPtrs, lx, lk mixture.Layout, b device.BlockSpec, relu reluParams) {
	lv := b.ConvLayout(lx, lk)
	if b.Fused() {
		launchConvFit[T](s, p.v, p.x, p.k, lx, lk, b.Fit, p.cf)
	} else {
		launchConv[T](s, "gm_conv", blocks(lv.Len(), flatBlock), flatBlock, 0, p.v, p.x, p.k, lx, lk)
	}
	launchScaleWeights[T](s, p.v, p.v, lv, b.Scale(lx))
	if b.ExactTargets() {
		launchExactTargets[T](s, p, lx, lk, b)
	}
	launchReLUFit[T](s, p.r, p.v, 0, p.t, lv, relu)
}

// launchExactTargets writes into p.t the exact targets of a fused block's
// ReLU fit: its convolution, ÷Fi (into p.c), at the positions of the
// fitted mixtures p.v (into p.p), one point set per output mixture.
func launchExactTargets[T Float](s *seq, p blockPtrs, lx, lk mixture.Layout, b device.BlockSpec) {
	lv, lc := b.ConvLayout(lx, lk), device.ConvLayout(lx, lk)
	launchConv[T](s, "gm_conv", blocks(lc.Len(), flatBlock), flatBlock, 0, p.c, p.x, p.k, lx, lk)
	launchScaleWeights[T](s, p.c, p.c, lc, b.Scale(lx))
	n := lv.Mixtures() * lv.N
	s.launch("gm_positions"+suffix[T](), [2]int{blocks(n*lv.D, flatBlock), 1}, flatBlock, 0, p.p, p.v, n, lv.D, lv.Stride())
	launchEvaluate[T](s, p.t, p.c, p.p, lc, lx.B, lk.B, lv.N)
}

// launchExactTargetsBackward runs the backward of launchExactTargets for
// the gradient pdt of the targets: it adds the positions' part to the
// fitted mixtures' gradient pdv and returns the gradient of the
// convolution itself (before ÷Fi), in slotBlockDE.
func launchExactTargetsBackward[T Float](s *seq, pdv, pdt devPtr, p blockPtrs, lx, lk mixture.Layout, b device.BlockSpec) devPtr {
	lv, lc := b.ConvLayout(lx, lk), device.ConvLayout(lx, lk)
	n := lv.Mixtures() * lv.N
	pdp := out[T](s, slotBlockDP, n*lv.D)
	launchEvaluateBackwardPoints[T](s, pdp, p.c, p.p, pdt, lc, lx.B, lk.B, lv.N)
	s.launch("gm_add_positions"+suffix[T](), [2]int{blocks(n*lv.D, flatBlock), 1}, flatBlock, 0, pdv, pdp, n, lv.D, lv.Stride())
	pde := out[T](s, slotBlockDE, lc.Len())
	launchEvaluateBackwardMixture[T](s, pde, p.c, p.p, pdt, lc, lx.B, lk.B, lv.N)
	launchScaleWeights[T](s, pde, pde, lc, b.Scale(lx))
	return pde
}

// launchScaleWeights multiplies the weights of the device mixtures px
// (layout l) by f into py (which may be px).
func launchScaleWeights[T Float](s *seq, py, px devPtr, l mixture.Layout, f float64) {
	s.launch("gm_scale_weights"+suffix[T](), [2]int{blocks(l.Len(), flatBlock), 1}, flatBlock, 0, py, px, l.Len(), l.Stride(), f)
}

// reluParams are the ReLU fit's kernel arguments (reluArgs).
type reluParams struct {
	paper              int
	coarse, floor, off float64
}

// checkBlock checks the sizes of a call of computation name: ny values of
// the output (or of its incoming gradient), the data x, the kernels k and
// the destinations dx and dk unless nil; it returns the ReLU fit's kernel
// arguments and the layouts of the convolution and the reduced mixtures.
func checkBlock[T Float](name string, ny int, x, k, dx, dk []T, lx, lk mixture.Layout, b device.BlockSpec) (p reluParams, lv, ly mixture.Layout, err error) {
	lv, ly = b.ConvLayout(lx, lk), b.Layout(lx, lk)
	if p, err = reluArgs(b.ReLU); err != nil {
		return p, lv, ly, err
	}
	if err = checkTiles(lv.N); err != nil {
		return p, lv, ly, err
	}
	if b.ExactTargets() {
		if err = checkTiles(device.ConvLayout(lx, lk).N); err != nil {
			return p, lv, ly, err
		}
	}
	if ny != b.OutLen(lx, lk) || len(x) != lx.Len() || len(k) != lk.Len() || dx != nil && len(dx) != lx.Len() || dk != nil && len(dk) != lk.Len() {
		err = errors.Errorf("cudaops %s: %d values of output or gradient, %d of data, %d of kernels; %v ⊛ %v → %v needs %d, %d and %d",
			name, ny, len(x), len(k), lx.Shape(), lk.Shape(), b.Shape(lx, lk), b.OutLen(lx, lk), lx.Len(), lk.Len())
	}
	return p, lv, ly, err
}

// launchBlockGrad uploads g and runs the block's backward from the
// forward's intermediates p down to the gradient at the convolution's
// output, which it leaves in slotBlockDV and returns, with, for a block
// with exact targets, the gradient of the convolution itself that the
// targets add (slotBlockDE; else 0).
func launchBlockGrad[T Float](s *seq, p blockPtrs, g []T, lx, lk, lv mixture.Layout, b device.BlockSpec, relu reluParams) (pdv, pde devPtr) {
	pg := in(s, slotIn2, g)
	if b.Integrate {
		ly := b.Layout(lx, lk)
		pgy := out[T](s, slotBlockDY, ly.Len())
		launchIntegrateBackward[T](s, pgy, pg, ly)
		pg = pgy
	}
	pdr := pg
	switch b.Reduce {
	case device.BlockTreeHEM:
		pdr = out[T](s, slotBlockDR, lv.Len())
		launchTreeHEM[T](s, true, lv, b.Np, b.TreeHEM, p.hem, pdr, p.r, pg)
	case device.BlockKeepLargest:
		pdr = out[T](s, slotBlockDR, lv.Len())
		launchKeepLargest[T](s, "gm_keep_largest_backward", lv, b.Np, pdr, p.r, pg)
	case device.BlockMEM:
		pdr = out[T](s, slotBlockDR, lv.Len())
		launchMEM[T](s, true, lv, b.Np, p.mem, pdr, p.r, pg)
	}
	pdv = out[T](s, slotBlockDV, lv.Len())
	var pdt devPtr
	if b.ExactTargets() {
		pdt = out[T](s, slotBlockDT, lv.Mixtures()*lv.N)
	}
	launchReLUFitBackward[T](s, pdv, 0, pdt, p.v, 0, p.t, pdr, lv, relu)
	if b.ExactTargets() {
		pde = launchExactTargetsBackward[T](s, pdv, pdt, p, lx, lk, b)
	}
	launchScaleWeights[T](s, pdv, pdv, lv, b.Scale(lx))
	return pdv, pde
}

// Block is device.Kernels.Block on the GPU: x and k go to the device, the
// block's result comes back, and everything between (Fi·Ni·Nk Gaussians
// per mixture twice) stays in device memory. A block whose ReLU fit has no
// GPU kernel runs on the fallback.
func (c Kernels[T]) Block(y, x, k []T, lx, lk mixture.Layout, b device.BlockSpec) error {
	if !blockOnGPU(b) {
		return c.cpu.Block(y, x, k, lx, lk, b)
	}
	return c.block(y, x, k, lx, lk, b, nil)
}

// block runs the block's forward: with sv, into device memory sv then owns,
// else into the Device's block slots.
func (c Kernels[T]) block(y, x, k []T, lx, lk mixture.Layout, b device.BlockSpec, sv *blockSaved[T]) error {
	relu, lv, ly, err := checkBlock("Block", len(y), x, k, nil, nil, lx, lk, b)
	if err != nil {
		return err
	}
	err = c.d.run(func(s *seq) {
		var p blockPtrs
		if sv != nil {
			if ownBlockBufs(s, sv, lx, lk, b); s.err == nil {
				p = sv.fwd.blockPtrs
				inTo(s, p.x, x)
				inTo(s, p.k, k)
			}
		} else {
			p = slotBlock[T](s, x, k, lx, lk, b)
		}
		launchBlockFit[T](s, p, lx, lk, b, relu)
		py := p.r
		switch b.Reduce {
		case device.BlockTreeHEM:
			py = out[T](s, slotOut, ly.Len())
			launchTreeHEM[T](s, false, lv, b.Np, b.TreeHEM, p.hem, py, p.r)
		case device.BlockKeepLargest:
			py = out[T](s, slotOut, ly.Len())
			launchKeepLargest[T](s, "gm_keep_largest", lv, b.Np, py, p.r)
		case device.BlockMEM:
			py = out[T](s, slotOut, ly.Len())
			launchMEM[T](s, false, lv, b.Np, p.mem, py, p.r)
		}
		if b.Integrate {
			pi := out[T](s, slotOut1, len(y))
			launchIntegrate[T](s, pi, py, ly)
			py = pi
		}
		get(s, y, py)
	})
	if err != nil {
		return err
	}
	if b.Integrate {
		return finiteIntegrals(y, ly, "block integral")
	}
	return finite(y, ly, "block output")
}

// BlockSaving is Block; on the GPU its saved state keeps the forward's
// intermediates in device memory (see blockSaved), on the fallback it is
// the fallback's.
func (c Kernels[T]) BlockSaving(y, x, k []T, lx, lk mixture.Layout, b device.BlockSpec) (device.Saved, error) {
	if !blockOnGPU(b) {
		return c.cpu.BlockSaving(y, x, k, lx, lk, b)
	}
	sv := &blockSaved[T]{lx: lx, lk: lk, b: b}
	if err := c.block(y, x, k, lx, lk, b, sv); err != nil {
		sv.Release()
		return nil, err
	}
	return sv, nil
}

// BlockBackward is device.Kernels.BlockBackward on the GPU: g goes to the
// device (and x and k, unless the saved state holds the forward's copies),
// its parts' backward kernels run there from the forward's intermediates
// (the saved state's, or the forward run again without one), and only
// ∂L/∂x and ∂L/∂k come back; with the saved state of the op's other
// gradient node for the same g, nothing goes, and only the convolution's
// backward runs (see blockSaved).
func (c Kernels[T]) BlockBackward(dx, dk, g, x, k []T, lx, lk mixture.Layout, b device.BlockSpec, saved device.Saved) error {
	if !blockOnGPU(b) {
		return c.cpu.BlockBackward(dx, dk, g, x, k, lx, lk, b, saved)
	}
	var sv *blockSaved[T]
	if saved != nil {
		var ok bool
		if sv, ok = saved.(*blockSaved[T]); !ok {
			return errors.Errorf("BlockBackward: saved state %T is not the GPU's %T", saved, sv)
		}
		if sv.lx != lx || sv.lk != lk || sv.b != b {
			return errors.Errorf("BlockBackward: saved state made for %v ⊛ %v (%v), used for %v ⊛ %v (%v)", sv.lx.Shape(), sv.lk.Shape(), sv.b, lx.Shape(), lk.Shape(), b)
		}
		sv.mu.Lock()
		defer sv.mu.Unlock()
	}
	relu, lv, _, err := checkBlock("BlockBackward", len(g), x, k, dx, dk, lx, lk, b)
	if err != nil {
		return err
	}
	var fwd *blockBufs // the forward's intermediates, if the state has them
	if sv != nil {
		fwd = sv.fwd
	}
	err = c.d.run(func(s *seq) {
		var p blockPtrs
		if fwd != nil {
			p = fwd.blockPtrs // the memo gave the state for these very inputs
		} else {
			p = slotBlock[T](s, x, k, lx, lk, b)
		}
		reuse := sv != nil && sv.gen != 0 && sv.gen == s.d.blockGen && mixture.SameBits(sv.g, g)
		var pdv, pde devPtr
		if reuse {
			pdv = s.d.slots[slotBlockDV].ptr
		} else {
			if fwd == nil {
				launchBlockFit[T](s, p, lx, lk, b, relu)
			}
			pdv, pde = launchBlockGrad[T](s, p, g, lx, lk, lv, b, relu)
			s.d.blockGen++
		}
		var pdx, pdk devPtr
		switch {
		case b.Fused() && reuse:
			pdx, pdk = launchConvBackward[T](s, dx != nil, dk != nil, s.d.slots[slotBlockDC].ptr, p.x, p.k, lx, lk)
		case b.Fused():
			pdc := launchConvFitGrad[T](s, slotBlockDC, pdv, p.x, p.k, lx, lk, b.Fit, p.cf)
			if pde != 0 {
				n := device.ConvLayout(lx, lk).Len()
				s.launch("gm_add"+suffix[T](), [2]int{blocks(n, flatBlock), 1}, flatBlock, 0, pdc, pde, n)
			}
			pdx, pdk = launchConvBackward[T](s, dx != nil, dk != nil, pdc, p.x, p.k, lx, lk)
		default:
			pdx, pdk = launchConvBackward[T](s, dx != nil, dk != nil, pdv, p.x, p.k, lx, lk)
		}
		if dx != nil {
			get(s, dx, pdx)
		}
		if dk != nil {
			get(s, dk, pdk)
		}
		if !reuse && sv != nil && s.err == nil {
			// The slots hold what this g gives, for the other gradient
			// node; the downloads waited for the kernels that wrote them.
			sv.g, sv.gen = append(sv.g[:0], g...), s.d.blockGen
		}
	})
	if err != nil {
		return err
	}
	if dx != nil {
		if err := finite(dx, lx, "block data gradient"); err != nil {
			return err
		}
	}
	if dk != nil {
		return finite(dk, lk, "block kernel gradient")
	}
	return nil
}
