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

// TestCoarseWeight checks the coarse rule and its slopes on every branch:
// a + κ above or below 0, a of either sign or 0, κ of either sign or 0.
func TestCoarseWeight(t *testing.T) {
	ref, _ := ReLUFitOptions{}.Resolve()
	paper, _ := ReLUFitOptions{Variant: ReLUFitPaper}.Resolve()
	for _, c := range []struct {
		p                  ReLUFitParams
		a, kappa, want     float64
		wantDa, wantDkappa float64
	}{
		{ref, -2, 0, 0.1, 0, 0}, {ref, 0, 0, 0.1, 0, 0}, {ref, 0.5, 0, 0.6, 1, 0},
		{paper, -2, 0, 1e-3, 0, 0}, {paper, 0, 0, 1e-3, 0, 0}, {paper, 0.5, 0, 0.5, 1, 0},
		// κ > 0: a kept where a + κ > 0 (|a| for a < 0), κ where it is not.
		{ref, 0.5, 0.3, 0.6, 1, 0}, {ref, -0.2, 0.3, 0.3, -1, 0}, {ref, -0.5, 0.3, 0.4, 0, 1}, {ref, 0, 0.3, 0.1, 0, 0},
		{paper, -0.2, 0.3, 0.2, -1, 0}, {paper, -0.5, 0.3, 0.3, 0, 1}, {paper, 0, 0.3, 1e-3, 0, 0},
		// κ < 0: a kept where a > −κ, else a_init = −κ⁺ = 0.
		{ref, 0.5, -0.3, 0.6, 1, 0}, {ref, 0.2, -0.3, 0.1, 0, 0}, {paper, 0.2, -0.3, 1e-3, 0, 0},
		// The kink a + κ = 0 belongs to the clamped side.
		{ref, -0.3, 0.3, 0.4, 0, 1},
	} {
		got := CoarseWeight(c.p, c.a, c.kappa)
		da, dk := CoarseSlopes(c.a, c.kappa)
		if math.Abs(got-c.want) > 1e-15 || da != c.wantDa || dk != c.wantDkappa {
			t.Errorf("paper=%v a=%g κ=%g: CoarseWeight %g, slopes (%g, %g); want %g, (%g, %g)",
				c.p.Paper, c.a, c.kappa, got, da, dk, c.want, c.wantDa, c.wantDkappa)
		}
	}
	// κ = 0 is the rule without a constant bit for bit, −0 included.
	for _, a := range []float32{-3, -1e-30, float32(math.Copysign(0, -1)), 0, 1e-30, 0.7} {
		if got, want := CoarseWeight(ref, a, 0), max(a, 0)+float32(ref.Coarse); math.Float32bits(got) != math.Float32bits(want) {
			t.Errorf("reference a=%g κ=0: %g, want max(a, 0) + coarse = %g", a, got, want)
		}
		want := float32(paper.Floor)
		if a > 0 {
			want = a
		}
		if got := CoarseWeight(paper, a, 0); math.Float32bits(got) != math.Float32bits(want) {
			t.Errorf("paper a=%g κ=0: %g, want %g", a, got, want)
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

// TestVariants checks the External names with a variant: Extern takes them
// exactly, Check accepts only a method's own variants, and Placement lists
// the ones computed in Go.
func TestVariants(t *testing.T) {
	ext := Computations()
	ext["ReLUFit/refined"] = true
	d := &Device{Name: "gpu", External: ext}
	if !d.Extern("ReLUFit/refined") || d.Extern("ReLUFit/constant") || !d.Extern("ReLUFit") {
		t.Error("Extern does not take the variants exactly")
	}
	want := "gpu; in Go on the CPU: ReLUFit/constant, ReLUFit/targets, ReLUFitBackward/constant, ReLUFitBackward/refined, ReLUFitBackward/targets, ReLUFitSaving/constant, ReLUFitSaving/refined, ReLUFitSaving/targets"
	if got := d.Placement(); got != want {
		t.Errorf("Placement() = %q, want %q", got, want)
	}
	if got := (&Device{Name: "cpu"}).Placement(); got != "cpu (every computation in Go)" {
		t.Errorf("Placement() of a Go device = %q", got)
	}
	for name, want := range map[string]string{"ReLUFit/fast": `"ReLUFit/fast", but ReLUFit has the variants [constant targets refined]`, "Conv/constant": `"Conv/constant", but Conv has the variants []`} {
		err := (&Device{Name: "y", F32: noKernels[float32]{}, F64: noKernels[float64]{}, External: map[string]bool{name: true}}).Check()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check with External %q: %v, want an error containing %q", name, err, want)
		}
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

// noKernels satisfies Kernels for Check, which does not call them.
type noKernels[T Float] struct{ Kernels[T] }
