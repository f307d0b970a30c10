package train

import (
	"github.com/gmcn-go/gmcn/models"
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gmcn-go/gmcn/dataset"
)

// batchIndices returns the sample indices of batch b, filling a partial last
// batch up with the epoch's first samples.
func batchIndices(perm []int, b, size int) []int {
	idx := make([]int, size)
	for i := range idx {
		idx[i] = perm[(b*size+i)%len(perm)]
	}
	return idx
}

// setBatch copies the samples idx into the model's input and target.
func setBatch(m *models.Model, s *dataset.Inputs, idx []int) error {
	in := m.Input.Shape()
	per := in[1] * in[2] * in[3]
	if per != s.Layout.C*s.Layout.N*s.Layout.Stride() {
		return errors.Errorf("samples have layout [%d, %d, %d] per sample, the model's input needs %v", s.Layout.C, s.Layout.N, s.Layout.Stride(), in[1:])
	}
	classes := m.Target.Shape()[1]
	x := make([]float64, len(idx)*per)
	y := make([]float64, len(idx)*classes)
	for i, j := range idx {
		for k, v := range s.Mixtures[j*per : (j+1)*per] {
			x[i*per+k] = float64(v)
		}
		y[i*classes+s.Labels[j]] = 1
	}
	if err := G.Let(m.Input, models.Dense(m.Config.Dtype, in, x)); err != nil {
		return err
	}
	return G.Let(m.Target, models.Dense(m.Config.Dtype, m.Target.Shape(), y))
}

// batchStats returns the summed NLL and correct count of the first real
// samples of the batch just run, and adds their predictions to confusion
// (rows: true class, columns: predicted) when it is not nil.
func batchStats(m *models.Model, s *dataset.Inputs, idx []int, real int, confusion [][]int) (float64, int, error) {
	lp, ok := m.LogProbValue().(*tensor.Dense)
	if !ok {
		return 0, 0, errors.New("log-probabilities were not computed")
	}
	classes := lp.Shape()[1]
	vals := models.Float64s(lp)
	var loss float64
	correct := 0
	for i := range real {
		row := vals[i*classes : (i+1)*classes]
		best := 0
		for c := range row {
			if row[c] > row[best] {
				best = c
			}
		}
		y := s.Labels[idx[i]]
		loss -= row[y]
		if best == y {
			correct++
		}
		if confusion != nil {
			confusion[y][best]++
		}
	}
	return loss, correct, nil
}
