package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteCSVs checks the exact text of the metrics and confusion files.
func TestWriteCSVs(t *testing.T) {
	dir := t.TempDir()
	rows := []EpochMetrics{{1, 0.5, 0.75, 0.625, 0.8, 1e-3, 120.5, 33}, {2, 0.25, 0.875, 1.0 / 3, 0.9, 1e-4, 130, 31}}
	path := filepath.Join(dir, "metrics.csv")
	if err := WriteMetricsCSV(path, rows); err != nil {
		t.Fatal(err)
	}
	want := "epoch,train_loss,train_acc,test_loss,test_acc,lr,samples_per_s,seconds\n" +
		"1,0.5,0.75,0.625,0.8,0.001,120.5,33\n" +
		"2,0.25,0.875,0.33333333,0.9,0.0001,130,31\n"
	if got := read(t, path); got != want {
		t.Errorf("metrics CSV\n got %q\nwant %q", got, want)
	}
	path = filepath.Join(dir, "confusion.csv")
	if err := WriteConfusionCSV(path, [][]int{{5, 1}, {0, 7}}); err != nil {
		t.Fatal(err)
	}
	if got, want := read(t, path), "true\\predicted,0,1\n0,5,1\n1,0,7\n"; got != want {
		t.Errorf("confusion CSV\n got %q\nwant %q", got, want)
	}
	if err := WriteMetricsCSV(dir, rows); err == nil || !strings.Contains(err.Error(), "metrics CSV "+dir) {
		t.Errorf("writing over a directory: %v, want an error naming the metrics CSV %s", err, dir)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
