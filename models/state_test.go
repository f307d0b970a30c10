package models

import (
	"slices"
	"strings"
	"testing"

	"gorgonia.org/tensor"
)

// TestFloat64s checks that Float64s converts float32 values, copies float64
// ones (a caller may keep them past the tensor's reuse) and refuses other
// dtypes.
func TestFloat64s(t *testing.T) {
	f32 := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float32{1.5, -2, 0.25}))
	if got := Float64s(f32); !slices.Equal(got, []float64{1.5, -2, 0.25}) {
		t.Errorf("float32: got %v, want [1.5 -2 0.25]", got)
	}
	backing := []float64{3, 4}
	got := Float64s(tensor.New(tensor.WithShape(2), tensor.WithBacking(backing)))
	got[0] = 7
	if backing[0] != 3 {
		t.Errorf("float64: writing the result changed the tensor's value to %v; want a copy", backing[0])
	}
	if got := Float64s(tensor.New(tensor.WithShape(2), tensor.WithBacking([]int{1, 2}))); got != nil {
		t.Errorf("int: got %v, want nil", got)
	}
}

// TestStateOfLastBlockAverage checks that a model whose last block
// integrates its own mixtures has no CovScaleNorm there, and loads a state
// saved before it did, which holds that block's average too (ignored), but
// no state with more.
func TestStateOfLastBlockAverage(t *testing.T) {
	f := newModeFixture(t)
	m, err := Build(f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(m.CovNorms), len(f.cfg.Layout.Blocks)-1; got != want {
		t.Fatalf("%d CovScaleNorms, want %d (none for the integrating last block)", got, want)
	}
	old := f.state
	old.CovNorms = append(slices.Clone(old.CovNorms), []float64{2, 3, 4})
	if err := m.SetState(old); err != nil {
		t.Fatalf("a state with the last block's average: %v", err)
	}
	if got := m.State(); !slices.EqualFunc(got.CovNorms, f.state.CovNorms, slices.Equal[[]float64]) {
		t.Errorf("CovScaleNorm averages %v after loading, want %v", got.CovNorms, f.state.CovNorms)
	}
	old.CovNorms = append(old.CovNorms, []float64{1})
	if err := m.SetState(old); err == nil || !strings.Contains(err.Error(), "CovScaleNorm averages") {
		t.Errorf("a state with two averages too many: error %v, want one about CovScaleNorm averages", err)
	}
}
