package mnist

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
)

var (
	mnistOnce sync.Once
	mnistData *Dataset
	mnistErr  error
)

// loadMNISTOrSkip loads MNIST once per test binary, or skips the benchmark or
// test with the reason when the module files are not available.
func loadMNISTOrSkip(tb testing.TB) *Dataset {
	tb.Helper()
	mnistOnce.Do(func() { mnistData, mnistErr = LoadMNIST("") })
	if mnistErr != nil {
		tb.Skipf("MNIST not available: %v", mnistErr)
	}
	return mnistData
}

func labelCounts(labels []uint8) [Classes]int {
	var c [Classes]int
	for _, l := range labels {
		c[l]++
	}
	return c
}

// TestLoadMNIST checks the real MNIST files: sizes and the published
// per-class counts of both splits.
func TestLoadMNIST(t *testing.T) {
	ds := loadMNISTOrSkip(t)
	for _, c := range []struct {
		name   string
		s      *ImageSet
		counts [Classes]int
	}{
		{"train", ds.train, [Classes]int{5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949}},
		{"test", ds.test, [Classes]int{980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009}},
	} {
		want := 0
		for _, n := range c.counts {
			want += n
		}
		if c.s.N != want || len(c.s.labels) != want || c.s.Rows != 28 || c.s.Cols != 28 || len(c.s.Pixels) != want*784 {
			t.Errorf("%s: N=%d labels=%d %d×%d pixels=%d, want %d images of 28×28", c.name, c.s.N, len(c.s.labels), c.s.Rows, c.s.Cols, len(c.s.Pixels), want)
		}
		if got := labelCounts(c.s.labels); got != c.counts {
			t.Errorf("%s: label counts %v, want %v", c.name, got, c.counts)
		}
	}
}

// TestLoadFashionMNIST checks the Debian Fashion-MNIST files: 6000 training
// and 1000 test images per class.
func TestLoadFashionMNIST(t *testing.T) {
	if _, err := os.Stat(FashionMNISTDir); err != nil {
		t.Skipf("Fashion-MNIST not installed (%v); run scripts/install-deps.sh", err)
	}
	ds, err := LoadFashionMNIST("")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		s    *ImageSet
		per  int
	}{{"train", ds.train, 6000}, {"test", ds.test, 1000}} {
		if c.s.N != Classes*c.per || c.s.Rows != 28 || c.s.Cols != 28 {
			t.Errorf("%s: %d images of %d×%d, want %d of 28×28", c.name, c.s.N, c.s.Rows, c.s.Cols, Classes*c.per)
		}
		for class, n := range labelCounts(c.s.labels) {
			if n != c.per {
				t.Errorf("%s: class %d has %d images, want %d", c.name, class, n, c.per)
			}
		}
	}
}

// writeDataset writes a small MNIST-style data set into a new folder: nTrain
// and nTest images of rows×cols, images gzip-compressed and labels raw (both
// forms must load).
func writeDataset(t *testing.T, nTrain, nTest, rows, cols int) string {
	t.Helper()
	dir := t.TempDir()
	for _, s := range []struct {
		prefix string
		n      int
	}{{"train", nTrain}, {"t10k", nTest}} {
		img := encodeIDX([]int{s.n, rows, cols}, seq(s.n*rows*cols))
		lbl := make([]byte, s.n)
		for i := range lbl {
			lbl[i] = byte(i % Classes)
		}
		write(t, filepath.Join(dir, s.prefix+"-images-idx3-ubyte.gz"), gzipBytes(t, img))
		write(t, filepath.Join(dir, s.prefix+"-labels-idx1-ubyte"), encodeIDX([]int{s.n}, lbl))
	}
	return dir
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadDataset(t *testing.T) {
	dir := writeDataset(t, 12, 5, 28, 28)
	ds, err := LoadMNIST(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ds.Name() != "mnist" || ds.Dim() != 2 || len(ds.Classes()) != Classes || ds.Train().Len() != 12 || ds.Test().Len() != 5 ||
		ds.Test().Labels()[3] != 3 || ds.train.Image(1)[0] != seq(784 + 1)[784] || ds.Test().Name() != "mnist/test" {
		t.Fatalf("loaded %q (%dD, %d classes) with %d/%d images, labels %v", ds.Name(), ds.Dim(), len(ds.Classes()),
			ds.Train().Len(), ds.Test().Len(), ds.Test().Labels())
	}
}

// TestLoadDatasetErrors checks that every broken data folder gives an error
// that names the file and says how to get the data.
func TestLoadDatasetErrors(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(t *testing.T, dir string)
		file   string // file the error must name
		want   string
	}{
		{"missing images", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "train-images-idx3-ubyte.gz"))
		}, "train-images-idx3-ubyte.gz", "not found"},
		{"missing labels", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "t10k-labels-idx1-ubyte"))
		}, "t10k-labels-idx1-ubyte", "not found"},
		{"corrupt gzip", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "train-images-idx3-ubyte.gz"), []byte{0x1f, 0x8b, 8, 0, 1, 2, 3})
		}, "train-images-idx3-ubyte.gz", "corrupt image file"},
		{"count mismatch", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "t10k-labels-idx1-ubyte"), encodeIDX([]int{4}, []byte{0, 1, 2, 3}))
		}, "t10k-labels-idx1-ubyte", "5 images"},
		{"wrong image size", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "t10k-images-idx3-ubyte.gz"), gzipBytes(t, encodeIDX([]int{5, 28, 27}, seq(5*28*27))))
		}, "t10k-images-idx3-ubyte.gz", "want [n 28 28]"},
		{"label shape", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "train-labels-idx1-ubyte"), encodeIDX([]int{12, 1}, seq(12)))
		}, "train-labels-idx1-ubyte", "want [n]"},
		{"label out of range", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "train-labels-idx1-ubyte"), encodeIDX([]int{12}, []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0}))
		}, "train-labels-idx1-ubyte", "label 10 of item 10"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := writeDataset(t, 12, 5, 28, 28)
			c.damage(t, dir)
			_, err := LoadMNIST(dir)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			for _, w := range []string{c.file, c.want, "mnist"} {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
			// The folder was given: the advice is about it, not about
			// where the default files come from.
			if c.want == "not found" && (!strings.Contains(msg, "the folder given with --data") || strings.Contains(msg, "go mod download")) {
				t.Errorf("error %q does not point at the folder given", msg)
			}
		})
	}
	missing := filepath.Join(t.TempDir(), "nowhere")
	for name, load := range map[string]func(string) (*Dataset, error){"mnist": LoadMNIST, "fashion-mnist": LoadFashionMNIST} {
		_, err := load(missing)
		gmtest.WantErr(t, err, name+": the data folder "+missing+" does not exist", "given with --data")
	}
}

// TestDatasetMixUp loads a folder whose training labels start as MNIST's do
// as Fashion-MNIST, and the other way round, and the same with the test
// labels of a test-only load: each is refused, naming the data set the
// folder holds.
func TestDatasetMixUp(t *testing.T) {
	for _, name := range []string{"mnist", "fashion-mnist"} {
		other := "fashion-mnist"
		if name == other {
			other = "mnist"
		}
		for part, file := range []string{"train-labels-idx1-ubyte", "t10k-labels-idx1-ubyte"} {
			testOnly := part == 1
			dir := writeDataset(t, 12, 12, 28, 28)
			write(t, filepath.Join(dir, file), encodeIDX([]int{12}, append(append([]byte{}, firstLabels[other][part]...), 0, 1)))
			_, err := Open(name, dir, testOnly)
			gmtest.WantErr(t, err, name+": "+dir+" holds "+other, "not "+name)
		}
	}
	if _, err := LoadMNIST(writeDataset(t, 12, 5, 28, 28)); err != nil {
		t.Errorf("a folder of neither set's labels: %v", err)
	}
}

// TestOpenTestOnly opens a folder that holds only the test files: a
// test-only open reads them and has no training split, a full open names
// the missing training file.
func TestOpenTestOnly(t *testing.T) {
	dir := writeDataset(t, 12, 5, 28, 28)
	for _, f := range []string{"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := Open("mnist", dir, true)
	if err != nil {
		t.Fatal(err)
	}
	if ds.Train() != nil || ds.Test().Len() != 5 || ds.Test().Name() != "mnist/test" {
		t.Errorf("test-only open: train %v, test %d samples named %q; want nil, 5, mnist/test", ds.Train(), ds.Test().Len(), ds.Test().Name())
	}
	_, err = Open("mnist", dir, false)
	gmtest.WantErr(t, err, "train-images-idx3-ubyte", "not found")
	_, err = Open("kmnist", dir, true)
	gmtest.WantErr(t, err, `unknown data set "kmnist"`)
}

// TestMNISTDirWithoutGo checks that a missing go command is reported as
// such, with the ways to give the data instead, in one clean line.
func TestMNISTDirWithoutGo(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv(DataEnv, "")
	_, err := LoadMNIST("")
	if err == nil || !strings.Contains(err.Error(), "not on PATH") || !strings.Contains(err.Error(), "--data") ||
		!strings.Contains(err.Error(), DataEnv) || strings.Contains(err.Error(), ": :") || strings.Contains(err.Error(), "\n") {
		t.Errorf("error %v", err)
	}
}

// TestDataEnv checks that, without a folder argument, both data sets are
// read from the folder DataEnv names, without the go command, and that a
// folder lacking the files is named in the error.
func TestDataEnv(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	root := t.TempDir()
	t.Setenv(DataEnv, root)
	if err := os.Rename(writeDataset(t, 12, 5, 28, 28), filepath.Join(root, "mnist")); err != nil {
		t.Fatal(err)
	}
	ds, err := LoadMNIST("")
	if err != nil || ds.Train().Len() != 12 || ds.Test().Len() != 5 {
		t.Fatalf("MNIST from %s=%s: %v", DataEnv, root, err)
	}
	_, err = LoadFashionMNIST("")
	gmtest.WantErr(t, err, "the data folder "+filepath.Join(root, "fashion-mnist")+" does not exist", DataEnv+"="+root, "make data")
}
