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

// TestConvFloat32 runs gm.Conv and gm.ConvFit with both gradients in a
// float32 graph and a float64 graph on the same float32-representable values.
// Every output of Conv is one float32 product or sum and every gradient a sum
// of at most Fo·Nk or B·Ni terms, and ConvFit takes the same decisions in
// both, so agreement within 1e-5 of the largest magnitude is expected.
func TestConvFloat32(t *testing.T) {
	cases := []struct {
		name string
		op   func() G.Op
		n    int // output components
		seed uint64
	}{
		{"Conv", on(NewConv), 5 * 3 * 4, 23},
		{"ConvFit", func() G.Op { return NewConvFit(testDev, fitN(9)) }, 9, 42},
	}
	for _, c := range cases {
		for _, d := range []int{2, 3} {
			rng := rand.New(rand.NewPCG(c.seed, uint64(d)))
			x32 := as32(randomMixture(rng, 3, 4, 5, d))
			k32 := as32(randomMixture(rng, 6, 4, 3, d))
			rv := gmtest.Normal(rng, 3*6*c.n*(1+d+d*d))
			r32 := as32(tensor.New(tensor.WithShape(3, 6, c.n, 1+d+d*d), tensor.WithBacking(rv)))
			got := graphGrads(t, c.op(), x32, k32, r32)
			want := graphGrads(t, c.op(), as64(x32), as64(k32), as64(r32))
			for i, what := range []string{"output", "data gradient", "kernel gradient"} {
				gmtest.WantClose(t, fmt.Sprintf("%s %dD float32 %s", c.name, d, what), got[i], want[i], 1e-5)
			}
		}
	}
}

// convTensor returns a float64 tensor of the given shape filled with valid
// Gaussians when the last dimension is 7 or 13 and with ones otherwise.
func convTensor(seed uint64, shape ...int) *tensor.Dense {
	rng := rand.New(rand.NewPCG(24, seed))
	n := 1
	for _, s := range shape {
		n *= s
	}
	data := make([]float64, n)
	last := shape[len(shape)-1]
	switch last {
	case 7, 13:
		d := 2 + (last-7)/6
		for i := 0; i < n; i += last {
			gmtest.StandardSpec().Gaussian(rng, data[i:i+last], d)
		}
	default:
		for i := range data {
			data[i] = 1
		}
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))
}

// convWith returns t after setting flat index i to v.
func convWith(t *tensor.Dense, i int, v float64) *tensor.Dense {
	t.Data().([]float64)[i] = v
	return t
}

// TestConvBadInput feeds gm.Conv and its grad ops invalid inputs through Do
// (and, for shape errors, through graph construction) and checks that each
// returns an error naming the op, the input and what was wrong.
func TestConvBadInput(t *testing.T) {
	shapeCases := []struct {
		name     string
		data     tensor.Shape
		kernels  tensor.Shape
		contains []string
	}{
		{"data rank 3", tensor.Shape{2, 3, 7}, tensor.Shape{2, 3, 3, 7}, []string{`"data"`, "rank 4", "rank 3"}},
		{"kernels rank 5", tensor.Shape{2, 3, 4, 7}, tensor.Shape{1, 2, 3, 3, 7}, []string{`"kernels"`, "rank 4", "rank 5"}},
		{"mismatched Fi", tensor.Shape{2, 3, 4, 7}, tensor.Shape{2, 5, 3, 7}, []string{`"kernels"`, `"data"`, "Fi = 5", "C = 3"}},
		{"D mismatch", tensor.Shape{2, 3, 4, 7}, tensor.Shape{2, 3, 3, 13}, []string{`"data"`, `"kernels"`, "2D", "3D"}},
		{"D not 2 or 3 in data", tensor.Shape{2, 3, 4, 5}, tensor.Shape{2, 3, 3, 7}, []string{`"data"`, "length 5", "7 (2D) nor 13 (3D)"}},
		{"D not 2 or 3 in kernels", tensor.Shape{2, 3, 4, 7}, tensor.Shape{2, 3, 3, 21}, []string{`"kernels"`, "length 21"}},
		{"zero data components", tensor.Shape{2, 3, 0, 7}, tensor.Shape{2, 3, 3, 7}, []string{`"data"`, "N = 0"}},
		{"zero kernel components", tensor.Shape{2, 3, 4, 13}, tensor.Shape{2, 3, 0, 13}, []string{`"kernels"`, "N = 0"}},
		{"zero output channels", tensor.Shape{2, 3, 4, 7}, tensor.Shape{0, 3, 2, 7}, []string{`"kernels"`, "≥ 1"}},
	}
	for _, c := range shapeCases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewConv(testDev).Do(convTensor(1, c.data...), convTensor(2, c.kernels...))
			gmtest.WantErr(t, err, append([]string{"gm.Conv"}, c.contains...)...)
			g := G.NewGraph()
			x := G.NewTensor(g, tensor.Float64, len(c.data), G.WithShape(c.data...), G.WithName("x"))
			k := G.NewTensor(g, tensor.Float64, len(c.kernels), G.WithShape(c.kernels...), G.WithName("k"))
			_, err = G.ApplyOp(NewConv(testDev), x, k)
			gmtest.WantErr(t, err, "gm.Conv")
		})
	}

	const d = 2
	valueCases := []struct {
		name          string
		data, kernels *tensor.Dense
		contains      []string
	}{
		{"NaN weight in data", convWith(convTensor(3, 2, 3, 4, 7), 7*5, math.NaN()), convTensor(4, 2, 3, 3, 7), []string{`"data"`, "non-finite", "NaN"}},
		{"Inf position in kernels", convTensor(5, 2, 3, 4, 7), convWith(convTensor(6, 2, 3, 3, 7), 7*4+1, math.Inf(1)), []string{`"kernels"`, "non-finite", "Inf"}},
		{"non-SPD covariance in kernels", convTensor(7, 2, 3, 4, 7), convWith(convTensor(8, 2, 3, 3, 7), 7*2+1+d, -1), []string{`"kernels"`, "not positive definite", "n=2"}},
		{"asymmetric covariance in data", convWith(convTensor(9, 2, 3, 4, 7), 1+d+1, 5), convTensor(10, 2, 3, 3, 7), []string{`"data"`, "not symmetric"}},
		{"mixed dtypes", convTensor(11, 2, 3, 4, 7), as32(convTensor(12, 2, 3, 3, 7)), []string{`"kernels"`, "float32", "float64"}},
	}
	for _, c := range valueCases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewConv(testDev).Do(c.data, c.kernels)
			gmtest.WantErr(t, err, append([]string{"gm.Conv"}, c.contains...)...)
		})
	}

	t.Run("mixed dtypes in a graph", func(t *testing.T) {
		g := G.NewGraph()
		x := G.NewTensor(g, tensor.Float64, 4, G.WithShape(2, 3, 4, 7), G.WithName("x"))
		k := G.NewTensor(g, tensor.Float32, 4, G.WithShape(2, 3, 3, 7), G.WithName("k"))
		_, err := G.ApplyOp(NewConv(testDev), x, k)
		gmtest.WantErr(t, err, "gm.Conv", "float32", "float64")
	})

	for wrt, name := range []string{"gm.ConvGradData", "gm.ConvGradKernels"} {
		t.Run(name+" wrong grad shape", func(t *testing.T) {
			x, k := convTensor(13, 2, 3, 4, 7), convTensor(14, 2, 3, 3, 7)
			y, err := NewConv(testDev).Do(x, k)
			if err != nil {
				t.Fatal(err)
			}
			_, err = gradOf(NewConv(testDev), wrt).Do(x, k, y, convTensor(15, 2, 2, 35, 7))
			gmtest.WantErr(t, err, name, `"grad"`, "(2, 2, 36, 7)", "(2, 2, 35, 7)")
		})
	}
}
