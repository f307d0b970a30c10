package main

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gmcn-go/gmcn/dataset/mnist"
	"github.com/gmcn-go/gmcn/runspec"
	"github.com/gmcn-go/gmcn/train/checkpoint"
)

// TestSIGTERMResumes stops a small MNIST run with SIGTERM in its first
// epoch, requires exit status 130, the resume hint and a checkpoint, resumes
// it and requires the metrics of an uninterrupted run; then extends the
// finished run by one epoch with --resume --epochs.
func TestSIGTERMResumes(t *testing.T) {
	if _, err := mnist.LoadMNIST(""); err != nil {
		t.Skipf("MNIST not available: %v", err)
	}
	work := t.TempDir()
	args := []string{"train", "--layers", "1/8 -> 4/4 -> 10", "--train-limit", "600", "--test-limit", "100",
		"--batch", "10", "--epochs", "2", "--cache", filepath.Join(work, "cache")}
	ref, run := filepath.Join(work, "ref"), filepath.Join(work, "run")
	if r := gmcn(t, work, append(args, "--out", ref)...); r.code != 0 {
		t.Fatalf("uninterrupted run: exit status %d\n%s", r.code, r.stderr)
	}

	cmd, sc := startGmcn(t, work, append(args, "--out", run)...)
	// The progress bar writes a plain line at every tenth of an epoch when
	// standard error is not a terminal; a terminal's \r redraws are split
	// too, so the test does not depend on which it gets.
	progress := regexp.MustCompile(`^epoch 1/2 \[[#.]+\] +([0-9.]+)%`)
	var lines []string
	signalled := false
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if m := progress.FindStringSubmatch(sc.Text()); m != nil && !signalled {
			if pct, _ := strconv.ParseFloat(m[1], 64); pct >= 20 {
				if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
				signalled = true
			}
		}
	}
	err := cmd.Wait()
	if !signalled {
		t.Fatalf("the run never showed 20%% of its first epoch (%v):\n%s", err, strings.Join(lines, "\n"))
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("interrupted run: exit status %d, want 130:\n%s", code, strings.Join(lines, "\n"))
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, "resume with: gmcn train --out "+run+" --resume") {
		t.Errorf("last line %q, want the resume hint", last)
	}
	st, err := checkpoint.Load(filepath.Join(run, runspec.CheckpointFile))
	if err != nil {
		t.Fatalf("interrupted run: %v", err)
	}
	if st.Completed || st.Epoch != 0 || st.Batch < 1 {
		t.Errorf("checkpoint at epoch %d batch %d (completed %v), want inside the first epoch", st.Epoch, st.Batch, st.Completed)
	}

	if r := gmcn(t, work, "train", "--out", run, "--resume"); r.code != 0 {
		t.Fatalf("resumed run: exit status %d\n%s", r.code, r.stderr)
	}
	want, got := metricsWithoutTimes(t, ref), metricsWithoutTimes(t, run)
	if !slices.EqualFunc(got, want, slices.Equal) || len(got) != 3 {
		t.Errorf("resumed run's metrics\n%q\nwant the uninterrupted run's\n%q", got, want)
	}

	if r := gmcn(t, work, "train", "--out", run, "--resume", "--epochs", "3"); r.code != 0 {
		t.Fatalf("extended run: exit status %d\n%s", r.code, r.stderr)
	}
	rc, err := runspec.LoadConfig(run)
	if err != nil || rc.Epochs != 3 {
		t.Errorf("run.json after --resume --epochs 3: epochs %d, %v", rc.Epochs, err)
	}
	if ext := metricsWithoutTimes(t, run); len(ext) != 4 || !slices.EqualFunc(ext[:3], want, slices.Equal) {
		t.Errorf("extended run's metrics\n%q\nwant the first two epochs'\n%q and a third", ext, want)
	}
}

// startGmcn starts the binary with args in dir and returns it with a scanner
// of its standard error, split into lines (splitLines); the test kills it
// at its end if it still runs.
func startGmcn(t *testing.T, dir string, args ...string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	sc := bufio.NewScanner(stderr)
	sc.Split(splitLines)
	return cmd, sc
}

// splitLines is bufio.ScanLines that also ends a line at a carriage return.
func splitLines(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// metricsWithoutTimes reads the metrics.csv of the run in dir without the
// columns that measure time.
func metricsWithoutTimes(t *testing.T, dir string) [][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, runspec.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	drop := map[int]bool{}
	for i, name := range rows[0] {
		if name == "samples_per_s" || name == "seconds" {
			drop[i] = true
		}
	}
	if len(drop) != 2 {
		t.Fatalf("%s: header %q, want the time columns samples_per_s and seconds", dir, rows[0])
	}
	var out [][]string
	for _, r := range rows {
		var keep []string
		for i, v := range r {
			if !drop[i] {
				keep = append(keep, v)
			}
		}
		out = append(out, keep)
	}
	return out
}

// TestSignalInsideStep interrupts a run inside its first step, which takes
// seconds: the command must exit 130 within 2 s with a checkpoint at the
// step's start, and the resumed run must end with the metrics of an
// uninterrupted one.
func TestSignalInsideStep(t *testing.T) {
	if _, err := mnist.LoadMNIST(""); err != nil {
		t.Skipf("MNIST not available: %v", err)
	}
	work := t.TempDir()
	args := []string{"train", "--layers", "1/32 -> 24/16 -> 10", "--batch", "8", "--train-limit", "8", "--test-limit", "8",
		"--epochs", "1", "--cache", filepath.Join(work, "cache")}
	ref, run := filepath.Join(work, "ref"), filepath.Join(work, "run")
	if r := gmcn(t, work, append(args, "--out", ref)...); r.code != 0 {
		t.Fatalf("uninterrupted run: exit status %d\n%s", r.code, r.stderr)
	}
	cmd := exec.Command(bin, append(args, "--out", run)...)
	cmd.Dir = work
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// run.json is written when the loop starts; its first step takes about
	// 4 s on two cores.
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(filepath.Join(run, runspec.ConfigFile)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run never started:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(150 * time.Millisecond) // well inside the step, on a machine twice as fast too
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	signalled := time.Now()
	cmd.Wait()
	if took := time.Since(signalled); took > 2*time.Second {
		t.Errorf("the run took %v to stop after the signal, want at most 2 s", took)
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 || !strings.Contains(stderr.String(), "stopping now with a checkpoint of the last finished step") {
		t.Fatalf("exit status %d, want 130 and the stopping line:\n%s", code, stderr.String())
	}
	st, err := checkpoint.Load(filepath.Join(run, runspec.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if st.Epoch != 0 || st.Batch != 0 {
		t.Errorf("checkpoint at epoch %d batch %d, want the start of the first step (0, 0)", st.Epoch, st.Batch)
	}
	if r := gmcn(t, work, "train", "--out", run, "--resume"); r.code != 0 {
		t.Fatalf("resumed run: exit status %d\n%s", r.code, r.stderr)
	}
	if got, want := metricsWithoutTimes(t, run), metricsWithoutTimes(t, ref); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("resumed run's metrics\n%q\nwant the uninterrupted run's\n%q", got, want)
	}
}

// TestSignalWhileFitting interrupts a run while it fits its inputs: it must
// exit 130 at once, say that there is nothing to resume, and leave no run
// directory behind.
func TestSignalWhileFitting(t *testing.T) {
	if _, err := mnist.LoadMNIST(""); err != nil {
		t.Skipf("MNIST not available: %v", err)
	}
	work := t.TempDir()
	run := filepath.Join(work, "run")
	cmd, sc := startGmcn(t, work, "train", "--train-limit", "30000", "--cache", filepath.Join(work, "cache"), "--out", run)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.HasPrefix(sc.Text(), "fit mnist/train") {
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	signalled := time.Now()
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	cmd.Wait()
	if took := time.Since(signalled); took > 2*time.Second {
		t.Errorf("the run took %v to stop after the signal, want at most 2 s", took)
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 || !strings.Contains(strings.Join(lines, "\n"), "before training started: stopped, nothing to resume") {
		t.Errorf("exit status %d, want 130 and the message:\n%s", code, strings.Join(lines, "\n"))
	}
	if _, err := os.Stat(run); !os.IsNotExist(err) {
		t.Errorf("the interrupted start left %s (%v)", run, err)
	}
}
