package runspec

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/gmcn-go/gmcn/gmnode"
	"github.com/gmcn-go/gmcn/internal/atomicfile"
	"github.com/gmcn-go/gmcn/ops"
	"github.com/pkg/errors"
)

// Config is everything that defines a training run: data, input fitting,
// model and optimisation. It is saved as run.json in the run's directory so
// that `gmcn eval` and `gmcn train --resume` rebuild exactly the same model.
type Config struct {
	Preset  string `json:"preset,omitempty"`
	Dataset string `json:"dataset"` // "mnist", "fashion-mnist", "modelnet10" or "modelnet40"
	// Classes are the data set's class names by label, recorded by
	// LoadInputs, so that predict and render name the classes without
	// the data.
	Classes    []string  `json:"classes,omitempty"`
	DataDir    string    `json:"data_dir"` // MNIST: "" = default location; ModelNet: the root (either layout)
	CacheDir   string    `json:"cache_dir"`
	TrainLimit int       `json:"train_limit"` // use the first n training images; 0 = all
	TestLimit  int       `json:"test_limit"`  // evaluate on the first n test images; 0 = all
	FitEM      int       `json:"fit_em_steps"`
	FitInit    string    `json:"fit_init"`             // 2D: "kmeans" or "random"; 3D: "fps" or "kmeans-em"
	FitPoints  int       `json:"fit_points,omitempty"` // 3D: surface points per mesh (0 = 10,000)
	Layers     string    `json:"layers"`
	Radii      []float64 `json:"radii"` // per block; empty = 2.5 each
	Kernel     int       `json:"kernel_gaussians"`
	Reduction  string    `json:"reduction"`       // "treehem2", "treehem4", "treehem8", "mem" or "max"
	Fused      int       `json:"fused,omitempty"` // > 0: fused convolution-fitting to Fused·N_p Gaussians (models.Config.Fused)
	// FusedTargets are the targets of a fused block's ReLU fit: "" or
	// "coarse" for the fitted mixture's own values at its centroids,
	// "exact" for the exact convolution's (models.Config.FusedExact), "near"
	// for near-group targets of radius FusedNear (models.Config.FusedNear).
	FusedTargets string `json:"fused_targets,omitempty"`
	// FusedNear is the radius of near-group targets
	// (models.Config.FusedNearRadius): 0, each centroid's own group.
	FusedNear float64 `json:"fused_near,omitempty"`
	// FusedNegative is the fused selection's priority factor of groups of
	// negative weights (models.Config.FusedNegative): 0 in a new
	// configuration means the default, which Resolve writes in; a saved
	// run.json of a fused run without it is from before it existed and
	// loads as 1, the rule of those runs.
	FusedNegative float64 `json:"fused_negative,omitempty"`
	// FusedMin is the least component count of a fused block
	// (models.Config.FusedMin), with fused_negative's convention: 0 in a
	// new configuration means the default, which Resolve writes in; a saved
	// fused run without it loads as 1, no floor, the count of those runs.
	FusedMin  int    `json:"fused_min,omitempty"`
	DenseHead int    `json:"dense_head"`
	Bias      string `json:"bias,omitempty"` // biases of the constants: "none" or "", "normal", "negative-softplus" (models.Config.Bias)
	// ReLUFit is the dense ReLU fit: "" or "heuristic" for the reference's,
	// "refined" for the refined fit (ops.ReLUFitOptions.Refine).
	ReLUFit string `json:"relu_fit,omitempty"`
	Batch   int    `json:"batch"`
	// Accumulate is the number of batches each rank computes per step, their
	// gradients averaged (train.Options.Accumulate); 0 means 1.
	Accumulate int     `json:"accumulate,omitempty"`
	Epochs     int     `json:"epochs"`
	LR         float64 `json:"lr"`
	DecayRate  float64 `json:"weight_decay_rate"`
	Seed       uint64  `json:"seed"`
}

// ConfigFile is the name of the saved Config inside a run directory.
const ConfigFile = "run.json"

// Presets are the named configurations of `gmcn train --preset`.
var Presets = map[string]Config{
	// demo trains a small GMCN on the first 8,000 MNIST training images for
	// three epochs and evaluates on all 10,000 test images, in minutes on two
	// cores; its learning rate is ten times the paper's to learn in so few
	// steps.
	"demo": {Preset: "demo", Dataset: "mnist", TrainLimit: 8000, FitEM: 1, FitInit: "kmeans",
		Layers: "1/16 -> 8/8 -> 16/4 -> 10", Radii: []float64{2.0, 2.5, 2.5}, Kernel: 5, Reduction: "treehem2",
		Batch: 50, Epochs: 3, LR: 1e-2, DecayRate: 0.05, Seed: 1},
	// paper is the paper's MNIST model (64 input Gaussians, channels
	// 8/16/32/64, Gaussians halved every block) with the reference's radii.
	// modelnet-cpu is the paper's ModelNet10 layout scaled down to train on
	// two cores: a quarter of the input Gaussians, half the Gaussians and
	// channels per block. Point it at a ModelNet directory with --data (the
	// generated set of `gmcn gen-shapes` has the same layout).
	"modelnet-cpu": {Preset: "modelnet-cpu", Dataset: "modelnet10", FitInit: "fps",
		Layers: "1/32 -> 8/16 -> 16/8 -> 10", Radii: []float64{2.5, 2.5, 2.5}, Kernel: 5, Reduction: "treehem2",
		Batch: 21, Epochs: 6, LR: 3e-3, DecayRate: 0.05, Seed: 1},
	// modelnet10-paper is the paper's ModelNet10 model (216,841 parameters).
	"modelnet10-paper": {Preset: "modelnet10-paper", Dataset: "modelnet10", FitInit: "fps",
		Layers: "1/128 -> 8/64 -> 16/32 -> 32/16 -> 64/8 -> 10", Kernel: 5, Reduction: "treehem2",
		Batch: 21, Epochs: 60, LR: 1e-3, DecayRate: 0.05, Seed: 0},
	"paper": {Preset: "paper", Dataset: "mnist", FitEM: 1, FitInit: "kmeans",
		Layers: "1/64 -> 8/32 -> 16/16 -> 32/8 -> 64/4 -> 10", Radii: []float64{1.5, 2.0, 2.5, 2.5, 2.5}, Kernel: 5,
		Reduction: "treehem2", Batch: 100, Epochs: 80, LR: 1e-3, DecayRate: 0.05, Seed: 0},
	// paper-fused is the paper's MNIST model with the fused
	// convolution-fitting in every block (docs/fused.md).
	"paper-fused": {Preset: "paper-fused", Dataset: "mnist", FitEM: 1, FitInit: "kmeans",
		Layers: "1/64 -> 8/32 -> 16/16 -> 32/8 -> 64/4 -> 10", Radii: []float64{1.5, 2.0, 2.5, 2.5, 2.5}, Kernel: 5,
		Reduction: "treehem2", Fused: 16, Batch: 100, Epochs: 80, LR: 1e-3, DecayRate: 0.05, Seed: 0},
	// modelnet10-fused is modelnet10-paper with the fused
	// convolution-fitting in every block.
	"modelnet10-fused": {Preset: "modelnet10-fused", Dataset: "modelnet10", FitInit: "fps",
		Layers: "1/128 -> 8/64 -> 16/32 -> 32/16 -> 64/8 -> 10", Kernel: 5, Reduction: "treehem2", Fused: 16,
		Batch: 21, Epochs: 60, LR: 1e-3, DecayRate: 0.05, Seed: 0},
}

// ParseReduction maps "treehem2", "treehem4", "treehem8", "mem" and "max"
// (keep the largest weights) to a reduction method.
func ParseReduction(s string) (gmnode.Reduction, error) {
	switch strings.ToLower(s) {
	case "treehem2", "":
		return gmnode.UseTreeHEM(2), nil
	case "treehem4":
		return gmnode.UseTreeHEM(4), nil
	case "treehem8":
		return gmnode.UseTreeHEM(8), nil
	case "mem":
		return gmnode.UseMEM(), nil
	case "max":
		return gmnode.UseKeepLargest(), nil
	}
	return gmnode.Reduction{}, errors.Errorf("unknown reduction %q (want treehem2, treehem4, treehem8, mem or max)", s)
}

// ParseReLUFit maps "heuristic" (or "") and "refined" to the options of the
// dense ReLU fit.
func ParseReLUFit(s string) (ops.ReLUFitOptions, error) {
	switch strings.ToLower(s) {
	case "heuristic", "":
		return ops.ReLUFitOptions{}, nil
	case "refined":
		return ops.ReLUFitOptions{Refine: true}, nil
	}
	return ops.ReLUFitOptions{}, errors.Errorf("unknown ReLU fit %q (want heuristic or refined)", s)
}

// ParseFusedTargets returns the fused targets s (Config.FusedTargets):
// exact or near-group targets, or neither for the coarse ones.
func ParseFusedTargets(s string) (exact, near bool, err error) {
	switch strings.ToLower(s) {
	case "coarse", "":
		return false, false, nil
	case "exact":
		return true, false, nil
	case "near":
		return false, true, nil
	}
	return false, false, errors.Errorf("unknown fused targets %q (want coarse, exact or near)", s)
}

// SaveConfig writes c as dir/run.json atomically, creating dir if
// needed. The file is meant to be read by people too, so "->" in the layer
// string is written as is rather than escaped for HTML.
func SaveConfig(dir string, c Config) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(c); err != nil {
		return errors.Wrapf(err, "encoding %s", ConfigFile)
	}
	return atomicfile.Write(filepath.Join(dir, ConfigFile), buf.Bytes())
}

// LoadConfig reads dir/run.json. A fused run saved without fused_negative
// or fused_min gets 1 there, the selection and the counts it was trained
// with.
func LoadConfig(dir string) (Config, error) {
	path := filepath.Join(dir, ConfigFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, errors.Wrapf(err, "reading %s (is %s a training output directory?)", path, dir)
	}
	var c Config
	if err := json.Unmarshal(data, &c); err != nil {
		return Config{}, errors.Wrapf(err, "parsing %s", path)
	}
	if c.Fused > 0 && c.FusedNegative == 0 {
		c.FusedNegative = 1
	}
	if c.Fused > 0 && c.FusedMin == 0 {
		c.FusedMin = 1
	}
	return c, nil
}

// LoadSetup reads dir/run.json and resolves it; an error of the run
// configuration names the file.
func LoadSetup(dir string) (*Setup, error) {
	c, err := LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	s, err := Resolve(c)
	if err != nil {
		return nil, errors.Wrapf(err, "%s", filepath.Join(dir, ConfigFile))
	}
	return s, nil
}
