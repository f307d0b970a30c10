package models

import (
	"math"
	"strings"

	"github.com/pkg/errors"
	"gorgonia.org/tensor"
)

// State is the part of a model a checkpoint stores: every learnable value in
// Learnables order, BatchNorm's running statistics and each CovScaleNorm's
// running average, all as float64 whatever the model's dtype. Node names
// carry process-wide ids, so parameters are matched by position and size;
// Names (without ids) only make errors readable.
type State struct {
	Names    []string
	Params   [][]float64
	BNMean   []float64
	BNVar    []float64
	CovNorms [][]float64
}

// State returns a copy of the model's state.
func (m *Model) State() State {
	var s State
	for _, n := range m.Learnables() {
		s.Names = append(s.Names, stableName(n.Name()))
		s.Params = append(s.Params, Float64s(n.Value().(*tensor.Dense)))
	}
	s.BNMean, s.BNVar = Float64s(m.bnMean), Float64s(m.bnVar)
	for _, c := range m.CovNorms {
		s.CovNorms = append(s.CovNorms, append([]float64(nil), c.Running()...))
	}
	return s
}

// SetState copies s into the model. Every parameter must be present with the
// right size; nothing is changed if any is not.
func (m *Model) SetState(s State) error {
	ls := m.Learnables()
	if len(s.Params) != len(ls) {
		return errors.Errorf("model state has %d parameters, the model has %d", len(s.Params), len(ls))
	}
	for i, n := range ls {
		if len(s.Params[i]) != n.Shape().TotalSize() {
			return errors.Errorf("model state: parameter %d (%s) has %d values, the model's %s needs %d",
				i, s.Names[i], len(s.Params[i]), stableName(n.Name()), n.Shape().TotalSize())
		}
	}
	covNorms := s.CovNorms
	if len(covNorms) == len(m.CovNorms)+1 && m.lastIntegrates() {
		// A state saved before the last block integrated its own mixtures
		// holds that block's average too, which changed nothing the model
		// computes.
		covNorms = covNorms[:len(m.CovNorms)]
	}
	if len(covNorms) != len(m.CovNorms) {
		return errors.Errorf("model state has %d CovScaleNorm averages, the model has %d", len(s.CovNorms), len(m.CovNorms))
	}
	if n := m.bnMean.Shape().TotalSize(); len(s.BNMean) != n || len(s.BNVar) != n {
		return errors.Errorf("model state: BatchNorm statistics have %d/%d values, the model needs %d", len(s.BNMean), len(s.BNVar), n)
	}
	for i, n := range ls {
		SetFloat64s(n.Value().(*tensor.Dense), s.Params[i])
	}
	SetFloat64s(m.bnMean, s.BNMean)
	SetFloat64s(m.bnVar, s.BNVar)
	for i, c := range m.CovNorms {
		if err := c.SetRunning(covNorms[i]); err != nil {
			return errors.Wrapf(err, "CovScaleNorm %d", i+1)
		}
	}
	return m.applyMode()
}

// Float64s returns a float64 copy of the values of a float32 or float64
// tensor, nil for any other dtype: how the model's parameters, statistics
// and outputs are read out, whatever the graph's precision.
func Float64s(t *tensor.Dense) []float64 {
	switch d := t.Data().(type) {
	case []float32:
		out := make([]float64, len(d))
		for i, v := range d {
			out[i] = float64(v)
		}
		return out
	case []float64:
		return append([]float64(nil), d...)
	}
	return nil
}

// Dense returns a new tensor of the given shape holding v in the dtype dt
// (float32 or float64; v is copied): how inputs and targets in float64 are
// bound to a graph of either precision.
func Dense(dt tensor.Dtype, shape tensor.Shape, v []float64) *tensor.Dense {
	t := tensor.New(tensor.WithShape(shape...), tensor.Of(dt))
	SetFloat64s(t, v)
	return t
}

// SetFloat64s sets the values of a float32 or float64 tensor to the first
// values of v, converted to its dtype: the inverse of Float64s. It panics if
// v is shorter than the tensor.
func SetFloat64s(t *tensor.Dense, v []float64) {
	switch d := t.Data().(type) {
	case []float32:
		for i := range d {
			d[i] = float32(v[i])
		}
	case []float64:
		copy(d, v)
	}
}

// stableName drops the process-wide "#id" of a kernel node name.
func stableName(name string) string {
	if i := strings.IndexByte(name, '#'); i >= 0 {
		if j := strings.IndexByte(name[i:], '/'); j >= 0 {
			return name[:i] + name[i+j:]
		}
		return name[:i]
	}
	return name
}

// RunningStats returns the statistics training updates besides the
// parameters, in one slice: BatchNorm's running mean and variance, then every
// CovScaleNorm's running average in block order. Data-parallel training
// averages them over the ranks after every step.
func (m *Model) RunningStats() []float64 {
	s := append(Float64s(m.bnMean), Float64s(m.bnVar)...)
	for _, c := range m.CovNorms {
		s = append(s, c.Running()...)
	}
	return s
}

// SetRunningStats sets the statistics RunningStats returns. Nothing is
// changed if s has the wrong length or a CovScaleNorm average that is not
// positive and finite.
func (m *Model) SetRunningStats(s []float64) error {
	nb := m.bnMean.Shape().TotalSize()
	want := 2 * nb
	for _, c := range m.CovNorms {
		want += len(c.Running())
	}
	if len(s) != want {
		return errors.Errorf("running statistics: %d values, the model has %d", len(s), want)
	}
	for i, v := range s[2*nb:] {
		if !(v > 0) || math.IsInf(v, 0) {
			return errors.Errorf("running statistics: CovScaleNorm average %d is %g, want a positive finite value", i, v)
		}
	}
	SetFloat64s(m.bnMean, s[:nb])
	SetFloat64s(m.bnVar, s[nb:2*nb])
	rest := s[2*nb:]
	for i, c := range m.CovNorms {
		n := len(c.Running())
		if err := c.SetRunning(rest[:n]); err != nil {
			return errors.Wrapf(err, "CovScaleNorm %d", i+1)
		}
		rest = rest[n:]
	}
	return m.applyMode()
}

// BNChannels returns the number of channels BatchNorm normalises: the
// integrals per sample.
func (m *Model) BNChannels() int { return m.bnMean.Shape().TotalSize() }
