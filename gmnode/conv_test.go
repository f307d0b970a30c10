package gmnode

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gmcn-go/gmcn/ops/mixture"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestConvScaleWeights builds the reference layer step ScaleWeights(Conv(x,
// k), 1/Fi) from hand-made Gaussians and checks one output component and the
// output integrals, which must be Σ_c ∫X_c·∫K_oc / Fi.
func TestConvScaleWeights(t *testing.T) {
	lx := mixture.Layout{B: 1, C: 2, N: 1, D: 2}
	lk := mixture.Layout{B: 1, C: 2, N: 2, D: 2}
	g := func(w, px, py, s float64) mixture.Gaussian {
		return mixture.Gaussian{Weight: w, Position: []float64{px, py}, Covariance: []float64{s, 0.1, 0.1, s}}
	}
	xd, err := mixture.Pack[float64](lx, []mixture.Gaussian{g(2, 1, 0, 1), g(3, 0, 1, 2)})
	if err != nil {
		t.Fatal(err)
	}
	kd, err := mixture.Pack[float64](lk, []mixture.Gaussian{g(0.5, 0, 0, 0.5), g(-1, 1, 1, 0.25), g(4, 2, 0, 1), g(0.25, 0, -1, 0.5)})
	if err != nil {
		t.Fatal(err)
	}
	gr := G.NewGraph()
	x := G.NewTensor(gr, tensor.Float64, 4, G.WithName("x"), G.WithValue(tensor.New(tensor.WithShape(lx.Shape()...), tensor.WithBacking(xd))))
	k := G.NewTensor(gr, tensor.Float64, 4, G.WithName("k"), G.WithValue(tensor.New(tensor.WithShape(lk.Shape()...), tensor.WithBacking(kd))))
	y, err := Conv(x, k)
	if err != nil {
		t.Fatal(err)
	}
	y, err = ScaleWeights(y, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	in, err := Integrate(y)
	if err != nil {
		t.Fatal(err)
	}
	runGraph(t, gr)
	if s := y.Shape(); !s.Eq(tensor.Shape{1, 1, 4, 7}) {
		t.Fatalf("output shape %v, want (1, 1, 4, 7)", s)
	}
	// Component n = i + Ni·(c + Fi·j) = 3 pairs data channel c = 1 with
	// kernel component j = 1 of that channel: g(3,0,1,2) ⊛ g(0.25,0,-1,0.5).
	want := []float64{0.5 * 3 * 0.25, 0, 0, 2.5, 0.2, 0.2, 2.5}
	got := y.Value().Data().([]float64)[3*7 : 4*7]
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-15 {
			t.Errorf("component 3: packed %v, want %v", got, want)
			break
		}
	}
	// ∫ = (2·(0.5 − 1) + 3·(4 + 0.25)) / 2.
	if got, want := in.Value().Data().([]float64)[0], (2*(0.5-1)+3*(4+0.25))/2; math.Abs(got-want) > 1e-14 {
		t.Errorf("output integral %g, want %g", got, want)
	}
}

// TestConvFitIntegral checks that the fused convolution-fitting keeps the
// total integral of the convolution for every n, through a graph.
func TestConvFitIntegral(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 0))
	x, k := covscaleInput(rng, 2, 3, 4), covscaleInput(rng, 2, 3, 3)
	gr := G.NewGraph()
	xn := G.NewTensor(gr, tensor.Float32, 4, G.WithName("x"), G.WithValue(x))
	kn := G.NewTensor(gr, tensor.Float32, 4, G.WithName("k"), G.WithValue(k))
	full := G.Must(Integrate(G.Must(Conv(xn, kn))))
	var fused []*G.Node
	for _, n := range []int{1, 5, 36} {
		y, err := ConvFit(xn, kn, n)
		if err != nil {
			t.Fatal(err)
		}
		fused = append(fused, G.Must(Integrate(y)))
	}
	runGraph(t, gr)
	want := full.Value().Data().([]float32)
	for i, f := range fused {
		for j, v := range f.Value().Data().([]float32) {
			if math.Abs(float64(v-want[j])) > 1e-5*math.Max(1, math.Abs(float64(want[j]))) {
				t.Errorf("case %d integral %d: %g, want Conv's %g", i, j, v, want[j])
			}
		}
	}
}
