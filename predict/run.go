package predict

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"

	"github.com/gmcn-go/gmcn/dataset"
	"github.com/gmcn-go/gmcn/models"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/gmcn-go/gmcn/runspec"
	"github.com/gmcn-go/gmcn/train/checkpoint"
	"github.com/gmcn-go/gmcn/train/report"
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Predictor is a trained run's model in evaluation mode, ready to classify
// input mixtures. It is not safe for concurrent use.
type Predictor struct {
	// Setup is the run's configuration, resolved.
	Setup *runspec.Setup
	// Model is the run's model with the checkpoint's state, in evaluation
	// mode.
	Model *models.Model
	// Classes holds the class names of the run's data set, as run.json
	// records them, or the labels "0", "1", … for a run.json without them
	// whose data set cannot be opened here (ClassesErr says why).
	Classes    []string
	ClassesErr error

	vm G.VM
}

// LoadRun reads the run in dir (run.json and checkpoint.gmcn), builds its
// model on dev (nil: the CPU) with the run's batch size and loads the
// checkpoint's parameters and running statistics. Close releases the
// machine.
func LoadRun(dir string, dev *device.Device) (*Predictor, error) {
	s, err := runspec.LoadSetup(dir)
	if err != nil {
		return nil, err
	}
	s.Model.Device = dev
	path := filepath.Join(dir, runspec.CheckpointFile)
	st, err := checkpoint.Load(path)
	if err != nil {
		return nil, err
	}
	m, err := models.Build(s.Model)
	if err != nil {
		return nil, err
	}
	if err := m.SetState(models.State{Names: st.Names, Params: st.Params, BNMean: st.BNMean, BNVar: st.BNVar, CovNorms: st.CovNorms}); err != nil {
		return nil, errors.Wrapf(err, "checkpoint %s does not fit the model of %s", path, filepath.Join(dir, runspec.ConfigFile))
	}
	if err := m.SetTraining(false); err != nil {
		return nil, err
	}
	p := &Predictor{Setup: s, Model: m, vm: G.NewTapeMachine(m.Graph)}
	p.Classes, p.ClassesErr = classNames(s)
	return p, nil
}

// classNames returns the class names of the run of s, or the labels as
// numbers and why the names are not available.
func classNames(s *runspec.Setup) ([]string, error) {
	names, err := s.ClassNames()
	if err == nil {
		return names, nil
	}
	names = make([]string, s.Model.Classes)
	for i := range names {
		names[i] = fmt.Sprint(i)
	}
	return names, err
}

// Evaluate returns the mean negative log-likelihood, the accuracy and the
// confusion matrix of the model on s (models.Model.Evaluate, as training
// evaluates), drawing a progress bar on log (nil: none).
func (p *Predictor) Evaluate(s *dataset.Inputs, log io.Writer) (loss, acc float64, confusion [][]int, err error) {
	if s.Len() == 0 {
		return 0, 0, nil, errors.New("predict: no samples to evaluate")
	}
	var bar *report.Progress
	if log != nil {
		bar = report.NewProgress(log, "evaluating", s.Len())
	}
	loss, correct, confusion, err := p.Model.Evaluate(p.vm, s, 0, 1, bar.Add)
	if err != nil {
		return 0, 0, nil, err
	}
	bar.Finish()
	n := float64(s.Len())
	return loss / n, float64(correct) / n, confusion, nil
}

// Close releases the predictor's machine.
func (p *Predictor) Close() { p.vm.Close() }

// InputLayout returns the layout of n inputs the model takes:
// [n, C_in, N_in, 1+D+D²].
func (p *Predictor) InputLayout(n int) mixture.Layout {
	c := p.Setup.Model
	return mixture.Layout{B: n, C: c.Layout.InputChannels, N: c.Layout.InputGaussians, D: c.D}
}

// Predict returns the class probabilities of every input mixture of the
// packed batch mix of layout l, which must be InputLayout(l.B). The inputs
// run in batches of the run's size, the last one padded with copies of its
// last input; in evaluation mode every input's result depends on that input
// only.
func (p *Predictor) Predict(mix []float32, l mixture.Layout) ([][]float64, error) {
	if want := p.InputLayout(l.B); l != want || len(mix) != l.Len() {
		return nil, errors.Errorf("predict: %d values of layout %v, the model takes layout %v (%d values)", len(mix), l.Shape(), want.Shape(), want.Len())
	}
	if err := mixture.Validate(mix, l); err != nil {
		return nil, errors.Wrap(err, "predict: invalid input mixture")
	}
	m := p.Model
	B, per, classes := m.Config.Batch, l.C*l.N*l.Stride(), m.Config.Classes
	target := tensor.New(tensor.WithShape(B, classes), tensor.Of(m.Config.Dtype))
	if err := G.Let(m.Target, target); err != nil {
		return nil, err
	}
	out := make([][]float64, 0, l.B)
	batch := make([]float64, B*per)
	for first := 0; first < l.B; first += B {
		real := min(B, l.B-first)
		for i := range B {
			j := first + min(i, real-1)
			for k, v := range mix[j*per : (j+1)*per] {
				batch[i*per+k] = float64(v)
			}
		}
		if err := G.Let(m.Input, models.Dense(m.Config.Dtype, m.Input.Shape(), batch)); err != nil {
			return nil, err
		}
		p.vm.Reset()
		if err := p.vm.RunAll(); err != nil {
			return nil, errors.Wrapf(err, "predict: inputs %d to %d", first, first+real-1)
		}
		lp := models.Float64s(m.LogProbValue().(*tensor.Dense))
		for i := range real {
			pr := make([]float64, classes)
			for c := range pr {
				pr[c] = math.Exp(lp[i*classes+c])
			}
			out = append(out, pr)
		}
	}
	return out, nil
}

// Top returns the indices of the k largest probabilities of pr, largest
// first (ties: the lower index first); k is clamped to [0, len(pr)].
func Top(pr []float64, k int) []int {
	idx := make([]int, len(pr))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(pr[b], pr[a]) })
	return idx[:max(0, min(k, len(pr)))]
}
