package predict

import (
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gmcn-go/gmcn/dataset"
	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/internal/runtest"
	"github.com/gmcn-go/gmcn/models"
	"github.com/gmcn-go/gmcn/runspec"
	"github.com/gmcn-go/gmcn/train"
	"github.com/gmcn-go/gmcn/train/checkpoint"
	G "gorgonia.org/gorgonia"
)

// TestPredictMatchesEvaluate classifies the test images of a small trained
// run with the predictor and, one image at a time, with train.Evaluate on a
// model loaded as `gmcn eval` loads it: every image must get the same class
// and the same probability of its true class.
func TestPredictMatchesEvaluate(t *testing.T) {
	r := runtest.MNIST(t)
	p, err := LoadRun(r.Dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.ClassesErr != nil || !slices.Equal(p.Classes, []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}) {
		t.Errorf("classes %v (%v), want MNIST's digits", p.Classes, p.ClassesErr)
	}
	probs, err := p.Predict(r.Test.Mixtures, r.Test.Layout)
	if err != nil {
		t.Fatal(err)
	}
	if len(probs) != r.Test.Len() {
		t.Fatalf("%d predictions for %d inputs", len(probs), r.Test.Len())
	}

	st, err := checkpoint.Load(filepath.Join(r.Dir, runspec.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	m, err := models.Build(r.Setup.Model)
	if err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(m.Graph)
	defer vm.Close()
	if err := m.SetState(models.State{Names: st.Names, Params: st.Params, BNMean: st.BNMean, BNVar: st.BNVar, CovNorms: st.CovNorms}); err != nil {
		t.Fatal(err)
	}
	per := r.Test.Layout.N * r.Test.Layout.Stride()
	correct := 0
	for i, pr := range probs {
		one := &dataset.Inputs{Layout: dataset.FitLayout(1, r.Test.Layout.N, 2), Mixtures: r.Test.Mixtures[i*per : (i+1)*per],
			Labels: r.Test.Labels[i : i+1], Classes: r.Test.Classes}
		loss, _, conf, err := train.Evaluate(m, m, vm, one, nil)
		if err != nil {
			t.Fatal(err)
		}
		y := one.Labels[0]
		want := slices.Index(conf[y], 1)
		if got := Top(pr, 1)[0]; got != want {
			t.Errorf("image %d: predicted class %d, Evaluate %d", i, got, want)
		}
		if got := -math.Log(pr[y]); math.Abs(got-loss) > 1e-5*(1+loss) {
			t.Errorf("image %d: −log p(true class) = %g, Evaluate's loss %g", i, got, loss)
		}
		if Top(pr, 1)[0] == y {
			correct++
		}
		sum := 0.0
		for _, v := range pr {
			sum += v
		}
		if math.Abs(sum-1) > 1e-5 {
			t.Errorf("image %d: probabilities sum to %g", i, sum)
		}
	}
	_, acc, _, err := train.Evaluate(m, m, vm, r.Test, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := float64(correct) / float64(len(probs)); got != acc {
		t.Errorf("predictor accuracy %g, Evaluate %g", got, acc)
	}
	t.Logf("accuracy %.1f%% on %d test images", 100*acc, len(probs))

	mix, l, err := p.FitImages(r.Images, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l != r.Test.Layout || !slices.Equal(mix, r.Test.Mixtures) {
		t.Errorf("FitImages of the test images differs from the run's fitted test inputs (layout %v, want %v)", l, r.Test.Layout)
	}
	if _, _, err := p.FitShapes([]string{"x.off"}); err == nil {
		t.Error("FitShapes accepted a 2D run")
	}
	gmtest.WantErr(t, errOf(p.Predict(r.Test.Mixtures[:per], dataset.FitLayout(1, r.Test.Layout.N+1, 2))), "predict", "the model takes layout")
}

func errOf(_ [][]float64, err error) error { return err }

// TestLoadImage writes a digit-like pattern scaled up 2× as a PNG, and its
// negative, and requires LoadImage to give back the 28×28 pattern exactly
// (each output pixel averages four equal source pixels).
func TestLoadImage(t *testing.T) {
	want := make([]uint8, 28*28)
	for i := range want {
		x, y := i%28, i/28
		if (x-14)*(x-14)+(y-14)*(y-14) < 64 {
			want[i] = uint8(40 + 3*x + 2*y)
		}
	}
	dir := t.TempDir()
	for _, c := range []struct {
		name   string
		invert bool
	}{{"white-on-black.png", false}, {"black-on-white.png", true}} {
		img := image.NewGray(image.Rect(0, 0, 56, 56))
		for y := range 56 {
			for x := range 56 {
				v := want[(y/2)*28+x/2]
				if c.invert {
					v = 255 - v
				}
				img.SetGray(x, y, color.Gray{Y: v})
			}
		}
		path := filepath.Join(dir, c.name)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := png.Encode(f, img); err != nil {
			t.Fatal(err)
		}
		f.Close()
		got, err := LoadImage(path, c.invert)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: LoadImage did not give back the 28×28 image", c.name)
		}
	}
	bad := filepath.Join(dir, "not-an-image.png")
	os.WriteFile(bad, []byte("hello"), 0o644)
	gmtest.WantErr(t, errOfImage(LoadImage(bad, false)), "not-an-image.png", "PNG, JPEG or GIF")
	gmtest.WantErr(t, errOfImage(LoadImage(filepath.Join(dir, "missing.png"), false)), "missing.png")
}

func errOfImage(_ []uint8, err error) error { return err }

// TestResizeArea checks the area average on a 3 → 2 reduction, where the
// middle source pixel is split between both output pixels.
func TestResizeArea(t *testing.T) {
	got := resizeArea([]float64{3, 6, 9}, 3, 1, 2, 1)
	want := []float64{(3 + 0.5*6) / 1.5, (0.5*6 + 9) / 1.5}
	gmtest.WantClose(t, "resize", got, want, 1e-12)
}

func TestTop(t *testing.T) {
	for _, c := range []struct {
		pr   []float64
		k    int
		want []int
	}{
		{[]float64{0.1, 0.6, 0.3}, 2, []int{1, 2}},
		{[]float64{0.1, 0.6, 0.3}, 5, []int{1, 2, 0}},
		{[]float64{0.25, 0.25, 0.5}, 3, []int{2, 0, 1}},
		{[]float64{0.5, 0.5}, 0, []int{}},
		{[]float64{0.5, 0.5}, -1, []int{}},
	} {
		if got := Top(c.pr, c.k); !slices.Equal(got, c.want) {
			t.Errorf("Top(%v, %d) = %v, want %v", c.pr, c.k, got, c.want)
		}
	}
}
