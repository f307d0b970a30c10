//go:build gmcuda

package cudaops

import (
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
)

// memBlock is the thread count of the MEM blocks: one block per mixture,
// whose threads share its targets and its fitting components.
const memBlock = 128

// memGrid is the most blocks one MEM launch runs; each block loops over the
// mixtures m ≡ blockIdx.x (mod the grid), so the scratch is sized by the
// grid (maxScratch bounds it too). A variable so that the tests can make
// blocks loop on small inputs.
var memGrid = 4096

// memScratch returns the bytes of one block's (or kept mixture's) scratch,
// laid out as mem_setup in mem.cu says: 8 header values, 4·N·K and 3·N
// values and K fitting components of 44 values each, of z bytes; K int32;
// rounded up to 8 bytes (K = min(N, np)).
func memScratch(l mixture.Layout, np, z int) int64 {
	n, k := int64(l.N), int64(min(l.N, np))
	vals := 8 + 4*n*k + 3*n + 44*k
	return (vals*int64(z) + 4*k + 7) &^ 7
}

// memKeptBytes returns the bytes of the scratch a MEM forward leaves for
// its backward (one region per mixture; see launchMEM), or 0 where that
// would pass maxScratch and the backward makes its decisions again.
func memKeptBytes(l mixture.Layout, np, z int) int64 {
	if b := int64(l.Mixtures()) * memScratch(l, np, z); b <= maxScratch {
		return b
	}
	return 0
}

// checkMEM checks a call's np and sizes (checkReduction).
func checkMEM(name string, l mixture.Layout, np, nx, ny int) error {
	if np < 1 {
		return errors.Errorf("cudaops %s: %d output components, need at least 1", name, np)
	}
	return checkReduction(name, l, np, nx, ny)
}

// launchMEM runs MEM's forward kernel (backward false: ptrs are y, x) or
// its backward (ptrs are dx, x, g) on device operands. With kept 0 the
// scratch is one region per block, in slotScratch, and the backward makes
// the forward's decisions again. Otherwise kept is memKeptBytes of device
// memory with one region per mixture: the forward leaves its selection,
// likelihoods and statistics there, and a backward for the same input given
// the same memory starts from them.
func launchMEM[T Float](s *seq, backward bool, l mixture.Layout, np int, kept devPtr, ptrs ...devPtr) {
	per := memScratch(l, np, int(sizeOf[T]()))
	grid, scratch, keep := scratchRegions(s, l.Mixtures(), memGrid, per, kept)
	name := "gm_mem"
	if backward {
		name += "_backward"
	}
	args := make([]any, 0, len(ptrs)+6)
	for _, p := range ptrs {
		args = append(args, p)
	}
	s.launch(name+suffix[T](), [2]int{grid, 1}, memBlock, 0, append(args, scratch, l.Mixtures(), l.N, l.D, np, keep, int(per))...)
}

// MEM is device.Kernels.MEM on the GPU (mem.cu).
func (c Kernels[T]) MEM(y, x []T, l mixture.Layout, np int) error {
	if err := checkMEM("MEM", l, np, len(x), len(y)); err != nil {
		return err
	}
	return c.d.run(func(s *seq) {
		px := in(s, slotIn0, x)
		py := out[T](s, slotOut, len(y))
		launchMEM[T](s, false, l, np, 0, py, px)
		get(s, y, py)
	})
}

// MEMBackward is device.Kernels.MEMBackward on the GPU: the kernel makes
// the forward's selection and likelihoods again and differentiates the rest
// (mem.cu).
func (c Kernels[T]) MEMBackward(dx, x, g []T, l mixture.Layout, np int) error {
	if len(dx) != len(x) {
		return errors.Errorf("cudaops MEMBackward: gradient has %d values, the input %d", len(dx), len(x))
	}
	if err := checkMEM("MEMBackward", l, np, len(x), len(g)); err != nil {
		return err
	}
	return c.d.run(func(s *seq) {
		px, pg := in(s, slotIn0, x), in(s, slotIn1, g)
		pd := out[T](s, slotOut, len(dx))
		launchMEM[T](s, true, l, np, 0, pd, px, pg)
		get(s, dx, pd)
	})
}
