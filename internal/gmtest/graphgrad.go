package gmtest

import (
	"fmt"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// GraphGrad builds a Gorgonia graph over the float64 inputs, applies
// build, and compares the gradient of L = Σ y·r (r fixed, random) with central
// differences of the same graph, for every input in wrt, under both of
// Gorgonia's machines: TapeMachine with the symbolic gradient (Grad, SymDiff)
// and LispMachine with automatic differentiation (DoDiff).
func GraphGrad(t *testing.T, rng *rand.Rand, inputs []*tensor.Dense, build func(in []*G.Node) (*G.Node, error), wrt ...int) {
	t.Helper()
	var rv []float64
	// graph builds the graph over inputs (whose values it binds, so changes to
	// them are seen by every run) and returns the input nodes and the cost.
	graph := func() (*G.ExprGraph, []*G.Node, *G.Node) {
		g := G.NewGraph()
		nodes := make([]*G.Node, len(inputs))
		for i, in := range inputs {
			nodes[i] = G.NewTensor(g, tensor.Float64, in.Dims(), G.WithShape(in.Shape()...), G.WithName(fmt.Sprintf("in%d", i)), G.WithValue(in))
		}
		y, err := build(nodes)
		if err != nil {
			t.Fatalf("building the graph: %v", err)
		}
		if rv == nil {
			rv = Normal(rng, y.Shape().TotalSize())
		}
		r := G.NewTensor(g, tensor.Float64, y.Dims(), G.WithShape(y.Shape()...), G.WithName("r"),
			G.WithValue(tensor.New(tensor.WithShape(y.Shape()...), tensor.WithBacking(append([]float64(nil), rv...)))))
		return g, nodes, G.Must(G.Sum(G.Must(G.HadamardProd(y, r))))
	}

	g, nodes, cost := graph()
	wrtNodes := make(G.Nodes, len(wrt))
	for i, w := range wrt {
		wrtNodes[i] = nodes[w]
	}
	grads, err := G.Grad(cost, wrtNodes...)
	if err != nil {
		t.Fatalf("Grad: %v", err)
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	run := func() float64 {
		vm.Reset()
		if err := vm.RunAll(); err != nil {
			t.Fatalf("RunAll: %v", err)
		}
		return cost.Value().Data().(float64)
	}
	run()
	analytic := map[string][][]float64{"TapeMachine": make([][]float64, len(wrt))}
	for i, gn := range grads {
		analytic["TapeMachine"][i] = append([]float64(nil), gn.Value().Data().([]float64)...)
	}

	lg, lnodes, _ := graph()
	lm := G.NewLispMachine(lg)
	defer lm.Close()
	if err := lm.RunAll(); err != nil {
		t.Fatalf("LispMachine RunAll: %v", err)
	}
	analytic["LispMachine"] = make([][]float64, len(wrt))
	for i, w := range wrt {
		gv, err := lnodes[w].Grad()
		if err != nil {
			t.Fatalf("LispMachine: input %d has no gradient: %v", w, err)
		}
		analytic["LispMachine"][i] = append([]float64(nil), gv.Data().([]float64)...)
	}

	for i, w := range wrt {
		numeric := Central(run, inputs[w].Data().([]float64), Step)
		for _, m := range []string{"TapeMachine", "LispMachine"} {
			if e := RelErr(analytic[m][i], numeric); e > GradTol {
				t.Errorf("%s, input %d: relative gradient error %.3g > %g\nanalytic %v\nnumeric  %v", m, w, e, GradTol, analytic[m][i], numeric)
			}
		}
	}
}
