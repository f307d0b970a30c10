package optim

import (
	"math"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Adam is the Adam optimiser (Kingma & Ba) with PyTorch's defaults
// (docs/algorithms.md, "Optimisation"), with state that can be saved and
// restored exactly. It replaces gorgonia.AdamSolver in the
// training loop because that solver keeps its moment estimates and step count
// unexported (a resumed run could not continue exactly) and cannot change its
// learning rate (ReduceLROnPlateau needs to).
type Adam struct {
	LR, Beta1, Beta2, Eps float64

	// Step counts completed steps; M and V are the first and second moment
	// estimates, one slice per parameter in the order Step receives them.
	Steps int
	M, V  [][]float64
}

// NewAdam returns Adam with learning rate lr and β1 = 0.9, β2 = 0.999, ε = 1e-8.
func NewAdam(lr float64) *Adam { return &Adam{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8} }

// Step applies one Adam update to every parameter from its accumulated
// gradient, then zeroes the gradient (Gorgonia accumulates into dual values).
func (a *Adam) Step(params []G.ValueGrad) error {
	if a.M == nil {
		a.M, a.V = make([][]float64, len(params)), make([][]float64, len(params))
	}
	if len(a.M) != len(params) {
		return errors.Errorf("adam: state holds %d parameters, step got %d", len(a.M), len(params))
	}
	a.Steps++
	c1 := 1 - math.Pow(a.Beta1, float64(a.Steps))
	c2 := 1 - math.Pow(a.Beta2, float64(a.Steps))
	for i, p := range params {
		w, g, err := valueAndGrad(p)
		if err != nil {
			return errors.Wrapf(err, "adam: parameter %d", i)
		}
		if a.M[i] == nil {
			a.M[i], a.V[i] = make([]float64, w.Size()), make([]float64, w.Size())
		}
		if len(a.M[i]) != w.Size() {
			return errors.Errorf("adam: parameter %d has %d values, state has %d", i, w.Size(), len(a.M[i]))
		}
		m, v := a.M[i], a.V[i]
		update := func(j int, gj float64) float64 {
			m[j] = a.Beta1*m[j] + (1-a.Beta1)*gj
			v[j] = a.Beta2*v[j] + (1-a.Beta2)*gj*gj
			return a.LR * (m[j] / c1) / (math.Sqrt(v[j]/c2) + a.Eps)
		}
		switch wd := w.Data().(type) {
		case []float32:
			gd := g.Data().([]float32)
			for j := range wd {
				wd[j] -= float32(update(j, float64(gd[j])))
				gd[j] = 0
			}
		case []float64:
			gd := g.Data().([]float64)
			for j := range wd {
				wd[j] -= update(j, gd[j])
				gd[j] = 0
			}
		default:
			return errors.Errorf("adam: parameter %d has unsupported dtype %v", i, w.Dtype())
		}
	}
	return nil
}

func valueAndGrad(p G.ValueGrad) (*tensor.Dense, *tensor.Dense, error) {
	gv, err := p.Grad()
	if err != nil {
		return nil, nil, err
	}
	w, ok1 := p.Value().(*tensor.Dense)
	g, ok2 := gv.(*tensor.Dense)
	if !ok1 || !ok2 {
		return nil, nil, errors.Errorf("value %T and gradient %T must be *tensor.Dense", p.Value(), gv)
	}
	if w.Size() != g.Size() {
		return nil, nil, errors.Errorf("value has %d elements, gradient %d", w.Size(), g.Size())
	}
	return w, g, nil
}
