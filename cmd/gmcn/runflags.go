package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gmcn-go/gmcn/models"
	"github.com/gmcn-go/gmcn/ops"
	"github.com/gmcn-go/gmcn/runspec"
	"github.com/pkg/errors"
)

// runFlags are the flags that select a RunConfig: a preset and overrides of
// its settings. They come in groups (data, fitting, model, optimisation) so
// that each command registers only those that do something for it; only
// the flags given on the command line replace the preset's values.
type runFlags struct {
	preset string
	over   runspec.Config // the override flags' values
	radii  string
	root   string
	// apply copies the value of the flag of that name from over.
	apply map[string]func(*runspec.Config)
}

// presetDefault ends the usage of every override flag.
const presetDefault = " (default: the preset's)"

// field registers that the flag name sets the RunConfig field get returns,
// and returns that field of the overrides for the flag to write.
func field[T any](r *runFlags, name string, get func(*runspec.Config) *T) *T {
	if r.apply == nil {
		r.apply = map[string]func(*runspec.Config){}
	}
	r.apply[name] = func(c *runspec.Config) { *get(c) = *get(&r.over) }
	return get(&r.over)
}

func (r *runFlags) intField(f *flagSet, name string, get func(*runspec.Config) *int, lo, hi int, usage string) {
	intVar(f, field(r, name, get), name, lo, hi, usage+presetDefault)
}

func (r *runFlags) stringField(f *flagSet, name string, get func(*runspec.Config) *string, usage string) {
	f.StringVar(field(r, name, get), name, "", usage+presetDefault)
}

// presetFlag registers --preset.
func (r *runFlags) presetFlag(f *flagSet) {
	f.StringVar(&r.preset, "preset", "demo", "`NAME` of the settings to start from: "+strings.Join(presetNames(), ", "))
}

// dataFlags registers the data set, where it is, the input cache and the
// limits.
func (r *runFlags) dataFlags(f *flagSet) {
	r.stringField(f, "dataset", func(c *runspec.Config) *string { return &c.Dataset }, "`NAME` of the data set: "+strings.Join(runspec.DatasetNames(), ", "))
	r.stringField(f, "data", func(c *runspec.Config) *string { return &c.DataDir }, "`DIR` of the data: MNIST/Fashion-MNIST: the IDX files (MNIST defaults to the Go module cache,\nFashion-MNIST to /usr/share/datasets/fashion-mnist); ModelNet: the data set's root, either\nModelNet10|40/<class>/{train,test}/*.off or modelnet40_normal_resampled/")
	f.StringVar(&r.root, "root", "", "`DIR`: ModelNet's root directory, the same as --data")
	f.StringVar(field(r, "cache", func(c *runspec.Config) *string { return &c.CacheDir }), "cache", "cache", "`DIR` for fitted input mixtures")
	r.intField(f, "train-limit", func(c *runspec.Config) *int { return &c.TrainLimit }, 0, 1e9, "use only the first `N` training images; 0 = all")
	r.intField(f, "test-limit", func(c *runspec.Config) *int { return &c.TestLimit }, 0, 1e9, "evaluate on the first `N` test images; 0 = all")
}

// fittingFlags registers the settings of the input fitting.
func (r *runFlags) fittingFlags(f *flagSet) {
	r.intField(f, "fit-em", func(c *runspec.Config) *int { return &c.FitEM }, 0, 1000, "`N` EM steps of the input fitting after its initialisation")
	r.stringField(f, "fit-init", func(c *runspec.Config) *string { return &c.FitInit }, "`METHOD` of the input fitting: 2D kmeans or random; 3D fps or kmeans-em")
	r.intField(f, "fit-points", func(c *runspec.Config) *int { return &c.FitPoints }, 1, 1e8, "3D: `N` surface points sampled per mesh")
}

// layersFlag registers --layers, which also sets the Gaussians per input.
func (r *runFlags) layersFlag(f *flagSet) {
	r.stringField(f, "layers", func(c *runspec.Config) *string { return &c.Layers }, "`MODEL` in the paper's notation, e.g. \"1/64 -> 8/32 -> 16/16 -> 10\" (input channels/Gaussians,\nthen channels/Gaussians per block, then the classes)")
}

// modelFlags registers the model's settings but the layer string.
func (r *runFlags) modelFlags(f *flagSet) {
	f.StringVar(&r.radii, "radii", "", "`LIST` of kernel radii, one per block, comma-separated, e.g. 1.5,2,2.5 (default: the preset's;\n2.5 each with --layers)")
	r.intField(f, "kernel-gaussians", func(c *runspec.Config) *int { return &c.Kernel }, 1, 64, "`N_k`, the Gaussians of every convolution kernel")
	r.stringField(f, "reduction", func(c *runspec.Config) *string { return &c.Reduction }, "`METHOD`: treehem2, treehem4, treehem8, mem or max (keep the largest weights)")
	r.stringField(f, "relu-fit", func(c *runspec.Config) *string { return &c.ReLUFit }, "`METHOD` of the dense ReLU fit: heuristic (the reference's) or refined (one EM step and weight\niterations after it: a lower fitting error, but no better training and up to 60× slower steps; see\ndocs/results.md)")
	r.intField(f, "fused", func(c *runspec.Config) *int { return &c.Fused }, 0, 64, "fused convolution-fitting to `F` × N_p Gaussians per block (at least --fused-min, at most the\nblock's F_i·N_i·N_k); 0 = the unfused path. The fused presets use 16: the paper model's step\n8.3–10.7× the unfused one (the CPU decides); on the demo over ten seeds level with the unfused\naccuracy on MNIST (+0.18), 0.77 behind on Fashion-MNIST; 4 is fastest and loses 2.8–5 points\n(docs/fused.md)")
	r.stringField(f, "fused-targets", func(c *runspec.Config) *string { return &c.FusedTargets }, "`TARGETS` of a fused block's ReLU fit: coarse (the fitted mixture's values at its centres),\nexact (the exact convolution's there: as accurate as the unfused blocks over ten Fashion-MNIST seeds,\nwhere coarse is 0.8 points behind, but the paper model's step only 3.9× the unfused one on the CPU)\nor near (the fitted values, each made exact over its own group's convolved Gaussians and, with\n--fused-near R > 0, over those of every group within R; no --bias, reduction treehem or max: the\npaper model's step 9.2× the unfused one at R = 0, no more accurate than coarse over ten seeds)\n(docs/fused.md)")
	floatVar(f, field(r, "fused-near", func(c *runspec.Config) *float64 { return &c.FusedNear }), "fused-near", 0, 1e3, false,
		"`R`: the radius of --fused-targets near in standard deviations of each group: every group within\nR of a centre adds its components there; 0 = the centre's own group only")
	floatVar(f, field(r, "fused-negative", func(c *runspec.Config) *float64 { return &c.FusedNegative }), "fused-negative", 0, 1e6, true,
		"`FACTOR` of a negative group's mass when the fused convolution-fitting picks the group to split\nnext: 1 treats both signs alike (the rule of runs before 2026-11-27); below 1 spends more of the\nn Gaussians where the convolution is positive, which the ReLU keeps (default: "+strconv.FormatFloat(ops.DefaultConvFitNegative, 'g', -1, 64)+"; docs/fused.md)")
	intVar(f, field(r, "fused-min", func(c *runspec.Config) *int { return &c.FusedMin }), "fused-min", 1, 1<<20,
		"`N`: every fused block fits at least N Gaussians (at most its F_i·N_i·N_k): the blocks that reduce\nto a few Gaussians get more groups than F × N_p; 1 = no floor, the count of runs before 2026-11-27,\n0.45 points less accurate on Fashion-MNIST and a paper step 11.6× the unfused one instead of 10.7× (Intel)\n(default: "+strconv.Itoa(models.DefaultFusedMin)+"; docs/fused.md)")
	r.intField(f, "dense", func(c *runspec.Config) *int { return &c.DenseHead }, 0, 1e5, "`N` hidden units of a dense head after integration; 0 = none")
	r.stringField(f, "bias", func(c *runspec.Config) *string { return &c.Bias }, "`TYPE` of learnable bias in the mixtures' constants before every ReLU fit: none, normal or\nnegative-softplus; normal's positive constants can give negative weights, which TreeHEM may fail\non (then use --reduction mem or max)")
}

// optimFlags registers the optimisation's settings.
func (r *runFlags) optimFlags(f *flagSet) {
	r.intField(f, "batch", func(c *runspec.Config) *int { return &c.Batch }, 1, 1e5, "batch size `N`")
	r.intField(f, "epochs", func(c *runspec.Config) *int { return &c.Epochs }, 1, 1e6, "`N` epochs")
	r.intField(f, "accumulate", func(c *runspec.Config) *int { return &c.Accumulate }, 1, 1e4,
		"`N` batches per step and rank, computed one after the other and their gradients averaged: a step trains on ranks × N × --batch samples")
	floatVar(f, field(r, "lr", func(c *runspec.Config) *float64 { return &c.LR }), "lr", 0, 1, true, "Adam's `RATE` of learning"+presetDefault)
	floatVar(f, field(r, "weight-decay", func(c *runspec.Config) *float64 { return &c.DecayRate }), "weight-decay", 0, 1, false, "`RATE` of weight decay: the decay step uses lr = rate × initial lr"+presetDefault)
	seedVar(f, field(r, "seed", func(c *runspec.Config) *uint64 { return &c.Seed }), "seed", "`N` seeding kernel initialisation and shuffling"+presetDefault)
}

// config returns the preset with every given flag applied.
func (r *runFlags) config(given map[string]bool) (runspec.Config, error) {
	c, ok := runspec.Presets[r.preset]
	if !ok {
		return c, errors.Errorf("--preset %q: want one of %s", r.preset, strings.Join(presetNames(), ", "))
	}
	c.Radii = slices.Clone(c.Radii)
	if given["layers"] {
		c.Radii = nil // the preset's radii are for the preset's blocks
	}
	for name, apply := range r.apply {
		if given[name] {
			apply(&c)
		}
	}
	if given["root"] {
		if given["data"] && r.root != c.DataDir {
			return c, errors.Errorf("--root %q and --data %q disagree; give one", r.root, c.DataDir)
		}
		c.DataDir = r.root
	}
	if given["radii"] {
		radii, err := parseRadii(r.radii)
		if err != nil {
			return c, err
		}
		c.Radii = radii
	}
	return c, nil
}

// parseRadii reads the comma-separated list of --radii.
func parseRadii(s string) ([]float64, error) {
	var radii []float64
	for _, f := range strings.Split(s, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(r > 0) || math.IsInf(r, 1) {
			return nil, fmt.Errorf("--radii %q: %q is not a finite number > 0", s, f)
		}
		radii = append(radii, r)
	}
	return radii, nil
}

func presetNames() []string {
	var names []string
	for n := range runspec.Presets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
