package ops

import (
	"io"

	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// NewStandardise returns the input-normalisation op of the reference's
// GM-BatchNorm in per-sample mode: every weight of mixture (b, c) is
// multiplied by gain/sd[b,c], where sd is the standard deviation of the
// mixture's values over a grid in the sample's bounding box
// (cpu.StandardiseScale), treated as a constant
// (docs/algorithms.md, "Weight standardisation"). Inputs: "mixture"
// [B, C, N, ·] and the learnable "gain" [1].
//
// The op remembers the standard deviations of the samples it has seen
// (sdCache): they depend on the sample alone, and a model's inputs repeat
// every epoch.
func NewStandardise(dev *device.Device) G.Op {
	c := newSDCache()
	return newOp(dev, standardiseKernel[float32]{cache: c}, standardiseKernel[float64]{cache: c})
}

type standardiseSpec struct{ noParams }

func (standardiseSpec) name() string         { return "gm.Standardise" }
func (standardiseSpec) inputNames() []string { return []string{"mixture", "gain"} }
func (standardiseSpec) ranks() []int         { return []int{4, 1, 4} }
func (standardiseSpec) diffWRT() []bool      { return []bool{true, true} }
func (standardiseSpec) computations() []string {
	return []string{"StandardiseScale", "Standardise"}
}

func (standardiseSpec) inferShape(in []tensor.Shape) (tensor.Shape, error) {
	if _, err := layoutOf("mixture", in[0]); err != nil {
		return nil, err
	}
	if err := sameShape("gain", in[1], tensor.Shape{1}); err != nil {
		return nil, err
	}
	return in[0].Clone(), nil
}

type standardiseKernel[T Float] struct {
	standardiseSpec
	cache *sdCache
}

func (k standardiseKernel[T]) gradKernel(i int) gradComputation[T] {
	return standardiseGradKernel[T]{wrt: i, cache: k.cache}
}

func (k standardiseKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	l, err := checkedMixture(in[0], "mixture")
	if err != nil {
		return err
	}
	if err := checkedFinite(in[1], "gain"); err != nil {
		return err
	}
	sd := make([]float64, l.Mixtures())
	if err := standardiseScale(k.cache, dev, sd, in[0].data, l); err != nil {
		return err
	}
	return dev.Standardise(out.data, in[0].data, sd, in[1].data[0], l)
}

// standardiseGradKernel computes ∂L/∂mixture (wrt 0) or ∂L/∂gain (wrt 1)
// from (mixture, gain, output, grad).
type standardiseGradKernel[T Float] struct {
	wrt   int
	cache *sdCache
}

func (k standardiseGradKernel[T]) name() string {
	return [...]string{"gm.StandardiseGradMixture", "gm.StandardiseGradGain"}[k.wrt]
}
func (k standardiseGradKernel[T]) writeParams(w io.Writer) { w.Write([]byte{byte(k.wrt)}) }
func (standardiseGradKernel[T]) computations() []string {
	return []string{"StandardiseScale", "StandardiseBackward"}
}

// do computes both gradients in one pass and keeps the one asked for; the
// gain's needs the mixture's, so ∂L/∂gain pays for a scratch ∂L/∂mixture.
// The standard deviations are the forward's, from the cache (or made again
// if it has lost them).
func (k standardiseGradKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	l, _ := mixture.LayoutOf(in[0].shape)
	sd := make([]float64, l.Mixtures())
	if err := standardiseScale(k.cache, dev, sd, in[0].data, l); err != nil {
		return err
	}
	dx := out.data
	if k.wrt == 1 {
		dx = make([]T, len(in[0].data))
	}
	dgain, err := dev.StandardiseBackward(dx, in[0].data, in[3].data, sd, in[1].data[0], l)
	if k.wrt == 1 {
		out.data[0] = dgain
	}
	return err
}
