package train

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/gmcn-go/gmcn/runspec"
	"github.com/gmcn-go/gmcn/train/checkpoint"
)

// tickingClock returns a clock that moves one second at every reading.
func tickingClock() func() time.Time {
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return func() time.Time {
		t = t.Add(time.Second)
		return t
	}
}

// TestCheckpointEvery stops runs after 8 steps (two epochs of 5) without the
// checkpoint Ctrl-C writes, as a killed process would, so the only
// checkpoint is the periodic one; the clock moves a second per reading. A
// run resumed from that checkpoint must end with exactly the metrics and the
// step log of an uninterrupted run, although the killed run logged steps
// after its checkpoint.
func TestCheckpointEvery(t *testing.T) {
	trainSet, testSet := SyntheticLines(40, 8, 3), SyntheticLines(16, 8, 4)
	wantDir := t.TempDir()
	want, err := Run(context.Background(), tinyConfig(t), trainSet, testSet, testOptions(2, 1e-2, wantDir))
	if err != nil {
		t.Fatal(err)
	}
	wantSteps, err := os.ReadFile(filepath.Join(wantDir, runspec.StepsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		every    time.Duration
		wantStep int // the step of the last periodic checkpoint; 0: none
	}{
		{"never", 0, 0},
		{"negative", -time.Second, 0},
		{"every step", time.Second, 8},
		{"every third second", 3 * time.Second, 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			opt := testOptions(2, 1e-2, dir)
			opt.Hooks = []Hook{stepLog(dir), checkpointEvery(dir, c.every, tickingClock())}
			opt.StopAfter = 8
			if _, err := Run(context.Background(), tinyConfig(t), trainSet, testSet, opt); !errors.Is(err, ErrInterrupted) {
				t.Fatalf("stopped run returned %v, want ErrInterrupted", err)
			}
			path := filepath.Join(dir, runspec.CheckpointFile)
			st, err := checkpoint.Load(path)
			if c.wantStep == 0 {
				if !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("every %v wrote a checkpoint (load error %v)", c.every, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if st.Adam.Steps != c.wantStep || st.Epoch != 1 || st.Batch != c.wantStep-5 {
				t.Fatalf("checkpoint after step %d at epoch %d batch %d, want step %d in the second epoch", st.Adam.Steps, st.Epoch, st.Batch, c.wantStep)
			}
			opt = testOptions(2, 1e-2, dir)
			opt.Resume = path
			got, err := Run(context.Background(), tinyConfig(t), trainSet, testSet, opt)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(withoutTimes(&checkpoint.State{Metrics: got}), withoutTimes(&checkpoint.State{Metrics: want})) {
				t.Errorf("resumed: %+v\n uninterrupted %+v", got, want)
			}
			steps, err := os.ReadFile(filepath.Join(dir, runspec.StepsFile))
			if err != nil {
				t.Fatal(err)
			}
			if string(steps) != string(wantSteps) {
				t.Errorf("resumed step log:\n%s\nuninterrupted:\n%s", steps, wantSteps)
			}
		})
	}
}
