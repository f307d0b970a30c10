package train

import (
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/gmcn-go/gmcn/train/report"
)

// BenchmarkFitInputs fits the first 64 MNIST training images per iteration
// (both cores), for the reference settings and the options; ns/image is the
// cost per image.
func BenchmarkFitInputs(b *testing.B) {
	ds := loadMNISTOrSkip(b)
	const n = 64
	im := ds.Train.Images
	im.N = n
	im.Pixels = im.Pixels[:n*im.Rows*im.Cols]
	kmeansEM := DefaultFitConfig()
	kmeansEM.EMSteps = 100
	randomEM := kmeansEM
	randomEM.Init = RandomInit
	for _, c := range []struct {
		name string
		cfg  FitConfig
	}{
		{"kmeans_EM1", DefaultFitConfig()},
		{"kmeans_EM100", kmeansEM},
		{"random_EM100", randomEM},
	} {
		b.Run(fmt.Sprintf("%s_K%d_S%d_images%d", c.name, c.cfg.K, c.cfg.Samples, n), func(b *testing.B) {
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
// split) at the reference settings, once per iteration, with a progress bar
// on stderr. It takes minutes, so it runs only with GMCN_FULL_FIT=1:
//
//	GMCN_FULL_FIT=1 go test ./train -run '^$' -bench FullMNISTFit -benchtime 1x
func BenchmarkFullMNISTFit(b *testing.B) {
	if os.Getenv("GMCN_FULL_FIT") != "1" {
		b.Skip("set GMCN_FULL_FIT=1 to fit all 70,000 MNIST images (minutes)")
	}
	ds := loadMNISTOrSkip(b)
	im := Images{N: ds.Train.N + ds.Test.N, Rows: ImageRows, Cols: ImageCols,
		Pixels: append(slices.Clone(ds.Train.Pixels), ds.Test.Pixels...)}
	cfg := DefaultFitConfig()
	b.Run(fmt.Sprintf("K%d_S%d_images%d", cfg.K, cfg.Samples, im.N), func(b *testing.B) {
		for b.Loop() {
			p := report.NewProgress(os.Stderr, "fit mnist", im.N)
			if _, _, err := FitInputs(im, cfg, p); err != nil {
				b.Fatal(err)
			}
			p.Finish()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*im.N), "ns/image")
	})
}
