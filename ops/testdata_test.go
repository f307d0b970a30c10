package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// randomMixture returns a float64 batch [B, C, N, 1+D+D·D] drawn from
// gmtest.StandardSpec.
func randomMixture(rng *rand.Rand, b, c, n, d int) *tensor.Dense {
	data := gmtest.Mixtures[float64](rng, gmtest.StandardSpec(), b, c, n, d)
	return tensor.New(tensor.WithShape(b, c, n, 1+d+d*d), tensor.WithBacking(data))
}

// as32 returns a float32 copy of the float64 tensor t.
func as32(t *tensor.Dense) *tensor.Dense {
	return tensor.New(tensor.WithShape(t.Shape().Clone()...), tensor.WithBacking(gmtest.To32(t.Data().([]float64))))
}

// as64 returns a float64 copy of the float32 or float64 tensor t.
func as64(t *tensor.Dense) *tensor.Dense {
	return tensor.New(tensor.WithShape(t.Shape().Clone()...), tensor.WithBacking(float64s(t)))
}

// float64s returns a float64 copy of the data of a float32 or float64 value.
func float64s(v G.Value) []float64 {
	switch d := v.Data().(type) {
	case []float32:
		return gmtest.To64(d)
	case []float64:
		return append([]float64(nil), d...)
	}
	panic(fmt.Sprintf("float64s: want float32 or float64 data, got %T", v.Data()))
}

// wantFloat32Op fails t unless op gives for float32 copies of in what it
// gives for in, every element within 1e-6 of the float64 value relative to
// its magnitude (at least 1).
func wantFloat32Op(t *testing.T, op G.Op, in ...*tensor.Dense) {
	t.Helper()
	in32 := make([]G.Value, len(in))
	for i, x := range in {
		in32[i] = as32(x)
	}
	y64, err := op.Do(values(in)...)
	if err != nil {
		t.Fatal(err)
	}
	y32, err := op.Do(in32...)
	if err != nil {
		t.Fatal(err)
	}
	a, b := y32.Data().([]float32), y64.Data().([]float64)
	for i := range a {
		if math.Abs(float64(a[i])-b[i]) > 1e-6*math.Max(1, math.Abs(b[i])) {
			t.Fatalf("%v: element %d float32 %g, float64 %g", op, i, a[i], b[i])
		}
	}
}

// graphGrads runs L = Σ op(x, k)·r in a graph of x's dtype and returns the
// output and the gradients of both inputs, all as float64.
func graphGrads(t *testing.T, op G.Op, x, k, r *tensor.Dense) [3][]float64 {
	t.Helper()
	g := G.NewGraph()
	xn := G.NewTensor(g, x.Dtype(), 4, G.WithShape(x.Shape()...), G.WithName("x"), G.WithValue(x))
	kn := G.NewTensor(g, k.Dtype(), 4, G.WithShape(k.Shape()...), G.WithName("k"), G.WithValue(k))
	rn := G.NewTensor(g, r.Dtype(), 4, G.WithShape(r.Shape()...), G.WithName("r"), G.WithValue(r))
	yn := G.Must(G.ApplyOp(op, xn, kn))
	cost := G.Must(G.Sum(G.Must(G.HadamardProd(yn, rn))))
	grads, err := G.Grad(cost, xn, kn)
	if err != nil {
		t.Fatalf("Grad: %v", err)
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatalf("RunAll: %v", err)
	}
	return [3][]float64{float64s(yn.Value()), float64s(grads[0].Value()), float64s(grads[1].Value())}
}

// asOp returns the adapter behind an op of the package.
func asOp(o G.Op) *op {
	if c, ok := o.(*CovScaleNorm); ok {
		return c.op
	}
	return o.(*op)
}

// gradOf returns the grad op of input i of a forward op built by one of the
// package's constructors.
func gradOf(o G.Op, i int) *op { return asOp(o).gradOp(i) }
