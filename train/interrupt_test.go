package train

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/gmcn-go/gmcn/runspec"
	"github.com/gmcn-go/gmcn/train/checkpoint"
)

// TestInterruptInsideStep cancels a run while its first step runs (the step
// blocked until the test lets it go; a first step, whose length is not yet
// known, runs in its own goroutine as every long one does): Run must return
// ErrInterrupted before the step ends, with a checkpoint at that step's
// start, and the run resumed from it must end with the metrics of an
// uninterrupted one.
func TestInterruptInsideStep(t *testing.T) {
	trainSet, testSet := SyntheticLines(40, 8, 3), SyntheticLines(16, 8, 4)
	want, err := Run(context.Background(), tinyConfig(t), trainSet, testSet, testOptions(2, 1e-2, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	release, finished := make(chan struct{}), make(chan struct{})
	steps := 0
	defer SetTestHookStep(func() {
		if steps++; steps == 1 {
			cancel()
			<-release
			close(finished)
		}
	})()
	start := time.Now()
	_, err = Run(ctx, tinyConfig(t), trainSet, testSet, testOptions(2, 1e-2, dir))
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("Run returned %v, want ErrInterrupted", err)
	}
	select {
	case <-finished:
		t.Fatal("Run waited for the abandoned step")
	default:
	}
	t.Logf("Run returned %v after the cancel", time.Since(start).Round(time.Millisecond))
	close(release)
	<-finished
	st, err := checkpoint.Load(filepath.Join(dir, runspec.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if st.Epoch != 0 || st.Batch != 0 {
		t.Errorf("checkpoint at epoch %d batch %d, want the start of the first step (0, 0)", st.Epoch, st.Batch)
	}
	opt := testOptions(2, 1e-2, dir)
	opt.Resume = filepath.Join(dir, runspec.CheckpointFile)
	got, err := Run(context.Background(), tinyConfig(t), trainSet, testSet, opt)
	if err != nil {
		t.Fatal(err)
	}
	sameMetrics(t, got, want)
}
