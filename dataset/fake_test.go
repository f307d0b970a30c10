package dataset

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"sync/atomic"
)

// randomInputs returns n valid packed mixtures of K components of
// dimension d with labels below classes.
func randomInputs(n, k, d, classes int) *Inputs {
	rng := rand.New(rand.NewPCG(5, uint64(n*100+k*10+d)))
	l := FitLayout(n, k, d)
	in := &Inputs{Layout: l, Mixtures: make([]float32, l.Len()), Labels: make([]int, n), Classes: classes}
	for i := 0; i < len(in.Mixtures); i += l.Stride() {
		g := in.Mixtures[i : i+l.Stride()]
		g[0] = float32(rng.Float64())
		for a := range d {
			g[1+a] = float32(28 * rng.Float64())
			g[1+d+a*d+a] = float32(1 + rng.Float64())
		}
		g[1+d+1], g[1+d+d] = 0.5, 0.5 // Σ_01 = Σ_10, diagonally dominant
	}
	for i := range in.Labels {
		in.Labels[i] = rng.IntN(classes)
	}
	return in
}

// fakeSplit is a Split whose samples are numbers: sample i fits to K
// isotropic Gaussians at (values[i], j), j < K. It counts its fits.
type fakeSplit struct {
	name   string
	values []float64
	labels []int
	fits   *atomic.Int64
}

func newFakeSplit(name string, values []float64, labels []int) *fakeSplit {
	return &fakeSplit{name: name, values: values, labels: labels, fits: new(atomic.Int64)}
}

func (s *fakeSplit) Name() string  { return s.name }
func (s *fakeSplit) Len() int      { return len(s.values) }
func (s *fakeSplit) Labels() []int { return s.labels }

func (s *fakeSplit) Digest() ([]byte, error) {
	h := sha256.New()
	for i, v := range s.values {
		binary.Write(h, binary.LittleEndian, math.Float64bits(v))
		binary.Write(h, binary.LittleEndian, int64(s.labels[i]))
	}
	return h.Sum(nil), nil
}

func (s *fakeSplit) Limit(n int) Split {
	if n <= 0 || n >= s.Len() {
		return s
	}
	return &fakeSplit{name: s.name, values: s.values[:n], labels: s.labels[:n], fits: s.fits}
}

func (s *fakeSplit) Fit(cfg FitConfig, p Progress) ([]float32, error) {
	l := FitLayout(s.Len(), cfg.K, cfg.Dim)
	out := make([]float32, l.Len())
	for i, v := range s.values {
		for j := range cfg.K {
			g := out[(i*cfg.K+j)*l.Stride():]
			g[0], g[1], g[2] = 1, float32(v), float32(j)
			for a := range cfg.Dim {
				g[1+cfg.Dim+a*cfg.Dim+a] = 1
			}
		}
		if p != nil {
			p.Add(1)
		}
	}
	s.fits.Add(1)
	return out, nil
}

// fakeDataset is a Dataset of two fake splits.
type fakeDataset struct{ train, test *fakeSplit }

func (d fakeDataset) Name() string      { return "fake" }
func (d fakeDataset) Dim() int          { return 2 }
func (d fakeDataset) Classes() []string { return []string{"a", "b", "c"} }
func (d fakeDataset) Train() Split      { return d.train }
func (d fakeDataset) Test() Split       { return d.test }
