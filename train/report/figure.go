package report

import (
	"bytes"
	"image/color"
	"math"

	"github.com/pkg/errors"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// dpi is the resolution of every figure: sizes are given in pixels of the
// PNG and fonts in points, 4/3 pixels each.
const dpi = 96

// Font sizes in points.
const (
	titleSize = 14
	labelSize = 11
	tickSize  = 10
)

var (
	blue   = color.NRGBA{31, 119, 180, 255}
	orange = color.NRGBA{255, 127, 14, 255}
	green  = color.NRGBA{44, 160, 44, 255}
	faint  = color.NRGBA{31, 119, 180, 70}
	sans   = font.Font{Typeface: "Liberation", Variant: "Sans"}
)

// pixels converts a length in pixels of a figure's PNG to vg's points.
func pixels(n float64) vg.Length { return vg.Length(n) * vg.Inch / dpi }

// textStyle returns the figures' text style of the given size in points,
// anchored at its left baseline.
func textStyle(size float64) text.Style {
	return text.Style{Color: color.Black, Font: font.From(sans, vg.Points(size)), Handler: plot.DefaultTextHandler}
}

// newCanvas returns a white canvas of w×h pixels.
func newCanvas(w, h int) *vgimg.Canvas {
	return vgimg.NewWith(vgimg.UseWH(pixels(float64(w)), pixels(float64(h))), vgimg.UseDPI(dpi))
}

// encodePNG returns the canvas as PNG bytes.
func encodePNG(c *vgimg.Canvas) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&buf); err != nil {
		return nil, errors.Wrap(err, "encoding PNG")
	}
	return buf.Bytes(), nil
}

// newPlot returns a plot with the figures' fonts, round ticks (whole
// numbers on x when xInteger) and a grid behind the data.
func newPlot(xLabel, yLabel string, xInteger bool) *plot.Plot {
	p := plot.New()
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, labelSize)
		a.Tick.Label.Font = font.From(sans, tickSize)
	}
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	p.X.Tick.Marker = Ticks{Integer: xInteger}
	p.Y.Tick.Marker = Ticks{}
	p.Add(plotter.NewGrid())
	return p
}

// setRange sets the axis to span lo..hi widened to the enclosing ticks of its
// ticker; an empty span is first widened by pad on both sides.
func setRange(a *plot.Axis, lo, hi, pad float64) {
	if !(hi > lo) {
		lo, hi = lo-pad, hi+pad
	}
	if t, ok := a.Tick.Marker.(Ticks); ok {
		lo, hi = t.Range(lo, hi)
	}
	a.Min, a.Max = lo, hi
}

// finiteRange returns the smallest and largest finite values of the
// series, and false when there is none.
func finiteRange(series ...[]float64) (lo, hi float64, ok bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, v := range s {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	return lo, hi, lo <= hi
}

// legendItem is one entry of a legend row: a name and the curve's sample.
type legendItem struct {
	name  string
	thumb plot.Thumbnailer
}

// drawLegendRow draws the items left to right from the left of c, on one
// line centred in c's height. A legend above the data never covers a curve.
func drawLegendRow(c draw.Canvas, items []legendItem) {
	sty := textStyle(labelSize)
	sty.YAlign = draw.YCenter
	x, y := c.Min.X, (c.Min.Y+c.Max.Y)/2
	h := sty.Height("M")
	for _, it := range items {
		thumb := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{Min: vg.Point{X: x, Y: y - h/2}, Max: vg.Point{X: x + pixels(28), Y: y + h/2}}}
		it.thumb.Thumbnail(&thumb)
		x += pixels(34)
		c.FillText(sty, vg.Point{X: x, Y: y}, it.name)
		x += sty.Width(it.name) + pixels(18)
	}
}

// panelLine is the height of a panel's title line and of its legend line.
var panelLine = pixels(24)

// drawPanel draws a titled plot into c: the title on the first line, the
// legend on the second and the plot below, its data area aligned with the
// legend.
func drawPanel(c draw.Canvas, title string, p *plot.Plot, legend []legendItem) {
	sty := textStyle(labelSize + 1)
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YCenter
	c.FillText(sty, vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: c.Max.Y - panelLine/2}, title)
	area := plotArea(c)
	strip := c
	strip.Min.X, strip.Min.Y, strip.Max.Y = p.DataCanvas(area).Min.X, area.Max.Y, c.Max.Y-panelLine
	drawLegendRow(strip, legend)
	p.Draw(area)
}

// plotArea returns the part of a panel's canvas c below its title and
// legend lines.
func plotArea(c draw.Canvas) draw.Canvas { return draw.Crop(c, 0, 0, 0, -2*panelLine) }
