package models

import (
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gmcn-go/gmcn/dataset"
)

// BatchIndices returns the sample indices of batch b of the order perm,
// filling a partial last batch up with perm's first samples.
func BatchIndices(perm []int, b, size int) []int {
	idx := make([]int, size)
	for i := range idx {
		idx[i] = perm[(b*size+i)%len(perm)]
	}
	return idx
}

// SetBatch copies the samples idx of s into the model's input and target.
func (m *Model) SetBatch(s *dataset.Inputs, idx []int) error {
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
	if err := G.Let(m.Input, Dense(m.Config.Dtype, in, x)); err != nil {
		return err
	}
	return G.Let(m.Target, Dense(m.Config.Dtype, m.Target.Shape(), y))
}

// BatchStats returns the summed NLL and correct count of the first real
// samples of the batch just run (SetBatch's idx of s), and adds their
// predictions to confusion (rows: true class, columns: predicted) when it
// is not nil.
func (m *Model) BatchStats(s *dataset.Inputs, idx []int, real int, confusion [][]int) (float64, int, error) {
	lp, ok := m.LogProbValue().(*tensor.Dense)
	if !ok {
		return 0, 0, errors.New("log-probabilities were not computed")
	}
	classes := lp.Shape()[1]
	vals := Float64s(lp)
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

// Evaluate runs the model, in its current mode, with vm (a machine of its
// graph) over the batches first, first+step, … of s in order, and returns
// the summed NLL, the number of correct predictions and the confusion
// matrix (rows: true class, columns: predicted) of their samples: step
// processes sharing the batches sum their results to those of one process
// with step 1. progress, if not nil, receives the samples of each batch
// done.
func (m *Model) Evaluate(vm G.VM, s *dataset.Inputs, first, step int, progress func(int)) (loss float64, correct int, confusion [][]int, err error) {
	B, n := m.Config.Batch, s.Len()
	confusion = make([][]int, s.Classes)
	for i := range confusion {
		confusion[i] = make([]int, s.Classes)
	}
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	for b := first; b*B < n; b += step {
		idx := BatchIndices(perm, b, B)
		real := min(B, n-b*B)
		if err := m.SetBatch(s, idx); err != nil {
			return 0, 0, nil, err
		}
		vm.Reset()
		if err := vm.RunAll(); err != nil {
			return 0, 0, nil, errors.Wrapf(err, "evaluation batch %d", b)
		}
		l, c, err := m.BatchStats(s, idx, real, confusion)
		if err != nil {
			return 0, 0, nil, err
		}
		loss += l
		correct += c
		if progress != nil {
			progress(real)
		}
	}
	return loss, correct, confusion, nil
}
