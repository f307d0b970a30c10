package shapes

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/pkg/errors"

	"github.com/gmcn-go/gmcn/dataset"
	"github.com/gmcn-go/gmcn/internal/parallel"
)

// ShapeSet is one split (train or test) of a ModelNet copy: shape files and
// their labels. It implements dataset.Split.
type ShapeSet struct {
	name   string
	paths  []string
	labels []int
	// ids are the positions of the shapes in the whole split, which choose
	// their random streams, so that a limited split fits every shape as the
	// whole one does; nil stands for 0, 1, ….
	ids []int
}

// Name returns the data set and split, e.g. "modelnet10/train".
func (s *ShapeSet) Name() string { return s.name }

// Len returns the number of shapes.
func (s *ShapeSet) Len() int { return len(s.paths) }

// Paths returns the shape files.
func (s *ShapeSet) Paths() []string { return s.paths }

// Labels returns the label of every shape.
func (s *ShapeSet) Labels() []int { return s.labels }

// Limit returns n shapes spread evenly over the split (shape i·Len/n for
// i < n; all if n ≤ 0 or n ≥ Len): ModelNet splits are sorted by class, so
// the first n would be a few classes only.
func (s *ShapeSet) Limit(n int) dataset.Split {
	if n <= 0 || n >= s.Len() {
		return s
	}
	sub := &ShapeSet{name: s.name, ids: make([]int, n)}
	for i := range n {
		j := i * s.Len() / n
		sub.paths = append(sub.paths, s.paths[j])
		sub.labels = append(sub.labels, s.labels[j])
		sub.ids[i] = s.id(j)
	}
	return sub
}

func (s *ShapeSet) id(i int) int {
	if s.ids == nil {
		return i
	}
	return s.ids[i]
}

// Digest returns a SHA-256 over the version of the fitting code and, per
// shape, its position in the whole split (its random stream), label, file
// type and the SHA-256 of the file's content. The folder the files are in
// does not enter it. The files are read in parallel.
func (s *ShapeSet) Digest() ([]byte, error) {
	sums := make([][sha256.Size]byte, s.Len())
	errs := make([]error, s.Len())
	parallel.For(s.Len(), func(i int) { sums[i], errs[i] = fileDigest(s.paths[i]) })
	h := sha256.New()
	fmt.Fprintf(h, "3D shape fit v%d\n", fitVersion)
	for i, p := range s.paths {
		if errs[i] != nil {
			return nil, errs[i]
		}
		fmt.Fprintf(h, "%d %d %s %x\n", s.id(i), s.labels[i], strings.ToLower(filepath.Ext(p)), sums[i])
	}
	return h.Sum(nil), nil
}

// fileDigest returns the SHA-256 of the file at path.
func fileDigest(path string) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	f, err := os.Open(path)
	if err != nil {
		return sum, errors.Wrap(err, "modelnet")
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return sum, errors.Wrapf(err, "modelnet: reading %s", path)
	}
	h.Sum(sum[:0])
	return sum, nil
}

// Fit loads and fits every shape with cfg (FitShapes), shape i with the
// random stream of its position in the whole split.
func (s *ShapeSet) Fit(cfg dataset.FitConfig, p dataset.Progress) ([]float32, error) {
	mix, _, err := fitShapes(s.paths, s.ids, cfg, p)
	return mix, err
}
