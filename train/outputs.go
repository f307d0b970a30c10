package train

import (
	"path/filepath"

	"github.com/gmcn-go/gmcn/internal/atomicfile"
	"github.com/gmcn-go/gmcn/runspec"
	"github.com/gmcn-go/gmcn/train/checkpoint"
	"github.com/gmcn-go/gmcn/train/report"
	"github.com/pkg/errors"
)

// DefaultHooks returns the hooks that write the command line's training
// outputs into dir. After every step they append the step's row to the step
// log (runspec.StepsFile), at once, so the log holds every step before any
// checkpoint a later hook writes; a resumed run first drops the rows after
// its checkpoint's step. At the end of every epoch they write, in this order, the
// test set's confusion matrix (runspec.ConfusionFile), the checkpoint that resumes
// the run (runspec.CheckpointFile), the metrics of every epoch so far (runspec.MetricsFile)
// and their plot (runspec.PlotFile). When the run is interrupted they write the
// checkpoint and, once an epoch has finished, the metrics and the plot. Every
// file but the step log is replaced atomically.
func DefaultHooks(dir string) []Hook {
	return []Hook{
		stepLog(dir),
		{Name: "confusion", Epoch: func(e EpochInfo) error {
			return report.WriteConfusionCSV(filepath.Join(dir, runspec.ConfusionFile), e.Confusion)
		}},
		atEpochsAndInterrupt("checkpoint", func(_ []report.EpochMetrics, state func() *checkpoint.State) error {
			return checkpoint.Save(filepath.Join(dir, runspec.CheckpointFile), state())
		}),
		atEpochsAndInterrupt("metrics", func(rows []report.EpochMetrics, _ func() *checkpoint.State) error {
			if len(rows) == 0 {
				return nil
			}
			return report.WriteMetricsCSV(filepath.Join(dir, runspec.MetricsFile), rows)
		}),
		atEpochsAndInterrupt("plot", func(rows []report.EpochMetrics, _ func() *checkpoint.State) error {
			if len(rows) == 0 {
				return nil
			}
			steps, err := report.ReadSteps(filepath.Join(dir, runspec.StepsFile))
			if err != nil {
				return errors.Wrap(err, "plotting metrics")
			}
			png, err := report.PlotMetrics(rows, report.StepPoints(steps))
			if err != nil {
				return errors.Wrap(err, "plotting metrics")
			}
			return atomicfile.Write(filepath.Join(dir, runspec.PlotFile), png)
		}),
	}
}

// atEpochsAndInterrupt returns the hook named name that calls write at the
// end of every epoch and when the run is interrupted, which is when an output
// changes: a run that ends normally has written everything at its last
// epoch.
func atEpochsAndInterrupt(name string, write func(rows []report.EpochMetrics, state func() *checkpoint.State) error) Hook {
	return Hook{
		Name:  name,
		Epoch: func(e EpochInfo) error { return write(e.Metrics, e.State) },
		End: func(e EndInfo) error {
			if !e.Interrupted {
				return nil
			}
			return write(e.Metrics, e.State)
		},
	}
}
