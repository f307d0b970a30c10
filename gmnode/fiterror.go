package gmnode

import (
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// FitErrors measures the fitting errors of one ReLU-fit layer from the
// values its nodes hold after a run (see mixture.FitErrorsOf): input is the
// mixture node fed to the activation, dense its dense ReLU fit and reduced
// the reduced fit (pass dense again for a layer without reduction), for
// example the nodes of ReLUFitReduce with the KeepDense option. samples
// points per mixture are drawn with the given seed (mixture.FitErrorPoints);
// mixture.DefaultFitErrorSamples is the usual count. The mixtures are
// evaluated on the device of the input's graph.
func FitErrors(input, dense, reduced *G.Node, samples int, seed uint64) (mixture.FitErrors, error) {
	vals := make([]*tensor.Dense, 3)
	for i, n := range []*G.Node{input, dense, reduced} {
		name := [...]string{"input", "dense", "reduced"}[i]
		if n == nil || n.Value() == nil {
			return mixture.FitErrors{}, errors.Errorf("fitting error: node %q has no value; run the graph first", name)
		}
		t, ok := n.Value().(*tensor.Dense)
		if !ok {
			return mixture.FitErrors{}, errors.Errorf("fitting error: node %q holds a %T, want a *tensor.Dense", name, n.Value())
		}
		if t.IsView() {
			t = t.Materialize().(*tensor.Dense)
		}
		vals[i] = t
	}
	li, err := mixture.LayoutOf(vals[0].Shape())
	if err != nil {
		return mixture.FitErrors{}, errors.Wrap(err, `fitting error: node "input"`)
	}
	if !vals[1].Shape().Eq(vals[0].Shape()) {
		return mixture.FitErrors{}, errors.Errorf(`fitting error: node "dense" has shape %v, want the input's %v`, vals[1].Shape(), vals[0].Shape())
	}
	lr, err := mixture.LayoutOf(vals[2].Shape())
	if err != nil {
		return mixture.FitErrors{}, errors.Wrap(err, `fitting error: node "reduced"`)
	}
	dev := on(input)
	switch in := vals[0].Data().(type) {
	case []float32:
		d, ok1 := vals[1].Data().([]float32)
		r, ok2 := vals[2].Data().([]float32)
		if ok1 && ok2 {
			return mixture.FitErrorsOf(dev.F32.Evaluate, in, d, r, li, lr, samples, seed)
		}
	case []float64:
		d, ok1 := vals[1].Data().([]float64)
		r, ok2 := vals[2].Data().([]float64)
		if ok1 && ok2 {
			return mixture.FitErrorsOf(dev.F64.Evaluate, in, d, r, li, lr, samples, seed)
		}
	}
	return mixture.FitErrors{}, errors.Errorf("fitting error: the nodes must all be float32 or all float64, got %v, %v, %v",
		vals[0].Dtype(), vals[1].Dtype(), vals[2].Dtype())
}
