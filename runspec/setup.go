package runspec

import (
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/pkg/errors"

	"github.com/gmcn-go/gmcn/dataset"
	"github.com/gmcn-go/gmcn/dataset/mnist"
	"github.com/gmcn-go/gmcn/models"
	"github.com/gmcn-go/gmcn/ops"
	"github.com/gmcn-go/gmcn/shapes"
	"github.com/gmcn-go/gmcn/train/report"
)

// Setup is a Config resolved once into typed settings: the data set,
// the input fitting and the model. Every consumer reads these instead of
// parsing the Config's strings again.
type Setup struct {
	// Run is the configuration as given; it is what run.json holds.
	Run Config
	// Dataset is the data set's name, "mnist" if Run leaves it empty.
	Dataset string
	// Fit is the input fitting: K from the layer string's input Gaussians,
	// the dimension from the data set.
	Fit dataset.FitConfig
	// Model is the model: the parsed layer string with the radii, the
	// reduction, the dense head, the fused factor and the bias type.
	Model models.Config
	// CacheDir is the folder of the input caches ("cache" if Run leaves
	// it empty).
	CacheDir string
}

// source is a data set gmcn can train on: its dimension and class count,
// known before the data is read, and how to open it.
type source struct {
	dim, classes int
	// open opens the data set in dir, with testOnly its test split only
	// where the data set can do without the training split.
	open func(dir string, testOnly bool) (dataset.Dataset, error)
}

// sources maps the data set names of run.json to their loaders.
var sources = map[string]source{
	"mnist":         {2, 10, imageSet("mnist")},
	"fashion-mnist": {2, 10, imageSet("fashion-mnist")},
	"modelnet10":    {3, 10, modelNet("modelnet10")},
	"modelnet40":    {3, 40, modelNet("modelnet40")},
}

// opener adapts a loader returning a concrete data set, so that a failed
// load gives a nil interface rather than a typed nil.
func opener[T dataset.Dataset](load func(dir string, testOnly bool) (T, error)) func(string, bool) (dataset.Dataset, error) {
	return func(dir string, testOnly bool) (dataset.Dataset, error) {
		ds, err := load(dir, testOnly)
		if err != nil {
			return nil, err
		}
		return ds, nil
	}
}

// imageSet opens MNIST or Fashion-MNIST, which can read its test split
// alone.
func imageSet(name string) func(string, bool) (dataset.Dataset, error) {
	return opener(func(dir string, testOnly bool) (*mnist.Dataset, error) {
		return mnist.Open(name, dir, testOnly)
	})
}

// modelNet opens the ModelNet copy given by its root, which has no default
// location; listing both splits costs no more than listing one.
func modelNet(name string) func(string, bool) (dataset.Dataset, error) {
	return opener(func(dir string, _ bool) (*shapes.ModelNet, error) {
		if dir == "" {
			return nil, errors.Errorf("dataset %s needs --data DIR: a ModelNet10/40 directory (<class>/{train,test}/*.off or modelnet40_normal_resampled); `gmcn gen-shapes --out DIR` writes a generated one", name)
		}
		return shapes.OpenModelNet(dir, name)
	})
}

// DatasetNames returns the names Resolve accepts, sorted.
func DatasetNames() []string {
	var names []string
	for n := range sources {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Resolve checks c and resolves it into a Setup; the data is not read.
// Without a dense head, the model's last block must have one channel per
// class of the data set.
func Resolve(c Config) (*Setup, error) {
	if err := checkNumbers(c); err != nil {
		return nil, err
	}
	s := &Setup{Run: c, Dataset: c.Dataset, CacheDir: c.CacheDir}
	if s.Dataset == "" {
		s.Dataset = "mnist"
	}
	if s.CacheDir == "" {
		s.CacheDir = "cache"
	}
	src, err := sourceOf(s.Dataset)
	if err != nil {
		return nil, err
	}
	l, err := models.ParseLayout(c.Layers)
	if err != nil {
		return nil, err
	}
	if c.DenseHead == 0 && l.Classes() != src.classes {
		return nil, errors.Errorf("layers %q end in %d channels but %s has %d classes", c.Layers, l.Classes(), s.Dataset, src.classes)
	}
	if len(c.Radii) != 0 && len(c.Radii) != len(l.Blocks) {
		return nil, errors.Errorf("%d radii for %d blocks of %q", len(c.Radii), len(l.Blocks), c.Layers)
	}
	for i, r := range c.Radii {
		if !(r > 0) || math.IsInf(r, 1) {
			return nil, errors.Errorf("radius %d is %g, want a finite number > 0", i+1, r)
		}
		l.Blocks[i].Radius = r
	}
	red, err := ParseReduction(c.Reduction)
	if err != nil {
		return nil, err
	}
	bias, err := models.ParseBiasType(c.Bias)
	if err != nil {
		return nil, err
	}
	fit, err := ParseReLUFit(c.ReLUFit)
	if err != nil {
		return nil, err
	}
	exact, near, err := ParseFusedTargets(c.FusedTargets)
	if err != nil {
		return nil, err
	}
	if c.FusedTargets == "" && c.FusedNear != 0 {
		near = true // a radius asks for near-group targets
		s.Run.FusedTargets = "near"
	}
	if c.FusedNear != 0 && !near {
		return nil, errors.Errorf("fused_near %g needs fused targets \"near\", not %q", c.FusedNear, c.FusedTargets)
	}
	if c.Fused > 0 && c.FusedNegative == 0 {
		s.Run.FusedNegative = ops.DefaultConvFitNegative // run.json records the rule
	}
	if c.Fused > 0 && c.FusedMin == 0 {
		s.Run.FusedMin = models.DefaultFusedMin
	}
	s.Model = models.Config{Layout: l, D: src.dim, Classes: src.classes, Batch: c.Batch, KernelGaussians: c.Kernel,
		Reduction: red, ReLUFit: fit, DenseHead: c.DenseHead, Fused: c.Fused, FusedExact: exact, FusedNear: near, FusedNearRadius: c.FusedNear, FusedNegative: s.Run.FusedNegative,
		FusedMin: s.Run.FusedMin, Bias: bias, Seed: c.Seed}
	if err := s.Model.Check(); err != nil {
		return nil, errors.Wrapf(err, "layers %q", c.Layers)
	}
	if c.TrainLimit > 0 && c.Batch > c.TrainLimit {
		return nil, errors.Errorf("batch %d is larger than the %d training samples train_limit keeps", c.Batch, c.TrainLimit)
	}
	if s.Fit, err = fitConfig(c, src.dim, l.InputGaussians); err != nil {
		return nil, err
	}
	return s, nil
}

// checkNumbers rejects the numeric settings of c that no run can use, so
// that a hand-edited run.json fails here rather than deep in training.
func checkNumbers(c Config) error {
	for _, f := range []struct {
		name string
		ok   bool
		v    any
		want string
	}{
		{"batch", c.Batch >= 1, c.Batch, "≥ 1"},
		{"epochs", c.Epochs >= 1, c.Epochs, "≥ 1"},
		{"lr", c.LR > 0 && !math.IsInf(c.LR, 1), c.LR, "a finite number > 0"},
		{"weight_decay_rate", c.DecayRate >= 0 && !math.IsInf(c.DecayRate, 1), c.DecayRate, "a finite number ≥ 0"},
		{"train_limit", c.TrainLimit >= 0, c.TrainLimit, "≥ 0 (0: all)"},
		{"test_limit", c.TestLimit >= 0, c.TestLimit, "≥ 0 (0: all)"},
		{"fit_em_steps", c.FitEM >= 0, c.FitEM, "≥ 0"},
		{"fit_points", c.FitPoints >= 0, c.FitPoints, "≥ 0 (0: the default)"},
		{"kernel_gaussians", c.Kernel >= 0, c.Kernel, "≥ 1 (0: the default)"},
		{"fused", c.Fused >= 0, c.Fused, "≥ 0 (0: unfused)"},
		{"fused_negative", c.FusedNegative >= 0 && !math.IsInf(c.FusedNegative, 1), c.FusedNegative, "a finite number > 0 (0: the default)"},
		{"fused_min", c.FusedMin >= 0, c.FusedMin, "≥ 1 (0: the default)"},
		{"fused_near", c.FusedNear >= 0 && !math.IsInf(c.FusedNear, 1), c.FusedNear, "a finite number ≥ 0"},
		{"dense_head", c.DenseHead >= 0, c.DenseHead, "≥ 0 (0: none)"},
		{"accumulate", c.Accumulate >= 0, c.Accumulate, "≥ 1 (0: 1)"},
	} {
		if !f.ok {
			return errors.Errorf("run configuration: %s is %v, want %s", f.name, f.v, f.want)
		}
	}
	return nil
}

// fitConfig returns the input fitting of c for data of dimension dim and k
// Gaussians per sample. The 2D fit takes c.FitEM as is (0: k-means only);
// in 3D, 0 keeps the default.
func fitConfig(c Config, dim, k int) (dataset.FitConfig, error) {
	f := dataset.DefaultFitConfig(dim)
	f.K = k
	if c.FitInit != "" {
		m, err := dataset.ParseMethod(c.FitInit)
		if err != nil {
			return f, err
		}
		f.Method = m
	}
	if dim == 2 || c.FitEM > 0 {
		f.EMSteps = c.FitEM
	}
	if dim == 3 && c.FitPoints > 0 {
		f.Points = c.FitPoints
	}
	return f, f.Validate()
}

// OpenDataset opens the data set of s. With testOnly it may open the test
// split alone (MNIST and Fashion-MNIST do), and Train of the result is then
// nil: evaluating a run needs no training files.
func (s *Setup) OpenDataset(testOnly bool) (dataset.Dataset, error) {
	src, err := sourceOf(s.Dataset)
	if err != nil {
		return nil, err
	}
	return src.open(s.Run.DataDir, testOnly)
}

// sourceOf returns the data set called name.
func sourceOf(name string) (source, error) {
	src, ok := sources[name]
	if !ok {
		return src, errors.Errorf("unknown dataset %q (want %s)", name, strings.Join(DatasetNames(), ", "))
	}
	return src, nil
}

// ClassNames returns the class names of the run's data set by label: those
// run.json records, else (a run.json written before it recorded them) the
// data set's own, read from its test split.
func (s *Setup) ClassNames() ([]string, error) {
	if len(s.Run.Classes) == s.Model.Classes {
		return s.Run.Classes, nil
	}
	ds, err := s.OpenDataset(true)
	if err != nil {
		return nil, err
	}
	if n := len(ds.Classes()); n != s.Model.Classes {
		return nil, errors.Errorf("data set %s has %d classes, the model %d", ds.Name(), n, s.Model.Classes)
	}
	return ds.Classes(), nil
}

// LoadInputs opens the data set of s and returns its fitted training and
// test inputs (from the cache in s.CacheDir or freshly fitted, with
// progress bars on log), limited as s.Run says. With testOnly the training
// split is neither fitted nor returned, nor its files read. The data set
// must have as many classes as the model; their names go to s.Run.Classes.
func LoadInputs(s *Setup, testOnly bool, log io.Writer) (trainSet, testSet *dataset.Inputs, err error) {
	if log == nil {
		log = io.Discard
	}
	ds, err := s.OpenDataset(testOnly)
	if err != nil {
		return trainSet, testSet, err
	}
	if n := len(ds.Classes()); n != s.Model.Classes {
		return trainSet, testSet, errors.Errorf("%s at %s has %d classes but the model of %q has %d",
			ds.Name(), s.Run.DataDir, n, s.Run.Layers, s.Model.Classes)
	}
	s.Run.Classes = ds.Classes()
	if err := os.MkdirAll(s.CacheDir, 0o755); err != nil {
		return trainSet, testSet, errors.Wrapf(err, "creating the input cache directory %s", s.CacheDir)
	}
	loader := dataset.Loader{Dir: s.CacheDir, Log: log,
		NewProgress: func(label string, total int) dataset.Progress { return report.NewProgress(log, label, total) }}
	return loader.Load(ds, s.Fit, s.Run.TrainLimit, s.Run.TestLimit, testOnly)
}
