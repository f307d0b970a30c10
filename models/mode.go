package models

import (
	"fmt"
	"hash"
	"hash/fnv"

	"github.com/chewxy/hm"
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The model, not the machine, owns the training mode and BatchNorm's
// running statistics. Gorgonia's NewTapeMachine calls SetTraining(true) on
// every op that has the method unless given EvalMode, and BatchNormOp's
// SetTraining(true) resets its running statistics, so a machine made after
// a state was loaded, or after SetTraining(false), would predict with mean 0
// and variance 1, and every CovScaleNorm would update its running average
// during prediction. Two small ops in the graph make the order of calls
// irrelevant: modeOp, ahead of every other op on the input, applies the
// model's mode and statistics before each run, and statsOp, after
// BatchNorm, copies the statistics a training run updated back into the
// model.

// applyMode sets BatchNorm and every CovScaleNorm to the model's mode and
// BatchNorm's running statistics to the model's copy.
func (m *Model) applyMode() error {
	if err := m.BN.SetTraining(m.training); err != nil {
		return errors.Wrap(err, "batch norm mode")
	}
	if err := m.BN.SetStats(m.bnMean, m.bnVar); err != nil {
		return errors.Wrap(err, "batch norm statistics")
	}
	for i, c := range m.CovNorms {
		if err := c.SetTraining(m.training); err != nil {
			return errors.Wrapf(err, "CovScaleNorm %d mode", i+1)
		}
	}
	return nil
}

// keepStats copies BatchNorm's running statistics into the model after a
// training run updated them; in evaluation they do not change.
func (m *Model) keepStats() {
	if !m.training {
		return
	}
	mean, variance := m.BN.Stats()
	m.bnMean, m.bnVar = mean.Clone().(*tensor.Dense), variance.Clone().(*tensor.Dense)
}

// hookOp is an op that returns its input unchanged after calling run: the
// way the model acts at a fixed point of every run of its graph.
type hookOp struct {
	name string
	dims int
	run  func() error
	// copyOut makes Do return a copy of the input, so that no later op can
	// write into the input's value through the hook's output.
	copyOut bool
}

func (op *hookOp) Arity() int { return 1 }

func (op *hookOp) Type() hm.Type {
	t := G.TensorType{Dims: op.dims, Of: hm.TypeVariable('a')}
	return hm.NewFnType(t, t)
}

func (op *hookOp) InferShape(ns ...G.DimSizer) (tensor.Shape, error) {
	if len(ns) != 1 {
		return nil, errors.Errorf("%s: %d inputs, want 1", op.name, len(ns))
	}
	s, ok := ns[0].(tensor.Shape)
	if !ok {
		return nil, errors.Errorf("%s: input shape is a %T, want a tensor.Shape", op.name, ns[0])
	}
	return s.Clone(), nil
}

func (op *hookOp) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != 1 {
		return nil, errors.Errorf("%s: %d inputs, want 1", op.name, len(vals))
	}
	if err := op.run(); err != nil {
		return nil, errors.Wrap(err, op.name)
	}
	if op.copyOut {
		return G.CloneValue(vals[0])
	}
	return vals[0], nil
}

func (op *hookOp) ReturnsPtr() bool     { return true }
func (op *hookOp) CallsExtern() bool    { return false }
func (op *hookOp) OverwritesInput() int { return -1 }

// WriteHash includes the op's address: two models' hooks must never merge.
func (op *hookOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%s@%p", op.name, op) }

func (op *hookOp) Hashcode() uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}

func (op *hookOp) String() string { return op.name }

// DiffWRT and SymDiff pass the gradient through: the hook is the identity.
func (op *hookOp) DiffWRT(int) []bool { return []bool{true} }

func (op *hookOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	return G.Nodes{grad}, nil
}

// withModeHook returns x behind the op that applies the model's mode before
// anything downstream of x runs.
func (m *Model) withModeHook(x *G.Node) (*G.Node, error) {
	op := &hookOp{name: "model mode", dims: x.Dims(), run: m.applyMode, copyOut: true}
	return G.ApplyOp(op, x)
}

// addStatsHook adds, as a leaf read by nothing, the op that runs after y
// (BatchNorm's output) and keeps the statistics its training run updated.
func (m *Model) addStatsHook(y *G.Node) error {
	op := &hookOp{name: "keep batch norm statistics", dims: y.Dims(), run: func() error { m.keepStats(); return nil }}
	_, err := G.ApplyOp(op, y)
	return err
}
