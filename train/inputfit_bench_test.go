package train

import (
	"fmt"
	"testing"
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
