// Package runtest trains small runs for the tests of the packages that read
// run directories (predict, export, cmd/gmcn). Tests only.
package runtest

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"testing"

	"github.com/gmcn-go/gmcn/dataset"
	"github.com/gmcn-go/gmcn/dataset/mnist"
	"github.com/gmcn-go/gmcn/runspec"
	"github.com/gmcn-go/gmcn/train"
)

// Run is a trained run directory with the data it was evaluated on.
type Run struct {
	Dir   string
	Setup *runspec.Setup
	// Test holds the fitted test inputs of the run; Images the same test
	// images as pixels, in the same order.
	Test   *dataset.Inputs
	Images mnist.Images
}

// MNIST trains a tiny GMCN ("1/8 -> 4/4 -> 10", batch 16) for one epoch on
// the first 200 MNIST training images into a temporary run directory, as
// `gmcn train` does (run.json, checkpoint.gmcn), and evaluates it on the
// first 40 test images, which fill the last batch only half. It skips the
// test when MNIST is not available.
func MNIST(tb testing.TB) Run {
	tb.Helper()
	ds, err := mnist.LoadMNIST("")
	if err != nil {
		tb.Skipf("MNIST not available: %v", err)
	}
	c := runspec.Config{Dataset: "mnist", CacheDir: tb.TempDir(), TrainLimit: 200, TestLimit: 40, FitEM: 1, FitInit: "kmeans",
		Layers: "1/8 -> 4/4 -> 10", Kernel: 5, Reduction: "treehem2", Batch: 16, Epochs: 1, LR: 1e-2, DecayRate: 0.05, Seed: 1}
	s, err := runspec.Resolve(c)
	if err != nil {
		tb.Fatal(err)
	}
	trainSet, testSet, err := runspec.LoadInputs(s, false, nil)
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	if err := runspec.SaveConfig(dir, c); err != nil {
		tb.Fatal(err)
	}
	opt := train.Options{Epochs: c.Epochs, LR: c.LR, DecayRate: c.DecayRate, Seed: c.Seed, Hooks: train.DefaultHooks(dir)}
	if _, err := train.Run(context.Background(), s.Model, trainSet, testSet, opt); err != nil {
		tb.Fatal(err)
	}
	im := ds.Test().Limit(c.TestLimit).(*mnist.ImageSet).Images
	return Run{Dir: dir, Setup: s, Test: testSet, Images: im}
}

// WriteIDX writes the images im as an IDX file at path.
func WriteIDX(tb testing.TB, path string, im mnist.Images) {
	tb.Helper()
	var b bytes.Buffer
	b.Write([]byte{0, 0, 0x08, 3})
	for _, d := range []int{im.N, im.Rows, im.Cols} {
		binary.Write(&b, binary.BigEndian, uint32(d))
	}
	b.Write(im.Pixels)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
}
