package report

import (
	"fmt"
	"math"
	"strconv"

	"github.com/pkg/errors"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Confusion figure layout in pixels: a cell is confusionCell(n) square; the
// margins hold the title, the class names (up to 16 characters) and the
// colour bar.
const (
	confusionLeft   = 150
	confusionTop    = 50
	confusionRight  = 120
	confusionBottom = 130
	maxNameLen      = 16
)

// confusionCell returns the side of a cell for n classes: 56 pixels for a
// few classes, less for many, never under 20.
func confusionCell(n int) int { return max(20, min(56, 480/n)) }

// PlotConfusion draws a confusion matrix (rows: true class, columns:
// predicted class, as Evaluate returns it) as a heat map and returns the PNG
// bytes. Each cell shows its count; its colour is the count's share of its
// row, so that every class reads the same however many test samples it has,
// with the colour bar as key. classNames label the axes (label i is
// classNames[i]); nil numbers the classes from 0. For n classes the figure is
// 270 + n·s pixels wide and 180 + n·s high, s = max(20, min(56, 480/n)).
func PlotConfusion(conf [][]int, classNames []string) ([]byte, error) {
	n := len(conf)
	if n == 0 {
		return nil, errors.New("plotting confusion matrix: no rows, want one per class")
	}
	for i, r := range conf {
		if len(r) != n {
			return nil, errors.Errorf("plotting confusion matrix: row %d has %d counts, want %d (one per class)", i, len(r), n)
		}
		for j, v := range r {
			if v < 0 {
				return nil, errors.Errorf("plotting confusion matrix: count [%d][%d] is %d, want ≥ 0", i, j, v)
			}
		}
	}
	if classNames == nil {
		for i := range n {
			classNames = append(classNames, strconv.Itoa(i))
		}
	}
	if len(classNames) != n {
		return nil, errors.Errorf("plotting confusion matrix: %d class names for %d classes", len(classNames), n)
	}
	s := confusionCell(n)
	img := newCanvas(confusionLeft+n*s+confusionRight, confusionTop+n*s+confusionBottom)
	c := draw.New(img)
	cell := pixels(float64(s))
	x0, y1 := c.Min.X+pixels(confusionLeft), c.Max.Y-pixels(confusionTop)
	corner := func(i, j int) vg.Point { return vg.Point{X: x0 + vg.Length(j)*cell, Y: y1 - vg.Length(i)*cell} }

	total, correct := 0, 0
	count := textStyle(min(tickSize, float64(s)/3.2))
	count.XAlign, count.YAlign = draw.XCenter, draw.YCenter
	for i, r := range conf {
		sum := 0
		for _, v := range r {
			sum += v
		}
		total, correct = total+sum, correct+r[i]
		for j, v := range r {
			share := 0.0
			if sum > 0 {
				share = float64(v) / float64(sum)
			}
			p := corner(i, j)
			c.FillPolygon(blues.at(share), []vg.Point{p, {X: p.X + cell, Y: p.Y}, {X: p.X + cell, Y: p.Y - cell}, {X: p.X, Y: p.Y - cell}})
			count.Color = blues.at(0)
			if share < 0.5 {
				count.Color = blues.at(1)
			}
			c.FillText(count, vg.Point{X: p.X + cell/2, Y: p.Y - cell/2}, strconv.Itoa(v))
		}
	}

	name := textStyle(tickSize)
	name.XAlign, name.YAlign = draw.XRight, draw.YCenter
	for i, cn := range classNames {
		c.FillText(name, vg.Point{X: x0 - pixels(6), Y: y1 - (vg.Length(i)+0.5)*cell}, shorten(cn))
	}
	name.Rotation, name.YAlign = math.Pi/4, draw.YCenter
	yb := y1 - vg.Length(n)*cell
	for j, cn := range classNames {
		c.FillText(name, vg.Point{X: x0 + (vg.Length(j)+0.5)*cell, Y: yb - pixels(8)}, shorten(cn))
	}
	axis := textStyle(labelSize)
	axis.XAlign, axis.YAlign = draw.XCenter, draw.YBottom
	c.FillText(axis, vg.Point{X: x0 + vg.Length(n)*cell/2, Y: c.Min.Y + pixels(6)}, "predicted class")
	axis.Rotation = math.Pi / 2
	axis.YAlign = draw.YTop
	c.FillText(axis, vg.Point{X: c.Min.X + pixels(6), Y: y1 - vg.Length(n)*cell/2}, "true class")

	title := textStyle(titleSize)
	title.XAlign, title.YAlign = draw.XCenter, draw.YCenter
	acc := 0.0
	if total > 0 {
		acc = 100 * float64(correct) / float64(total)
	}
	c.FillText(title, vg.Point{X: c.Center().X, Y: c.Max.Y - pixels(confusionTop/2)},
		fmt.Sprintf("confusion matrix: %d test samples, %.2f %% correct", total, acc))

	bar := c
	bar.Min = vg.Point{X: x0 + vg.Length(n)*cell + pixels(20), Y: yb}
	bar.Max.Y = y1
	colorBar{r: blues, lo: 0, hi: 100, pos: linearPos(0, 100), label: "% of the true class"}.draw(bar)
	return encodePNG(img)
}

// shorten cuts a class name to maxNameLen characters, marking the cut.
func shorten(s string) string {
	r := []rune(s)
	if len(r) <= maxNameLen {
		return s
	}
	return string(r[:maxNameLen-1]) + "…"
}
