package gmnode

import (
	"testing"

	G "gorgonia.org/gorgonia"
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
