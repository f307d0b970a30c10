package gmnode_test

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestExampleModelLispMachine trains ExampleConv's model under LispMachine,
// whose automatic differentiation reaches the GM ops through their DoDiff,
// with no Grad call: the loss must fall as it does under TapeMachine.
// Gorgonia v0.9.18's BatchNormOp.DoDiff panics (index out of range), so the
// batch normalisation is built from Gorgonia's elementary ops here.
func TestExampleModelLispMachine(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	m, err := newExampleModel(rng, elementaryBatchNorm)
	if err != nil {
		t.Fatal(err)
	}
	// Gorgonia v0.9.18's LispMachine runs a graph once: after RunAll its
	// forward position is past the end, and Reset moves it to the last node
	// only. A fresh machine per step, over a graph whose intermediate values
	// are unbound, is how it trains (this holds for Gorgonia's own ops too).
	run := func() error {
		vm := G.NewLispMachine(m.g)
		defer vm.Close()
		return vm.RunAll()
	}
	first, last, err := m.train(run, rng, 30)
	if err != nil {
		t.Fatal(err)
	}
	if !(last < first/2) {
		t.Errorf("loss went from %.4g to %.4g in 30 steps under LispMachine, want below half", first, last)
	}
}

// TestExampleModelMachinesAgree computes the first step's gradients of
// every learnable of ExampleConv's model (elementary batch norm) on the same
// batch under TapeMachine (Grad) and LispMachine (DoDiff): they must agree,
// and the GM kernel's weights' must not vanish: the loss test above cannot
// tell (the batch norm's scale and bias alone lower its loss).
func TestExampleModelMachinesAgree(t *testing.T) {
	grads := map[string][][]float64{}
	for _, machine := range []string{"TapeMachine", "LispMachine"} {
		rng := rand.New(rand.NewPCG(1, 2))
		m, err := newExampleModel(rng, elementaryBatchNorm)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.let(rng); err != nil {
			t.Fatal(err)
		}
		var vm G.VM
		if machine == "TapeMachine" {
			if _, err := G.Grad(m.loss, m.learnables...); err != nil {
				t.Fatal(err)
			}
			vm = G.NewTapeMachine(m.g, G.BindDualValues(m.learnables...))
		} else {
			vm = G.NewLispMachine(m.g)
		}
		if err := vm.RunAll(); err != nil {
			t.Fatalf("%s: %v", machine, err)
		}
		vm.Close()
		for _, n := range m.learnables {
			gv, err := n.Grad()
			if err != nil {
				t.Fatalf("%s: %s: %v", machine, n.Name(), err)
			}
			grads[machine] = append(grads[machine], append([]float64(nil), gv.Data().([]float64)...))
		}
	}
	for i, tape := range grads["TapeMachine"] {
		lisp := grads["LispMachine"][i]
		var diff, scale float64
		for j := range tape {
			diff = max(diff, math.Abs(tape[j]-lisp[j]))
			scale = max(scale, math.Abs(tape[j]))
		}
		if !(diff <= 1e-12*scale) {
			t.Errorf("learnable %d: max |tape − lisp| = %.3g, max |tape| = %.3g", i, diff, scale)
		}
		// The loss sees the convolution only through its integral, Σ w_x·w_k,
		// so of the GM kernel only the raw weights (learnable 0) get a
		// gradient; positions and covariance factors get exactly zero.
		if i == 0 && scale == 0 {
			t.Error("the GM kernel's raw weights have a zero gradient")
		}
	}
}

// elementaryBatchNorm is training-mode batch normalisation,
// (y − mean)/sqrt(var + 1e-5)·scale + bias over the batch axis, in
// elementary ops that LispMachine can differentiate.
func elementaryBatchNorm(y, scale, bias *G.Node) (*G.Node, error) {
	mean, err := G.Mean(y, 0)
	if err != nil {
		return nil, err
	}
	c, err := G.BroadcastSub(y, mean, nil, []byte{0})
	if err != nil {
		return nil, err
	}
	v, err := G.Mean(G.Must(G.Square(c)), 0)
	if err != nil {
		return nil, err
	}
	eps := G.NewConstant(tensor.New(tensor.WithShape(v.Shape()...), tensor.WithBacking([]float64{1e-5, 1e-5})))
	sd, err := G.Sqrt(G.Must(G.Add(v, eps)))
	if err != nil {
		return nil, err
	}
	z, err := G.BroadcastHadamardDiv(c, sd, nil, []byte{0})
	if err != nil {
		return nil, err
	}
	z, err = G.BroadcastHadamardProd(z, scale, nil, []byte{0})
	if err != nil {
		return nil, err
	}
	return G.BroadcastAdd(z, bias, nil, []byte{0})
}
