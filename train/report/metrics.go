package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"strconv"

	"github.com/gmcn-go/gmcn/internal/atomicfile"
	"github.com/pkg/errors"
)

// EpochMetrics is one row of the metrics CSV: the epoch's mean training
// loss and accuracy, the test loss and accuracy, the learning rate used and
// the epoch's training throughput.
type EpochMetrics struct {
	Epoch                  int
	TrainLoss, TrainAcc    float64
	TestLoss, TestAcc      float64
	LR                     float64
	SamplesPerSec, Seconds float64
}

var metricsHeader = []string{"epoch", "train_loss", "train_acc", "test_loss", "test_acc", "lr", "samples_per_s", "seconds"}

// WriteMetricsCSV writes the rows atomically to path.
func WriteMetricsCSV(path string, rows []EpochMetrics) error {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	if err := w.Write(metricsHeader); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }
	for _, r := range rows {
		rec := []string{strconv.Itoa(r.Epoch), f(r.TrainLoss), f(r.TrainAcc), f(r.TestLoss), f(r.TestAcc), f(r.LR), f(r.SamplesPerSec), f(r.Seconds)}
		if err := w.Write(rec); err != nil {
			return err
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	return errors.Wrapf(atomicfile.Write(path, buf.Bytes()), "metrics CSV %s", path)
}

// String formats the row as the one-line epoch summary printed by the loop.
func (r EpochMetrics) String() string {
	return fmt.Sprintf("epoch %3d  train loss %.4f acc %6.2f%%  test loss %.4f acc %6.2f%%  lr %.2g  %.0f samples/s  %.0fs",
		r.Epoch, r.TrainLoss, 100*r.TrainAcc, r.TestLoss, 100*r.TestAcc, r.LR, r.SamplesPerSec, r.Seconds)
}
