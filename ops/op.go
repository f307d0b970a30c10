package ops

import (
	"fmt"
	"hash"
	"hash/fnv"
	"io"
	"sync/atomic"

	"github.com/chewxy/hm"
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// kernel is the computation behind one op.
type kernel interface {
	// name is the op's name in errors and graph dumps, e.g. "gm.Conv".
	name() string
	// inputNames names the inputs in errors, in argument order.
	inputNames() []string
	// ranks are the input ranks followed by the output rank.
	ranks() []int
	// inferShape checks the input shapes and returns the output shape.
	inferShape(in []tensor.Shape) (tensor.Shape, error)
	// writeParams writes every parameter that distinguishes two ops.
	writeParams(w io.Writer)
	// do computes out from in; shapes and dtypes are already checked.
	do(out *tensor.Dense, in []*tensor.Dense) error
}

// differentiable is a kernel with handwritten gradients.
type differentiable interface {
	kernel
	// diffWRT reports which inputs are differentiable.
	diffWRT() []bool
	// gradKernel returns the computation of ∂L/∂input[i] from
	// (inputs…, output, ∂L/∂output).
	gradKernel(i int) gradComputation
}

// gradComputation is a grad kernel without its input names, ranks and shape
// inference, which follow from the forward kernel (see gradKernel).
type gradComputation interface {
	name() string
	writeParams(w io.Writer)
	do(out *tensor.Dense, in []*tensor.Dense) error
}

// gradKernel completes the gradient computation of input wrt of fwd to a
// kernel: its inputs are fwd's inputs, then "output" and "grad" (shaped like
// fwd's output), and its output is shaped like input wrt.
type gradKernel struct {
	gradComputation
	fwd kernel
	wrt int
}

func (g gradKernel) inputNames() []string {
	return append(append([]string{}, g.fwd.inputNames()...), "output", "grad")
}

func (g gradKernel) ranks() []int {
	r := g.fwd.ranks()
	out := r[len(r)-1]
	return append(append(append([]int{}, r[:len(r)-1]...), out, out), r[g.wrt])
}

func (g gradKernel) inferShape(in []tensor.Shape) (tensor.Shape, error) {
	n := len(in) - 2
	want, err := g.fwd.inferShape(in[:n])
	if err != nil {
		return nil, err
	}
	for i, name := range []string{"output", "grad"} {
		if err := sameShape(name, in[n+i], want); err != nil {
			return nil, err
		}
	}
	return in[g.wrt].Clone(), nil
}

// do rejects a non-finite incoming gradient, for every grad op alike, and
// then runs the computation.
func (g gradKernel) do(out *tensor.Dense, in []*tensor.Dense) error {
	if err := checkedFinite(in[len(in)-1], "grad"); err != nil {
		return err
	}
	return g.gradComputation.do(out, in)
}

// newGradOp returns the op computing ∂L/∂input[i] of the forward kernel d.
func newGradOp(d differentiable, i int) *op {
	return newOp(gradKernel{gradComputation: d.gradKernel(i), fwd: d, wrt: i})
}

var opIDs atomic.Uint64

// op adapts a kernel to gorgonia.Op and gorgonia.SDOp. Each op carries a
// unique id so Gorgonia's hash-consing never merges two ops.
type op struct {
	k  kernel
	id uint64
}

func newOp(k kernel) *op { return &op{k: k, id: opIDs.Add(1)} }

// Arity returns the number of inputs.
func (o *op) Arity() int { return len(o.k.inputNames()) }

// Type returns a fresh function type a → … → a over tensors of the kernel's
// ranks; one type variable makes Gorgonia reject mixed float32/float64 inputs.
func (o *op) Type() hm.Type {
	a := hm.TypeVariable('a')
	r := o.k.ranks()
	ts := make([]hm.Type, len(r))
	for i, d := range r {
		ts[i] = G.TensorType{Dims: d, Of: a}
	}
	return hm.NewFnType(ts...)
}

// InferShape checks arity, ranks and sizes and returns the output shape.
func (o *op) InferShape(ds ...G.DimSizer) (tensor.Shape, error) {
	shapes := make([]tensor.Shape, len(ds))
	for i, d := range ds {
		s, ok := d.(tensor.Shape)
		if !ok {
			return nil, errors.Errorf("%s: input %d has no static shape (%T)", o.k.name(), i, d)
		}
		shapes[i] = s
	}
	if err := o.checkShapes(shapes); err != nil {
		return nil, err
	}
	s, err := o.k.inferShape(shapes)
	return s, errors.Wrap(err, o.k.name())
}

func (o *op) checkShapes(shapes []tensor.Shape) error {
	names, ranks := o.k.inputNames(), o.k.ranks()
	if len(shapes) != len(names) {
		return errors.Errorf("%s: expected %d inputs %v, got %d", o.k.name(), len(names), names, len(shapes))
	}
	for i, s := range shapes {
		if len(s) != ranks[i] {
			return errors.Errorf("%s: input %q must have rank %d, got shape %v (rank %d)", o.k.name(), names[i], ranks[i], s, len(s))
		}
	}
	return nil
}

// Do checks the values and runs the kernel into a freshly allocated output.
func (o *op) Do(vals ...G.Value) (G.Value, error) {
	names := o.k.inputNames()
	if len(vals) != len(names) {
		return nil, errors.Errorf("%s: expected %d inputs %v, got %d", o.k.name(), len(names), names, len(vals))
	}
	in := make([]*tensor.Dense, len(vals))
	shapes := make([]tensor.Shape, len(vals))
	var dt tensor.Dtype
	for i, v := range vals {
		d, ok := v.(*tensor.Dense)
		if !ok {
			return nil, errors.Errorf("%s: input %q must be a *tensor.Dense, got %T", o.k.name(), names[i], v)
		}
		if d.IsView() {
			d = d.Materialize().(*tensor.Dense)
		}
		if d.Dtype() != tensor.Float32 && d.Dtype() != tensor.Float64 {
			return nil, errors.Errorf("%s: input %q must be float32 or float64, got %v", o.k.name(), names[i], d.Dtype())
		}
		if i == 0 {
			dt = d.Dtype()
		} else if d.Dtype() != dt {
			return nil, errors.Errorf("%s: input %q is %v but input %q is %v; all inputs must share one dtype", o.k.name(), names[i], d.Dtype(), names[0], dt)
		}
		in[i], shapes[i] = d, d.Shape()
	}
	if err := o.checkShapes(shapes); err != nil {
		return nil, err
	}
	s, err := o.k.inferShape(shapes)
	if err != nil {
		return nil, errors.Wrap(err, o.k.name())
	}
	out := tensor.New(tensor.WithShape(s...), tensor.Of(dt))
	if err := o.k.do(out, in); err != nil {
		return nil, errors.Wrap(err, o.k.name())
	}
	return out, nil
}

// ReturnsPtr reports false: the output is always a new tensor.
func (o *op) ReturnsPtr() bool { return false }

// CallsExtern reports false: the kernels run on the CPU.
func (o *op) CallsExtern() bool { return false }

// OverwritesInput reports -1: no input is modified.
func (o *op) OverwritesInput() int { return -1 }

// WriteHash writes the op name, its parameters and its instance id.
func (o *op) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "%s#%d", o.k.name(), o.id)
	o.k.writeParams(h)
}

// Hashcode returns the FNV-1a hash of WriteHash.
func (o *op) Hashcode() uint32 {
	h := fnv.New32a()
	o.WriteHash(h)
	return h.Sum32()
}

// String returns the op name.
func (o *op) String() string { return o.k.name() }

// DiffWRT reports which inputs have gradients.
func (o *op) DiffWRT(n int) []bool {
	out := make([]bool, n)
	if d, ok := o.k.(differentiable); ok {
		copy(out, d.diffWRT())
	}
	return out
}

// SymDiff returns one grad node per differentiable input (nil elsewhere).
func (o *op) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	d, ok := o.k.(differentiable)
	if !ok {
		return nil, errors.Errorf("%s is not differentiable", o.k.name())
	}
	args := append(append(G.Nodes{}, inputs...), output, grad)
	out := make(G.Nodes, len(inputs))
	for i, wrt := range d.diffWRT() {
		if !wrt {
			continue
		}
		n, err := G.ApplyOp(newGradOp(d, i), args...)
		if err != nil {
			return nil, errors.Wrapf(err, "%s: building the gradient of input %q", o.k.name(), d.inputNames()[i])
		}
		out[i] = n
	}
	return out, nil
}

// typed dispatches on the dtype of out to a float32 or float64 kernel call.
func typed(out *tensor.Dense, in []*tensor.Dense, f32 func([]float32, [][]float32) error, f64 func([]float64, [][]float64) error) error {
	switch out.Dtype() {
	case tensor.Float32:
		return f32(out.Data().([]float32), slicesOf[float32](in))
	case tensor.Float64:
		return f64(out.Data().([]float64), slicesOf[float64](in))
	}
	return errors.Errorf("unsupported dtype %v", out.Dtype())
}

func slicesOf[T float32 | float64](in []*tensor.Dense) [][]T {
	s := make([][]T, len(in))
	for i, t := range in {
		s[i] = t.Data().([]T)
	}
	return s
}

var (
	_ G.Op   = (*op)(nil)
	_ G.SDOp = (*op)(nil)
)
