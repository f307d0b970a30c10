package runspec

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/dataset"
	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/models"
	"github.com/gmcn-go/gmcn/ops"
)

// TestResolvePresets checks that every preset resolves, with the model's
// dimension and the fit's taken from the data set and K from the layer
// string.
func TestResolvePresets(t *testing.T) {
	for name, c := range Presets {
		s, err := Resolve(c)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		wantDim := 2
		if strings.HasPrefix(c.Dataset, "modelnet") {
			wantDim = 3
		}
		if s.Model.D != wantDim || s.Fit.Dim != wantDim || s.Fit.K != s.Model.Layout.InputGaussians || s.CacheDir != "cache" {
			t.Errorf("%s: model D = %d, fit %v, cache %q", name, s.Model.D, s.Fit, s.CacheDir)
		}
	}
}

// TestResolveFit checks how the Config's fit settings map onto the fit
// config of each dimension.
func TestResolveFit(t *testing.T) {
	c := Presets["demo"]
	c.Dataset, c.FitEM, c.FitInit = "", 0, "random"
	if _, err := Resolve(c); err == nil || !strings.Contains(err.Error(), "random init needs EMSteps ≥ 1") {
		t.Errorf("2D random init without EM: error %v", err)
	}
	c.FitEM = 3
	s, err := Resolve(c)
	if err != nil {
		t.Fatal(err)
	}
	want := dataset.DefaultFitConfig(2)
	want.K, want.EMSteps, want.Method = 16, 3, dataset.RandomInit
	if s.Fit != want || s.Dataset != "mnist" {
		t.Errorf("2D: fit %v, dataset %q; want %v on mnist", s.Fit, s.Dataset, want)
	}
	m := Presets["modelnet-cpu"]
	m.FitEM, m.FitPoints = 0, 500
	if s, err = Resolve(m); err != nil {
		t.Fatal(err)
	}
	want = dataset.DefaultFitConfig(3)
	want.K, want.Points = 32, 500
	if s.Fit != want {
		t.Errorf("3D: fit %v, want %v (EM steps 0 keeps the default)", s.Fit, want)
	}
}

// TestResolveBias checks that run.json's bias names the model's bias type,
// none when it is left out, as in the files written before it existed.
func TestResolveBias(t *testing.T) {
	for name, want := range map[string]models.BiasType{"": models.BiasNone, "none": models.BiasNone,
		"normal": models.BiasNormal, "negative-softplus": models.BiasNegativeSoftplus} {
		c := Presets["demo"]
		c.Bias = name
		s, err := Resolve(c)
		if err != nil {
			t.Errorf("bias %q: %v", name, err)
		} else if s.Model.Bias != want {
			t.Errorf("bias %q: model bias %v, want %v", name, s.Model.Bias, want)
		}
	}
}

// TestResolveFusedTargets checks that run.json's fused targets reach the
// model, coarse when they are left out, as in the files written before
// they existed.
func TestResolveFusedTargets(t *testing.T) {
	for _, c := range []struct {
		targets     string
		exact, near bool
	}{{"", false, false}, {"coarse", false, false}, {"exact", true, false}, {"Exact", true, false}, {"near", false, true}} {
		rc := Presets["paper-fused"]
		rc.FusedTargets = c.targets
		s, err := Resolve(rc)
		if err != nil {
			t.Errorf("fused targets %q: %v", c.targets, err)
		} else if s.Model.FusedExact != c.exact || s.Model.FusedNear != c.near {
			t.Errorf("fused targets %q: model exact %v near %v, want %v, %v", c.targets, s.Model.FusedExact, s.Model.FusedNear, c.exact, c.near)
		}
	}
}

// TestResolveFusedNear checks that near-group targets reach the model with
// their radius (0 when run.json gives none: each centroid's own group), and
// that a radius without them is refused.
func TestResolveFusedNear(t *testing.T) {
	for _, r := range []float64{0, 2.5} {
		rc := Presets["paper-fused"]
		rc.FusedTargets, rc.FusedNear = "near", r
		s, err := Resolve(rc)
		if err != nil {
			t.Fatal(err)
		}
		if !s.Model.FusedNear || s.Model.FusedNearRadius != r || s.Model.FusedExact {
			t.Errorf("fused_near %g: model near %v radius %g (exact %v)", r, s.Model.FusedNear, s.Model.FusedNearRadius, s.Model.FusedExact)
		}
	}
	rc := Presets["paper-fused"]
	rc.FusedNear = 1.5 // without fused_targets: a radius asks for them
	if s, err := Resolve(rc); err != nil || !s.Model.FusedNear || s.Model.FusedNearRadius != 1.5 || s.Run.FusedTargets != "near" {
		t.Errorf("fused_near 1.5 alone: %v", err)
	}
	rc.FusedTargets, rc.FusedNear = "exact", 2
	_, err := Resolve(rc)
	gmtest.WantErr(t, err, `fused_near 2 needs fused targets "near", not "exact"`)
	rc.FusedTargets, rc.FusedNear = "near", -1
	_, err = Resolve(rc)
	gmtest.WantErr(t, err, "fused_near is -1")
}

// TestFusedDefaults checks the fused settings whose 0 means a default:
// the selection's priority factor of negative groups and the least
// component count. A new configuration without one gets the default, which
// Resolve writes into the run; a given one reaches the model; a saved fused
// run without one (from before it existed) loads as 1, the rule it was
// trained with, while an unfused one keeps 0.
func TestFusedDefaults(t *testing.T) {
	for _, f := range []struct {
		name  string
		set   func(*Config, float64)
		run   func(Config) float64
		model func(models.Config) float64
		def   float64
		given []float64
	}{
		{"fused_negative", func(c *Config, v float64) { c.FusedNegative = v }, func(c Config) float64 { return c.FusedNegative },
			func(m models.Config) float64 { return m.FusedNegative }, ops.DefaultConvFitNegative, []float64{1, 0.25}},
		{"fused_min", func(c *Config, v float64) { c.FusedMin = int(v) }, func(c Config) float64 { return float64(c.FusedMin) },
			func(m models.Config) float64 { return float64(m.FusedMin) }, models.DefaultFusedMin, []float64{1, 200}},
	} {
		for _, given := range append([]float64{0}, f.given...) {
			rc := Presets["paper-fused"]
			f.set(&rc, given)
			s, err := Resolve(rc)
			if err != nil {
				t.Fatal(err)
			}
			want := given
			if given == 0 {
				want = f.def
			}
			if got, model := f.run(s.Run), f.model(s.Model); got != want || model != want {
				t.Errorf("%s %g: run %g, model %g; want %g", f.name, given, got, model, want)
			}
		}
		for _, c := range []struct {
			preset string
			want   float64
		}{{"paper-fused", 1}, {"paper", 0}} {
			dir := t.TempDir()
			if err := SaveConfig(dir, Presets[c.preset]); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(filepath.Join(dir, ConfigFile))
			if err != nil || strings.Contains(string(data), f.name) {
				t.Fatalf("%s: run.json %s, %v; want one without %s", c.preset, data, err, f.name)
			}
			got, err := LoadConfig(dir)
			if err != nil || f.run(got) != c.want {
				t.Errorf("%s: a saved run without %s loads %g, %v; want %g", c.preset, f.name, f.run(got), err, c.want)
			}
		}
	}
}

func TestResolveErrors(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"dataset", func(c *Config) { c.Dataset = "cifar" }, `unknown dataset "cifar" (want fashion-mnist, mnist, modelnet10, modelnet40)`},
		{"layers", func(c *Config) { c.Layers = "1/16 -> " }, "layer"},
		{"radii count", func(c *Config) { c.Radii = []float64{1} }, "1 radii for 3 blocks"},
		{"radius", func(c *Config) { c.Radii = []float64{1, 0, 1} }, "radius 2 is 0"},
		{"radius NaN", func(c *Config) { c.Radii = []float64{1, 1, math.NaN()} }, "radius 3 is NaN"},
		{"radius Inf", func(c *Config) { c.Radii = []float64{math.Inf(1), 1, 1} }, "radius 1 is +Inf"},
		{"classes", func(c *Config) { c.Layers = "1/16 -> 8/8 -> 16/4 -> 7" }, "end in 7 channels but mnist has 10 classes"},
		{"batch", func(c *Config) { c.Batch = 0 }, "batch is 0, want ≥ 1"},
		{"lr NaN", func(c *Config) { c.LR = math.NaN() }, "lr is NaN, want a finite number > 0"},
		{"lr Inf", func(c *Config) { c.LR = math.Inf(1) }, "lr is +Inf"},
		{"decay", func(c *Config) { c.DecayRate = -0.5 }, "weight_decay_rate is -0.5"},
		{"test limit", func(c *Config) { c.TestLimit = -5 }, "test_limit is -5"},
		{"kernel", func(c *Config) { c.Kernel = -1 }, "kernel_gaussians is -1"},
		{"classes 3D", func(c *Config) { c.Dataset, c.FitInit = "modelnet40", "fps" }, "end in 10 channels but modelnet40 has 40 classes"},
		{"reduction", func(c *Config) { c.Reduction = "median" }, `unknown reduction "median"`},
		{"bias", func(c *Config) { c.Bias = "positive" }, `unknown bias type "positive" (want none, normal or negative-softplus)`},
		{"fused targets", func(c *Config) { c.FusedTargets = "fine" }, `unknown fused targets "fine" (want coarse, exact or near)`},
		{"fused negative", func(c *Config) { c.Fused, c.FusedNegative = 16, -0.5 }, "fused_negative is -0.5, want a finite number > 0"},
		{"fused negative NaN", func(c *Config) { c.Fused, c.FusedNegative = 16, math.NaN() }, "fused_negative is NaN"},
		{"fused negative Inf", func(c *Config) { c.Fused, c.FusedNegative = 16, math.Inf(1) }, "fused_negative is +Inf"},
		{"fused min", func(c *Config) { c.Fused, c.FusedMin = 16, -1 }, "fused_min is -1, want ≥ 1"},
		{"fit init", func(c *Config) { c.FitInit = "fps" }, "method fps fits 3D data, the data is 2D"},
		{"fit name", func(c *Config) { c.FitInit = "em" }, `fit method "em"`},
	} {
		rc := Presets["demo"]
		c.change(&rc)
		if _, err := Resolve(rc); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}
