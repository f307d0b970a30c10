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
// top and right margins hold the title and the colour bar, the left and
// bottom ones (confusionMargins) the axis titles and the class names (up to
// maxNameLen characters).
const (
	confusionTop   = 50
	confusionRight = 120
	maxNameLen     = 16
)

// confusionMargins returns the left and bottom margins for class names of
// at most l characters, and whether the column names are turned by 45°:
// names of up to 3 characters (digits) are written level under their
// columns, longer ones would overlap there.
func confusionMargins(l int) (left, bottom int, turn bool) {
	const axis, char = 40, 8 // the axis title's band; pixels per character of a name
	left = axis + 10 + l*char
	if l <= 3 {
		return left, axis + 24, false
	}
	return left, axis + 16 + int(0.72*float64(l*char)), true
}

// confusionCell returns the side of a cell for n classes: 56 pixels for a
// few classes, less for many, never under 20.
func confusionCell(n int) int { return max(20, min(56, 480/n)) }

// PlotConfusion draws a confusion matrix (rows: true class, columns:
// predicted class, as Evaluate returns it) as a heat map and returns the PNG
// bytes. Each cell shows its count; its colour is the count's share of its
// row, so that every class reads the same however many test samples it has,
// with the colour bar as key. classNames label the axes (label i is
// classNames[i]); nil numbers the classes from 0. For n classes the figure is
// left + 120 + n·s pixels wide and 50 + bottom + n·s high, s = max(20,
// min(56, 480/n)), the margins from confusionMargins for the longest name.
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
	longest := 0
	for _, cn := range classNames {
		longest = max(longest, len([]rune(shorten(cn))))
	}
	left, bottom, turn := confusionMargins(longest)
	img := newCanvas(left+n*s+confusionRight, confusionTop+n*s+bottom)
	c := draw.New(img)
	cell := pixels(float64(s))
	x0, y1 := c.Min.X+pixels(float64(left)), c.Max.Y-pixels(confusionTop)
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
	name.XAlign, name.YAlign = draw.XCenter, draw.YTop
	if turn {
		name.Rotation, name.XAlign, name.YAlign = math.Pi/4, draw.XRight, draw.YCenter
	}
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
