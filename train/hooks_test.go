package train

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/runspec"
	"github.com/gmcn-go/gmcn/train/checkpoint"
	"github.com/gmcn-go/gmcn/train/report"
)

// TestHookPoints runs two epochs of five batches with a hook on every step,
// one on every third step and one that records epochs and the end, and
// checks that each is called at the documented points with the documented
// arguments: the step sums are exactly the epoch's training metrics, and
// every snapshot resumes where the documentation says.
func TestHookPoints(t *testing.T) {
	trainSet, testSet := SyntheticLines(40, 8, 3), SyntheticLines(16, 8, 4)
	var events []string
	var steps []StepInfo
	var sums [2]checkpoint.EpochSums
	every := Hook{Name: "every step", Step: func(s StepInfo) error {
		events = append(events, fmt.Sprintf("step %d", s.Step))
		steps = append(steps, s)
		p := &sums[s.Epoch-1]
		p.Loss += s.Loss
		p.Correct += s.Correct
		p.Count += s.Samples
		if st := s.State(); st.Epoch != s.Epoch-1 || st.Batch != s.Batch+1 || st.Adam.Steps != s.Step || len(st.Params) == 0 {
			t.Errorf("step %d: snapshot at epoch %d batch %d after %d steps, %d parameters", s.Step, st.Epoch, st.Batch, st.Adam.Steps, len(st.Params))
		}
		return nil
	}}
	third := Hook{Name: "every third step", Every: 3, Step: func(s StepInfo) error {
		events = append(events, fmt.Sprintf("third %d", s.Step))
		return nil
	}}
	var epochs []EpochInfo
	var states []*checkpoint.State
	var end []EndInfo
	record := Hook{Name: "record",
		Epoch: func(e EpochInfo) error {
			events = append(events, fmt.Sprintf("epoch %d", len(e.Metrics)))
			epochs = append(epochs, e)
			states = append(states, e.State())
			return nil
		},
		End: func(e EndInfo) error {
			events = append(events, "end")
			end = append(end, e)
			states = append(states, e.State())
			return nil
		}}
	opt := Options{Epochs: 2, LR: 1e-2, DecayRate: 0.05, Hooks: []Hook{every, third, record}}
	rows, err := Run(context.Background(), tinyConfig(t), trainSet, testSet, opt)
	if err != nil {
		t.Fatal(err)
	}

	want := []string{"step 1", "step 2", "step 3", "third 3", "step 4", "step 5", "epoch 1",
		"step 6", "third 6", "step 7", "step 8", "step 9", "third 9", "step 10", "epoch 2", "end"}
	if !slices.Equal(events, want) {
		t.Fatalf("hook calls\n got %v\nwant %v", events, want)
	}
	for i, s := range steps {
		if s.Epoch != 1+i/5 || s.Batch != i%5 || s.Samples != 8 || s.Correct < 0 || s.Correct > 8 || !(s.Loss > 0) {
			t.Errorf("step %d: %+v", i+1, s)
		}
	}
	for e, p := range sums {
		r := rows[e]
		if p.Count != trainSet.Len() || p.Loss/float64(p.Count) != r.TrainLoss || float64(p.Correct)/float64(p.Count) != r.TrainAcc {
			t.Errorf("epoch %d: steps sum to %+v, metrics %+v", e+1, p, r)
		}
	}
	for e, info := range epochs {
		if !reflect.DeepEqual(info.Metrics, rows[:e+1]) {
			t.Errorf("epoch %d: metrics %+v, want %+v", e+1, info.Metrics, rows[:e+1])
		}
		n := 0
		for _, r := range info.Confusion {
			for _, v := range r {
				n += v
			}
		}
		if len(info.Confusion) != 2 || n != testSet.Len() {
			t.Errorf("epoch %d: confusion %v over %d samples, want 2 classes and %d", e+1, info.Confusion, n, testSet.Len())
		}
	}
	if end[0].Interrupted || !reflect.DeepEqual(end[0].Metrics, rows) {
		t.Errorf("end: %+v", end[0])
	}
	for i, st := range states {
		wantEpoch, done := min(i+1, 2), i >= 1
		if st.Epoch != wantEpoch || st.Batch != -1 || st.Completed != done || len(st.Metrics) != wantEpoch || st.Adam.Steps != 5*wantEpoch {
			t.Errorf("snapshot %d: epoch %d batch %d completed %v, %d metrics, %d steps", i, st.Epoch, st.Batch, st.Completed, len(st.Metrics), st.Adam.Steps)
		}
	}
}

// TestStepSnapshotResumes saves the snapshots of an uninterrupted run after
// step 5 (the end of the first epoch's batches, before its evaluation) and
// step 7, and requires that each resumes to exactly the uninterrupted
// metrics, and that the one after step 7 is the checkpoint an interruption
// there writes.
func TestStepSnapshotResumes(t *testing.T) {
	trainSet, testSet := SyntheticLines(40, 8, 3), SyntheticLines(16, 8, 4)
	dir := t.TempDir()
	saved := Hook{Name: "save", Step: func(s StepInfo) error {
		if s.Step != 5 && s.Step != 7 {
			return nil
		}
		return checkpoint.Save(filepath.Join(dir, fmt.Sprintf("step%d.gmcn", s.Step)), s.State())
	}}
	opt := Options{Epochs: 2, LR: 1e-2, DecayRate: 0.05, Hooks: []Hook{saved}}
	want, err := Run(context.Background(), tinyConfig(t), trainSet, testSet, opt)
	if err != nil {
		t.Fatal(err)
	}

	interrupted := t.TempDir()
	opt.Hooks, opt.StopAfter = DefaultHooks(interrupted), 7
	if _, err := Run(context.Background(), tinyConfig(t), trainSet, testSet, opt); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("interrupted run returned %v, want ErrInterrupted", err)
	}
	got, err := checkpoint.Load(filepath.Join(interrupted, runspec.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := checkpoint.Load(filepath.Join(dir, "step7.gmcn"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(withoutTimes(got), withoutTimes(snap)) {
		t.Errorf("snapshot after step 7 differs from the checkpoint of an interruption there:\n got %+v\nwant %+v", snap, got)
	}

	for _, step := range []int{5, 7} {
		opt.Hooks, opt.StopAfter = nil, 0
		opt.Resume = filepath.Join(dir, fmt.Sprintf("step%d.gmcn", step))
		rows, err := Run(context.Background(), tinyConfig(t), trainSet, testSet, opt)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(withoutTimes(&checkpoint.State{Metrics: rows}), withoutTimes(&checkpoint.State{Metrics: want})) {
			t.Errorf("resumed after step %d: %+v\n uninterrupted %+v", step, rows, want)
		}
	}
}

// withoutTimes returns a copy of s without its wall-clock measurements,
// which differ between runs.
func withoutTimes(s *checkpoint.State) *checkpoint.State {
	c := *s
	c.Partial.Seconds = 0
	c.Metrics = make([]report.EpochMetrics, len(s.Metrics))
	for i, r := range s.Metrics {
		r.Seconds, r.SamplesPerSec = 0, 0
		c.Metrics[i] = r
	}
	return &c
}

// TestHookErrorStopsRun requires that an error from a hook stops training at
// once with an error that names the hook and the point and wraps the
// hook's error, and that hooks Run cannot name are refused.
func TestHookErrorStopsRun(t *testing.T) {
	trainSet, testSet := SyntheticLines(40, 8, 3), SyntheticLines(16, 8, 4)
	failure := errors.New("disk full")
	for _, c := range []struct {
		name  string
		hook  Hook
		point string
		steps int
	}{
		{"step", Hook{Name: "failing", Every: 2, Step: func(s StepInfo) error {
			if s.Step == 4 {
				return failure
			}
			return nil
		}}, "at step 4", 4},
		{"epoch", Hook{Name: "failing", Epoch: func(EpochInfo) error { return failure }}, "at the end of epoch 1", 5},
		{"end", Hook{Name: "failing", End: func(EndInfo) error { return failure }}, "at the end of the run", 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			steps, epochs := 0, 0
			count := Hook{Name: "count", Step: func(StepInfo) error { steps++; return nil }, Epoch: func(EpochInfo) error { epochs++; return nil }}
			opt := Options{Epochs: 2, LR: 1e-2, DecayRate: 0.05, Hooks: []Hook{count, c.hook, count}}
			_, err := Run(context.Background(), tinyConfig(t), trainSet, testSet, opt)
			if !errors.Is(err, failure) || !strings.Contains(err.Error(), `hook "failing" `+c.point) {
				t.Fatalf("got error %v, want one naming hook \"failing\" %s and wrapping %v", err, c.point, failure)
			}
			// The count hook before the failing one runs at the failing
			// point, the one after it does not, and nothing runs later.
			if wantSteps := 2*c.steps - 1; c.name == "step" && steps != wantSteps {
				t.Errorf("step hooks ran %d times, want %d", steps, wantSteps)
			}
			if wantEpochs := 2*(c.steps/5) - 1; c.name == "epoch" && epochs != wantEpochs {
				t.Errorf("epoch hooks ran %d times, want %d", epochs, wantEpochs)
			}
		})
	}
	for _, c := range []struct {
		hook Hook
		want string
	}{
		{Hook{Step: func(StepInfo) error { return nil }}, "Options.Hooks[0] has no Name"},
		{Hook{Name: "negative", Every: -1}, `hook "negative": Every is -1`},
	} {
		opt := Options{Epochs: 1, LR: 1e-2, Hooks: []Hook{c.hook}}
		if _, err := Run(context.Background(), tinyConfig(t), trainSet, testSet, opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got error %v, want one containing %q", err, c.want)
		}
	}
}
