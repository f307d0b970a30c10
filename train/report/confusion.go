package report

import (
	"bytes"
	"encoding/csv"
	"strconv"

	"github.com/gmcn-go/gmcn/internal/atomicfile"
	"github.com/pkg/errors"
)

// WriteConfusionCSV writes a confusion matrix (rows: true class, columns:
// predicted class) atomically to path.
func WriteConfusionCSV(path string, confusion [][]int) error {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	head := []string{"true\\predicted"}
	for j := range confusion {
		head = append(head, strconv.Itoa(j))
	}
	w.Write(head)
	for i, r := range confusion {
		row := []string{strconv.Itoa(i)}
		for _, v := range r {
			row = append(row, strconv.Itoa(v))
		}
		w.Write(row)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	return errors.Wrapf(atomicfile.Write(path, buf.Bytes()), "confusion matrix %s", path)
}
