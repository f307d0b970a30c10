package ops

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// randomScales returns float64 factors of the given shape from gmtest.Scales.
func randomScales(rng *rand.Rand, shape ...int) *tensor.Dense {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(gmtest.Scales[float64](rng, n)))
}

// scalesOf returns a batch [2, 3, 4, ·] and factors [lead…, D] for
// TestGraphGrads and deviceCases.
func scalesOf(lead ...int) func(rng *rand.Rand, d int) []*tensor.Dense {
	return func(rng *rand.Rand, d int) []*tensor.Dense {
		return []*tensor.Dense{randomMixture(rng, 2, 3, 4, d), randomScales(rng, append(append([]int{}, lead...), d)...)}
	}
}

func mustScaleAxes(rank int) G.Op {
	o, err := NewScaleAxes(testDev, rank)
	if err != nil {
		panic(err)
	}
	return o
}

// TestScaleAxesBadInput checks that every bad input of gm.ScaleAxes, found
// at construction, in shape inference or in the values, is an error naming
// the op, the input, what was expected and what was found.
func TestScaleAxesBadInput(t *testing.T) {
	for _, rank := range []int{0, 4} {
		_, err := NewScaleAxes(testDev, rank)
		gmtest.WantErr(t, err, "gm.ScaleAxes", `"scales"`, "rank 1 [D], 2 [B, D] or 3 [B, C, D]", "got rank")
	}
	scales := func(v float64, shape ...int) *tensor.Dense {
		n := 1
		for _, s := range shape {
			n *= s
		}
		data := make([]float64, n)
		for i := range data {
			data[i] = 1.5
		}
		data[n-1] = v
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))
	}
	x2, x3 := convTensor(71, 2, 3, 4, 7), convTensor(72, 2, 3, 4, 13)
	cases := []struct {
		name     string
		rank     int
		x, s     *tensor.Dense
		contains []string
	}{
		{"scales rank not the op's", 2, x2, scales(1, 2), []string{`"scales"`, "rank 2", "(2) (rank 1)"}},
		{"[D] of the wrong D", 1, x2, scales(1, 3), []string{`"scales"`, "[D] = (2)", "2D mixture", "got (3)"}},
		{"[B, D] of the wrong B", 2, x3, scales(1, 3, 3), []string{`"scales"`, "[B, D] = (2, 3)", "3D mixture", "got (3, 3)"}},
		{"[B, D] of the wrong D", 2, x3, scales(1, 2, 2), []string{`"scales"`, "[B, D] = (2, 3)", "got (2, 2)"}},
		{"[B, C, D] of the wrong C", 3, x2, scales(1, 2, 2, 2), []string{`"scales"`, "[B, C, D] = (2, 3, 2)", "got (2, 2, 2)"}},
		{"mixture rank", 2, convTensor(73, 3, 4, 7), scales(1, 2, 2), []string{`"mixture"`, "rank 4", "rank 3"}},
		{"mixture packed length", 1, convTensor(74, 2, 3, 4, 8), scales(1, 2), []string{`"mixture"`, "length 8"}},
		{"zero factor", 2, x2, scales(0, 2, 2), []string{`"scales"`, "factor 0 of row 1, axis 1", "finite non-zero"}},
		{"negative zero factor", 1, x3, scales(math.Copysign(0, -1), 3), []string{`"scales"`, "factor -0 of row 0, axis 2", "finite non-zero"}},
		{"NaN factor", 3, x2, scales(math.NaN(), 2, 3, 2), []string{`"scales"`, "factor NaN of row 5, axis 1", "finite non-zero"}},
		{"Inf factor", 2, x3, scales(math.Inf(-1), 2, 3), []string{`"scales"`, "factor -Inf", "finite non-zero"}},
		{"non-SPD covariance", 2, convWith(convTensor(75, 2, 3, 4, 7), 3, -2), scales(1, 2, 2), []string{`"mixture"`, "not positive definite"}},
		{"NaN position", 2, convWith(convTensor(76, 2, 3, 4, 7), 1, math.NaN()), scales(1, 2, 2), []string{`"mixture"`, "non-finite"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := mustScaleAxes(c.rank).Do(c.x, c.s)
			gmtest.WantErr(t, err, append([]string{"gm.ScaleAxes"}, c.contains...)...)
		})
	}
	t.Run("dtype mismatch", func(t *testing.T) {
		_, err := mustScaleAxes(2).Do(x2, as32(scales(1, 2, 2)))
		gmtest.WantErr(t, err, "gm.ScaleAxes", `"scales" is float32`, `"mixture" is float64`)
	})
	// Valid inputs whose product leaves float32: s² = 1e40 overflows a
	// covariance, s² = 1e-50 rounds it to zero.
	for _, c := range []struct {
		name string
		s    float64
		want string
	}{{"overflow", 1e20, "non-finite"}, {"underflow", 1e-25, "not positive definite"}} {
		t.Run("float32 "+c.name, func(t *testing.T) {
			_, err := mustScaleAxes(1).Do(as32(x2), as32(scales(c.s, 2)))
			gmtest.WantErr(t, err, "gm.ScaleAxes", "output", `"scales" over- or underflow`, c.want)
		})
	}
	t.Run("grad shape", func(t *testing.T) {
		for i, name := range []string{"gm.ScaleAxesGradMixture", "gm.ScaleAxesGradScales"} {
			_, err := gradOf(mustScaleAxes(2), i).Do(x2, scales(1, 2, 2), x2, convTensor(77, 2, 3, 5, 7))
			gmtest.WantErr(t, err, name, `"grad"`, "(2, 3, 4, 7)", "(2, 3, 5, 7)")
		}
	})
}
