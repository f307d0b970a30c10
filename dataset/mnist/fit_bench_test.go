package mnist

import (
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/gmcn-go/gmcn/dataset"
)

// BenchmarkFitInputs fits the first 64 MNIST training images per iteration
// (both cores), for the reference settings and the options; ns/image is the
// cost per image.
func BenchmarkFitInputs(b *testing.B) {
	ds := loadMNISTOrSkip(b)
	const n = 64
	im := ds.train.Images
	im.N = n
	im.Pixels = im.Pixels[:n*im.Rows*im.Cols]
	kmeansEM := dataset.DefaultFitConfig(2)
	kmeansEM.EMSteps = 100
	randomEM := kmeansEM
	randomEM.Method = dataset.RandomInit
	for _, c := range []struct {
		name string
		cfg  dataset.FitConfig
	}{
		{"kmeans_EM1", dataset.DefaultFitConfig(2)},
		{"kmeans_EM100", kmeansEM},
		{"random_EM100", randomEM},
	} {
		b.Run(fmt.Sprintf("%s_K%d_S%d_images%d", c.name, c.cfg.K, c.cfg.Points, n), func(b *testing.B) {
			for b.Loop() {
				if _, _, err := FitInputs(im, c.cfg, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/image")
		})
	}
}

// BenchmarkFullMNISTFit fits all 70,000 MNIST images (training and test
// split) at the reference settings, once per iteration. It takes minutes, so it runs only with GMCN_FULL_FIT=1:
//
//	GMCN_FULL_FIT=1 go test ./dataset/mnist -run '^$' -bench FullMNISTFit -benchtime 1x
func BenchmarkFullMNISTFit(b *testing.B) {
	if os.Getenv("GMCN_FULL_FIT") != "1" {
		b.Skip("set GMCN_FULL_FIT=1 to fit all 70,000 MNIST images (minutes)")
	}
	ds := loadMNISTOrSkip(b)
	im := Images{N: ds.train.N + ds.test.N, Rows: ImageRows, Cols: ImageCols,
		Pixels: append(slices.Clone(ds.train.Pixels), ds.test.Pixels...)}
	cfg := dataset.DefaultFitConfig(2)
	b.Run(fmt.Sprintf("K%d_S%d_images%d", cfg.K, cfg.Points, im.N), func(b *testing.B) {
		for b.Loop() {
			if _, _, err := FitInputs(im, cfg, nil); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*im.N), "ns/image")
	})
}
