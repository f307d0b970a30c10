package train

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gmcn-go/gmcn/gmnode"
	"github.com/gmcn-go/gmcn/internal/atomicfile"
	"github.com/gmcn-go/gmcn/models"
	"github.com/gmcn-go/gmcn/shapes"
	"github.com/gmcn-go/gmcn/train/report"
	"github.com/pkg/errors"
)

// RunConfig is everything that defines a training run: data, input fitting,
// model and optimisation. It is saved as run.json in the run's directory so
// that `gmcn eval` and `gmcn train --resume` rebuild exactly the same model.
type RunConfig struct {
	Preset     string    `json:"preset,omitempty"`
	Dataset    string    `json:"dataset"`  // "mnist", "fashion-mnist", "modelnet10" or "modelnet40"
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
	DenseHead  int       `json:"dense_head"`
	Batch      int       `json:"batch"`
	Epochs     int       `json:"epochs"`
	LR         float64   `json:"lr"`
	DecayRate  float64   `json:"weight_decay_rate"`
	Seed       uint64    `json:"seed"`
}

// RunConfigFile is the name of the saved RunConfig inside a run directory.
const RunConfigFile = "run.json"

// Presets are the named configurations of `gmcn train --preset`.
var Presets = map[string]RunConfig{
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
		Reduction: "treehem2", Fused: 4, Batch: 100, Epochs: 80, LR: 1e-3, DecayRate: 0.05, Seed: 0},
	// modelnet10-fused is modelnet10-paper with the fused
	// convolution-fitting in every block.
	"modelnet10-fused": {Preset: "modelnet10-fused", Dataset: "modelnet10", FitInit: "fps",
		Layers: "1/128 -> 8/64 -> 16/32 -> 32/16 -> 64/8 -> 10", Kernel: 5, Reduction: "treehem2", Fused: 4,
		Batch: 21, Epochs: 60, LR: 1e-3, DecayRate: 0.05, Seed: 0},
}

// ModelConfig returns the models.Config of c.
func (c RunConfig) ModelConfig() (models.Config, error) {
	l, err := models.ParseLayout(c.Layers)
	if err != nil {
		return models.Config{}, err
	}
	if len(c.Radii) != 0 && len(c.Radii) != len(l.Blocks) {
		return models.Config{}, errors.Errorf("%d radii for %d blocks of %q", len(c.Radii), len(l.Blocks), c.Layers)
	}
	for i, r := range c.Radii {
		if !(r > 0) {
			return models.Config{}, errors.Errorf("radius %d is %g, want > 0", i+1, r)
		}
		l.Blocks[i].Radius = r
	}
	red, err := ParseReduction(c.Reduction)
	if err != nil {
		return models.Config{}, err
	}
	return models.Config{Layout: l, D: c.Dims(), Classes: l.Classes(), Batch: c.Batch, KernelGaussians: c.Kernel,
		Reduction: red, DenseHead: c.DenseHead, Fused: c.Fused, Seed: c.Seed}, nil
}

// Dims returns the spatial dimension of c's data set: 3 for ModelNet, 2
// for the image data sets.
func (c RunConfig) Dims() int {
	if c.is3D() {
		return 3
	}
	return 2
}

func (c RunConfig) is3D() bool { return strings.HasPrefix(c.Dataset, "modelnet") }

// FitConfig3D returns the 3D input-fitting settings of c.
func (c RunConfig) FitConfig3D() (shapes.FitConfig, error) {
	l, err := models.ParseLayout(c.Layers)
	if err != nil {
		return shapes.FitConfig{}, err
	}
	f := shapes.DefaultFitConfig()
	f.K = l.InputGaussians
	if c.FitPoints > 0 {
		f.Points = c.FitPoints
	}
	if c.FitInit != "" {
		if f.Method, err = shapes.ParseMethod(c.FitInit); err != nil {
			return f, err
		}
	}
	if c.FitEM > 0 {
		f.EMSteps = c.FitEM
	}
	return f, f.Validate()
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

// FitConfig returns the 2D input-fitting settings of c: K from the layer
// string's input Gaussians.
func (c RunConfig) FitConfig() (FitConfig, error) {
	if c.is3D() {
		_, err := c.FitConfig3D()
		return DefaultFitConfig(), err
	}
	l, err := models.ParseLayout(c.Layers)
	if err != nil {
		return FitConfig{}, err
	}
	f := DefaultFitConfig()
	f.K, f.EMSteps = l.InputGaussians, c.FitEM
	switch c.FitInit {
	case "kmeans", "":
	case "random":
		f.Init = RandomInit
	default:
		return FitConfig{}, errors.Errorf("unknown fit init %q (want kmeans or random)", c.FitInit)
	}
	return f, f.Validate()
}

// SaveRunConfig writes c as dir/run.json atomically.
func SaveRunConfig(dir string, c RunConfig) error {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, RunConfigFile), append(data, '\n'))
}

// LoadRunConfig reads dir/run.json.
func LoadRunConfig(dir string) (RunConfig, error) {
	path := filepath.Join(dir, RunConfigFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return RunConfig{}, errors.Wrapf(err, "reading %s (is %s a training output directory?)", path, dir)
	}
	var c RunConfig
	if err := json.Unmarshal(data, &c); err != nil {
		return RunConfig{}, errors.Wrapf(err, "parsing %s", path)
	}
	return c, nil
}

// LoadInputs loads the data set of c and returns the fitted training and
// test inputs (from the cache or freshly fitted), limited as c says. With
// testOnly the training split is neither fitted nor returned.
func LoadInputs(c RunConfig, testOnly bool, log io.Writer) (trainSet, testSet Samples, err error) {
	if log == nil {
		log = io.Discard
	}
	cache := c.CacheDir
	if cache == "" {
		cache = "cache"
	}
	if err = os.MkdirAll(cache, 0o755); err != nil {
		return trainSet, testSet, errors.Wrapf(err, "creating the input cache directory %s", cache)
	}
	if c.is3D() {
		return loadModelNet(c, cache, testOnly, log)
	}
	var ds *Dataset
	switch c.Dataset {
	case "mnist", "":
		ds, err = LoadMNIST(c.DataDir)
	case "fashion-mnist":
		ds, err = LoadFashionMNIST(c.DataDir)
	default:
		err = errors.Errorf("unknown dataset %q (want mnist, fashion-mnist, modelnet10 or modelnet40)", c.Dataset)
	}
	if err != nil {
		return
	}
	fc, err := c.FitConfig()
	if err != nil {
		return
	}
	load := func(split string, s Split, limit int) (Samples, error) {
		s = headSplit(s, limit)
		file := filepath.Join(cache, strings.Join([]string{ds.Name, split, fitName(fc, s.N)}, "-")+".gmfit")
		in, err := LoadOrFitInputs(file, ds.Name+"/"+split, s, fc, report.NewProgress(log, "fitting "+split+" inputs", s.N), log)
		if err != nil {
			return Samples{}, err
		}
		labels := make([]int, len(in.Labels))
		for i, v := range in.Labels {
			labels[i] = int(v)
		}
		return Samples{Data: in.Mixtures, Layout: in.Layout, Labels: labels, Classes: Classes}, nil
	}
	if !testOnly {
		if trainSet, err = load("train", ds.Train, c.TrainLimit); err != nil {
			return
		}
	}
	testSet, err = load("test", ds.Test, c.TestLimit)
	return
}

// fitName names a cache file by its main settings; the full settings are
// checked inside the file.
func fitName(f FitConfig, n int) string {
	return fmt.Sprintf("k%d-em%d-%v-n%d", f.K, f.EMSteps, f.Init, n)
}

// headSplit returns the first n images of s (all of them if n ≤ 0 or n ≥ s.N).
func headSplit(s Split, n int) Split {
	if n <= 0 || n >= s.N {
		return s
	}
	px := s.Rows * s.Cols
	s.Pixels, s.Labels, s.N = s.Pixels[:n*px], s.Labels[:n], n
	return s
}

// loadModelNet fits (or reads from the cache) the ModelNet copy at
// c.DataDir and checks that its class count matches the model's.
func loadModelNet(c RunConfig, cache string, testOnly bool, log io.Writer) (trainSet, testSet Samples, err error) {
	if c.DataDir == "" {
		return trainSet, testSet, errors.Errorf("dataset %s needs --data DIR: a ModelNet10/40 directory (<class>/{train,test}/*.off or modelnet40_normal_resampled); `gmcn gen-shapes --out DIR` writes a generated one", c.Dataset)
	}
	fc, err := c.FitConfig3D()
	if err != nil {
		return trainSet, testSet, err
	}
	newBar := func(label string, total int) shapes.Progress { return report.NewProgress(log, label, total) }
	tr, te, err := shapes.LoadModelNet(c.DataDir, c.Dataset, fc, cache, newBar, log)
	if err != nil {
		return trainSet, testSet, err
	}
	l, err := models.ParseLayout(c.Layers)
	if err != nil {
		return trainSet, testSet, err
	}
	if len(te.Classes) != l.Classes() {
		return trainSet, testSet, errors.Errorf("%s at %s has %d classes but the model's last block has %d channels (%q)", c.Dataset, c.DataDir, len(te.Classes), l.Classes(), c.Layers)
	}
	// ModelNet splits are sorted by class, so a limit takes every k-th shape
	// rather than the first ones.
	conv := func(in *shapes.Inputs, limit int) Samples {
		s := Samples{Data: in.Mixtures, Layout: in.Layout, Labels: in.Labels, Classes: len(in.Classes)}
		if limit <= 0 || limit >= s.Len() {
			return s
		}
		per := s.Layout.N * s.Layout.Stride()
		sub := Samples{Layout: s.Layout, Classes: s.Classes}
		sub.Layout.B = limit
		for i := range limit {
			j := i * s.Len() / limit
			sub.Data = append(sub.Data, s.Data[j*per:(j+1)*per]...)
			sub.Labels = append(sub.Labels, s.Labels[j])
		}
		return sub
	}
	if !testOnly {
		trainSet = conv(tr, c.TrainLimit)
	}
	return trainSet, conv(te, c.TestLimit), nil
}
