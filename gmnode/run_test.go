package gmnode

import (
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// runGraph runs g once on a TapeMachine built with opts, failing t on an
// error, and closes the machine when the test ends.
func runGraph(t *testing.T, g *G.ExprGraph, opts ...G.VMOpt) {
	t.Helper()
	vm := G.NewTapeMachine(g, opts...)
	t.Cleanup(func() { vm.Close() })
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
}

// valueNode returns a node of g named name holding data as a tensor of the
// given shape.
func valueNode[T float32 | float64](g *G.ExprGraph, name string, data []T, shape ...int) *G.Node {
	v := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))
	return G.NewTensor(g, v.Dtype(), len(shape), G.WithName(name), G.WithValue(v))
}
