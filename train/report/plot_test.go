package report

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
)

// decode decodes a PNG and checks its size.
func decode(t *testing.T, what string, data []byte, w, h int) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Errorf("%s: %d×%d pixels, want %d×%d", what, b.Dx(), b.Dy(), w, h)
	}
	return img
}

// epochs returns n epoch rows of a run whose loss falls and accuracy rises.
func epochs(n int) []EpochMetrics {
	rows := make([]EpochMetrics, n)
	for i := range rows {
		e := float64(i + 1)
		rows[i] = EpochMetrics{Epoch: i + 1, TrainLoss: 2 / e, TestLoss: 1.5 / e, TrainAcc: 1 - 0.5/e, TestAcc: 1 - 0.4/e, LR: 0.01}
	}
	return rows
}

// stepsOf returns batches steps per epoch of the rows' run.
func stepsOf(rows []EpochMetrics, batches int) []StepPoint {
	var s []StepPoint
	for _, r := range rows {
		for b := 1; b <= batches; b++ {
			x := float64(r.Epoch-1) + float64(b)/float64(batches)
			s = append(s, StepPoint{Step: len(s) + 1, Epoch: x, Loss: 2/x + 0.1*math.Sin(float64(len(s))), LR: r.LR})
		}
	}
	return s
}

// TestPlotMetrics checks that the figure is a PNG of two 460×420 columns,
// three with the per-step log, for one, two and many epochs, also when some
// values are not finite (a diverged run), which are left out.
func TestPlotMetrics(t *testing.T) {
	diverged := epochs(4)
	diverged[2].TrainLoss, diverged[3].TestLoss, diverged[3].TestAcc = math.NaN(), math.Inf(1), math.NaN()
	divergedSteps := stepsOf(diverged, 5)
	divergedSteps[7].Loss, divergedSteps[8].LR = math.NaN(), math.Inf(1)
	for _, c := range []struct {
		name  string
		rows  []EpochMetrics
		steps []StepPoint
	}{
		{"1 epoch", epochs(1), nil},
		{"1 epoch, 1 step", epochs(1), stepsOf(epochs(1), 1)},
		{"2 epochs", epochs(2), nil},
		{"2 epochs with steps", epochs(2), stepsOf(epochs(2), 30)},
		{"80 epochs with steps", epochs(80), stepsOf(epochs(80), 50)},
		{"constant", []EpochMetrics{{Epoch: 1, TrainLoss: 1, TestLoss: 1}, {Epoch: 2, TrainLoss: 1, TestLoss: 1}}, nil},
		{"diverged", diverged, divergedSteps},
	} {
		data, err := PlotMetrics(c.rows, c.steps)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		cols := 2
		if c.steps != nil {
			cols = 3
		}
		decode(t, c.name, data, cols*460, 420)
	}
	_, err := PlotMetrics(nil, stepsOf(epochs(1), 3))
	gmtest.WantErr(t, err, "plotting metrics", "no epoch rows")
}

// TestMovingMean checks the centred window, its shortening at the ends and
// that it skips values that are not finite.
func TestMovingMean(t *testing.T) {
	for _, c := range []struct {
		y    []float64
		half int
		want []float64
	}{
		{[]float64{1, 2, 3, 4}, 0, []float64{1, 2, 3, 4}},
		{[]float64{1, 2, 3, 4}, 1, []float64{1.5, 2, 3, 3.5}},
		{[]float64{1, math.NaN(), 3, math.Inf(1)}, 1, []float64{1, 2, 3, 3}},
	} {
		gmtest.WantClose(t, fmt.Sprint(c.y, c.half), movingMean(c.y, c.half), c.want, 0)
	}
	if got := movingMean([]float64{math.NaN()}, 2); !math.IsNaN(got[0]) {
		t.Errorf("mean of no finite value is %g, want NaN", got[0])
	}
}

// TestPlotConfusion checks the figure's size for a few and many classes and
// the row-normalised colours: a class that is always right has the darkest
// cell on the diagonal and white beside it, however many samples it has.
func TestPlotConfusion(t *testing.T) {
	fashion := []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}
	for _, n := range []int{1, 2, 10, 40} {
		conf := make([][]int, n)
		for i := range conf {
			conf[i] = make([]int, n)
			conf[i][i] = 1 + 1000*i // rows of very different sizes, all right
		}
		var names []string
		if n == 10 {
			names = fashion
		}
		if n == 40 {
			for i := range n {
				names = append(names, fmt.Sprintf("a rather long class name %d", i))
			}
		}
		data, err := PlotConfusion(conf, names)
		if err != nil {
			t.Fatalf("%d classes: %v", n, err)
		}
		s := max(20, min(56, 480/n))
		longest := map[int]int{1: 1, 2: 1, 10: 11, 40: 16}[n] // "0"…, "T-shirt/top", shortened to 16
		left, bottom, _ := confusionMargins(longest)
		img := decode(t, fmt.Sprintf("%d classes", n), data, left+120+n*s, 50+bottom+n*s)
		// A point near a cell's top left corner, clear of the count.
		at := func(i, j int) color.Color { return img.At(left+j*s+3, 50+i*s+3) }
		for i := range n {
			if got := color.NRGBAModel.Convert(at(i, i)); got != blues.at(1) {
				t.Errorf("%d classes: cell (%d, %d), share 1, is %v, want %v", n, i, i, got, blues.at(1))
			}
			if j := (i + 1) % n; j != i {
				if got := color.NRGBAModel.Convert(at(i, j)); got != blues.at(0) {
					t.Errorf("%d classes: cell (%d, %d), share 0, is %v, want %v", n, i, j, got, blues.at(0))
				}
			}
		}
	}
	for _, c := range []struct {
		name  string
		conf  [][]int
		names []string
		want  string
	}{
		{"no rows", nil, nil, "no rows"},
		{"ragged", [][]int{{1, 2}, {3}}, nil, "row 1 has 1 counts, want 2"},
		{"not square", [][]int{{1, 2, 3}, {4, 5, 6}}, nil, "row 0 has 3 counts, want 2"},
		{"negative", [][]int{{1, -2}, {3, 4}}, nil, "count [0][1] is -2"},
		{"names", [][]int{{1, 2}, {3, 4}}, []string{"a", "b", "c"}, "3 class names for 2 classes"},
	} {
		_, err := PlotConfusion(c.conf, c.names)
		gmtest.WantErr(t, err, "plotting confusion matrix", c.want)
	}
}

// TestPlotTiles checks the size, that a shared scale colours equal values
// alike in every tile and a per-tile scale does not, the signed map, and the
// errors.
func TestPlotTiles(t *testing.T) {
	const size = 12
	fill := func(v float64) []float64 {
		x := make([]float64, size*size)
		for i := range x {
			x[i] = v
		}
		return x
	}
	// tile returns the colour at the centre of tile i of a figure with
	// captions and a note (top 56 pixels, caption 16).
	tile := func(img image.Image, cols, i int) color.NRGBA {
		x := 10 + (i%cols)*(size+6) + size/2
		y := 56 + (i/cols)*(size+6+16) + 16 + size/2
		return color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
	}
	caps := []string{"a", "b", "c"}
	for _, c := range []struct {
		name    string
		values  [][]float64
		perTile bool
		want    []color.NRGBA
	}{
		{"shared", [][]float64{fill(2), fill(1), fill(0)}, false, []color.NRGBA{heat.at(1), heat.at(0.5), heat.at(0)}},
		{"per tile", [][]float64{fill(0.5), fill(0.25), fill(0)}, true, []color.NRGBA{heat.at(1), heat.at(1), heat.at(0)}},
		{"signed", [][]float64{fill(-2), fill(2), fill(0)}, false, []color.NRGBA{blueRed.at(0), blueRed.at(1), blueRed.at(0.5)}},
	} {
		data, err := PlotTiles(Tiles{Title: "t", Note: "n", Size: size, Cols: 2, Values: c.values, Captions: caps, Key: "k", PerTile: c.perTile})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		img := decode(t, c.name, data, 20+2*(size+6)+120, 56+2*(size+6+16)+10)
		for i, w := range c.want {
			if got := tile(img, 2, i); got != w {
				t.Errorf("%s: tile %d is %v, want %v", c.name, i, got, w)
			}
		}
	}
	ok := Tiles{Size: size, Cols: 1, Values: [][]float64{fill(1)}}
	for _, c := range []struct {
		name string
		edit func(*Tiles)
		want string
	}{
		{"size", func(t *Tiles) { t.Size = 0 }, "size 0"},
		{"columns", func(t *Tiles) { t.Cols = 0 }, "0 columns"},
		{"no tiles", func(t *Tiles) { t.Values = nil }, "no tiles"},
		{"captions", func(t *Tiles) { t.Captions = caps }, "3 captions for 1 tiles"},
		{"values", func(t *Tiles) { t.Values = [][]float64{{1, 2}} }, "tile 0 has 2 values, want 12×12"},
		{"NaN", func(t *Tiles) { t.Values = [][]float64{fill(math.NaN())} }, "tile 0 has the value NaN"},
	} {
		bad := ok
		c.edit(&bad)
		_, err := PlotTiles(bad)
		gmtest.WantErr(t, err, "plotting tiles", c.want)
	}
}
