package dataset

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// countBar counts what a progress bar receives.
type countBar struct {
	n        atomic.Int64
	finished int
}

func (b *countBar) Add(n int) { b.n.Add(int64(n)) }
func (b *countBar) Finish()   { b.finished++ }

// TestLoaderLifeCycle runs the cache life cycle: fit and write, reuse, and a
// refit with a message for changed settings, changed data, a corrupt file
// and a file of an older format; the written file is always valid and no
// temporary file is left.
func TestLoaderLifeCycle(t *testing.T) {
	s := newFakeSplit("fake/train", []float64{1, 2, 3, 4}, []int{0, 1, 2, 0})
	cfg := DefaultFitConfig(2)
	cfg.K = 3
	dir := t.TempDir()
	var bars []*countBar
	load := func(s Split, cfg FitConfig) (*Inputs, string) {
		t.Helper()
		var log bytes.Buffer
		l := Loader{Dir: dir, Log: &log, NewProgress: func(label string, total int) Progress {
			if label != "fit "+s.Name() || total != s.Len() {
				t.Errorf("progress bar %q for %d samples", label, total)
			}
			b := &countBar{}
			bars = append(bars, b)
			return b
		}}
		in, err := l.LoadOrFit(s, 3, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return in, log.String()
	}
	first, msg := load(s, cfg)
	want, _ := s.Fit(cfg, nil)
	if !strings.Contains(msg, "no input cache") || !strings.Contains(msg, "wrote input cache") || len(bars) != 1 ||
		bars[0].n.Load() != 4 || bars[0].finished != 1 {
		t.Fatalf("first call: log %q, bars %+v", msg, bars)
	}
	if !slices.Equal(first.Mixtures, want) || !slices.Equal(first.Labels, s.labels) || first.Layout != FitLayout(4, 3, 2) || first.Classes != 3 {
		t.Fatal("loaded inputs differ from the fit")
	}
	bars = nil
	fits := s.fits.Load()
	again, msg := load(s, cfg)
	if msg != "" || len(bars) != 0 || s.fits.Load() != fits || !slices.Equal(again.Mixtures, want) {
		t.Fatalf("second call: log %q, %d bars, %d fits", msg, len(bars), s.fits.Load()-fits)
	}

	other := cfg
	other.Seed = 2
	_, msg = load(s, other)
	if !strings.Contains(msg, "other settings") || !strings.Contains(msg, "seed=1") || !strings.Contains(msg, "seed=2") {
		t.Fatalf("changed seed: log %q", msg)
	}
	changed := newFakeSplit("fake/train", s.values, []int{0, 1, 2, 1})
	_, msg = load(changed, other)
	// Other data of the same name goes to a file of its own, so that two
	// data sets of one name do not refit each other's caches in turn.
	path, err := Loader{Dir: dir}.File(changed, other)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, "no input cache "+path) || changed.fits.Load() != 1 {
		t.Fatalf("changed labels: log %q, %d fits", msg, changed.fits.Load())
	}
	orig, _ := Loader{Dir: dir}.File(s, other)
	if orig == path || !regexp.MustCompile(`^fake-train-k3-em1-kmeans-n4-[0-9a-f]{12}\.gmfit$`).MatchString(filepath.Base(path)) {
		t.Errorf("cache files %s and %s: want distinct names fake-train-k3-em1-kmeans-n4-<digest>.gmfit", orig, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 1
	os.WriteFile(path, data, 0o644)
	_, msg = load(changed, other)
	if !strings.Contains(msg, "unusable") || !strings.Contains(msg, path) || !strings.Contains(msg, "checksum") {
		t.Fatalf("corrupt cache: log %q", msg)
	}
	// A cache of the 2D format of older gmcn versions (version 1).
	data, _ = os.ReadFile(path)
	data[8] = 1
	os.WriteFile(path, data, 0o644)
	_, msg = load(changed, other)
	if !strings.Contains(msg, "unusable") || !strings.Contains(msg, "2D format of older gmcn versions") {
		t.Fatalf("old cache: log %q", msg)
	}
	if _, _, err := ReadCache(path); err != nil {
		t.Fatalf("rewritten cache: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".*.tmp*")); len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
}

// TestLoaderContentKey checks that the cache follows the content: a split
// with the same samples and labels (another copy of the data) reuses it, a
// split whose content differs refits.
func TestLoaderContentKey(t *testing.T) {
	cfg := DefaultFitConfig(2)
	cfg.K = 2
	l := Loader{Dir: t.TempDir()}
	a := newFakeSplit("fake/test", []float64{1, 2, 3}, []int{0, 1, 2})
	if _, err := l.LoadOrFit(a, 3, cfg); err != nil {
		t.Fatal(err)
	}
	copied := newFakeSplit("fake/test", slices.Clone(a.values), slices.Clone(a.labels))
	if _, err := l.LoadOrFit(copied, 3, cfg); err != nil || copied.fits.Load() != 0 {
		t.Errorf("same content: %d fits, %v; want the cache", copied.fits.Load(), err)
	}
	edited := newFakeSplit("fake/test", []float64{1, 2, 3.5}, a.labels)
	if in, err := l.LoadOrFit(edited, 3, cfg); err != nil || edited.fits.Load() != 1 || in.Mixtures[(2*2)*7+1] != 3.5 {
		t.Errorf("changed content: %d fits, %v; want a refit", edited.fits.Load(), err)
	}
}

// TestLoaderLoad checks Load: both splits with their limits, testOnly, and
// the checks of the dimension and of an unwritable cache folder.
func TestLoaderLoad(t *testing.T) {
	ds := fakeDataset{
		train: newFakeSplit("fake/train", []float64{1, 2, 3, 4, 5}, []int{0, 1, 2, 0, 1}),
		test:  newFakeSplit("fake/test", []float64{6, 7, 8}, []int{2, 1, 0}),
	}
	cfg := DefaultFitConfig(2)
	cfg.K = 2
	l := Loader{Dir: t.TempDir()}
	tr, te, err := l.Load(ds, cfg, 2, 0, false)
	if err != nil || tr.Layout.B != 2 || te.Layout.B != 3 || tr.Classes != 3 || !slices.Equal(te.Labels, []int{2, 1, 0}) {
		t.Fatalf("Load: %v", err)
	}
	if tr, te, err := l.Load(ds, cfg, 0, 1, true); err != nil || tr != nil || te.Layout.B != 1 || ds.train.fits.Load() != 1 {
		t.Fatalf("Load test only: train %v, test %v, %d training fits, %v", tr, te, ds.train.fits.Load(), err)
	}
	if _, _, err := l.Load(ds, DefaultFitConfig(3), 0, 0, false); err == nil || !strings.Contains(err.Error(), "fit config for 3D data, the data set is 2D") {
		t.Errorf("3D config: error %v", err)
	}
	notDir := filepath.Join(t.TempDir(), "file")
	os.WriteFile(notDir, nil, 0o644)
	l.Dir = filepath.Join(notDir, "cache")
	if _, _, err := l.Load(ds, cfg, 0, 0, false); err == nil || !strings.Contains(err.Error(), "fake/train: fitted 5 samples but could not write the cache "+l.Dir) {
		t.Errorf("unwritable cache: error %v", err)
	}
}
