package main

import (
	"bytes"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/dataset/mnist"
	"github.com/gmcn-go/gmcn/runspec"
)

// TestRunWithoutTrainingData trains on a copy of MNIST, then takes the
// copy's data away step by step: without the training files `eval`,
// `render` and `export` run from the cached test inputs and the test files;
// without any data `predict` still names the classes, which run.json
// records. Each is told --device cpu.
func TestRunWithoutTrainingData(t *testing.T) {
	src := os.Getenv(mnist.DataEnv)
	if src != "" {
		src = filepath.Join(src, "mnist")
	} else if d, err := mnist.MNISTDir(); err == nil {
		src = d
	}
	if _, err := mnist.LoadMNIST(src); src == "" || err != nil {
		t.Skipf("MNIST not available: %v", err)
	}
	work := t.TempDir()
	data := filepath.Join(work, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), "-idx") {
			b, err := os.ReadFile(filepath.Join(src, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(data, e.Name()), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	run := filepath.Join(work, "run")
	if r := gmcn(t, work, "train", "--data", data, "--layers", "1/8 -> 4/4 -> 10", "--train-limit", "100", "--test-limit", "50",
		"--batch", "10", "--epochs", "1", "--out", run); r.code != 0 {
		t.Fatalf("train: exit status %d\n%s", r.code, r.stderr)
	}
	rc, err := runspec.LoadConfig(run)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}; !slices.Equal(rc.Classes, want) {
		t.Errorf("run.json classes %q, want %q", rc.Classes, want)
	}

	trainFiles, _ := filepath.Glob(filepath.Join(data, "train-*"))
	if len(trainFiles) != 2 {
		t.Fatalf("training files %q, want two", trainFiles)
	}
	for _, f := range trainFiles {
		os.Remove(f)
	}
	for _, args := range [][]string{{"eval", "--run", run, "--device", "cpu"}, {"render", "--run", run, "--inputs", "4", "--device", "cpu"},
		{"export", "--run", run, "--inputs", "2", "--device", "cpu"}} {
		if r := gmcn(t, work, args...); r.code != 0 {
			t.Errorf("%s without the training files: exit status %d\n%s", args[0], r.code, r.stderr)
		}
	}

	if err := os.RemoveAll(data); err != nil {
		t.Fatal(err)
	}
	square := image.NewGray(image.Rect(0, 0, mnist.ImageCols, mnist.ImageRows))
	for y := 8; y < 20; y++ {
		for x := 8; x < 20; x++ {
			square.Pix[y*square.Stride+x] = 255
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, square); err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(work, "square.png")
	if err := os.WriteFile(img, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	r := gmcn(t, work, "predict", "--run", run, "--device", "cpu", img)
	if r.code != 0 || strings.Contains(r.stderr, "class names unavailable") || !strings.HasPrefix(r.stdout, img+": ") {
		t.Errorf("predict without any data: exit status %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
}
