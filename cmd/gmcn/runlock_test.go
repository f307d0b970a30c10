package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/dataset/mnist"
	"github.com/gmcn-go/gmcn/runspec"
	"github.com/gmcn-go/gmcn/train"
)

// smallRun is a short MNIST training: 60 steps an epoch.
var smallRun = []string{"train", "--layers", "1/8 -> 4/4 -> 10", "--train-limit", "600", "--test-limit", "100",
	"--batch", "10", "--epochs", "2"}

// TestTwoTrainingsOneOut starts a second training into the --out of a
// running one, with and without --overwrite: each is refused with one line
// naming the running process, and the first run finishes with every step
// and epoch in its files and no lock file left.
func TestTwoTrainingsOneOut(t *testing.T) {
	if _, err := mnist.LoadMNIST(""); err != nil {
		t.Skipf("MNIST not available: %v", err)
	}
	work := t.TempDir()
	run := filepath.Join(work, "run")
	args := append(append([]string{}, smallRun...), "--cache", filepath.Join(work, "cache"), "--out", run)
	cmd, sc := startGmcn(t, work, args...)
	progress := regexp.MustCompile(`^epoch 1/2 \[[#.]+\] +([0-9.]+)%`)
	var lines []string
	tried := false
	for sc.Scan() {
		lines = append(lines, sc.Text())
		m := progress.FindStringSubmatch(sc.Text())
		if m == nil || tried {
			continue
		}
		if pct, _ := strconv.ParseFloat(m[1], 64); pct < 10 {
			continue
		}
		tried = true
		for _, extra := range [][]string{nil, {"--overwrite"}} {
			r := gmcn(t, work, append(args, extra...)...)
			want := fmt.Sprintf("%s is being written by gmcn (pid %d on ", run, cmd.Process.Pid)
			if r.code != 1 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, want) {
				t.Errorf("second training %q: exit status %d, standard error %q; want 1 and one line containing %q", extra, r.code, r.stderr, want)
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the first run: %v\n%s", err, strings.Join(lines, "\n"))
	}
	if !tried {
		t.Fatalf("the first run never showed 10%% of its first epoch:\n%s", strings.Join(lines, "\n"))
	}
	steps, err := os.ReadFile(filepath.Join(run, runspec.StepsFile))
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(string(steps)), "\n")[1:]
	for i, row := range rows {
		if step, _, _ := strings.Cut(row, ","); step != strconv.Itoa(i+1) {
			t.Fatalf("steps.csv row %d is step %s: the log is not the first run's alone", i+1, step)
		}
	}
	if len(rows) != 120 {
		t.Errorf("steps.csv holds %d steps, want 120", len(rows))
	}
	if m := metricsWithoutTimes(t, run); len(m) != 3 {
		t.Errorf("metrics.csv holds %d rows, want a header and 2 epochs", len(m))
	}
	if _, err := os.Stat(filepath.Join(run, train.LockFile)); !os.IsNotExist(err) {
		t.Errorf("the finished run left its lock file (%v)", err)
	}
}

// TestStoppedRunRestarts takes a run directory as a training killed before
// its first checkpoint leaves it, with the dead process's lock file, and
// starts it again with the option the refusals name; eval then reads it.
func TestStoppedRunRestarts(t *testing.T) {
	if _, err := mnist.LoadMNIST(""); err != nil {
		t.Skipf("MNIST not available: %v", err)
	}
	work := t.TempDir()
	run := stoppedRun(t)
	if err := os.WriteFile(filepath.Join(run, train.LockFile), []byte("gmcn (pid 1 on nowhere, since long ago)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"train", "--layers", "1/8 -> 4/4 -> 10", "--train-limit", "100", "--test-limit", "50",
		"--batch", "10", "--epochs", "1", "--cache", filepath.Join(work, "cache"), "--out", run}
	if r := gmcn(t, work, args...); r.code != 1 || !strings.Contains(r.stderr, "start it again with --overwrite") {
		t.Fatalf("train into the stopped run: exit status %d, %q; want 1 and the --overwrite hint", r.code, r.stderr)
	}
	if r := gmcn(t, work, append(args, "--overwrite")...); r.code != 0 {
		t.Fatalf("train --overwrite: exit status %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(run, runspec.CheckpointFile)); err != nil {
		t.Errorf("no checkpoint after the restart: %v", err)
	}
	if r := gmcn(t, work, "eval", "--run", run); r.code != 0 {
		t.Errorf("eval of the restarted run: exit status %d\n%s", r.code, r.stderr)
	}
}

// TestEvalFromAnotherFolder trains with the default cache folder and
// evaluates and renders the run from another working directory: run.json
// holds the cache's absolute path, so eval and render read the fitted test
// inputs instead of fitting them again into a cache of their own.
func TestEvalFromAnotherFolder(t *testing.T) {
	if _, err := mnist.LoadMNIST(""); err != nil {
		t.Skipf("MNIST not available: %v", err)
	}
	work, elsewhere := t.TempDir(), t.TempDir()
	run := filepath.Join(work, "run")
	if r := gmcn(t, work, "train", "--layers", "1/8 -> 4/4 -> 10", "--train-limit", "100", "--test-limit", "50",
		"--batch", "10", "--epochs", "1", "--out", "run"); r.code != 0 {
		t.Fatalf("train: exit status %d\n%s", r.code, r.stderr)
	}
	rc, err := runspec.LoadConfig(run)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(work, "cache"); rc.CacheDir != want {
		t.Errorf("run.json cache_dir %q, want %q", rc.CacheDir, want)
	}
	for _, cmd := range []string{"eval", "render"} {
		if r := gmcn(t, elsewhere, cmd, "--run", run); r.code != 0 {
			t.Fatalf("%s from another folder: exit status %d\n%s", cmd, r.code, r.stderr)
		}
		if left, _ := os.ReadDir(elsewhere); len(left) > 0 {
			t.Errorf("%s from another folder wrote %v there (fitted its inputs again?)", cmd, left)
		}
	}
}
