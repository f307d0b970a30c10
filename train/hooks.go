package train

import (
	"fmt"

	"github.com/gmcn-go/gmcn/train/checkpoint"
	"github.com/gmcn-go/gmcn/train/report"
	"github.com/pkg/errors"
)

// Hook is a set of callbacks that Run makes at defined points of training,
// so that a user can record, report or check a run without changing the
// loop. Nil callbacks are skipped. Hooks run in the order of Options.Hooks;
// an error from one stops the run, and Run returns it wrapped with the
// hook's name and the point where it failed. The callbacks run on the
// training goroutine: while one runs, training waits.
type Hook struct {
	// Name identifies the hook in errors; it must not be empty.
	Name string
	// Every, if > 1, calls Step only after the steps whose number
	// (StepInfo.Step) is a multiple of Every.
	Every int
	// Start is called once when the run starts in this process: before its
	// first step, after a resumed run has loaded its checkpoint.
	Start func(StartInfo) error
	// Step is called after every training step (optimiser and weight decay
	// included), or every Every steps.
	Step func(StepInfo) error
	// Epoch is called at the end of every epoch, after the evaluation on the
	// test set and the learning-rate schedule's update.
	Epoch func(EpochInfo) error
	// End is called once when the run stops without error: after its last
	// epoch, or when it is interrupted (then Run returns ErrInterrupted).
	End func(EndInfo) error
}

// StartInfo is what a Start hook is told about the run about to train.
type StartInfo struct {
	// Step is the number of training steps taken before: 0 for a new run,
	// the checkpoint's for a resumed one.
	Step int
}

// StepInfo is what a Step hook is told about the step just taken.
type StepInfo struct {
	Step    int     // training steps the run has taken, resumed parts included: 1 after the first
	Epoch   int     // the epoch in progress, from 1
	Batch   int     // the batch just taken within the epoch, from 0
	Samples int     // the batch's samples, without the filler of a partial last batch
	Correct int     // how many of Samples the model classified correctly before the step
	Loss    float64 // the summed negative log-likelihood of Samples before the step
	LR      float64 // Adam's learning rate in the step

	// State returns the checkpoint state that resumes the run after this
	// step (see EpochInfo.State).
	State func() *checkpoint.State
}

// EpochInfo is what an Epoch hook is told about the epoch just finished.
type EpochInfo struct {
	// Metrics holds every finished epoch of the run, this one last.
	Metrics []report.EpochMetrics
	// Confusion is this epoch's confusion matrix on the test set (rows: true
	// class, columns: predicted class).
	Confusion [][]int
	// State returns the checkpoint state that resumes the run at the start
	// of the next epoch, with a copy of the model's current values. The
	// rest of the state is shared with the running loop: read it during the
	// call only (checkpoint.Save does).
	State func() *checkpoint.State
}

// EndInfo is what an End hook is told about the run that stopped.
type EndInfo struct {
	Interrupted bool                  // the run stopped early and Run returns ErrInterrupted
	Metrics     []report.EpochMetrics // every finished epoch of the run
	// State returns the checkpoint state that resumes the run where it
	// stopped (see EpochInfo.State).
	State func() *checkpoint.State
}

// checkHooks rejects hooks that errors could not name or whose Every is
// negative.
func checkHooks(hooks []Hook) error {
	for i, h := range hooks {
		if h.Name == "" {
			return errors.Errorf("train: Options.Hooks[%d] has no Name; every hook needs one for its errors", i)
		}
		if h.Every < 0 {
			return errors.Errorf("train: hook %q: Every is %d, want ≥ 0", h.Name, h.Every)
		}
	}
	return nil
}

// callHooks calls f with every hook in order and stops at the first error,
// which it wraps with the hook's name and point.
func (t *trainer) callHooks(point string, f func(Hook) error) error {
	for _, h := range t.opt.Hooks {
		if err := f(h); err != nil {
			return errors.Wrapf(err, "hook %q at %s", h.Name, point)
		}
	}
	return nil
}

// start calls the Start hooks before the run's first step in this process.
func (t *trainer) start() error {
	info := StartInfo{Step: t.st.Adam.Steps}
	return t.callHooks("the start of the run", func(h Hook) error {
		if h.Start == nil {
			return nil
		}
		return h.Start(info)
	})
}

// afterStep calls the Step hooks after the step on the current batch.
func (t *trainer) afterStep(loss float64, correct, samples int) error {
	info := StepInfo{Step: t.st.Adam.Steps, Epoch: t.st.Epoch + 1, Batch: t.st.Batch, Samples: samples, Correct: correct, Loss: loss,
		LR: t.st.Adam.LR, State: t.stateAt(t.st.Epoch, t.st.Batch+1)}
	return t.callHooks(fmt.Sprintf("step %d", info.Step), func(h Hook) error {
		if h.Step == nil || (h.Every > 1 && info.Step%h.Every != 0) {
			return nil
		}
		return h.Step(info)
	})
}

// afterEpoch calls the Epoch hooks at the end of the current epoch.
func (t *trainer) afterEpoch(confusion [][]int) error {
	info := EpochInfo{Metrics: t.st.Metrics, Confusion: confusion, State: t.stateAt(t.st.Epoch+1, -1)}
	return t.callHooks(fmt.Sprintf("the end of epoch %d", t.st.Epoch+1), func(h Hook) error {
		if h.Epoch == nil {
			return nil
		}
		return h.Epoch(info)
	})
}

// end calls the End hooks when the run stops.
func (t *trainer) end(interrupted bool) error {
	return t.endAt(interrupted, t.stateAt(t.st.Epoch, t.st.Batch))
}

// endAt calls the End hooks with the given resuming state.
func (t *trainer) endAt(interrupted bool, state func() *checkpoint.State) error {
	info := EndInfo{Interrupted: interrupted, Metrics: t.st.Metrics, State: state}
	return t.callHooks("the end of the run", func(h Hook) error {
		if h.End == nil {
			return nil
		}
		return h.End(info)
	})
}

// stateAt returns a function that gives the checkpoint state resuming the
// run at epoch (from 0) and batch (-1: the epoch's start, before its
// shuffle): the loop's state with a copy of the model's current values.
func (t *trainer) stateAt(epoch, batch int) func() *checkpoint.State {
	return func() *checkpoint.State {
		st := *t.st
		st.Epoch, st.Batch = epoch, batch
		ms := t.m.State()
		st.Names, st.Params, st.BNMean, st.BNVar, st.CovNorms = ms.Names, ms.Params, ms.BNMean, ms.BNVar, ms.CovNorms
		return &st
	}
}
