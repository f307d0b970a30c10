package report

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// stepRows returns rows for steps 1 to n with distinct values.
func stepRows(n int) []StepRow {
	rows := make([]StepRow, n)
	for i := range rows {
		rows[i] = StepRow{Step: i + 1, Epoch: 1 + i/3, Batch: i % 3, Samples: 8, Loss: 0.1 * float64(i+1), Accuracy: 1 / float64(i+2), LR: 1e-2 / float64(1+i/3)}
	}
	return rows
}

// writeSteps writes a new step log of rows at path through StepLog.
func writeSteps(t *testing.T, path string, rows []StepRow) {
	t.Helper()
	l, err := OpenStepLog(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := l.Append(r); err != nil {
			t.Fatal(err)
		}
	}
}

func TestStepLogRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "steps.csv")
	want := stepRows(7)
	writeSteps(t, path, want)
	got, err := ReadSteps(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back\n%+v\nwant\n%+v", got, want)
	}
	data, _ := os.ReadFile(path)
	if first := strings.SplitN(string(data), "\n", 3)[:2]; first[0] != "step,epoch,batch,samples,loss,accuracy,lr" || first[1] != "1,1,0,8,0.1,0.5,0.01" {
		t.Errorf("file starts %q", first)
	}
	writeSteps(t, path, want[:2]) // a new run replaces the old log
	if got, err := ReadSteps(path); err != nil || len(got) != 2 {
		t.Errorf("new log over an old one: %d rows, error %v; want 2 rows", len(got), err)
	}
}

// TestOpenStepLogResume opens logs of 5 rows for a run resumed after step
// `after`: later rows and a row cut short by a killed process are dropped,
// and appending continues the log.
func TestOpenStepLogResume(t *testing.T) {
	for _, c := range []struct {
		name  string
		after int
		cut   bool // the file ends with a row cut short
		keep  int
	}{
		{"drop two", 3, false, 3},
		{"keep all", 5, false, 5},
		{"beyond the log", 9, false, 5},
		{"cut row dropped", 5, true, 5},
		{"cut row and later", 2, true, 2},
		{"header only", 0, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "steps.csv")
			rows := stepRows(6)
			writeSteps(t, path, rows[:5])
			if c.cut {
				f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				_, werr := f.WriteString("6,2,2,8,0.")
				if err := errors.Join(werr, f.Close()); err != nil {
					t.Fatal(err)
				}
			}
			l, err := OpenStepLog(path, c.after)
			if err != nil {
				t.Fatal(err)
			}
			next := rows[5]
			next.Step = max(c.after, 5) + 1
			if err := l.Append(next); err != nil {
				t.Fatal(err)
			}
			got, err := ReadSteps(path)
			if err != nil {
				t.Fatal(err)
			}
			want := append(append([]StepRow(nil), rows[:c.keep]...), next)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("after resuming at step %d:\n got %+v\nwant %+v", c.after, got, want)
			}
		})
	}
	path := filepath.Join(t.TempDir(), "missing.csv")
	if _, err := OpenStepLog(path, 4); err != nil {
		t.Fatalf("resuming without a log: %v", err)
	}
	if got, err := ReadSteps(path); err != nil || len(got) != 0 {
		t.Errorf("resuming without a log: %d rows, error %v; want a new, empty log", len(got), err)
	}
}

// TestStepLogErrors requires that a damaged log is refused, by ReadSteps and
// by a resume, with an error naming the file and the line.
func TestStepLogErrors(t *testing.T) {
	const header = "step,epoch,batch,samples,loss,accuracy,lr\n"
	for _, c := range []struct {
		name, data, want string
	}{
		{"empty", "", "line 1: empty file"},
		{"other header", "epoch,train_loss\n1,2\n", `line 1: header "epoch,train_loss"`},
		{"few fields", header + "1,1,0,8,0.5,1\n", "line 2: 6 fields, want 7"},
		{"bad count", header + "1,1,0,8,0.5,1,0.01\n2,x,1,8,0.5,1,0.01\n", `line 3: field 2: "x" is not a count`},
		{"negative count", header + "1,1,-1,8,0.5,1,0.01\n", `line 2: field 3: "-1" is not a count`},
		{"bad number", header + "1,1,0,8,0.5,1,lr\n", `line 2: field 7: "lr" is not a number`},
		{"step repeated", header + "1,1,0,8,0.5,1,0.01\n1,1,1,8,0.5,1,0.01\n", "line 3: step 1 after step 1"},
		{"step zero", header + "0,1,0,8,0.5,1,0.01\n", "line 2: step 0 after step 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "steps.csv")
			if err := os.WriteFile(path, []byte(c.data), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := ReadSteps(path); err == nil || !strings.Contains(err.Error(), "step log "+path+" "+c.want) {
				t.Errorf("ReadSteps: error %v, want one containing %q", err, "step log "+path+" "+c.want)
			}
			if _, err := OpenStepLog(path, 10); err == nil || !strings.Contains(err.Error(), path) {
				t.Errorf("OpenStepLog: error %v, want one naming %s", err, path)
			}
			if data, _ := os.ReadFile(path); string(data) != c.data {
				t.Errorf("a refused log was changed to %q", data)
			}
		})
	}
	if _, err := ReadSteps(filepath.Join(t.TempDir(), "none.csv")); err == nil || !strings.Contains(err.Error(), "none.csv") {
		t.Errorf("missing file: error %v, want one naming it", err)
	}
	path := filepath.Join(t.TempDir(), "steps.csv")
	if err := os.WriteFile(path, []byte(strings.TrimSuffix(header, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenStepLog(path, 3); err == nil || !strings.Contains(err.Error(), "line 1: no newline after the header") {
		t.Errorf("header without newline: error %v", err)
	}
	if err := (&StepLog{path: filepath.Join(t.TempDir(), "gone.csv")}).Append(StepRow{Step: 1}); err == nil || !strings.Contains(err.Error(), "gone.csv") {
		t.Errorf("appending to a deleted log: error %v, want one naming it", err)
	}
}

// TestStepPoints checks the epoch positions of a two-epoch log of three
// batches each and of an empty log.
func TestStepPoints(t *testing.T) {
	var rows []StepRow
	for e := 1; e <= 2; e++ {
		for b := range 3 {
			rows = append(rows, StepRow{Step: len(rows) + 1, Epoch: e, Batch: b, Loss: float64(b), LR: 0.1})
		}
	}
	got := StepPoints(rows)
	want := []float64{1.0 / 3, 2.0 / 3, 1, 4.0 / 3, 5.0 / 3, 2}
	for i, p := range got {
		if math.Abs(p.Epoch-want[i]) > 1e-15 || p.Step != i+1 || p.Loss != rows[i].Loss || p.LR != 0.1 {
			t.Errorf("point %d: %+v, want epoch %g", i, p, want[i])
		}
	}
	if len(StepPoints(nil)) != 0 {
		t.Error("points of an empty log")
	}
}
