package ops

import (
	"fmt"
	"io"
	"math"

	"github.com/gmcn-go/gmcn/ops/cpu"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// NewAssembleKernel returns the op that builds a convolution layer's packed
// kernel [F_o, F_i, N_k, 1+D+D·D] from its learnable raw tensors
// weights_raw [F_o, F_i, N_k], positions_raw [F_o, F_i, N_k, D] and
// factors A [F_o, F_i, N_k, D, D] with the reference's constants:
//
//	w = raw + 0.1,  μ = r·p,  Σ = (r/3)²·(A·Aᵀ + ε·I),
//	ε = 0.05·max(1, max |A·Aᵀ|) over all entries of all kernels of the layer.
//
// ε is a constant for the gradient (the reference detaches it). The radius r
// must be positive and finite; a bad radius is reported when the op is applied.
func NewAssembleKernel(radius float64) G.Op {
	return newOp(assembleKernel{cpu.DefaultKernelConfig(radius)})
}

type assembleKernel struct{ cfg cpu.KernelConfig }

var assembleInputs = []string{"weights_raw", "positions_raw", "factors"}

func (assembleKernel) name() string              { return "gm.AssembleKernel" }
func (assembleKernel) inputNames() []string      { return assembleInputs }
func (assembleKernel) ranks() []int              { return []int{3, 4, 5, 4} }
func (k assembleKernel) writeParams(w io.Writer) { fmt.Fprintf(w, "%+v", k.cfg) }
func (assembleKernel) diffWRT() []bool           { return []bool{true, true, true} }
func (k assembleKernel) gradKernel(i int) gradComputation {
	return assembleGradKernel{fwd: k, wrt: i}
}

func (k assembleKernel) inferShape(in []tensor.Shape) (tensor.Shape, error) {
	l, err := k.layout(in)
	if err != nil {
		return nil, err
	}
	return tensor.Shape(l.Shape()), nil
}

// layout checks the radius and the three raw shapes and returns the layout of
// the packed kernel (B = F_o, C = F_i, N = N_k).
func (k assembleKernel) layout(in []tensor.Shape) (mixture.Layout, error) {
	if r := k.cfg.Radius; !(r > 0) || math.IsInf(r, 0) {
		return mixture.Layout{}, errors.Errorf("radius must be positive and finite, got %g", r)
	}
	w := in[0]
	for i, v := range w {
		if v < 1 {
			return mixture.Layout{}, errors.Errorf(`input "weights_raw" %v: [F_o, F_i, N_k] must all be ≥ 1, got %d at axis %d`, w, v, i)
		}
	}
	d := in[1][3]
	if d != 2 && d != 3 {
		return mixture.Layout{}, errors.Errorf(`input "positions_raw" %v: expected D = 2 or 3 in the last axis, got %d`, in[1], d)
	}
	if err := sameShape("positions_raw", in[1], tensor.Shape{w[0], w[1], w[2], d}); err != nil {
		return mixture.Layout{}, err
	}
	if err := sameShape("factors", in[2], tensor.Shape{w[0], w[1], w[2], d, d}); err != nil {
		return mixture.Layout{}, err
	}
	return mixture.Layout{B: w[0], C: w[1], N: w[2], D: d}, nil
}

func (k assembleKernel) do(out *tensor.Dense, in []*tensor.Dense) error {
	l, _ := mixture.LayoutOf(out.Shape())
	for i, t := range in {
		if err := checkedFinite(t, assembleInputs[i]); err != nil {
			return err
		}
	}
	return typed(out, in,
		func(y []float32, x [][]float32) error { return assemble(y, x, l, k.cfg) },
		func(y []float64, x [][]float64) error { return assemble(y, x, l, k.cfg) })
}

func assemble[T mixture.Float](out []T, x [][]T, l mixture.Layout, cfg cpu.KernelConfig) error {
	eps := cpu.KernelEpsilon(x[2], l.D, cfg)
	if math.IsInf(eps, 0) || math.IsNaN(eps) {
		return errors.Errorf(`input "factors": max |A·Aᵀ| overflows (ε = %g)`, eps)
	}
	cpu.AssembleKernel(out, x[0], x[1], x[2], l, cfg, eps)
	return mixture.CheckFinite(out)
}

// assembleGradKernel computes ∂L/∂input[wrt] of the kernel assembly from
// (weights_raw, positions_raw, factors, output, grad).
type assembleGradKernel struct {
	fwd assembleKernel
	wrt int
}

func (k assembleGradKernel) name() string            { return "gm.AssembleKernelGrad/" + assembleInputs[k.wrt] }
func (k assembleGradKernel) writeParams(w io.Writer) { k.fwd.writeParams(w) }

func (k assembleGradKernel) do(out *tensor.Dense, in []*tensor.Dense) error {
	l, _ := mixture.LayoutOf(in[4].Shape())
	return typed(out, in,
		func(d []float32, x [][]float32) error { assembleBackward(k.wrt, d, x, l, k.fwd.cfg); return nil },
		func(d []float64, x [][]float64) error { assembleBackward(k.wrt, d, x, l, k.fwd.cfg); return nil })
}

func assembleBackward[T mixture.Float](wrt int, d []T, x [][]T, l mixture.Layout, cfg cpu.KernelConfig) {
	g := x[4]
	switch wrt {
	case 0:
		cpu.KernelWeightsBackward(d, g, l, cfg)
	case 1:
		cpu.KernelPositionsBackward(d, g, l, cfg)
	case 2:
		cpu.KernelFactorsBackward(d, g, x[2], l, cfg)
	}
}
