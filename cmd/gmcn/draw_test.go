package main

import (
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/gmcn-go/gmcn/dataset"
	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// TestDensityTiles checks every pixel of a drawn Gaussian against its
// closed form, with x along a row and y down the rows, and that mixtures
// that cannot be drawn are errors, not panics.
func TestDensityTiles(t *testing.T) {
	// w = 3 at (1, 2), Σ = 0.5·I, over [0, 4]² in 4×4 pixels.
	g := []float64{3, 1, 2, 0.5, 0, 0, 0.5}
	l := mixture.Layout{B: 1, C: 1, N: 1, D: 2}
	tiles, err := densityTiles(g, l, 4, [4]float64{0, 4, 0, 4})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, 16)
	for i := range want {
		x, y := float64(i%4)+0.5, float64(i/4)+0.5
		want[i] = 3 / (2 * math.Pi * 0.5) * math.Exp(-((x-1)*(x-1) + (y-2)*(y-2)))
	}
	gmtest.WantClose(t, "density", tiles[0], want, 1e-12)

	for _, c := range []struct {
		name string
		data []float64
		l    mixture.Layout
		want string
	}{
		{"3D", make([]float64, 13), mixture.Layout{B: 1, C: 1, N: 1, D: 3}, "only 2D mixtures"},
		{"not positive definite", []float64{1, 0, 0, -1, 0, 0, 1}, l, "render"},
		{"short", g[:5], l, "render"},
	} {
		_, err = densityTiles(c.data, c.l, 4, [4]float64{0, 4, 0, 4})
		gmtest.WantErr(t, err, c.want)
	}
}

// TestDrawFigures writes the three figures of the render command from
// generated inputs and kernels and checks that each is a PNG.
func TestDrawFigures(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	dir := t.TempDir()
	positive := gmtest.Spec{WeightMin: 0.5, WeightMax: 2, Spread: 10, CovScale: 4, CovDiag: 1}
	in2 := &dataset.Inputs{Layout: dataset.FitLayout(3, 4, 2), Labels: []int{0, 9, 3}, Classes: 10}
	in2.Mixtures = gmtest.Mixtures[float32](rng, positive, 3, 1, 4, 2)
	for i := range 3 * 4 { // move the 2D inputs into the 28×28 frame
		in2.Mixtures[7*i+1] += 14
		in2.Mixtures[7*i+2] += 14
	}
	in3 := &dataset.Inputs{Layout: dataset.FitLayout(4, 5, 3), Labels: []int{0, 1, 1, 2}, Classes: 3}
	in3.Mixtures = gmtest.Mixtures[float32](rng, positive, 4, 1, 5, 3)
	kl := mixture.Layout{B: 3, C: 2, N: 5, D: 2}
	kernels := gmtest.Mixtures[float64](rng, gmtest.StandardSpec(), 3, 2, 5, 2)

	for _, c := range []struct {
		name string
		draw func(path string) error
	}{
		{"inputs2d.png", func(p string) error { return writeInputs2D(p, in2, 3, 24, "mnist", []string{"0", "1"}) }},
		{"kernels.png", func(p string) error { return writeKernels(p, kernels, kl, 24, 4) }},
		{"inputs3d.png", func(p string) error { return render3D(p, in3, 3, 24, []string{"chair", "table", "bed"}) }},
	} {
		path := filepath.Join(dir, c.name)
		if err := c.draw(path); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(f); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		f.Close()
	}
}

// TestClassName checks the fallback to the label where names are missing.
func TestClassName(t *testing.T) {
	names := []string{"chair", "table"}
	for label, want := range map[int]string{0: "chair", 1: "table", 2: "2", -1: "-1"} {
		if got := className(names, label); got != want {
			t.Errorf("className(%d) = %q, want %q", label, got, want)
		}
	}
}
