package gmnode

import (
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestScaleAxesNode runs ScaleAxes with per-sample factors in a float32
// graph with gradients for L = Σ y and checks the values by hand: sample 0
// has μ = (1, 2), Σ = [[1, ½], [½, 2]] and s = (2, ½); sample 1 has
// μ = (−1, ½), Σ = diag(2, 1) and the reflecting s = (−1, 3). With g = 1,
// ∂L/∂s_d = μ_d + Σ_j (Σ_dj + Σ_jd)·s_j and ∂L/∂x is (1, s, s_i·s_j).
func TestScaleAxesNode(t *testing.T) {
	g := newGraph()
	x := valueNode(g, "x", []float32{
		1, 1, 2, 1, 0.5, 0.5, 2,
		-0.5, -1, 0.5, 2, 0, 0, 1,
	}, 2, 1, 1, 7)
	s := valueNode(g, "s", []float32{2, 0.5, -1, 3}, 2, 2)
	y, err := ScaleAxes(x, s)
	if err != nil {
		t.Fatal(err)
	}
	grads, err := G.Grad(G.Must(G.Sum(y)), x, s)
	if err != nil {
		t.Fatal(err)
	}
	runGraph(t, g)
	for _, c := range []struct {
		what      string
		got, want []float32
	}{
		{"y", y.Value().Data().([]float32), []float32{
			1, 2, 1, 4, 0.5, 0.5, 0.5,
			-0.5, 1, 1.5, 2, 0, 0, 9,
		}},
		{"∂L/∂x", grads[0].Value().Data().([]float32), []float32{
			1, 2, 0.5, 4, 1, 1, 0.25,
			1, -1, 3, 1, -3, -3, 9,
		}},
		{"∂L/∂s", grads[1].Value().Data().([]float32), []float32{5.5, 6, -5, 6.5}},
	} {
		gmtest.WantClose(t, c.what, c.got, c.want, 0)
	}
}

// TestScaleAxesNodeBadInput checks the errors of graph construction: each
// names the op and the input at fault.
func TestScaleAxesNodeBadInput(t *testing.T) {
	g := newGraph()
	x := G.NewTensor(g, tensor.Float64, 4, G.WithShape(2, 3, 4, 7), G.WithName("x"))
	cases := []struct {
		name string
		x, s *G.Node
		want []string
	}{
		{"dtype", x, G.NewMatrix(g, tensor.Float32, G.WithShape(2, 2), G.WithName("s32")),
			[]string{`"scales" (s32)`, `"mixture" (x)`, "float64", "got float32"}},
		{"scales rank 4", x, G.NewTensor(g, tensor.Float64, 4, G.WithShape(2, 3, 1, 2), G.WithName("s4")),
			[]string{`"scales"`, "got rank 4"}},
		{"scales shape", x, G.NewMatrix(g, tensor.Float64, G.WithShape(3, 2), G.WithName("s3")),
			[]string{`"scales"`, "[B, D] = (2, 2)", "got (3, 2)"}},
		{"mixture rank", G.NewTensor(g, tensor.Float64, 3, G.WithShape(2, 3, 7), G.WithName("x3")), G.NewVector(g, tensor.Float64, G.WithShape(2), G.WithName("s1")),
			[]string{`"mixture"`, "rank 4", "rank 3"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ScaleAxes(c.x, c.s)
			gmtest.WantErr(t, err, append([]string{"gm.ScaleAxes"}, c.want...)...)
		})
	}
}
