package ops

import (
	"fmt"
	"hash"
	"hash/fnv"
	"io"
	"sync/atomic"

	"github.com/chewxy/hm"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Float is the element type of an op's tensors: float32 or float64.
type Float = device.Float

// spec is everything about an op except its computation.
type spec interface {
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
	// computations names the device.Kernels methods the op calls.
	computations() []string
}

// operand is one input or the output of a kernel: its shape and its values.
type operand[T Float] struct {
	shape tensor.Shape
	data  []T
}

// kernel is an op for element type T: its spec and its computation, written
// once for both element types.
type kernel[T Float] interface {
	spec
	// do computes out from in on dev; ranks, shapes and dtypes are checked,
	// values are not.
	do(dev device.Kernels[T], out operand[T], in []operand[T]) error
}

// differentiable is a kernel with handwritten gradients.
type differentiable[T Float] interface {
	kernel[T]
	// diffWRT reports which inputs are differentiable.
	diffWRT() []bool
	// gradKernel returns the computation of ∂L/∂input[i] from
	// (inputs…, output, ∂L/∂output).
	gradKernel(i int) gradComputation[T]
}

// gradComputation is a grad kernel without its input names, ranks and shape
// inference, which follow from the forward kernel (see gradKernel).
type gradComputation[T Float] interface {
	name() string
	writeParams(w io.Writer)
	computations() []string
	do(dev device.Kernels[T], out operand[T], in []operand[T]) error
}

// gradKernel completes the gradient computation of input wrt of fwd to a
// kernel: its inputs are fwd's inputs, then "output" and "grad" (shaped like
// fwd's output), and its output is shaped like input wrt.
type gradKernel[T Float] struct {
	gradComputation[T]
	fwd kernel[T]
	wrt int
}

func (g gradKernel[T]) inputNames() []string {
	return append(append([]string{}, g.fwd.inputNames()...), "output", "grad")
}

func (g gradKernel[T]) ranks() []int {
	r := g.fwd.ranks()
	out := r[len(r)-1]
	return append(append(append([]int{}, r[:len(r)-1]...), out, out), r[g.wrt])
}

func (g gradKernel[T]) inferShape(in []tensor.Shape) (tensor.Shape, error) {
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
func (g gradKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	if err := checkedFinite(in[len(in)-1], "grad"); err != nil {
		return err
	}
	return g.gradComputation.do(dev, out, in)
}

// doSaved is do for a resuming computation with its forward's saved state.
func (g gradKernel[T]) doSaved(dev device.Kernels[T], out operand[T], in []operand[T], saved device.Saved) error {
	if err := checkedFinite(in[len(in)-1], "grad"); err != nil {
		return err
	}
	return g.gradComputation.(resuming[T]).doSaved(dev, out, in, saved)
}

func newGrad[T Float](fwd kernel[T], i int) gradKernel[T] {
	return gradKernel[T]{gradComputation: fwd.(differentiable[T]).gradKernel(i), fwd: fwd, wrt: i}
}

var opIDs atomic.Uint64

// op adapts a kernel to gorgonia.Op and gorgonia.SDOp. It holds the kernel
// for both element types and the device it was built for; Do picks the
// kernel by the inputs' dtype, the only dtype dispatch of the package. Each
// op carries a unique id so Gorgonia's hash-consing never merges two ops.
type op struct {
	k32  kernel[float32]
	k64  kernel[float64]
	dev  *device.Device
	id   uint64
	memo *memo // shared by a saving forward op and its grad ops; nil otherwise
}

// newOp returns the op of a kernel on dev, the CPU if dev is nil.
func newOp(dev *device.Device, k32 kernel[float32], k64 kernel[float64]) *op {
	if dev == nil {
		dev = cpuDevice
	}
	return &op{k32: k32, k64: k64, dev: dev, id: opIDs.Add(1)}
}

// spec returns the op's description, which both element types share.
func (o *op) spec() spec { return o.k64 }

// Arity returns the number of inputs.
func (o *op) Arity() int { return len(o.spec().inputNames()) }

// Type returns a fresh function type a → … → a over tensors of the kernel's
// ranks; one type variable makes Gorgonia reject mixed float32/float64 inputs.
func (o *op) Type() hm.Type {
	a := hm.TypeVariable('a')
	r := o.spec().ranks()
	ts := make([]hm.Type, len(r))
	for i, d := range r {
		ts[i] = G.TensorType{Dims: d, Of: a}
	}
	return hm.NewFnType(ts...)
}

// InferShape checks arity, ranks and sizes and returns the output shape.
func (o *op) InferShape(ds ...G.DimSizer) (tensor.Shape, error) {
	k := o.spec()
	shapes := make([]tensor.Shape, len(ds))
	for i, d := range ds {
		s, ok := d.(tensor.Shape)
		if !ok {
			return nil, errors.Errorf("%s: input %d has no static shape (%T)", k.name(), i, d)
		}
		shapes[i] = s
	}
	if err := checkShapes(k, shapes); err != nil {
		return nil, err
	}
	s, err := k.inferShape(shapes)
	return s, errors.Wrap(err, k.name())
}

func checkShapes(k spec, shapes []tensor.Shape) error {
	names, ranks := k.inputNames(), k.ranks()
	if len(shapes) != len(names) {
		return errors.Errorf("%s: expected %d inputs %v, got %d", k.name(), len(names), names, len(shapes))
	}
	for i, s := range shapes {
		if len(s) != ranks[i] {
			return errors.Errorf("%s: input %q must have rank %d, got shape %v (rank %d)", k.name(), names[i], ranks[i], s, len(s))
		}
	}
	return nil
}

// Do checks the values and runs the kernel of the inputs' dtype on the op's
// device into a freshly allocated output.
func (o *op) Do(vals ...G.Value) (G.Value, error) {
	k := o.spec()
	names := k.inputNames()
	if len(vals) != len(names) {
		return nil, errors.Errorf("%s: expected %d inputs %v, got %d", k.name(), len(names), names, len(vals))
	}
	in := make([]*tensor.Dense, len(vals))
	var dt tensor.Dtype
	for i, v := range vals {
		d, ok := v.(*tensor.Dense)
		if !ok {
			return nil, errors.Errorf("%s: input %q must be a *tensor.Dense, got %T", k.name(), names[i], v)
		}
		if d.IsView() {
			d = d.Materialize().(*tensor.Dense)
		}
		if d.Dtype() != tensor.Float32 && d.Dtype() != tensor.Float64 {
			return nil, errors.Errorf("%s: input %q must be float32 or float64, got %v", k.name(), names[i], d.Dtype())
		}
		if i == 0 {
			dt = d.Dtype()
		} else if d.Dtype() != dt {
			return nil, errors.Errorf("%s: input %q is %v but input %q is %v; all inputs must share one dtype", k.name(), names[i], d.Dtype(), names[0], dt)
		}
		in[i] = d
	}
	if dt == tensor.Float32 {
		return run(o.k32, o.dev.F32, in, o.memo)
	}
	return run(o.k64, o.dev.F64, in, o.memo)
}

// run checks the shapes of in and runs k on dev into a new output tensor.
// With a memo, a saving forward kernel records its saved state in it and a
// resuming grad kernel uses the state if in holds the same forward inputs.
func run[T Float](k kernel[T], dev device.Kernels[T], in []*tensor.Dense, m *memo) (*tensor.Dense, error) {
	shapes := make([]tensor.Shape, len(in))
	for i, d := range in {
		shapes[i] = d.Shape()
	}
	if err := checkShapes(k, shapes); err != nil {
		return nil, err
	}
	s, err := k.inferShape(shapes)
	if err != nil {
		return nil, errors.Wrap(err, k.name())
	}
	// Every input is non-empty once inferShape accepted its shape, so Data,
	// which panics on an empty tensor, is safe here.
	args := make([]operand[T], len(in))
	for i, d := range in {
		args[i] = operand[T]{shape: shapes[i], data: d.Data().([]T)}
	}
	out := operand[T]{shape: s, data: make([]T, s.TotalSize())}
	if err := runWith(k, dev, out, args, m); err != nil {
		return nil, errors.Wrap(err, k.name())
	}
	return tensor.New(tensor.WithShape(s...), tensor.WithBacking(out.data)), nil
}

// runWith runs k with the memo m (see run).
func runWith[T Float](k kernel[T], dev device.Kernels[T], out operand[T], args []operand[T], m *memo) error {
	if m == nil {
		return k.do(dev, out, args)
	}
	if sk, ok := k.(saving[T]); ok {
		m.releaseSpare()
		saved, err := sk.doSaving(dev, out, args)
		if err == nil {
			keep(m, args, saved)
		}
		return err
	}
	if g, ok := k.(gradKernel[T]); ok {
		if _, ok := g.gradComputation.(resuming[T]); ok {
			if saved := recall(m, args[:len(args)-2]); saved != nil {
				defer m.done()
				return g.doSaved(dev, out, args, saved)
			}
		}
	}
	return k.do(dev, out, args)
}

// ReturnsPtr reports false: the output is always a new tensor.
func (o *op) ReturnsPtr() bool { return false }

// CallsExtern reports whether one of the op's computations runs outside the
// Go runtime on its device (a GPU kernel); the CPU device never does.
func (o *op) CallsExtern() bool { return o.dev.Extern(o.spec().computations()...) }

// OverwritesInput reports -1: no input is modified.
func (o *op) OverwritesInput() int { return -1 }

// WriteHash writes the op name, its parameters and its instance id.
func (o *op) WriteHash(h hash.Hash) {
	k := o.spec()
	fmt.Fprintf(h, "%s#%d", k.name(), o.id)
	k.writeParams(h)
}

// Hashcode returns the FNV-1a hash of WriteHash.
func (o *op) Hashcode() uint32 {
	h := fnv.New32a()
	o.WriteHash(h)
	return h.Sum32()
}

// String returns the op name.
func (o *op) String() string { return o.spec().name() }

// DiffWRT reports which inputs have gradients.
func (o *op) DiffWRT(n int) []bool {
	out := make([]bool, n)
	if d, ok := o.k64.(differentiable[float64]); ok {
		copy(out, d.diffWRT())
	}
	return out
}

// SymDiff returns one grad node per differentiable input (nil elsewhere);
// the grad ops run on the forward op's device. An op whose forward can save
// state for its grad ops (the ReLU fit, TreeHEM, ConvFit, the block, the
// kernel assembly) gets a memo here, which it shares with them.
func (o *op) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	d, ok := o.k64.(differentiable[float64])
	if !ok {
		return nil, errors.Errorf("%s is not differentiable", o.spec().name())
	}
	if _, ok := o.k64.(saving[float64]); ok && o.memo == nil {
		o.memo = &memo{}
	}
	args := append(append(G.Nodes{}, inputs...), output, grad)
	out := make(G.Nodes, len(inputs))
	for i, wrt := range d.diffWRT() {
		if !wrt {
			continue
		}
		n, err := G.ApplyOp(o.gradOp(i), args...)
		if err != nil {
			return nil, errors.Wrapf(err, "%s: building the gradient of input %q", d.name(), d.inputNames()[i])
		}
		out[i] = n
	}
	return out, nil
}

// gradOp returns the op computing ∂L/∂input[i].
func (o *op) gradOp(i int) *op {
	g := newOp(o.dev, newGrad(o.k32, i), newGrad(o.k64, i))
	g.memo = o.memo
	return g
}

var (
	_ G.Op   = (*op)(nil)
	_ G.SDOp = (*op)(nil)
)
