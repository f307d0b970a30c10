package train

import (
	"path/filepath"

	"github.com/gmcn-go/gmcn/runspec"
	"github.com/gmcn-go/gmcn/train/report"
)

// stepLog returns the hook that writes one row per training step to
// dir/runspec.StepsFile. When a run resumes, it drops the rows after the
// checkpoint's step, so the log equals an uninterrupted run's.
func stepLog(dir string) Hook {
	var log *report.StepLog
	return Hook{
		Name: "steps",
		Start: func(s StartInfo) error {
			var err error
			log, err = report.OpenStepLog(filepath.Join(dir, runspec.StepsFile), s.Step)
			return err
		},
		Step: func(s StepInfo) error {
			return log.Append(report.StepRow{Step: s.Step, Epoch: s.Epoch, Batch: s.Batch, Samples: s.Samples,
				Loss: s.Loss / float64(s.Samples), Accuracy: float64(s.Correct) / float64(s.Samples), LR: s.LR})
		},
	}
}
