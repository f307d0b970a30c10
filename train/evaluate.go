package train

import (
	"io"

	"github.com/gmcn-go/gmcn/dist"
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
	return evaluate(trained, ev, vm, s, log, dist.Single{})
}

// evaluate is Evaluate on the ranks of comm: rank r evaluates the batches
// r, r+P, … and the sums are taken over the ranks. The bar shows rank 0's
// share.
func evaluate(trained, ev *models.Model, vm G.VM, s *dataset.Inputs, log io.Writer, comm dist.Comm) (loss, acc float64, confusion [][]int, err error) {
	if trained != ev {
		if err := ev.SetState(trained.State()); err != nil {
			return 0, 0, nil, err
		}
	}
	if err := ev.SetTraining(false); err != nil {
		return 0, 0, nil, err
	}
	B, n := ev.Config.Batch, s.Len()
	rank, size := comm.Rank(), comm.Size()
	var bar *report.Progress
	if log != nil {
		share := 0
		for b := rank; b*B < n; b += size {
			share += min(B, n-b*B)
		}
		bar = report.NewProgress(log, "evaluating", share)
	}
	var correct int
	loss, correct, confusion, err = ev.Evaluate(vm, s, rank, size, bar.Add)
	if err != nil {
		return 0, 0, nil, err
	}
	bar.Finish()
	if size > 1 {
		if loss, correct, err = sumOverRanks(comm, loss, correct, confusion); err != nil {
			return 0, 0, nil, errors.Wrap(err, "evaluation")
		}
	}
	return loss / float64(n), float64(correct) / float64(n), confusion, nil
}

// sumOverRanks sums an evaluation's loss, correct count and confusion matrix
// over the ranks of comm (counts are exact in float64 below 2⁵³).
func sumOverRanks(comm dist.Comm, loss float64, correct int, confusion [][]int) (float64, int, error) {
	v := []float64{loss, float64(correct)}
	for _, row := range confusion {
		for _, c := range row {
			v = append(v, float64(c))
		}
	}
	if err := comm.AllReduceFloat64(v); err != nil {
		return 0, 0, err
	}
	k := 2
	for _, row := range confusion {
		for j := range row {
			row[j] = int(v[k])
			k++
		}
	}
	return v[0], int(v[1]), nil
}
