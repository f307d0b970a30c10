package train

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/models"
	"github.com/gmcn-go/gmcn/train/checkpoint"
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
	return models.Config{Layout: l, D: 2, Classes: 2, Batch: 8, Seed: 3}
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
	opt := testOptions(2, 1e-2, t.TempDir())
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
	opt.StopAfter, opt.Resume = 0, filepath.Join(dir, CheckpointFile)
	got, err := Run(context.Background(), tinyConfig(t), trainSet, testSet, opt)
	if err != nil {
		t.Fatal(err)
	}
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

// TestResumeExtends finishes a run of one epoch, resumes it with two and
// requires the metrics of an uninterrupted two-epoch run; resuming with
// fewer epochs than the checkpoint has finished is an error.
func TestResumeExtends(t *testing.T) {
	trainSet, testSet := SyntheticLines(40, 8, 3), SyntheticLines(16, 8, 4)
	want, err := Run(context.Background(), tinyConfig(t), trainSet, testSet, testOptions(2, 1e-2, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := Run(context.Background(), tinyConfig(t), trainSet, testSet, testOptions(1, 1e-2, dir)); err != nil {
		t.Fatal(err)
	}
	opt := testOptions(2, 1e-2, dir)
	opt.Resume = filepath.Join(dir, CheckpointFile)
	got, err := Run(context.Background(), tinyConfig(t), trainSet, testSet, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("extended run has %d epochs of metrics, uninterrupted %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		g.SamplesPerSec, g.Seconds, w.SamplesPerSec, w.Seconds = 0, 0, 0, 0
		if g != w {
			t.Errorf("epoch %d: extended %+v\n uninterrupted %+v", i+1, g, w)
		}
	}
	st, err := checkpoint.Load(opt.Resume)
	if err != nil || !st.Completed || st.Epoch != 2 {
		t.Errorf("checkpoint after the extension: epoch %d, completed %v, %v; want 2, true", st.Epoch, st.Completed, err)
	}
	opt.Epochs = 1
	_, err = Run(context.Background(), tinyConfig(t), trainSet, testSet, opt)
	gmtest.WantErr(t, err, "has finished 2 epochs, more than the 1 asked for")
}
