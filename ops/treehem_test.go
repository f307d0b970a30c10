package ops

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gmcn-go/gmcn/internal/gmtest"
)

// treehemSeparated returns a float64 mixture [B, C, N, ·] whose components
// sit on a jittered grid with spacing 1.5, so that no decision of TreeHEM
// (Morton order, clustering, KL mask, selection) changes under the small
// perturbations of a finite-difference check.
func treehemSeparated(rng *rand.Rand, b, c, n, d int) *tensor.Dense {
	x := randomMixture(rng, b, c, n, d)
	data := x.Data().([]float64)
	s := 1 + d + d*d
	for k := 0; k < len(data); k += s {
		i := (k / s) % n
		data[k] = 0.5 + rng.Float64()
		for j := range d {
			data[k+1+j] = 1.5*float64((i>>(2*j))&3) + 0.2*rng.Float64()
		}
	}
	return x
}

// TestTreeHEMGraphGrad checks the graph gradient of TreeHEM, also with
// UnderFill, whose padding {0, 0, s·I} (in every case here, reduced or passed
// through with N ≤ Np) depends on every input covariance through s and
// receives a non-zero part of the random output gradient.
func TestTreeHEMGraphGrad(t *testing.T) {
	for _, c := range []struct {
		d, n, np, t int
		under       bool
	}{
		{2, 11, 4, 2, false}, {3, 11, 5, 2, false}, {2, 13, 4, 4, false}, {3, 13, 6, 4, false},
		{2, 11, 4, 2, true}, {3, 13, 8, 4, true}, {2, 5, 8, 2, true}, {3, 4, 6, 4, true},
	} {
		t.Run(fmt.Sprintf("%dD_N%d_Np%d_T%d_under%v", c.d, c.n, c.np, c.t, c.under), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, uint64(c.d*100+c.n)))
			x := treehemSeparated(rng, 2, 1, c.n, c.d)
			checkGraphGrad(t, rng, []*tensor.Dense{x}, func(in []*G.Node) (*G.Node, error) {
				return G.ApplyOp(NewTreeHEM(testDev, c.np, TreeHEMOptions{Reduction: c.t, UnderFill: c.under}), in[0])
			}, 0)
		})
	}
}

func TestTreeHEMOpErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	good := randomMixture(rng, 1, 2, 10, 2)
	nan := randomMixture(rng, 1, 2, 10, 2)
	nan.Data().([]float64)[3] = 1 / zero()
	nonSPD := randomMixture(rng, 1, 2, 10, 3)
	nonSPD.Data().([]float64)[13+4] = -2
	bad4 := tensor.New(tensor.WithShape(1, 2, 10, 8), tensor.Of(tensor.Float64))
	rank3 := tensor.New(tensor.WithShape(2, 10, 7), tensor.Of(tensor.Float64))
	cases := []struct {
		name string
		np   int
		o    TreeHEMOptions
		x    *tensor.Dense
		want []string
	}{
		{"Np=0", 0, TreeHEMOptions{Reduction: 2}, good, []string{"gm.TreeHEM", "mixture", "Np = 0"}},
		{"Np=2000", 2000, TreeHEMOptions{Reduction: 2}, good, []string{"gm.TreeHEM", "Np = 2000", "1024"}},
		{"Np<T", 2, TreeHEMOptions{Reduction: 4}, good, []string{"gm.TreeHEM", "Np = 2", "T = 4"}},
		{"T=5", 8, TreeHEMOptions{Reduction: 5}, good, []string{"gm.TreeHEM", "T = 5", "2, 4 or 8"}},
		{"packed length 8", 4, TreeHEMOptions{Reduction: 2}, bad4, []string{"gm.TreeHEM", "mixture", "length 8"}},
		{"rank 3", 4, TreeHEMOptions{Reduction: 2}, rank3, []string{"gm.TreeHEM", "mixture", "rank 4"}},
		{"Inf", 4, TreeHEMOptions{Reduction: 2}, nan, []string{"gm.TreeHEM", "mixture", "non-finite"}},
		{"non-SPD", 4, TreeHEMOptions{Reduction: 2}, nonSPD, []string{"gm.TreeHEM", "mixture", "positive definite"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewTreeHEM(testDev, c.np, c.o).Do(c.x)
			gmtest.WantErr(t, err, c.want...)
		})
	}
	big := tensor.New(tensor.WithShape(1, 1, 65535, 7), tensor.Of(tensor.Float32))
	if _, err := NewTreeHEM(testDev, 4, TreeHEMOptions{Reduction: 2}).(*op).InferShape(big.Shape()); err == nil || !strings.Contains(err.Error(), "N = 65535") {
		t.Errorf("N = 65535: error %v", err)
	}
}

func zero() float64 { return 0 }
