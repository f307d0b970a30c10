//go:build gmcuda

package cudaops

import (
	"fmt"
	"math/bits"

	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
)

// hemBlock is the thread count of the TreeHEM blocks: one block per mixture,
// whose threads share the nodes of one tree height (about N/2 at the lowest).
// A variable so that the benchmarks can try others.
var hemBlock = 128

// hemGrid is the most blocks one TreeHEM launch runs; each block loops over
// the mixtures m ≡ blockIdx.x (mod the grid), so the scratch is sized by the
// grid. It is several times the blocks a large GPU holds at once (an H100
// about 800 of these), so that a batch's mixtures start together rather than
// in turns of a small grid; maxScratch bounds it too. A variable so that the
// tests can make blocks loop on small inputs.
var hemGrid = 4096

// treeHEMSaved is what TreeHEMSaving keeps on the GPU: the call's shapes.
// The backward makes every decision again on the device (treehem.cu); a
// non-nil saved state tells it the input is the forward's.
type treeHEMSaved struct {
	l  mixture.Layout
	np int
	o  device.TreeHEMOptions
}

// hemScratch returns the bytes of one block's (or kept mixture's) scratch
// and the padded key count P, laid out as hem_scratch in treehem.cu says: a
// 32-byte header, P keys; N·S values
// twice, (N−1)·T·S twice, N−1 and 2T·S twice of the element type (z bytes);
// 11N − 6 + Np int32; rounded up to 8 bytes.
func hemScratch(l mixture.Layout, np, t, z int) (per int64, p int) {
	n, s := int64(l.N), int64(l.Stride())
	p = 1 << bits.Len(uint(l.N-1))
	vals := 2*n*s + 2*(n-1)*int64(t)*s + (n - 1) + 2*2*int64(t)*s
	per = 32 + 8*int64(p) + vals*int64(z) + 4*(11*n-6+int64(np))
	return (per + 7) &^ 7, p
}

// checkTreeHEM checks a call's options and sizes (checkReduction).
func checkTreeHEM(name string, l mixture.Layout, np int, o device.TreeHEMOptions, nx, ny int) error {
	if err := o.Check(l, np); err != nil {
		return err
	}
	return checkReduction(name, l, np, nx, ny)
}

// checkReduction checks the sizes of a call reducing mixtures of layout l
// to np components: the input's nx values and the output's (or the
// incoming gradient's) ny.
func checkReduction(name string, l mixture.Layout, np, nx, ny int) error {
	if nx != l.Len() {
		return errors.Errorf("cudaops %s: input has %d values, layout %v needs %d", name, nx, l.Shape(), l.Len())
	}
	if want := l.Mixtures() * np * l.Stride(); ny != want {
		return errors.Errorf("cudaops %s: output has %d values, [%d, %d, %d, %d] needs %d", name, ny, l.B, l.C, np, l.Stride(), want)
	}
	return nil
}

// scratchRegions places the scratch of a kernel that runs one block per
// mixture, at most maxGrid blocks, each looping over the mixtures
// m ≡ blockIdx.x beyond, with one region of per bytes per block: in
// slotScratch, on a grid small enough that the regions stay under
// maxScratch. With kept non-zero the regions are one per mixture at kept,
// where a forward leaves what its backward starts from (TreeHEM, MEM), and
// keep, the kernels' flag for it, is 1.
func scratchRegions(s *seq, mixtures, maxGrid int, per int64, kept devPtr) (grid int, scratch devPtr, keep int) {
	if kept != 0 {
		return min(mixtures, maxGrid), kept, 1
	}
	grid = int(max(1, min(int64(min(mixtures, maxGrid)), maxScratch/per)))
	if s.err == nil {
		scratch, s.err = s.d.buf(slotScratch, int64(grid)*per)
	}
	return grid, scratch, 0
}

// hemKeptBytes returns the bytes of the scratch a TreeHEM forward leaves
// for its backward (one region per mixture; see launchTreeHEM), or 0 where
// that would pass maxScratch and the backward replays the forward instead.
func hemKeptBytes(l mixture.Layout, np int, o device.TreeHEMOptions, z int) int64 {
	per, _ := hemScratch(l, np, o.Reduction, z)
	if b := int64(l.Mixtures()) * per; b <= maxScratch {
		return b
	}
	return 0
}

// launchTreeHEM runs TreeHEM's forward kernel (backward false: ptrs are
// y, x) or its backward (ptrs are dx, x, g) on device operands. With kept
// 0 the scratch is one region per block, in slotScratch, on a grid that
// fits maxScratch, and the backward replays the forward. Otherwise kept is
// hemKeptBytes of device memory with one region per mixture: the forward
// leaves its tree, caches and selection there, and a backward for the same
// input given the same memory starts from them.
func launchTreeHEM[T Float](s *seq, backward bool, l mixture.Layout, np int, o device.TreeHEMOptions, kept devPtr, ptrs ...devPtr) {
	under := 0
	if o.UnderFill {
		under = 1
	}
	per, p := hemScratch(l, np, o.Reduction, int(sizeOf[T]()))
	grid, scratch, keep := scratchRegions(s, l.Mixtures(), hemGrid, per, kept)
	name := fmt.Sprintf("gm_treehem%d", o.Reduction)
	if backward {
		name += "_backward"
	}
	args := make([]any, 0, len(ptrs)+8)
	for _, q := range ptrs {
		args = append(args, q)
	}
	args = append(args, scratch, l.Mixtures(), l.N, l.D, np, under, keep, int(per), p)
	// Shared: the bounding box's reduction, four doubles and four int32 of
	// shared state.
	s.launch(name+suffix[T](), [2]int{grid, 1}, hemBlock, 8*(6*hemBlock+4)+16, args...)
}

// TreeHEM is device.Kernels.TreeHEM on the GPU (treehem.cu).
func (c Kernels[T]) TreeHEM(y, x []T, l mixture.Layout, np int, o device.TreeHEMOptions) error {
	if err := checkTreeHEM("TreeHEM", l, np, o, len(x), len(y)); err != nil {
		return err
	}
	err := c.d.run(func(s *seq) {
		px := in(s, slotIn0, x)
		py := out[T](s, slotOut, len(y))
		launchTreeHEM[T](s, false, l, np, o, 0, py, px)
		get(s, y, py)
	})
	if err != nil {
		return err
	}
	return finite(y, mixture.Layout{B: l.B, C: l.C, N: np, D: l.D}, "TreeHEM output")
}

// TreeHEMSaving is TreeHEM; its saved state holds only the shapes (see
// treeHEMSaved).
func (c Kernels[T]) TreeHEMSaving(y, x []T, l mixture.Layout, np int, o device.TreeHEMOptions) (device.Saved, error) {
	if err := c.TreeHEM(y, x, l, np, o); err != nil {
		return nil, err
	}
	return treeHEMSaved{l, np, o}, nil
}

// TreeHEMBackward is device.Kernels.TreeHEMBackward on the GPU: one launch
// replays the forward pass per mixture and differentiates it (treehem.cu).
func (c Kernels[T]) TreeHEMBackward(dx, x, g []T, l mixture.Layout, np int, o device.TreeHEMOptions, saved device.Saved) error {
	if saved != nil {
		sv, ok := saved.(treeHEMSaved)
		if !ok {
			return errors.Errorf("TreeHEMBackward: saved state %T is not the GPU's %T", saved, sv)
		}
		if sv.l != l || sv.np != np || sv.o != o {
			return errors.Errorf("TreeHEMBackward: saved state made for %v → %d (%+v), used for %v → %d (%+v)", sv.l.Shape(), sv.np, sv.o, l.Shape(), np, o)
		}
	}
	if len(dx) != len(x) {
		return errors.Errorf("cudaops TreeHEMBackward: gradient has %d values, the input %d", len(dx), len(x))
	}
	if err := checkTreeHEM("TreeHEMBackward", l, np, o, len(x), len(g)); err != nil {
		return err
	}
	err := c.d.run(func(s *seq) {
		px, pg := in(s, slotIn0, x), in(s, slotIn1, g)
		pd := out[T](s, slotOut, len(dx))
		launchTreeHEM[T](s, true, l, np, o, 0, pd, px, pg)
		get(s, dx, pd)
	})
	if err != nil {
		return err
	}
	return finite(dx, l, "TreeHEM gradient")
}
