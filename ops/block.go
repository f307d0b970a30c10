package ops

import (
	"fmt"
	"io"

	"github.com/gmcn-go/gmcn/ops/device"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// BlockSpec describes a GMCN block for NewBlock (device.BlockSpec).
type BlockSpec = device.BlockSpec

// The reductions of a block (device.BlockReduction).
const (
	BlockUnreduced   = device.BlockUnreduced
	BlockTreeHEM     = device.BlockTreeHEM
	BlockKeepLargest = device.BlockKeepLargest
	BlockMEM         = device.BlockMEM
)

// NewBlock returns the op of one GMCN block: data [B, Fi, Ni, 1+D+D·D]
// convolved with kernels [Fo, Fi, Nk, 1+D+D·D] (or fitted to s.Fit.N
// Gaussians by the fused convolution-fitting), weights divided by Fi, the
// dense ReLU fit with s.ReLU, and the reduction s.Reduce to s.Np Gaussians,
// [B, Fo, Np, 1+D+D·D] (unreduced: the ReLU fit's output); with s.Integrate
// their integrals, [B, Fo].
//
// Its output and its gradients equal those of NewConv (or NewConvFit),
// NewScaleWeights(1/Fi), NewReLUFit, NewTreeHEM (or NewKeepLargest or NewMEM) and, if
// s.Integrate, NewIntegrate applied one after another, with the same
// decisions; as one op it checks
// only its own inputs, and a device may keep the intermediates, Fi·Ni·Nk
// Gaussians per mixture, where it makes them (on the CUDA device they never
// cross the bus). Both inputs are differentiable. A spec the block cannot
// compute is reported when the op is applied.
func NewBlock(dev *device.Device, s BlockSpec) G.Op {
	spec := blockSpec{s}
	return newOp(dev, blockKernel[float32]{spec}, blockKernel[float64]{spec})
}

type blockSpec struct{ s BlockSpec }

func (blockSpec) name() string              { return "gm.Block" }
func (blockSpec) inputNames() []string      { return []string{"data", "kernels"} }
func (s blockSpec) writeParams(w io.Writer) { fmt.Fprint(w, s.s) }
func (blockSpec) diffWRT() []bool           { return []bool{true, true} }
func (blockSpec) computations() []string    { return []string{"Block", "BlockSaving"} }

// ranks: the output is [B, Fo] if the block integrates.
func (s blockSpec) ranks() []int {
	if s.s.Integrate {
		return []int{4, 4, 2}
	}
	return []int{4, 4, 4}
}

func (s blockSpec) inferShape(in []tensor.Shape) (tensor.Shape, error) {
	lx, lk, err := convLayouts(in[0], in[1])
	if err != nil {
		return nil, err
	}
	if err := s.s.Check(lx, lk); err != nil {
		return nil, err
	}
	return tensor.Shape(s.s.Shape(lx, lk)), nil
}

type blockKernel[T Float] struct{ blockSpec }

func (k blockKernel[T]) gradKernel(i int) gradComputation[T] {
	return blockGradKernel[T]{blockSpec: k.blockSpec, wrt: i}
}

func (k blockKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	lx, lk, err := checkedConvInputs(in)
	if err != nil {
		return err
	}
	return dev.Block(out.data, in[0].data, in[1].data, lx, lk, k.s)
}

func (k blockKernel[T]) doSaving(dev device.Kernels[T], out operand[T], in []operand[T]) (device.Saved, error) {
	lx, lk, err := checkedConvInputs(in)
	if err != nil {
		return nil, err
	}
	return dev.BlockSaving(out.data, in[0].data, in[1].data, lx, lk, k.s)
}

// blockGradKernel computes ∂L/∂data (wrt = 0) or ∂L/∂kernels (wrt = 1)
// from (data, kernels, output, grad), with the state the forward run saved
// for these inputs, or by running the block again.
type blockGradKernel[T Float] struct {
	blockSpec
	wrt int
}

func (g blockGradKernel[T]) name() string {
	return [...]string{"gm.BlockGradData", "gm.BlockGradKernels"}[g.wrt]
}

func (g blockGradKernel[T]) writeParams(w io.Writer) { fmt.Fprintf(w, "%v wrt=%d", g.s, g.wrt) }

func (blockGradKernel[T]) computations() []string { return []string{"BlockBackward"} }

func (g blockGradKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	return g.doSaved(dev, out, in, nil)
}

func (g blockGradKernel[T]) doSaved(dev device.Kernels[T], out operand[T], in []operand[T], saved device.Saved) error {
	lx, lk, err := resumedConvInputs(in, saved)
	if err != nil {
		return err
	}
	dx, dk := convGradDest(g.wrt, out.data)
	return dev.BlockBackward(dx, dk, in[3].data, in[0].data, in[1].data, lx, lk, g.s, saved)
}
