package ops

import (
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// DoDiff implements gorgonia.ADOp, which LispMachine uses for backprop: it
// adds ∂L/∂input to the gradient (dual value) of every differentiable input,
// computing it with the same grad ops that SymDiff puts into a TapeMachine's
// graph, on the op's device. Gradients accumulate, as Gorgonia's own ops
// do, so an input used by several ops receives the sum.
func (o *op) DoDiff(_ G.ExecutionContext, inputs G.Nodes, output *G.Node) error {
	d, ok := o.k64.(differentiable[float64])
	if !ok {
		return errors.Errorf("%s is not differentiable", o.spec().name())
	}
	names := d.inputNames()
	if len(inputs) != len(names) {
		return errors.Errorf("%s: DoDiff expected %d inputs %v, got %d", d.name(), len(names), names, len(inputs))
	}
	args := make([]G.Value, 0, len(inputs)+2)
	for _, n := range inputs {
		args = append(args, n.Value())
	}
	g, err := output.Grad()
	if err != nil {
		return errors.Wrapf(err, "%s: the output has no gradient to propagate", d.name())
	}
	args = append(args, output.Value(), g)
	for i, wrt := range d.diffWRT() {
		if !wrt {
			continue
		}
		dx, err := o.gradOp(i).Do(args...)
		if err != nil {
			return err
		}
		dst, err := inputs[i].Grad()
		if err != nil {
			return errors.Wrapf(err, "%s: input %q has no gradient to add to", d.name(), names[i])
		}
		if err := accumulate(dst, dx); err != nil {
			return errors.Wrapf(err, "%s: gradient of input %q", d.name(), names[i])
		}
	}
	return nil
}

// accumulate adds d into the gradient tensor dst in place.
func accumulate(dst, d G.Value) error {
	a, ok := dst.(*tensor.Dense)
	if !ok || a.IsView() {
		return errors.Errorf("the gradient holds a %T (view: %v), want a dense tensor of its own", dst, ok && a.IsView())
	}
	b := d.(*tensor.Dense)
	if !a.Shape().Eq(b.Shape()) || a.Dtype() != b.Dtype() {
		return errors.Errorf("the gradient is %v %v, the computed one %v %v", a.Dtype(), a.Shape(), b.Dtype(), b.Shape())
	}
	switch x := a.Data().(type) {
	case []float32:
		addTo(x, b.Data().([]float32))
	case []float64:
		addTo(x, b.Data().([]float64))
	}
	return nil
}

func addTo[T Float](dst, d []T) {
	for i, v := range d {
		dst[i] += v
	}
}

var _ G.ADOp = (*op)(nil)
