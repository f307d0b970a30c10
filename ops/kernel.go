package ops

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sync"

	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// KernelConfig holds the constants of the kernel assembly: the radius, the
// weight mapping, the regulariser and how ε is rounded (see
// device.KernelConfig; device.DefaultKernelConfig gives the reference's).
type KernelConfig = device.KernelConfig

// NewAssembleKernel returns the op that builds a convolution layer's packed
// kernel [F_o, F_i, N_k, 1+D+D·D] from its learnable raw tensors
// weights_raw [F_o, F_i, N_k], positions_raw [F_o, F_i, N_k, D] and
// factors A [F_o, F_i, N_k, D, D]; with the reference's constants
// (device.DefaultKernelConfig(r)):
//
//	w = raw + 0.1,  μ = r·p,  Σ = (r/3)²·(A·Aᵀ + ε·I),
//	ε = 0.05·max(1, max |A·Aᵀ|) over all entries of all kernels of the layer.
//
// ε is a constant for the gradient (the reference detaches it). Constants
// that cfg.Check rejects, such as a radius that is not positive and finite,
// are reported when the op is applied.
func NewAssembleKernel(dev *device.Device, cfg KernelConfig) G.Op {
	s := assembleSpec{cfg}
	return newOp(dev, assembleKernel[float32]{s, &assembleGrads[float32]{}}, assembleKernel[float64]{s, &assembleGrads[float64]{}})
}

type assembleSpec struct{ cfg device.KernelConfig }

var assembleInputs = []string{"weights_raw", "positions_raw", "factors"}

func (assembleSpec) name() string              { return "gm.AssembleKernel" }
func (assembleSpec) inputNames() []string      { return assembleInputs }
func (assembleSpec) ranks() []int              { return []int{3, 4, 5, 4} }
func (k assembleSpec) writeParams(w io.Writer) { fmt.Fprintf(w, "%+v", k.cfg) }
func (assembleSpec) diffWRT() []bool           { return []bool{true, true, true} }
func (assembleSpec) computations() []string {
	return []string{"KernelEpsilon", "AssembleKernel"}
}

func (k assembleSpec) inferShape(in []tensor.Shape) (tensor.Shape, error) {
	l, err := k.layout(in)
	if err != nil {
		return nil, err
	}
	return tensor.Shape(l.Shape()), nil
}

// layout checks the constants and the three raw shapes and returns the
// layout of the packed kernel (B = F_o, C = F_i, N = N_k).
func (k assembleSpec) layout(in []tensor.Shape) (mixture.Layout, error) {
	if err := k.cfg.Check(); err != nil {
		return mixture.Layout{}, err
	}
	w := in[0]
	d, err := kernelDims(w, "positions_raw", in[1])
	if err != nil {
		return mixture.Layout{}, err
	}
	if err := sameShape("positions_raw", in[1], tensor.Shape{w[0], w[1], w[2], d}); err != nil {
		return mixture.Layout{}, err
	}
	if err := sameShape("factors", in[2], tensor.Shape{w[0], w[1], w[2], d, d}); err != nil {
		return mixture.Layout{}, err
	}
	return mixture.Layout{B: w[0], C: w[1], N: w[2], D: d}, nil
}

type assembleKernel[T Float] struct {
	assembleSpec
	grads *assembleGrads[T] // the op's, for its grad ops (doSaving)
}

func (k assembleKernel[T]) gradKernel(i int) gradComputation[T] {
	return assembleGradKernel[T]{fwd: k.assembleSpec, wrt: i}
}

func (k assembleKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	l, _ := mixture.LayoutOf(out.shape)
	for i, x := range in {
		if err := checkedFinite(x, assembleInputs[i]); err != nil {
			return err
		}
	}
	eps, err := dev.KernelEpsilon(in[2].data, l.D, k.cfg)
	if err != nil {
		return err
	}
	if math.IsInf(eps, 0) || math.IsNaN(eps) {
		return errors.Errorf(`input "factors": max |A·Aᵀ| overflows (ε = %g)`, eps)
	}
	if err := dev.AssembleKernel(out.data, in[0].data, in[1].data, in[2].data, l, k.cfg, eps); err != nil {
		return err
	}
	return mixture.CheckFinite(out.data)
}

// doSaving is do; its state lets the op's three grad nodes share one
// backward computation (assembleGrads).
func (k assembleKernel[T]) doSaving(dev device.Kernels[T], out operand[T], in []operand[T]) (device.Saved, error) {
	if err := k.do(dev, out, in); err != nil {
		return nil, err
	}
	k.grads.mu.Lock()
	defer k.grads.mu.Unlock()
	k.grads.runs++
	return assembleRun[T]{k.grads, k.grads.runs}, nil
}

// assembleGrads holds, for the kernel assembly's three grad nodes, the raw
// gradients of one forward run (run) for the incoming gradient g. The
// first grad node to run computes all three in one backward computation,
// the other two copy theirs, as long as the run and g's bits are the same;
// on the CUDA device that is one call with its transfers instead of three.
// The op keeps one, whose buffers every run reuses.
type assembleGrads[T Float] struct {
	mu   sync.Mutex
	runs uint64 // forward runs that saved so far
	run  uint64 // the run d is for; 0: none
	g    []T
	d    [3][]T
}

// assembleRun is the saved state of one forward run: its number and the
// op's assembleGrads.
type assembleRun[T Float] struct {
	grads *assembleGrads[T]
	run   uint64
}

// assembleGradKernel computes ∂L/∂input[wrt] of the kernel assembly from
// (weights_raw, positions_raw, factors, output, grad).
type assembleGradKernel[T Float] struct {
	fwd assembleSpec
	wrt int
}

func (k assembleGradKernel[T]) name() string {
	return "gm.AssembleKernelGrad/" + assembleInputs[k.wrt]
}
func (k assembleGradKernel[T]) writeParams(w io.Writer) { k.fwd.writeParams(w) }
func (assembleGradKernel[T]) computations() []string {
	return []string{"AssembleKernelBackward"}
}

func (k assembleGradKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	l, _ := mixture.LayoutOf(in[4].shape)
	d := [3][]T{}
	d[k.wrt] = out.data
	return dev.AssembleKernelBackward(d[0], d[1], d[2], in[4].data, in[2].data, l, k.fwd.cfg)
}

// doSaved is do with the forward run's assembleRun: it copies
// ∂L/∂input[wrt] from the gradients computed for the same run and incoming
// gradient, or computes all three there first. The memo hands the state
// only for that run's inputs, so gradients of the same run are of the same
// inputs.
func (k assembleGradKernel[T]) doSaved(dev device.Kernels[T], out operand[T], in []operand[T], saved device.Saved) error {
	r, ok := saved.(assembleRun[T])
	if !ok {
		return k.do(dev, out, in)
	}
	st := r.grads
	st.mu.Lock()
	defer st.mu.Unlock()
	g := in[4].data
	if st.run != r.run || !mixture.SameBits(st.g, g) {
		st.run = 0
		for i := range st.d {
			st.d[i] = slices.Grow(st.d[i][:0], len(in[i].data))[:len(in[i].data)]
		}
		l, _ := mixture.LayoutOf(in[4].shape)
		if err := dev.AssembleKernelBackward(st.d[0], st.d[1], st.d[2], g, in[2].data, l, k.fwd.cfg); err != nil {
			return err
		}
		st.run, st.g = r.run, append(st.g[:0], g...)
	}
	copy(out.data, st.d[k.wrt])
	return nil
}

// kernelDims checks the shape w of the raw kernel weights [F_o, F_i, N_k]
// (each ≥ 1) and returns D, the last axis of the input name of shape s,
// which must be 2 or 3.
func kernelDims(w tensor.Shape, name string, s tensor.Shape) (int, error) {
	for i, v := range w {
		if v < 1 {
			return 0, errors.Errorf(`input "weights_raw" %v: [F_o, F_i, N_k] must all be ≥ 1, got %d at axis %d`, w, v, i)
		}
	}
	d := s[len(s)-1]
	if d != 2 && d != 3 {
		return 0, errors.Errorf("input %q %v: expected D = 2 or 3 in the last axis, got %d", name, s, d)
	}
	return d, nil
}
