package device

import (
	"math"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/ops/mixture"
)

func TestReLUFitOptionsResolve(t *testing.T) {
	for _, c := range []struct {
		name string
		o    ReLUFitOptions
		want ReLUFitParams
	}{
		{"zero value", ReLUFitOptions{}, ReLUFitParams{Coarse: DefaultReLUFitCoarseOffset, Off: DefaultReLUFitOffset}},
		{"reference set", ReLUFitOptions{CoarseOffset: 0.3, Offset: 0.2, Epsilon: 9}, ReLUFitParams{Coarse: 0.3, Off: 0.2}},
		{"paper default", ReLUFitOptions{Variant: ReLUFitPaper, Offset: 7}, ReLUFitParams{Paper: true, Floor: DefaultReLUFitEpsilon}},
		{"paper set", ReLUFitOptions{Variant: ReLUFitPaper, Epsilon: 0.01}, ReLUFitParams{Paper: true, Floor: 0.01}},
	} {
		got, err := c.o.Resolve()
		if err != nil || got != c.want {
			t.Errorf("%s: Resolve() = %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
	for _, c := range []struct {
		o    ReLUFitOptions
		want string
	}{
		{ReLUFitOptions{Offset: -1}, "ReLUFitOptions.Offset"},
		{ReLUFitOptions{CoarseOffset: math.NaN()}, "ReLUFitOptions.CoarseOffset"},
		{ReLUFitOptions{Epsilon: math.Inf(1)}, "ReLUFitOptions.Epsilon"},
		{ReLUFitOptions{Variant: 7}, "Variant 7"},
	} {
		if _, err := c.o.Resolve(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", c.o, err, c.want)
		}
	}
}

func TestCoarseWeight(t *testing.T) {
	ref, _ := ReLUFitOptions{}.Resolve()
	paper, _ := ReLUFitOptions{Variant: ReLUFitPaper}.Resolve()
	for _, c := range []struct {
		p       ReLUFitParams
		a, want float64
	}{
		{ref, -2, 0.1}, {ref, 0.5, 0.6}, {paper, -2, 1e-3}, {paper, 0, 1e-3}, {paper, 0.5, 0.5},
	} {
		if got := CoarseWeight(c.p, c.a); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("CoarseWeight(%+v, %g) = %g, want %g", c.p, c.a, got, c.want)
		}
	}
}

func TestTreeHEMOptionsCheck(t *testing.T) {
	l := mixture.Layout{B: 2, C: 3, N: 100, D: 2}
	if err := (TreeHEMOptions{Reduction: 2}).Check(l, 16); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		o    TreeHEMOptions
		l    mixture.Layout
		np   int
		want string
	}{
		{TreeHEMOptions{}, l, 16, "reduction T = 0"},
		{TreeHEMOptions{Reduction: 4}, l, 2, "smaller than the reduction"},
		{TreeHEMOptions{Reduction: 2}, l, TreeHEMMaxNp + 1, "Np = 1025"},
		{TreeHEMOptions{Reduction: 2}, mixture.Layout{B: 1, C: 1, N: TreeHEMMaxN + 1, D: 2}, 16, "16-bit"},
	} {
		if err := c.o.Check(c.l, c.np); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v np=%d: error %v, want one containing %q", c.o, c.np, err, c.want)
		}
	}
}

func TestComputations(t *testing.T) {
	all := Computations()
	for _, name := range []string{"Conv", "ReLUFitBackward", "TreeHEM", "AssembleKernelBackward", "ScaleWeights"} {
		if !all[name] {
			t.Errorf("Computations() lacks %s", name)
		}
	}
	d := &Device{Name: "x", External: map[string]bool{"Conv": true}}
	if !d.Extern("Integrate", "Conv") || d.Extern("Integrate") || (&Device{}).Extern("Conv") {
		t.Error("Extern does not report exactly the external computations")
	}
}

func TestConvLayoutAndCovScaleFactor(t *testing.T) {
	got := ConvLayout(mixture.Layout{B: 4, C: 3, N: 5, D: 3}, mixture.Layout{B: 8, C: 3, N: 2, D: 3})
	if want := (mixture.Layout{B: 4, C: 8, N: 30, D: 3}); got != want {
		t.Errorf("ConvLayout = %+v, want %+v", got, want)
	}
	if s, ok := CovScaleFactor(2, 8); !ok || s != 0.5 {
		t.Errorf("CovScaleFactor(2, 8) = %g, %v; want 0.5, true", s, ok)
	}
	for _, tau := range []float64{0, -1, math.Inf(1), math.NaN()} {
		if _, ok := CovScaleFactor(3, tau); ok {
			t.Errorf("CovScaleFactor(3, %g) accepted", tau)
		}
	}
}
