package models

import (
	"slices"
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
