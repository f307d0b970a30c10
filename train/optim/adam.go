package optim

import (
	"math"

	"github.com/gmcn-go/gmcn/internal/parallel"
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
// It checks every parameter before it changes any, so a step that fails
// leaves the parameters and the state as they were. The values are updated
// in chunks spread over the cores, each value by the same arithmetic as
// alone, so the result does not depend on the number of cores.
func (a *Adam) Step(params []G.ValueGrad) error {
	if a.M != nil && len(a.M) != len(params) {
		return errors.Errorf("adam: state holds %d parameters, step got %d", len(a.M), len(params))
	}
	ws, gs := make([]*tensor.Dense, len(params)), make([]*tensor.Dense, len(params))
	var chunks []adamChunk
	for i, p := range params {
		w, g, err := valueAndGrad(p)
		if err != nil {
			return errors.Wrapf(err, "adam: parameter %d", i)
		}
		if a.M != nil && a.M[i] != nil && len(a.M[i]) != w.Size() {
			return errors.Errorf("adam: parameter %d has %d values, state has %d", i, w.Size(), len(a.M[i]))
		}
		if dt := w.Dtype(); dt != tensor.Float32 && dt != tensor.Float64 || g.Dtype() != dt {
			return errors.Errorf("adam: parameter %d has dtype %v and gradient %v, want both float32 or both float64", i, dt, g.Dtype())
		}
		ws[i], gs[i] = w, g
		for lo := 0; lo < w.Size(); lo += adamChunkLen {
			chunks = append(chunks, adamChunk{i, lo, min(lo+adamChunkLen, w.Size())})
		}
	}
	if a.M == nil {
		a.M, a.V = make([][]float64, len(params)), make([][]float64, len(params))
	}
	for i, w := range ws {
		if a.M[i] == nil {
			a.M[i], a.V[i] = make([]float64, w.Size()), make([]float64, w.Size())
		}
	}
	a.Steps++
	c1 := 1 - math.Pow(a.Beta1, float64(a.Steps))
	c2 := 1 - math.Pow(a.Beta2, float64(a.Steps))
	parallel.For(len(chunks), func(c int) {
		ch := chunks[c]
		m, v := a.M[ch.param][ch.lo:ch.hi], a.V[ch.param][ch.lo:ch.hi]
		switch wd := ws[ch.param].Data().(type) {
		case []float32:
			adamUpdate(a, wd[ch.lo:ch.hi], gs[ch.param].Data().([]float32)[ch.lo:ch.hi], m, v, c1, c2)
		case []float64:
			adamUpdate(a, wd[ch.lo:ch.hi], gs[ch.param].Data().([]float64)[ch.lo:ch.hi], m, v, c1, c2)
		}
	})
	return nil
}

// adamChunkLen is how many values of a parameter one work item of Step
// updates: enough that handing out items costs little next to them.
const adamChunkLen = 1 << 13

// adamChunk is the values [lo, hi) of parameter param.
type adamChunk struct{ param, lo, hi int }

// adamUpdate applies Adam's update with the bias corrections c1 and c2 to
// the values w from their gradients g and moments m and v, and zeroes g.
func adamUpdate[T float32 | float64](a *Adam, w, g []T, m, v []float64, c1, c2 float64) {
	for j := range w {
		gj := float64(g[j])
		m[j] = a.Beta1*m[j] + (1-a.Beta1)*gj
		v[j] = a.Beta2*v[j] + (1-a.Beta2)*gj*gj
		w[j] -= T(a.LR * (m[j] / c1) / (math.Sqrt(v[j]/c2) + a.Eps))
		g[j] = 0
	}
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
