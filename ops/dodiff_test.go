package ops

import (
	"math/rand/v2"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestDoDiffFailsLoudly calls DoDiff outside a LispMachine, where the nodes
// carry no gradients: it must return an error naming the op, never a silent
// zero gradient.
func TestDoDiffFailsLoudly(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	g := G.NewGraph()
	x := G.NewTensor(g, tensor.Float64, 4, G.WithShape(2, 3, 4, 7), G.WithName("x"), G.WithValue(randomMixture(rng, 2, 3, 4, 2)))
	o := NewIntegrate(testDev)
	y, err := G.ApplyOp(o, x)
	if err != nil {
		t.Fatal(err)
	}
	ad := o.(G.ADOp)
	for _, c := range []struct {
		name   string
		inputs G.Nodes
		want   string
	}{
		{"no output gradient", G.Nodes{x}, "output has no gradient"},
		{"wrong arity", G.Nodes{x, x}, "expected 1 inputs"},
	} {
		err := ad.DoDiff(G.ExecutionContext{}, c.inputs, y)
		if err == nil || !strings.Contains(err.Error(), "gm.Integrate") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming gm.Integrate and containing %q", c.name, err, c.want)
		}
	}
}
