package gmnode

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/ops/mixture"
	G "gorgonia.org/gorgonia"
)

// TestFitErrorsNodes checks that FitErrors reads the nodes of a run and
// agrees with mixture.FitErrorsOf on their values, and that it refuses nodes
// without values.
func TestFitErrorsNodes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	l := mixture.Layout{B: 2, C: 3, N: 10, D: 2}
	xd := reduceInput(rng, l)
	g := newGraph()
	x := valueNode(g, "x", xd, l.Shape()...)
	var dense *G.Node
	y, err := ReLUFitReduce(x, 3, UseMEM(), KeepDense(&dense))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := FitErrors(x, dense, y, 100, 1); err == nil || !strings.Contains(err.Error(), "run the graph first") {
		t.Errorf("before the run: error %v, want one asking to run the graph", err)
	}
	runGraph(t, g)
	got, err := FitErrors(x, dense, y, 100, 1)
	if err != nil {
		t.Fatal(err)
	}
	lr := l
	lr.N = 3
	want, err := mixture.FitErrorsOf(testDev.F64.Evaluate, xd, dense.Value().Data().([]float64), y.Value().Data().([]float64), l, lr, 100, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("FitErrors %+v, mixture.FitErrorsOf %+v", got, want)
	}
	if !(got.ReLU.RMSE > 0 && got.Reduction.RMSE > 0 && got.All.RMSE > 0) {
		t.Errorf("fitting errors of a real reduction should be positive: %+v", got)
	}
	if _, err := FitErrors(x, y, y, 100, 1); err == nil || !strings.Contains(err.Error(), `"dense"`) {
		t.Errorf("dense of the wrong shape: error %v, want one naming node \"dense\"", err)
	}
}
