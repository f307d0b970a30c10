package train

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/runspec"
	"github.com/gmcn-go/gmcn/shapes"
)

// TestTrainModelNetTree builds a tiny ModelNet10-layout tree of OFF meshes
// (<class>/{train,test}/*.off) and trains on it through the same runspec.Config,
// input fitting and loop as `gmcn train --dataset modelnet10 --data DIR`.
func TestTrainModelNetTree(t *testing.T) {
	root := filepath.Join(t.TempDir(), "ModelNet10")
	if err := shapes.GenerateModelNet(root, 2, 1, 7); err != nil {
		t.Fatal(err)
	}
	c := runspec.Config{Dataset: "modelnet10", DataDir: root, CacheDir: t.TempDir(), FitInit: "fps", FitPoints: 400,
		Layers: "1/8 -> 4/4 -> 10", Kernel: 5, Reduction: "treehem2", Batch: 10, Epochs: 1, LR: 1e-3, DecayRate: 0.05, Seed: 1}
	s, err := runspec.Resolve(c)
	if err != nil {
		t.Fatal(err)
	}
	mc := s.Model
	if mc.D != 3 || s.Fit.Dim != 3 || s.Fit.Points != 400 || s.Fit.K != 8 {
		t.Fatalf("ModelNet model has D = %d, fit config %v; want D = 3, K = 8 and 400 points", mc.D, s.Fit)
	}
	trainSet, testSet, err := runspec.LoadInputs(s, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if trainSet.Len() != 20 || testSet.Len() != 10 || trainSet.Layout.D != 3 || trainSet.Layout.N != 8 {
		t.Fatalf("train %v, test %v samples", trainSet.Layout, testSet.Layout)
	}
	opt := testOptions(1, 1e-3, t.TempDir())
	rows, err := Run(context.Background(), mc, trainSet, testSet, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].TrainLoss <= 0 {
		t.Errorf("metrics after one epoch: %+v", rows)
	}

	c.Layers = "1/8 -> 4/4 -> 40"
	if _, err := runspec.Resolve(c); err == nil || !strings.Contains(err.Error(), "modelnet10 has 10 classes") {
		t.Errorf("a 40-class model of modelnet10 gave %v", err)
	}
	c.Dataset = "modelnet40"
	if _, _, err := runspec.LoadInputs(mustResolve(t, c), false, nil); err == nil || !strings.Contains(err.Error(), "has 10 classes but the model") {
		t.Errorf("modelnet40 read from a 10-class tree gave %v", err)
	}
	c.DataDir = ""
	if _, _, err := runspec.LoadInputs(mustResolve(t, c), false, nil); err == nil || !strings.Contains(err.Error(), "--data") {
		t.Errorf("a missing root gave %v", err)
	}
}

func mustResolve(t *testing.T, c runspec.Config) *runspec.Setup {
	t.Helper()
	s, err := runspec.Resolve(c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
