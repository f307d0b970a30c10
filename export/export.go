package export

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/gmcn-go/gmcn/internal/atomicfile"
	"github.com/gmcn-go/gmcn/models"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/gmcn-go/gmcn/predict"
	"github.com/pkg/errors"
	"gorgonia.org/tensor"
)

// Files and folders Run writes inside its output directory.
const (
	WeightsFile = "weights.safetensors"
	KernelsDir  = "kernels"
	InputsDir   = "inputs"
)

// modulePath is gmcn's module, whose version the metadata records.
const modulePath = "github.com/gmcn-go/gmcn"

// Tensors returns the state of m that reproduces its predictions, in the
// model's dtype except the CovScaleNorm averages, which are float64: every
// trained parameter under its node name (models.Model.Learnables order:
// "conv1/weights_raw", "conv1/positions_raw", "conv1/covariance_factors", …,
// "input_gain", "bn_scale", "bn_bias", "dense1_w", …), BatchNorm's running
// statistics ("bn_running_mean", "bn_running_var", shape [C]) and each
// block's running mean covariance trace ("conv1/running_mean_trace", shape
// [channels]).
func Tensors(m *models.Model) []Tensor {
	s := m.State()
	var out []Tensor
	for i, n := range m.Learnables() {
		out = append(out, typed(s.Names[i], n.Shape(), m.Config.Dtype, s.Params[i]))
	}
	c := tensor.Shape{len(s.BNMean)}
	out = append(out, typed("bn_running_mean", c, m.Config.Dtype, s.BNMean), typed("bn_running_var", c, m.Config.Dtype, s.BNVar))
	for i, tr := range s.CovNorms {
		out = append(out, Tensor{Name: fmt.Sprintf("conv%d/running_mean_trace", i+1), Shape: []int{len(tr)}, F64: tr})
	}
	return out
}

// typed returns the float64 values v as a tensor of dtype dt, which holds
// them exactly: they were read from a tensor of that dtype.
func typed(name string, shape tensor.Shape, dt tensor.Dtype, v []float64) Tensor {
	t := Tensor{Name: name, Shape: append([]int{}, shape...)}
	if dt == tensor.Float64 {
		t.F64 = v
		return t
	}
	t.F32 = make([]float32, len(v))
	for i, x := range v {
		t.F32[i] = float32(x)
	}
	return t
}

// Metadata returns the string map stored in the safetensors header: the
// run's configuration as run.json writes it, the layer string, the dtype,
// the class names and gmcn's version.
func Metadata(p *predict.Predictor) (map[string]string, error) {
	run, err := json.Marshal(p.Setup.Run)
	if err != nil {
		return nil, err
	}
	classes, err := json.Marshal(p.Classes)
	if err != nil {
		return nil, err
	}
	return map[string]string{
		"format":       "gmcn run state",
		"gmcn_version": version(),
		"run_config":   string(run),
		"layers":       p.Model.Config.Layout.String(),
		"dtype":        p.Model.Config.Dtype.String(),
		"classes":      string(classes),
	}, nil
}

// version returns gmcn's module version and VCS revision as the build
// recorded them, or "unknown".
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := ""
	if bi.Main.Path == modulePath {
		v = bi.Main.Version
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				v += " " + s.Value
			}
		}
	}
	for _, d := range bi.Deps {
		if d.Path == modulePath {
			v = d.Version
		}
	}
	if v == "" {
		return "unknown"
	}
	return v
}

// Run writes the run of p into dir: WeightsFile (Tensors and Metadata as
// safetensors), every block's assembled kernels in KernelsDir, one
// mixture per output and input channel ("conv1_out0_in0.gmm.ply", integral
// weights), and the first inputs fitted test inputs of the run's data set
// in InputsDir ("test0_label7.gma.ply", amplitude weights, fitted as in
// training); inputs 0 skips them and does not need the data set. Every file
// is written atomically. Run returns the paths written.
func Run(p *predict.Predictor, dir string, inputs int) ([]string, error) {
	if inputs < 0 {
		return nil, errors.Errorf("export: %d inputs, want ≥ 0", inputs)
	}
	meta, err := Metadata(p)
	if err != nil {
		return nil, err
	}
	st, err := Safetensors(Tensors(p.Model), meta)
	if err != nil {
		return nil, err
	}
	for _, d := range []string{dir, filepath.Join(dir, KernelsDir)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, errors.Wrap(err, "export")
		}
	}
	written := []string{filepath.Join(dir, WeightsFile)}
	if err := atomicfile.Write(written[0], st); err != nil {
		return nil, errors.Wrap(err, "export")
	}
	files, err := kernels(p.Model, filepath.Join(dir, KernelsDir))
	written = append(written, files...)
	if err != nil || inputs == 0 {
		return written, err
	}
	files, err = fittedInputs(p, filepath.Join(dir, InputsDir), inputs)
	return append(written, files...), err
}

// kernels writes every block's assembled kernels into dir.
func kernels(m *models.Model, dir string) ([]string, error) {
	var written []string
	for b := range m.Kernels {
		k, l, err := m.AssembledKernel(b)
		if err != nil {
			return written, errors.Wrap(err, "export")
		}
		gs, err := mixture.Unpack(k, l)
		if err != nil {
			return written, err
		}
		for o := range l.B {
			for i := range l.C {
				path := filepath.Join(dir, fmt.Sprintf("conv%d_out%d_in%d.gmm.ply", b+1, o, i))
				first := (o*l.C + i) * l.N
				if err := mixture.SavePLY(path, gs[first:first+l.N]); err != nil {
					return written, errors.Wrap(err, "export")
				}
				written = append(written, path)
			}
		}
	}
	return written, nil
}

// fittedInputs fits the first n test samples of the run's data set (the
// data set's Limit(n), so each gets the mixture it has in training) and
// writes them into dir.
func fittedInputs(p *predict.Predictor, dir string, n int) ([]string, error) {
	ds, err := p.Setup.OpenDataset(true)
	if err != nil {
		return nil, errors.Wrap(err, "export: fitted inputs need the run's data set (0 inputs skips them)")
	}
	split := ds.Test().Limit(n)
	mix, err := split.Fit(p.Setup.Fit, nil)
	if err != nil {
		return nil, errors.Wrap(err, "export: fitting test inputs")
	}
	l := p.InputLayout(split.Len())
	gs, err := mixture.Unpack(mix, l)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, errors.Wrap(err, "export")
	}
	var written []string
	for i, y := range split.Labels() {
		path := filepath.Join(dir, fmt.Sprintf("test%d_label%d.gma.ply", i, y))
		if err := mixture.SavePLY(path, gs[i*l.N:(i+1)*l.N]); err != nil {
			return written, errors.Wrap(err, "export")
		}
		written = append(written, path)
	}
	return written, nil
}
