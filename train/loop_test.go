package train

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/models"
	"github.com/gmcn-go/gmcn/runspec"
	"github.com/gmcn-go/gmcn/train/checkpoint"
	"github.com/gmcn-go/gmcn/train/report"
)

// testOptions returns the reference's weight-decay rate with epochs and lr,
// writing DefaultHooks' outputs into dir.
func testOptions(epochs int, lr float64, dir string) Options {
	return Options{Epochs: epochs, LR: lr, DecayRate: 0.05, Hooks: DefaultHooks(dir)}
}

func tinyConfig(t *testing.T) models.Config {
	t.Helper()
	l, err := models.ParseLayout("1/8 -> 4/4 -> 2")
	if err != nil {
		t.Fatal(err)
	}
	return models.Config{Layout: l, D: 2, Classes: 2, Batch: 8, Seed: 3, Device: testDev}
}

// TestTrainSynthetic trains a tiny GMCN through the same builder and loop as
// the real runs and requires ≥ 95% test accuracy on the two-class problem.
func TestTrainSynthetic(t *testing.T) {
	trainSet, testSet := SyntheticLines(96, 8, 1), SyntheticLines(48, 8, 2)
	opt := testOptions(6, 1e-2, t.TempDir())
	rows, err := Run(context.Background(), tinyConfig(t), trainSet, testSet, opt)
	if err != nil {
		t.Fatal(err)
	}
	last := rows[len(rows)-1]
	t.Logf("final: %v", last)
	if last.TestAcc < 0.95 {
		t.Errorf("test accuracy %.1f%% after %d epochs, want ≥ 95%%", 100*last.TestAcc, opt.Epochs)
	}
}

// TestResumeMatchesUninterrupted interrupts a run mid-epoch, resumes it from
// the checkpoint and requires exactly the metrics of an uninterrupted run.
func TestResumeMatchesUninterrupted(t *testing.T) {
	trainSet, testSet := SyntheticLines(40, 8, 3), SyntheticLines(16, 8, 4)
	wantDir := t.TempDir()
	opt := testOptions(2, 1e-2, wantDir)
	want, err := Run(context.Background(), tinyConfig(t), trainSet, testSet, opt)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	opt.Hooks = DefaultHooks(dir)
	opt.StopAfter = 7 // one epoch has 5 batches: stop in the middle of the second
	if _, err := Run(context.Background(), tinyConfig(t), trainSet, testSet, opt); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("interrupted run returned %v, want ErrInterrupted", err)
	}
	opt.StopAfter, opt.Resume = 0, filepath.Join(dir, runspec.CheckpointFile)
	got, err := Run(context.Background(), tinyConfig(t), trainSet, testSet, opt)
	if err != nil {
		t.Fatal(err)
	}
	sameMetrics(t, got, want)
	sameFile(t, filepath.Join(dir, runspec.StepsFile), filepath.Join(wantDir, runspec.StepsFile))
}

// sameMetrics fails t unless a resumed run's metrics equal an uninterrupted
// run's but for the times.
func sameMetrics(t *testing.T, got, want []report.EpochMetrics) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("resumed run has %d epochs of metrics, uninterrupted %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		g.SamplesPerSec, g.Seconds, w.SamplesPerSec, w.Seconds = 0, 0, 0, 0
		if g != w {
			t.Errorf("epoch %d: resumed %+v\n uninterrupted %+v", i+1, g, w)
		}
	}
}

// sameFile fails t unless the files got and want hold the same bytes.
func sameFile(t *testing.T, got, want string) {
	t.Helper()
	g, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g, w) {
		t.Errorf("%s differs from %s:\n%s\nwant:\n%s", got, want, g, w)
	}
}

// TestExtendFinishedRun resumes a finished two-epoch run with three epochs
// and requires the numbers of a three-epoch run: metrics, step log and
// final checkpoint (parameters, optimiser, schedule) are identical, because
// nothing in training depends on the total number of epochs. The extension
// is not Completed until its last epoch ends, and a checkpoint beyond
// Options.Epochs is refused rather than silently cut short.
func TestExtendFinishedRun(t *testing.T) {
	trainSet, testSet := SyntheticLines(40, 8, 3), SyntheticLines(16, 8, 4)
	wantDir, dir := t.TempDir(), t.TempDir()
	want, err := Run(context.Background(), tinyConfig(t), trainSet, testSet, testOptions(3, 1e-2, wantDir))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), tinyConfig(t), trainSet, testSet, testOptions(2, 1e-2, dir)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, runspec.CheckpointFile)
	for _, c := range []struct {
		epochs int
		want   string
	}{
		{1, "has trained into epoch 2 but the run is to stop after epoch 1: resume with at least 2 epochs (--epochs)"},
	} {
		opt := testOptions(c.epochs, 1e-2, dir)
		opt.Resume = path
		if _, err := Run(context.Background(), tinyConfig(t), trainSet, testSet, opt); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("resuming 2 epochs with %d: error %v, want one naming %s and containing %q", c.epochs, err, path, c.want)
		}
	}

	opt := testOptions(3, 1e-2, dir)
	opt.Resume = path
	opt.Hooks = append(opt.Hooks, Hook{Name: "completed", Step: func(s StepInfo) error {
		if s.State().Completed {
			t.Errorf("step %d of the extension: snapshot says the run is completed", s.Step)
		}
		return nil
	}})
	got, err := Run(context.Background(), tinyConfig(t), trainSet, testSet, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(withoutTimes(&checkpoint.State{Metrics: got}), withoutTimes(&checkpoint.State{Metrics: want})) {
		t.Errorf("extended: %+v\n three epochs: %+v", got, want)
	}
	sameFile(t, filepath.Join(dir, runspec.StepsFile), filepath.Join(wantDir, runspec.StepsFile))
	gotSt, err := checkpoint.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	wantSt, err := checkpoint.Load(filepath.Join(wantDir, runspec.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if !gotSt.Completed || !reflect.DeepEqual(withoutTimes(gotSt), withoutTimes(wantSt)) {
		t.Errorf("extended run's final checkpoint differs from the three-epoch run's (completed %v)", gotSt.Completed)
	}
}

// TestStepLogContent checks the step log against the epoch metrics: the
// rows' losses and accuracies average to the epoch's training figures and
// each row has the epoch's learning rate. The second run shows that the
// loop's log carries the test-set evaluation's progress bar.
func TestStepLogContent(t *testing.T) {
	trainSet, testSet := SyntheticLines(36, 8, 3), SyntheticLines(16, 8, 4)
	dir := t.TempDir()
	var log bytes.Buffer
	opt := testOptions(2, 1e-2, dir)
	opt.Log = &log
	metrics, err := Run(context.Background(), tinyConfig(t), trainSet, testSet, opt)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := report.ReadSteps(filepath.Join(dir, runspec.StepsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 10 {
		t.Fatalf("%d rows, want 2 epochs of 5 batches", len(rows))
	}
	var loss, correct [2]float64
	for i, r := range rows {
		wantSamples := 8
		if r.Batch == 4 {
			wantSamples = 4 // 36 = 4·8 + 4: the filler is not counted
		}
		if r.Step != i+1 || r.Epoch != 1+i/5 || r.Batch != i%5 || r.Samples != wantSamples || r.LR != metrics[r.Epoch-1].LR {
			t.Errorf("row %d: %+v", i+1, r)
		}
		loss[r.Epoch-1] += r.Loss * float64(r.Samples)
		correct[r.Epoch-1] += r.Accuracy * float64(r.Samples)
	}
	for e, m := range metrics {
		n := float64(trainSet.Len())
		if math.Abs(loss[e]/n-m.TrainLoss) > 1e-12 || math.Abs(correct[e]/n-m.TrainAcc) > 1e-12 {
			t.Errorf("epoch %d: rows average to loss %v accuracy %v, metrics say %v %v", e+1, loss[e]/n, correct[e]/n, m.TrainLoss, m.TrainAcc)
		}
	}
	if got := strings.Count(log.String(), "evaluating [####################] 100.0% 16/16"); got != 2 {
		t.Errorf("%d complete evaluation bars in the log, want one per epoch:\n%s", got, log.String())
	}
}

// TestTrainDenseHead mixes GM and dense layers in one graph: four GM output
// channels, integrated, then a dense head with 8 hidden units and 2 classes.
func TestTrainDenseHead(t *testing.T) {
	l, err := models.ParseLayout("1/8 -> 4/4 -> 4")
	if err != nil {
		t.Fatal(err)
	}
	cfg := models.Config{Layout: l, D: 2, Classes: 2, Batch: 8, Seed: 5, DenseHead: 8}
	trainSet, testSet := SyntheticLines(96, 8, 5), SyntheticLines(48, 8, 6)
	opt := testOptions(6, 1e-2, t.TempDir())
	rows, err := Run(context.Background(), cfg, trainSet, testSet, opt)
	if err != nil {
		t.Fatal(err)
	}
	first, last := rows[0], rows[len(rows)-1]
	t.Logf("first %v\nlast %v", first, last)
	if last.TestAcc < 0.9 {
		t.Errorf("dense-head model: test accuracy %.1f%%, want ≥ 90%%", 100*last.TestAcc)
	}
}

// TestRunRejectsBadOptions checks that settings no run can use are errors
// naming the setting, before anything is built or written.
func TestRunRejectsBadOptions(t *testing.T) {
	trainSet, testSet := SyntheticLines(16, 8, 1), SyntheticLines(8, 8, 2)
	for _, c := range []struct {
		name string
		edit func(*Options)
	}{
		{"no epochs", func(o *Options) { o.Epochs = 0 }},
		{"negative epochs", func(o *Options) { o.Epochs = -3 }},
		{"zero rate", func(o *Options) { o.LR = 0 }},
		{"NaN rate", func(o *Options) { o.LR = math.NaN() }},
		{"infinite rate", func(o *Options) { o.LR = math.Inf(1) }},
		{"negative decay", func(o *Options) { o.DecayRate = -0.5 }},
		{"NaN decay", func(o *Options) { o.DecayRate = math.NaN() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			opt := testOptions(1, 1e-2, dir)
			c.edit(&opt)
			_, err := Run(context.Background(), tinyConfig(t), trainSet, testSet, opt)
			if err == nil || !strings.Contains(err.Error(), "Options") {
				t.Fatalf("err %v, want an error naming the options", err)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("%d files written", len(entries))
			}
		})
	}
}

// TestRunClassMismatch gives Run a model with fewer classes than the data's
// labels need: an error naming both counts, not a panic in the batch copy.
func TestRunClassMismatch(t *testing.T) {
	trainSet, testSet := SyntheticLines(16, 8, 1), SyntheticLines(8, 8, 2)
	l, err := models.ParseLayout("1/8 -> 4/4 -> 3")
	if err != nil {
		t.Fatal(err)
	}
	cfg := models.Config{Layout: l, D: 2, Classes: 3, Batch: 8, Seed: 3}
	_, err = Run(context.Background(), cfg, trainSet, testSet, testOptions(1, 1e-2, t.TempDir()))
	gmtest.WantErr(t, err, "the model has 3 classes but the training set has 2 and the test set 2")
}

// TestResumeFusedSettings resumes an interrupted fused run: with other
// fused settings the checkpoint is refused, with the same ones it resumes,
// and a checkpoint whose key predates the fused settings in it (the same
// key less them) still resumes and is written back under the full key.
func TestResumeFusedSettings(t *testing.T) {
	trainSet, testSet := SyntheticLines(40, 8, 3), SyntheticLines(16, 8, 4)
	cfg := tinyConfig(t)
	cfg.Fused = 2
	dir := t.TempDir()
	opt := testOptions(2, 1e-2, dir)
	opt.StopAfter = 3
	if _, err := Run(context.Background(), cfg, trainSet, testSet, opt); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("interrupted run returned %v, want ErrInterrupted", err)
	}
	path := filepath.Join(dir, runspec.CheckpointFile)
	st, err := checkpoint.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	full := st.ConfigKey
	legacy, fused, ok := strings.Cut(full, "|"+cfg.FusedKey())
	if !ok || fused != "" {
		t.Fatalf("checkpoint key %q does not end in the fused settings %q", full, cfg.FusedKey())
	}
	opt.StopAfter, opt.Resume = 0, path
	for _, other := range []func(*models.Config){
		func(c *models.Config) { c.Fused = 4 },
		func(c *models.Config) { c.FusedNegative = 1 },
		func(c *models.Config) { c.FusedMin = 8 },
		func(c *models.Config) { c.FusedExact = true },
	} {
		c := cfg
		other(&c)
		if _, err := Run(context.Background(), c, trainSet, testSet, opt); err == nil || !strings.Contains(err.Error(), "another configuration") {
			t.Errorf("resumed with %s: error %v, want one about another configuration", c.FusedKey(), err)
		}
	}
	st.ConfigKey = legacy
	if err := checkpoint.Save(path, st); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), cfg, trainSet, testSet, opt); err != nil {
		t.Fatalf("resuming a checkpoint keyed before the fused settings: %v", err)
	}
	if st, err = checkpoint.Load(path); err != nil {
		t.Fatal(err)
	}
	if st.ConfigKey != full {
		t.Errorf("checkpoint written after resuming has key %q, want %q", st.ConfigKey, full)
	}
}
