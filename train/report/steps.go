package report

import (
	"bytes"
	"os"
	"strconv"
	"strings"

	"github.com/gmcn-go/gmcn/internal/atomicfile"
	"github.com/pkg/errors"
)

// StepRow is one row of the step log: one training step's batch, its mean
// loss and accuracy before the step, and the learning rate of the step.
type StepRow struct {
	Step, Epoch, Batch int // Step counts from 1 over the whole run, Epoch from 1, Batch from 0 within the epoch
	Samples            int // the batch's samples, without the filler of a partial last batch
	Loss               float64
	Accuracy           float64
	LR                 float64
}

const stepsHeader = "step,epoch,batch,samples,loss,accuracy,lr"

// StepLog appends rows to a step log CSV file. Every row is written at once
// (one append, no buffering), so the file holds every step up to any
// checkpoint written after it, even when the process is killed.
type StepLog struct {
	path string
}

// OpenStepLog prepares the step log at path for the rows after step after.
// after ≤ 0 starts a new file holding the header only. after > 0 keeps the
// rows up to step after and drops later ones, which an interrupted process
// wrote after its last checkpoint, so a resumed run's log equals an
// uninterrupted run's; a missing file is started afresh. A file that is
// not a step log is an error naming its line.
func OpenStepLog(path string, after int) (*StepLog, error) {
	keep := []byte(stepsHeader + "\n")
	if after > 0 {
		data, err := os.ReadFile(path)
		switch {
		case err == nil:
			n, err := scanSteps(path, data, after, nil)
			if err != nil {
				return nil, err
			}
			keep = data[:n]
		case !os.IsNotExist(err):
			return nil, errors.Wrap(err, "reading step log")
		}
	}
	// Rewriting the kept part once per process costs little and leaves no
	// window in which the log is half cut.
	if err := atomicfile.Write(path, keep); err != nil {
		return nil, errors.Wrap(err, "step log")
	}
	return &StepLog{path: path}, nil
}

// Append writes r at the end of the log.
func (l *StepLog) Append(r StepRow) error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return errors.Wrap(err, "appending to the step log")
	}
	f64 := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	line := strings.Join([]string{strconv.Itoa(r.Step), strconv.Itoa(r.Epoch), strconv.Itoa(r.Batch), strconv.Itoa(r.Samples),
		f64(r.Loss), f64(r.Accuracy), f64(r.LR)}, ",") + "\n"
	_, werr := f.WriteString(line)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return errors.Wrapf(werr, "appending to the step log %s", l.path)
}

// ReadSteps reads the step log at path. Errors name the file and the line.
func ReadSteps(path string) ([]StepRow, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, errors.Wrap(err, "reading step log")
	}
	var rows []StepRow
	if _, err := scanSteps(path, data, -1, &rows); err != nil {
		return nil, err
	}
	return rows, nil
}

// scanSteps checks the step log data read from path and returns the length
// of its part that holds the header and the rows up to step upTo (all rows
// if upTo < 0), appending them to rows if it is not nil. Only complete lines
// count when upTo ≥ 0: a last line without its newline is an append cut
// short. Steps must increase from row to row.
func scanSteps(path string, data []byte, upTo int, rows *[]StepRow) (int, error) {
	off, prev := 0, 0
	for n := 1; off < len(data); n++ {
		end := bytes.IndexByte(data[off:], '\n')
		if end < 0 {
			if upTo >= 0 && n == 1 {
				return 0, errors.Errorf("step log %s line 1: no newline after the header", path)
			}
			if upTo >= 0 {
				return off, nil
			}
			end = len(data) - off
		}
		line := string(data[off : off+end])
		if n == 1 {
			if line != stepsHeader {
				return 0, errors.Errorf("step log %s line 1: header %q, want %q", path, line, stepsHeader)
			}
		} else {
			r, err := parseStepRow(line)
			if err != nil {
				return 0, errors.Wrapf(err, "step log %s line %d", path, n)
			}
			if r.Step <= prev {
				return 0, errors.Errorf("step log %s line %d: step %d after step %d, want steps increasing from 1", path, n, r.Step, prev)
			}
			if upTo >= 0 && r.Step > upTo {
				return off, nil
			}
			prev = r.Step
			if rows != nil {
				*rows = append(*rows, r)
			}
		}
		off = min(off+end+1, len(data))
	}
	if off == 0 {
		return 0, errors.Errorf("step log %s line 1: empty file, want the header %q", path, stepsHeader)
	}
	return off, nil
}

// parseStepRow parses one row of the step log.
func parseStepRow(line string) (StepRow, error) {
	f := strings.Split(line, ",")
	if len(f) != 7 {
		return StepRow{}, errors.Errorf("%d fields, want 7 (%s)", len(f), stepsHeader)
	}
	var r StepRow
	var err error
	ints := []*int{&r.Step, &r.Epoch, &r.Batch, &r.Samples}
	for i, p := range ints {
		if *p, err = strconv.Atoi(f[i]); err != nil || *p < 0 {
			return StepRow{}, errors.Errorf("field %d: %q is not a count", i+1, f[i])
		}
	}
	for i, p := range []*float64{&r.Loss, &r.Accuracy, &r.LR} {
		if *p, err = strconv.ParseFloat(f[len(ints)+i], 64); err != nil {
			return StepRow{}, errors.Errorf("field %d: %q is not a number", len(ints)+i+1, f[len(ints)+i])
		}
	}
	return r, nil
}

// StepPoints places the rows of a step log on PlotMetrics' epoch axis:
// batch b (from 0) of epoch e at e−1+(b+1)/n, with n the batches per epoch,
// the most any epoch of the log has (every epoch of a run has the same
// number; only a log that stops inside its first epoch places its steps
// too far right).
func StepPoints(rows []StepRow) []StepPoint {
	n := 0
	for _, r := range rows {
		n = max(n, r.Batch+1)
	}
	points := make([]StepPoint, len(rows))
	for i, r := range rows {
		points[i] = StepPoint{Step: r.Step, Epoch: float64(r.Epoch-1) + float64(r.Batch+1)/float64(n), Loss: r.Loss, LR: r.LR}
	}
	return points
}
