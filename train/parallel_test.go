package train

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gmcn-go/gmcn/dataset"
	"github.com/gmcn-go/gmcn/dist"
	"github.com/gmcn-go/gmcn/models"
	"github.com/gmcn-go/gmcn/runspec"
	"github.com/gmcn-go/gmcn/train/checkpoint"
)

// parallelSets are the data of the data-parallel tests: 40 training samples
// in shards of tinyConfig's 8, so that with two shards per step an epoch has
// three steps and the third step's second shard is filler only.
func parallelSets() (trainSet, testSet *dataset.Inputs) {
	return SyntheticLines(40, 8, 3), SyntheticLines(20, 8, 4)
}

// runRanks trains on every rank of comms, each in its own goroutine, with
// options from opt(rank). A rank that fails aborts the group, as the command
// line does, so the others return instead of waiting for it.
func runRanks(t *testing.T, comms []dist.Comm, cfg func(rank int) models.Config, opt func(rank int) Options) []error {
	t.Helper()
	trainSet, testSet := parallelSets()
	errs := make([]error, len(comms))
	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Go(func() {
			o := opt(r)
			o.Comm = c
			_, errs[r] = Run(context.Background(), cfg(r), trainSet, testSet, o)
			if errs[r] != nil && !errors.Is(errs[r], ErrInterrupted) {
				c.Abort(1)
			}
		})
	}
	wg.Wait()
	return errs
}

// sameRun fails t unless the run in dir ended with the parameters, Adam
// state and metrics of the run in wantDir: parameters and training metrics
// bit for bit, the test loss within tol (its sum over test batches is
// ordered by rank).
func sameRun(t *testing.T, dir, wantDir string, tol float64) {
	t.Helper()
	got, err := checkpoint.Load(filepath.Join(dir, runspec.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	want, err := checkpoint.Load(filepath.Join(wantDir, runspec.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if got.Adam.Steps != want.Adam.Steps || len(got.Params) != len(want.Params) {
		t.Fatalf("%d steps and %d parameters, want %d and %d", got.Adam.Steps, len(got.Params), want.Adam.Steps, len(want.Params))
	}
	for i := range want.Params {
		for j, w := range want.Params[i] {
			if g := got.Params[i][j]; g != w {
				t.Fatalf("parameter %s[%d] = %v, want %v", want.Names[i], j, g, w)
			}
		}
	}
	if len(got.Metrics) != len(want.Metrics) {
		t.Fatalf("%d epochs of metrics, want %d", len(got.Metrics), len(want.Metrics))
	}
	for i, w := range want.Metrics {
		g := got.Metrics[i]
		if g.TrainLoss != w.TrainLoss || g.TrainAcc != w.TrainAcc || g.TestAcc != w.TestAcc || g.LR != w.LR ||
			math.Abs(g.TestLoss-w.TestLoss) > tol*math.Abs(w.TestLoss) {
			t.Errorf("epoch %d: %v\nwant %v", i+1, g, w)
		}
	}
	sameFile(t, filepath.Join(dir, runspec.StepsFile), filepath.Join(wantDir, runspec.StepsFile))
}

// TestDataParallelMatchesAccumulation trains P in-process ranks, one shard
// each, and one process that computes the same P shards one after the other
// (Accumulate = P), and requires the same run: a step's gradient and
// statistics are the mean over its shards either way.
func TestDataParallelMatchesAccumulation(t *testing.T) {
	for _, p := range []int{2, 3} {
		wantDir := t.TempDir()
		opt := testOptions(2, 1e-2, wantDir)
		opt.Accumulate = p
		trainSet, testSet := parallelSets()
		if _, err := Run(context.Background(), tinyConfig(t), trainSet, testSet, opt); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		errs := runRanks(t, dist.NewLocal(p), func(int) models.Config { return tinyConfig(t) }, func(int) Options { return testOptions(2, 1e-2, dir) })
		for r, err := range errs {
			if err != nil {
				t.Fatalf("%d ranks: rank %d: %v", p, r, err)
			}
		}
		sameRun(t, dir, wantDir, 1e-12)
	}
}

// TestDataParallelResume interrupts a two-rank run in its second epoch and
// resumes it, once on two ranks and once in one process accumulating two
// shards, and requires the uninterrupted run's numbers both times.
func TestDataParallelResume(t *testing.T) {
	cfg := func(int) models.Config { return tinyConfig(t) }
	wantDir := t.TempDir()
	for r, err := range runRanks(t, dist.NewLocal(2), cfg, func(int) Options { return testOptions(2, 1e-2, wantDir) }) {
		if err != nil {
			t.Fatalf("uninterrupted: rank %d: %v", r, err)
		}
	}
	for _, resumeRanks := range []int{2, 1} {
		dir := t.TempDir()
		errs := runRanks(t, dist.NewLocal(2), cfg, func(int) Options {
			o := testOptions(2, 1e-2, dir)
			o.StopAfter = 4 // an epoch has 3 steps
			return o
		})
		for r, err := range errs {
			if !errors.Is(err, ErrInterrupted) {
				t.Fatalf("interrupted: rank %d returned %v, want ErrInterrupted", r, err)
			}
		}
		errs = runRanks(t, dist.NewLocal(resumeRanks), cfg, func(int) Options {
			o := testOptions(2, 1e-2, dir)
			o.Resume, o.Accumulate = filepath.Join(dir, runspec.CheckpointFile), 2/resumeRanks
			return o
		})
		for r, err := range errs {
			if err != nil {
				t.Fatalf("resumed on %d ranks: rank %d: %v", resumeRanks, r, err)
			}
		}
		sameRun(t, dir, wantDir, 1e-12)
	}
}

// TestDataParallelErrors checks that ranks that disagree fail with a message
// that says so, and that the other ranks are released rather than left
// waiting: a rank with another seed, a resumed run with another number of
// shards.
func TestDataParallelErrors(t *testing.T) {
	dir := t.TempDir()
	errs := runRanks(t, dist.NewLocal(2), func(r int) models.Config {
		c := tinyConfig(t)
		c.Seed += uint64(r)
		return c
	}, func(int) Options { return testOptions(1, 1e-2, dir) })
	if err := errs[1]; err == nil || !strings.Contains(err.Error(), "rank 1 trains another configuration than rank 0") {
		t.Errorf("rank 1 with another seed: %v", err)
	}
	if err := errs[0]; err == nil {
		t.Error("rank 0 went on with a rank that failed")
	}

	trainSet, testSet := parallelSets()
	opt := testOptions(1, 1e-2, dir)
	if _, err := Run(context.Background(), tinyConfig(t), trainSet, testSet, opt); err != nil {
		t.Fatal(err)
	}
	errs = runRanks(t, dist.NewLocal(2), func(int) models.Config { return tinyConfig(t) }, func(int) Options {
		o := testOptions(2, 1e-2, dir)
		o.Resume = filepath.Join(dir, runspec.CheckpointFile)
		return o
	})
	for r, err := range errs {
		want := map[int]string{0: "ranks × --accumulate it started with", 1: "rank 0 could not start the run"}[r]
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("resuming a one-shard run on 2 ranks: rank %d: %v", r, err)
		}
	}
	opt.Accumulate = -1
	if _, err := Run(context.Background(), tinyConfig(t), trainSet, testSet, opt); err == nil || !strings.Contains(err.Error(), "Accumulate is -1") {
		t.Errorf("Accumulate -1: %v", err)
	}
}
