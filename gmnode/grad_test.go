package gmnode

import (
	"math/rand/v2"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestGradSubgraph builds Integrate(Conv(x, k)) with data x that nothing
// learns: gorgonia.Grad gives the convolution a data gradient node anyway,
// which the subgraph of Grad must leave out, while the machine on it
// computes k's gradient bitwise as the machine on the whole graph does.
func TestGradSubgraph(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 0))
	x, k := covscaleInput(rng, 2, 3, 4), covscaleInput(rng, 2, 3, 3)
	build := func() (*G.ExprGraph, *G.Node, *G.Node) {
		gr := newGraph()
		xn := G.NewTensor(gr, tensor.Float32, 4, G.WithName("x"), G.WithValue(x.Clone()))
		kn := G.NewTensor(gr, tensor.Float32, 4, G.WithName("k"), G.WithValue(k.Clone()))
		cost := G.Must(G.Sum(G.Must(Integrate(G.Must(Conv(xn, kn))))))
		return gr, cost, kn
	}
	countOps := func(g *G.ExprGraph, name string) int {
		n := 0
		for _, v := range g.AllNodes() {
			if v.Op() != nil && v.Op().String() == name {
				n++
			}
		}
		return n
	}

	full, cost, kFull := build()
	if _, err := G.Grad(cost, kFull); err != nil {
		t.Fatal(err)
	}
	_, cost, kSub := build()
	sub, grads, err := Grad(cost, kSub)
	if err != nil {
		t.Fatal(err)
	}
	if len(grads) != 1 || grads[0] != kSub.Deriv() {
		t.Fatalf("Grad returned %v, want k's gradient node", grads)
	}
	for _, c := range []struct {
		g    *G.ExprGraph
		want int
	}{{full, 1}, {sub, 0}} {
		if got := countOps(c.g, "gm.ConvGradData"); got != c.want {
			t.Errorf("%d data gradient nodes, want %d", got, c.want)
		}
	}
	if countOps(sub, "gm.ConvGradKernels") != 1 {
		t.Error("the subgraph lost the kernels' gradient")
	}

	grad := func(g *G.ExprGraph, kn *G.Node) []float32 {
		vm := G.NewTapeMachine(g, G.BindDualValues(kn))
		defer vm.Close()
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		v, err := kn.Grad()
		if err != nil {
			t.Fatal(err)
		}
		return v.Data().([]float32)
	}
	if d := gmtest.MaxAbsDiff(grad(full, kFull), grad(sub, kSub)); d != 0 {
		t.Errorf("k's gradient differs by %g between the machines on the whole graph and on the subgraph", d)
	}
	if _, _, err := Grad(nil); err == nil {
		t.Error("Grad(nil) returned no error")
	}
}
