package dataset

import (
	"math"
	"strings"
	"testing"
)

// TestFitConfigValidate checks that the defaults are valid and that every
// invalid setting of either dimension is reported by name.
func TestFitConfigValidate(t *testing.T) {
	for _, d := range []int{2, 3} {
		if err := DefaultFitConfig(d).Validate(); err != nil {
			t.Errorf("DefaultFitConfig(%d): %v", d, err)
		}
	}
	for _, c := range []struct {
		dim    int
		change func(*FitConfig)
		want   string
	}{
		{2, func(c *FitConfig) { c.Dim = 4 }, "Dim = 4"},
		{2, func(c *FitConfig) { c.K = 0 }, "K = 0"},
		{2, func(c *FitConfig) { c.Points = 5 }, "5 points"},
		{2, func(c *FitConfig) { c.Method = 7 }, "unknown method"},
		{2, func(c *FitConfig) { c.Method = FPSMStep }, "method fps fits 3D data, the data is 2D"},
		{2, func(c *FitConfig) { c.EMSteps = -1 }, "EMSteps = -1"},
		{2, func(c *FitConfig) { c.Method, c.EMSteps = RandomInit, 0 }, "random init needs"},
		{2, func(c *FitConfig) { c.Tol = math.NaN() }, "Tol = NaN"},
		{2, func(c *FitConfig) { c.RegCovar = 0 }, "RegCovar = 0"},
		{2, func(c *FitConfig) { c.RegCovar = math.Inf(1) }, "RegCovar = +Inf"},
		{2, func(c *FitConfig) { c.LloydIters = 0 }, "LloydIters = 0"},
		{2, func(c *FitConfig) { c.NormPoints = 1 }, "NormPoints = 1"},
		{3, func(c *FitConfig) { c.K = 0 }, "K = 0"},
		{3, func(c *FitConfig) { c.Points = -1 }, "Points = -1"},
		{3, func(c *FitConfig) { c.Method = KMeansInit }, "method kmeans fits 2D data, the data is 3D"},
		{3, func(c *FitConfig) { c.Method = -1 }, "unknown method"},
		{3, func(c *FitConfig) { c.LloydIters = -1 }, "LloydIters = -1"},
		{3, func(c *FitConfig) { c.Eps = 0 }, "Eps = 0"},
		{3, func(c *FitConfig) { c.Eps = math.Inf(1) }, "Eps = +Inf"},
	} {
		cfg := DefaultFitConfig(c.dim)
		c.change(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%dD config %v: error %v, want one containing %q", c.dim, cfg, err, c.want)
		}
	}
}

// TestFitConfigString checks that every setting that changes a fit of its
// dimension is in the cache key text, and that the name of a method parses
// back to it.
func TestFitConfigString(t *testing.T) {
	two := DefaultFitConfig(2)
	if s := two.String(); s != "fit 2D: K=64 points=4000 method=kmeans em_steps=1 tol=5e-05 reg_covar=0.1 lloyd_iters=100 norm_points=1000 seed=1" {
		t.Errorf("2D: %q", s)
	}
	three := DefaultFitConfig(3)
	if s := three.String(); s != "fit 3D: K=128 points=10000 method=fps eps=1e-05 normalize=true seed=1" {
		t.Errorf("3D: %q", s)
	}
	three.Method = KMeansEM
	if s := three.String(); !strings.Contains(s, "lloyd_iters=20 em_steps=1") {
		t.Errorf("3D k-means + EM: %q", s)
	}
	for _, m := range []Method{KMeansInit, RandomInit, FPSMStep, KMeansEM} {
		if got, err := ParseMethod(m.String()); err != nil || got != m {
			t.Errorf("ParseMethod(%q) = %v, %v", m, got, err)
		}
	}
	if _, err := ParseMethod("em"); err == nil || !strings.Contains(err.Error(), `"em"`) {
		t.Errorf("ParseMethod(\"em\"): error %v", err)
	}
}
