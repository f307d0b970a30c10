package mnist

import (
	"crypto/sha256"
	"fmt"

	"github.com/gmcn-go/gmcn/dataset"
)

// Name returns the data set and split, e.g. "mnist/train".
func (s *ImageSet) Name() string { return s.name }

// Len returns the number of images.
func (s *ImageSet) Len() int { return s.N }

// Labels returns the label of every image.
func (s *ImageSet) Labels() []int {
	out := make([]int, len(s.labels))
	for i, l := range s.labels {
		out[i] = int(l)
	}
	return out
}

// Digest returns a SHA-256 over the version of the fitting code, the image
// size, every pixel and every label.
func (s *ImageSet) Digest() ([]byte, error) {
	h := sha256.New()
	fmt.Fprintf(h, "2D image fit v%d, %d×%d images\n", fitVersion, s.Rows, s.Cols)
	h.Write(s.Pixels)
	h.Write(s.labels)
	return h.Sum(nil), nil
}

// Limit returns the first n images (all if n ≤ 0 or n ≥ Len): the splits
// are in random order, and image i keeps its random stream PCG(Seed, i).
func (s *ImageSet) Limit(n int) dataset.Split {
	if n <= 0 || n >= s.N {
		return s
	}
	px := s.Rows * s.Cols
	return &ImageSet{Images: Images{N: n, Rows: s.Rows, Cols: s.Cols, Pixels: s.Pixels[:n*px]}, name: s.name, labels: s.labels[:n]}
}

// Fit fits every image with cfg (FitInputs).
func (s *ImageSet) Fit(cfg dataset.FitConfig, p dataset.Progress) ([]float32, error) {
	mix, _, err := FitInputs(s.Images, cfg, p)
	return mix, err
}
