package train

import (
	"io"

	"github.com/gmcn-go/gmcn/models"
	"github.com/gmcn-go/gmcn/train/report"
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"

	"github.com/gmcn-go/gmcn/dataset"
)

// Evaluate copies the state of trained into the evaluation model ev (built
// from the same config, without gradients), runs it in evaluation mode over
// s and returns the mean loss, the accuracy and the confusion matrix (rows:
// true class, columns: predicted class). A non-nil log shows a progress bar.
func Evaluate(trained, ev *models.Model, vm G.VM, s *dataset.Inputs, log io.Writer) (loss, acc float64, confusion [][]int, err error) {
	if trained != ev {
		if err := ev.SetState(trained.State()); err != nil {
			return 0, 0, nil, err
		}
	}
	if err := ev.SetTraining(false); err != nil {
		return 0, 0, nil, err
	}
	B := ev.Config.Batch
	n := s.Len()
	confusion = make([][]int, s.Classes)
	for i := range confusion {
		confusion[i] = make([]int, s.Classes)
	}
	var bar *report.Progress
	if log != nil {
		bar = report.NewProgress(log, "evaluating", n)
	}
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	correct := 0
	for b := 0; b*B < n; b++ {
		idx := batchIndices(perm, b, B)
		real := min(B, n-b*B)
		if err := setBatch(ev, s, idx); err != nil {
			return 0, 0, nil, err
		}
		vm.Reset()
		if err := vm.RunAll(); err != nil {
			return 0, 0, nil, errors.Wrapf(err, "evaluation batch %d", b)
		}
		l, c, err := batchStats(ev, s, idx, real, confusion)
		if err != nil {
			return 0, 0, nil, err
		}
		loss += l
		correct += c
		bar.Add(real)
	}
	bar.Finish()
	return loss / float64(n), float64(correct) / float64(n), confusion, nil
}
