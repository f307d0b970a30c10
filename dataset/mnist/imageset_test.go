package mnist

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/dataset"
)

// TestImageSetCache loads an MNIST-style data set through dataset.Loader:
// a copy in another folder reuses the cache, an edited image refits, and a
// limited split fits its images exactly as the whole split does.
func TestImageSetCache(t *testing.T) {
	dir := writeDataset(t, 6, 3, 28, 28)
	cfg := dataset.DefaultFitConfig(2)
	cfg.K, cfg.Points, cfg.NormPoints = 4, 200, 50
	var log bytes.Buffer
	l := dataset.Loader{Dir: t.TempDir(), Log: &log}
	load := func(dir string, limit int) *dataset.Inputs {
		t.Helper()
		ds, err := LoadMNIST(dir)
		if err != nil {
			t.Fatal(err)
		}
		tr, _, err := l.Load(ds, cfg, limit, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	whole := load(dir, 0)
	copied := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(copied, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	if again := load(copied, 0); log.Len() != 0 || !slices.Equal(again.Mixtures, whole.Mixtures) {
		t.Errorf("copy of the data: log %q, want the cache", log.String())
	}
	first := load(dir, 2)
	if !slices.Equal(first.Mixtures, whole.Mixtures[:len(first.Mixtures)]) || !slices.Equal(first.Labels, whole.Labels[:2]) {
		t.Error("the first 2 images fit differently alone")
	}
	// Another image 0: same file layout and size, other pixels.
	img := encodeIDX([]int{6, 28, 28}, slices.Concat(seq(784 + 1)[1:], seq(5*784)))
	write(t, filepath.Join(copied, "train-images-idx3-ubyte.gz"), gzipBytes(t, img))
	log.Reset()
	if edited := load(copied, 0); !strings.Contains(log.String(), "fitting 6 samples") || slices.Equal(edited.Mixtures, whole.Mixtures) {
		t.Errorf("edited image: log %q, want a refit", log.String())
	}
}
