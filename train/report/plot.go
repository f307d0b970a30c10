package report

import (
	"fmt"
	"image/color"
	"math"

	"github.com/pkg/errors"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// StepPoint is one training step of the per-step log, as PlotMetrics draws
// it.
type StepPoint struct {
	// Step counts the optimiser steps of the run from 1.
	Step int
	// Epoch is the step's position in epochs: e−1+b/n after batch b of the
	// n of epoch e, so that epoch e's end is at e, where its EpochMetrics
	// row is drawn.
	Epoch float64
	// Loss is the mean training loss of the step's batch; LR the learning
	// rate it used.
	Loss, LR float64
}

// Metrics figure size: each column of panels is metricsWidth pixels wide
// under a title line of metricsTitle pixels.
const (
	metricsWidth  = 460
	metricsHeight = 420
	metricsTitle  = 40
)

// PlotMetrics draws the loss and the accuracy of every epoch row (train and
// test) side by side and, when steps are given, a third column with the
// loss of every step, its moving average and the learning rate; it returns
// the PNG bytes. The figure is 460 pixels wide per column and 420 high.
// Epochs are whole-numbered on the x axes, which run from 0 to the last
// epoch; points that are not finite (a diverged run) are left out.
func PlotMetrics(rows []EpochMetrics, steps []StepPoint) ([]byte, error) {
	if len(rows) == 0 {
		return nil, errors.New("plotting metrics: no epoch rows, want at least one")
	}
	last := rows[len(rows)-1]
	cols := 2
	if len(steps) > 0 {
		cols = 3
	}
	img := newCanvas(cols*metricsWidth, metricsHeight)
	c := draw.New(img)
	sty := textStyle(titleSize)
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YCenter
	c.FillText(sty, vg.Point{X: c.Center().X, Y: c.Max.Y - pixels(metricsTitle/2)},
		fmt.Sprintf("training: %s, test accuracy %.2f %% after epoch %d", plural(len(rows), "epoch"), 100*last.TestAcc, last.Epoch))
	body := draw.Crop(c, 0, 0, 0, -pixels(metricsTitle))
	tiles := draw.Tiles{Rows: 1, Cols: cols, PadX: pixels(10), PadLeft: pixels(6), PadRight: pixels(10), PadBottom: pixels(6)}

	xmax := float64(last.Epoch)
	var ep, trL, teL, trA, teA []float64
	for _, r := range rows {
		ep = append(ep, float64(r.Epoch))
		trL, teL = append(trL, r.TrainLoss), append(teL, r.TestLoss)
		trA, teA = append(trA, 100*r.TrainAcc), append(teA, 100*r.TestAcc)
	}
	marks := len(rows) <= 30
	for i, pn := range []struct {
		title, ylabel string
		train, test   []float64
	}{{"loss", "mean NLL", trL, teL}, {"accuracy", "%", trA, teA}} {
		p := newPlot("epoch", pn.ylabel, true)
		setRange(&p.X, 0, xmax, 1)
		lo, hi, _ := finiteRange(pn.train, pn.test)
		setRange(&p.Y, lo, hi, 0.5)
		train := addCurve(p, ep, pn.train, blue, nil, marks, draw.CircleGlyph{})
		test := addCurve(p, ep, pn.test, orange, []vg.Length{vg.Points(5), vg.Points(3)}, marks, draw.SquareGlyph{})
		drawPanel(tiles.At(body, i, 0), pn.title, p, []legendItem{{"train", train}, {"test", test}})
	}
	if len(steps) > 0 {
		drawSteps(tiles.At(body, 2, 0), steps, xmax)
	}
	return encodePNG(img)
}

// drawSteps draws the per-step column into c: the loss of every step, faint,
// with its centred moving average on top, and below it the learning rate.
func drawSteps(c draw.Canvas, steps []StepPoint, xmax float64) {
	var x, loss, lr []float64
	for _, s := range steps {
		x, loss, lr = append(x, s.Epoch), append(loss, s.Loss), append(lr, s.LR)
		xmax = max(xmax, s.Epoch)
	}
	half := len(steps) / 40
	p := newPlot("", "loss", true)
	setRange(&p.X, 0, xmax, 1)
	lo, hi, _ := finiteRange(loss)
	setRange(&p.Y, lo, hi, 0.5)
	raw := addCurve(p, x, loss, faint, nil, false, nil)
	smooth := addCurve(p, x, movingMean(loss, half), blue, nil, false, nil)
	split := c.Min.Y + 0.38*(c.Max.Y-c.Min.Y)
	top, bottom := c, c
	top.Min.Y, bottom.Max.Y = split, split
	bottom = draw.Crop(bottom, 0, 0, 0, -pixels(6))
	q := newPlot("epoch", "learning rate", true)
	setRange(&q.X, 0, xmax, 1)
	q.Y.Tick.Marker = Ticks{N: 4}
	lo, hi, _ = finiteRange(lr)
	setRange(&q.Y, min(lo, 0), hi, math.Abs(hi)/2)
	addCurve(q, x, lr, green, nil, false, nil)
	// Align the two data areas, whose tick labels differ in width.
	if dx := q.DataCanvas(bottom).Min.X - p.DataCanvas(plotArea(top)).Min.X; dx > 0 {
		top.Min.X += dx
	} else {
		bottom.Min.X -= dx
	}
	drawPanel(top, "per step", p, []legendItem{{"loss", raw}, {"mean of " + plural(2*half+1, "step"), smooth}})
	q.Draw(bottom)
}

// addCurve adds the finite points of (x, y) to p as a line of colour col
// (dashed by dashes; with glyph marks when marks) and returns it for the
// legend. Non-finite points break the line.
func addCurve(p *plot.Plot, x, y []float64, col color.Color, dashes []vg.Length, marks bool, glyph draw.GlyphDrawer) plot.Thumbnailer {
	style := draw.LineStyle{Color: col, Width: vg.Points(1.6), Dashes: dashes}
	mark := draw.GlyphStyle{Color: col, Radius: vg.Points(3), Shape: glyph}
	var seg plotter.XYs
	flush := func() {
		if len(seg) == 0 {
			return
		}
		l, _ := plotter.NewLine(seg) // the points are finite
		l.LineStyle = style
		p.Add(l)
		if marks {
			s, _ := plotter.NewScatter(seg)
			s.GlyphStyle = mark
			p.Add(s)
		}
		seg = nil
	}
	for i := range x {
		if math.IsNaN(y[i]) || math.IsInf(y[i], 0) {
			flush()
			continue
		}
		seg = append(seg, plotter.XY{X: x[i], Y: y[i]})
	}
	flush()
	return legendSample{style, marks, mark}
}

// legendSample draws a curve's line and, if it has them, one of its marks.
type legendSample struct {
	line  draw.LineStyle
	marks bool
	glyph draw.GlyphStyle
}

// Thumbnail implements plot.Thumbnailer.
func (s legendSample) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(s.line, c.Min.X, y, c.Max.X, y)
	if s.marks {
		c.DrawGlyphNoClip(s.glyph, c.Center())
	}
}

// movingMean returns the mean of the finite values among y[i−half..i+half]
// for every i (fewer at the ends); NaN where there is none.
func movingMean(y []float64, half int) []float64 {
	out := make([]float64, len(y))
	for i := range y {
		sum, n := 0.0, 0
		for _, v := range y[max(0, i-half):min(len(y), i+half+1)] {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				sum, n = sum+v, n+1
			}
		}
		out[i] = sum / float64(n)
	}
	return out
}

// plural writes n and the noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
