package models

import (
	"math"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/gmnode"
	"github.com/gmcn-go/gmcn/internal/gmtest"
	"gorgonia.org/tensor"
)

// TestBuildModelNet10ParamCount builds the paper's ModelNet10 network as a
// graph and checks the printed parameter count against the paper's 216,841.
func TestBuildModelNet10ParamCount(t *testing.T) {
	l, err := ParseLayout("1/128 → 8/64 → 16/32 → 32/16 → 64/8 → 10")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Build(Config{Layout: l, D: 3, Classes: 10, Batch: 2, Dtype: tensor.Float32})
	if err != nil {
		t.Fatal(err)
	}
	paper, total := m.ParamCount()
	if paper != 216841 {
		t.Errorf("GM parameters %d, the paper reports 216,841", paper)
	}
	// Gorgonia's BatchNorm adds a scale and a bias per class.
	if total != 216841+20 {
		t.Errorf("trained parameters %d, want 216,861", total)
	}
	table := m.Table()
	for _, want := range []string{"216841 GM", "(2, 8, 640, 13)", "(2, 16, 32, 13)", "(2, 10, 2560, 13)", "(2, 10)"} {
		if !strings.Contains(table, want) {
			t.Errorf("layer table lacks %q:\n%s", want, table)
		}
	}
}

func TestBuildConfigErrors(t *testing.T) {
	l, _ := ParseLayout("1/8 -> 4/4 -> 10")
	for name, c := range map[string]Config{
		"D = 4":             {Layout: l, D: 4, Classes: 10, Batch: 2},
		"batch 0":           {Layout: l, D: 2, Classes: 10, Batch: 0},
		"classes mismatch":  {Layout: l, D: 2, Classes: 5, Batch: 2},
		"one class":         {Layout: l, D: 2, Classes: 1, Batch: 2},
		"negative head":     {Layout: l, D: 2, Classes: 10, Batch: 2, DenseHead: -1},
		"negative fused":    {Layout: l, D: 2, Classes: 10, Batch: 2, Fused: -1},
		"no blocks in spec": {D: 2, Classes: 10, Batch: 2},
	} {
		if _, err := Build(c); err == nil {
			t.Errorf("%s: Build accepted an invalid config", name)
		}
	}
}

// TestConfigCheck checks that Check refuses, with the block and the op's
// reason, the layouts whose graph Build would fail to build, agrees with
// Build on each, and accepts the presets' layouts.
func TestConfigCheck(t *testing.T) {
	for _, c := range []struct {
		layout string
		fused  int
		red    gmnode.Reduction
		want   string // "" for a valid configuration
	}{
		{"1/64 -> 8/32 -> 16/16 -> 32/8 -> 64/4 -> 10", 0, gmnode.UseTreeHEM(2), ""},
		{"1/64 -> 8/32 -> 16/16 -> 32/8 -> 64/4 -> 10", 4, gmnode.UseTreeHEM(2), ""},
		{"1/16 -> 8/2000 -> 10", 0, gmnode.UseTreeHEM(2), "block 1 reduces 80 Gaussians per channel to 2000 with TreeHEM(T=2): output size Np = 2000"},
		{"1/16 -> 8/8 -> 16/1100 -> 10", 0, gmnode.UseMEM(), ""},
		{"1/16 -> 8/100 -> 10", 0, gmnode.UseKeepLargest(), "block 1 reduces 80 Gaussians per channel to 100 with KeepLargest"},
		{"1/16 -> 8/8 -> 16/8 -> 10", 0, gmnode.UseKeepLargest(), ""},
		{"1/14000 -> 8/8 -> 10", 0, gmnode.UseTreeHEM(2), "component count N = 70000 must be in [1, 65534]"},
	} {
		l, err := ParseLayout(c.layout)
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Layout: l, D: 2, Classes: 10, Batch: 1, Fused: c.fused, Reduction: c.red}
		err = cfg.Check()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s, %v: %v", c.layout, c.red, err)
		case c.want != "":
			gmtest.WantErr(t, err, c.want)
		}
		if _, berr := Build(cfg); (berr == nil) != (err == nil) {
			t.Errorf("%s, %v: Check says %v, Build %v", c.layout, c.red, err, berr)
		}
	}
}

// TestBuildFused builds the paper's ModelNet10 network with the fused
// convolution-fitting and checks each block's fused count
// n = min(max(F·N_p, FusedMin), Fi·Ni·N_k) in the layer table: the first
// block is capped by its 1·128·5 = 640 convolved Gaussians, blocks 2 and 3
// use F·N_p, and blocks 4 and 5, where F·N_p (F times the input count in the
// last block) is 64, the default floor 96. The table below adds the cases:
// the cap, the floor, no floor (1), the cap over the floor, the last block.
func TestBuildFused(t *testing.T) {
	l, err := ParseLayout("1/128 → 8/64 → 16/32 → 32/16 → 64/8 → 10")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Build(Config{Layout: l, D: 3, Classes: 10, Batch: 2, Fused: 8})
	if err != nil {
		t.Fatal(err)
	}
	table := m.Table()
	for _, want := range []string{"fused ×8", "fused conv-fit to 512 ÷ Fi", "(2, 8, 512, 13)", "(2, 16, 256, 13)",
		"conv4 (fused conv-fit to 96 ÷ Fi)", "(2, 10, 96, 13)", "(2, 10)"} {
		if !strings.Contains(table, want) {
			t.Errorf("layer table lacks %q:\n%s", want, table)
		}
	}
	if n := m.Config.FusedGaussians(l.Blocks[0], 1, 128); n != 512 {
		t.Errorf("block 1: n = %d, want 8·64 = 512", n)
	}
	for _, c := range []struct {
		cfg        Config
		np, fi, ni int
		want       int
	}{
		{Config{Fused: 8, KernelGaussians: 5}, 200, 1, 128, 640},
		{Config{Fused: 8, KernelGaussians: 5}, 4, 1, 128, DefaultFusedMin},
		{Config{Fused: 8, KernelGaussians: 5, FusedMin: 1}, 4, 1, 128, 32},
		{Config{Fused: 8, KernelGaussians: 5, FusedMin: 700}, 4, 1, 128, 640},
		{Config{Fused: 8, KernelGaussians: 5, FusedMin: 100}, 0, 8, 16, 128},
	} {
		if n := c.cfg.FusedGaussians(Block{Gaussians: c.np}, c.fi, c.ni); n != c.want {
			t.Errorf("F %d, floor %d, N_p %d, F_i·N_i %d·%d: n = %d, want %d", c.cfg.Fused, c.cfg.FusedMin, c.np, c.fi, c.ni, n, c.want)
		}
	}
}

// TestBuildFusedExact builds the demo's network fused ×16 with exact
// targets: block 1 keeps all 1·16·5 = 80 convolved Gaussians, where the fit
// sees the convolution itself and needs no exact targets; blocks 2 and 3
// fit the floor's 96 of 320 (16·4 = 64 without it) and get them.
func TestBuildFusedExact(t *testing.T) {
	l, err := ParseLayout("1/16 -> 8/8 -> 16/4 -> 10")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Build(Config{Layout: l, D: 2, Classes: 10, Batch: 2, Fused: 16, FusedExact: true})
	if err != nil {
		t.Fatal(err)
	}
	table := m.Table()
	for _, want := range []string{"fused ×16 (exact targets)", "conv1 (fused conv-fit to 80 ÷ Fi)",
		"conv2 (fused conv-fit to 96 ÷ Fi, exact targets)", "conv3 (fused conv-fit to 96 ÷ Fi, exact targets)"} {
		if !strings.Contains(table, want) {
			t.Errorf("layer table lacks %q:\n%s", want, table)
		}
	}
}

// TestBuildFusedNear builds the demo's network fused ×16 with near-group
// targets: like the exact targets, only blocks 2 and 3, which fit fewer
// Gaussians than they convolve, get them, inside their block ops.
func TestBuildFusedNear(t *testing.T) {
	l, err := ParseLayout("1/16 -> 8/8 -> 16/4 -> 10")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Build(Config{Layout: l, D: 2, Classes: 10, Batch: 2, Fused: 16, FusedNear: true, FusedNearRadius: 1.5})
	if err != nil {
		t.Fatal(err)
	}
	table := m.Table()
	for _, want := range []string{"fused ×16 (near-group targets, r = 1.5)", "conv1 (fused conv-fit to 80 ÷ Fi)",
		"conv2 (fused conv-fit to 96 ÷ Fi, near r=1.5)", "conv3 (fused conv-fit to 96 ÷ Fi, near r=1.5)"} {
		if !strings.Contains(table, want) {
			t.Errorf("layer table lacks %q:\n%s", want, table)
		}
	}
	if k := m.Config.FusedKey(); !strings.Contains(k, "targets near1.5") {
		t.Errorf("fused key %q does not name the near-group targets", k)
	}
}

// TestFusedNearErrors checks that Check refuses near-group targets the
// block op cannot compute, naming what is wrong.
func TestFusedNearErrors(t *testing.T) {
	l, err := ParseLayout("1/16 -> 8/8 -> 16/4 -> 10")
	if err != nil {
		t.Fatal(err)
	}
	base := Config{Layout: l, D: 2, Classes: 10, Batch: 2, Fused: 16, FusedNear: true}
	for _, c := range []struct {
		set  func(*Config)
		want string
	}{
		{func(c *Config) { c.FusedNearRadius = -1 }, "radius -1, want a number ≥ 0"},
		{func(c *Config) { c.FusedNearRadius = math.NaN() }, "radius NaN"},
		{func(c *Config) { c.FusedNear, c.FusedNearRadius = false, 1 }, "radius 1 without near-group targets"},
		{func(c *Config) { c.Fused = 0 }, "need the fused convolution-fitting"},
		{func(c *Config) { c.FusedExact = true }, "either exact or near-group"},
		{func(c *Config) { c.Bias = BiasNormal }, "cannot take biases"},
		{func(c *Config) { c.Reduction = gmnode.UseTreeHEM(8) }, "block 2 reduces with TreeHEM(T=8)"},
	} {
		cfg := base
		c.set(&cfg)
		gmtest.WantErr(t, cfg.Check(), c.want)
		if _, err := Build(cfg); err == nil {
			t.Errorf("Build accepted %+v", cfg)
		}
	}
}

// TestBuildKernelOptions checks that Config.Kernel reaches every block's
// kernel and AssembledKernel: with the float32 ε the float64 kernels of the
// same seed differ, and only on the covariance diagonals.
func TestBuildKernelOptions(t *testing.T) {
	l, err := ParseLayout("1/8 -> 4/4 -> 10")
	if err != nil {
		t.Fatal(err)
	}
	var kernels [2][][]float64
	for i, opts := range [][]gmnode.KernelOption{nil, {gmnode.KernelFloat32Epsilon()}} {
		m, err := Build(Config{Layout: l, D: 2, Classes: 10, Batch: 2, Dtype: tensor.Float64, Kernel: opts})
		if err != nil {
			t.Fatal(err)
		}
		for b, k := range m.Kernels {
			if k.Config().Float32Epsilon != (opts != nil) {
				t.Errorf("options %d, block %d: Float32Epsilon = %v", len(opts), b+1, k.Config().Float32Epsilon)
			}
			v, _, err := m.AssembledKernel(b)
			if err != nil {
				t.Fatal(err)
			}
			kernels[i] = append(kernels[i], v)
		}
	}
	for b := range kernels[0] {
		moved := 0
		for j, v := range kernels[0][b] {
			if kernels[1][b][j] == v {
				continue
			}
			if c := j%7 - 3; c != 0 && c != 3 {
				t.Fatalf("block %d: packed[%d] is not a diagonal covariance entry but moved", b+1, j)
			}
			moved++
		}
		if moved == 0 {
			t.Errorf("block %d: the float32 ε changed nothing", b+1)
		}
	}
}
