package ops

import (
	"fmt"
	"math"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops/device"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// fitN returns the selection of n groups with the models' priority of
// negative groups.
func fitN(n int) ConvFitSelect {
	return ConvFitSelect{N: n, Negative: device.DefaultConvFitNegative}
}

// TestConvFitBadInput feeds gm.ConvFit and its grad ops invalid inputs and
// parameters and checks that each returns an error naming the op, the input
// or parameter and what was wrong, without a panic.
func TestConvFitBadInput(t *testing.T) {
	cases := []struct {
		name          string
		n             int
		data, kernels *tensor.Dense
		contains      []string
	}{
		{"n = 0", 0, convTensor(1, 2, 3, 4, 7), convTensor(2, 2, 3, 3, 7), []string{"n = 0 Gaussians", "want n ≥ 1"}},
		{"n < 0", -4, convTensor(1, 2, 3, 4, 7), convTensor(2, 2, 3, 3, 7), []string{"n = -4 Gaussians", "want n ≥ 1"}},
		{"data rank 3", 4, convTensor(1, 2, 3, 7), convTensor(2, 2, 3, 3, 7), []string{`"data"`, "rank 4", "rank 3"}},
		{"kernels rank 5", 4, convTensor(1, 2, 3, 4, 7), convTensor(2, 1, 2, 3, 3, 7), []string{`"kernels"`, "rank 4", "rank 5"}},
		{"mismatched Fi", 4, convTensor(1, 2, 3, 4, 7), convTensor(2, 2, 5, 3, 7), []string{`"kernels"`, "Fi = 5", "C = 3"}},
		{"D mismatch", 4, convTensor(1, 2, 3, 4, 7), convTensor(2, 2, 3, 3, 13), []string{`"data"`, `"kernels"`, "2D", "3D"}},
		{"NaN weight in data", 4, convWith(convTensor(3, 2, 3, 4, 7), 7*5, math.NaN()), convTensor(4, 2, 3, 3, 7), []string{`"data"`, "non-finite", "NaN"}},
		{"Inf position in kernels", 4, convTensor(5, 2, 3, 4, 7), convWith(convTensor(6, 2, 3, 3, 7), 7*4+1, math.Inf(1)), []string{`"kernels"`, "non-finite", "Inf"}},
		{"non-SPD covariance in kernels", 4, convTensor(7, 2, 3, 4, 7), convWith(convTensor(8, 2, 3, 3, 7), 7*2+1+2, -1), []string{`"kernels"`, "not positive definite", "n=2"}},
		{"non-SPD covariance in 3D data", 4, convWith(convTensor(9, 2, 3, 4, 13), 1+3, -2), convTensor(10, 2, 3, 3, 13), []string{`"data"`, "not positive definite"}},
		{"mixed dtypes", 4, convTensor(11, 2, 3, 4, 7), as32(convTensor(12, 2, 3, 3, 7)), []string{`"kernels"`, "float32", "float64"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewConvFit(testDev, fitN(c.n)).Do(c.data, c.kernels)
			gmtest.WantErr(t, err, append([]string{"gm.ConvFit"}, c.contains...)...)
		})
	}
	for _, neg := range []float64{0, -0.5, math.NaN(), math.Inf(1)} {
		t.Run(fmt.Sprintf("negative %g", neg), func(t *testing.T) {
			_, err := NewConvFit(testDev, ConvFitSelect{N: 4, Negative: neg}).Do(convTensor(1, 2, 3, 4, 7), convTensor(2, 2, 3, 3, 7))
			gmtest.WantErr(t, err, "gm.ConvFit", "negative nodes' priority factor", fmt.Sprint(neg), "finite number > 0")
		})
	}
	t.Run("n = 0 in a graph", func(t *testing.T) {
		g := G.NewGraph()
		x := G.NewTensor(g, tensor.Float64, 4, G.WithShape(2, 3, 4, 7), G.WithName("x"))
		k := G.NewTensor(g, tensor.Float64, 4, G.WithShape(2, 3, 3, 7), G.WithName("k"))
		_, err := G.ApplyOp(NewConvFit(testDev, fitN(0)), x, k)
		gmtest.WantErr(t, err, "gm.ConvFit", "want n ≥ 1")
	})
	for wrt, name := range []string{"gm.ConvFitGradData", "gm.ConvFitGradKernels"} {
		t.Run(name+" bad inputs", func(t *testing.T) {
			x, k := convTensor(13, 2, 3, 4, 7), convTensor(14, 2, 3, 3, 7)
			y, err := NewConvFit(testDev, fitN(6)).Do(x, k)
			if err != nil {
				t.Fatal(err)
			}
			_, err = gradOf(NewConvFit(testDev, fitN(6)), wrt).Do(x, k, y, convTensor(15, 2, 2, 5, 7))
			gmtest.WantErr(t, err, name, `"grad"`, "(2, 2, 6, 7)", "(2, 2, 5, 7)")
			g := convTensor(16, 2, 2, 6, 7)
			_, err = gradOf(NewConvFit(testDev, fitN(6)), wrt).Do(x, k, y, convWith(g, 3, math.NaN()))
			gmtest.WantErr(t, err, name, `"grad"`, "NaN")
			_, err = gradOf(NewConvFit(testDev, fitN(6)), wrt).Do(convWith(x.Clone().(*tensor.Dense), 1+2, -1), k, y, convTensor(16, 2, 2, 6, 7))
			gmtest.WantErr(t, err, name, `"data"`, "not positive definite")
		})
	}
}

// TestKeepLargestOrder checks that the kept components are the largest
// weights, largest first, copied unchanged.
func TestKeepLargestOrder(t *testing.T) {
	x := convTensor(17, 1, 1, 5, 7)
	v := x.Data().([]float64)
	for i, w := range []float64{0.3, 2, -1, 2, 0.5} {
		v[7*i] = w
	}
	y, err := NewKeepLargest(testDev, 3).Do(x)
	if err != nil {
		t.Fatal(err)
	}
	got := y.Data().([]float64)
	for i, src := range []int{1, 3, 4} { // equal weights keep their order
		for j := range 7 {
			if got[7*i+j] != v[7*src+j] {
				t.Fatalf("slot %d: %v, want component %d %v", i, got[7*i:7*i+7], src, v[7*src:7*src+7])
			}
		}
	}
}

// TestKeepLargestBadInput checks the errors of gm.KeepLargest.
func TestKeepLargestBadInput(t *testing.T) {
	for _, c := range []struct {
		name     string
		np       int
		x        *tensor.Dense
		contains []string
	}{
		{"np = 0", 0, convTensor(1, 2, 3, 4, 7), []string{"np must be in [1, N = 4]", "got 0"}},
		{"np > N", 5, convTensor(1, 2, 3, 4, 7), []string{"np must be in [1, N = 4]", "got 5"}},
		{"rank 3", 2, convTensor(1, 2, 4, 7), []string{`"mixture"`, "rank 4"}},
		{"NaN", 2, convWith(convTensor(2, 2, 3, 4, 7), 8, math.NaN()), []string{`"mixture"`, "NaN"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewKeepLargest(testDev, c.np).Do(c.x)
			gmtest.WantErr(t, err, append([]string{"gm.KeepLargest"}, c.contains...)...)
		})
	}
}
