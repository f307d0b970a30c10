package report

import (
	"image/color"
	"math"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// ramp is a colour map: colours at evenly spaced stops of [0, 1], linearly
// interpolated between them.
type ramp []color.NRGBA

var (
	// blues runs from white to dark blue, for shares and counts.
	blues = ramp{{255, 255, 255, 255}, {150, 190, 225, 255}, {40, 100, 170, 255}, {8, 40, 95, 255}}
	// heat runs black → red → yellow → white, for densities (as shapes
	// renders 3D ones).
	heat = ramp{{0, 0, 0, 255}, {255, 0, 0, 255}, {255, 255, 0, 255}, {255, 255, 255, 255}}
	// blueRed runs dark blue → white → dark red, for signed values centred
	// on 0 (at t = 0.5).
	blueRed = ramp{{20, 50, 120, 255}, {110, 160, 210, 255}, {245, 245, 245, 255}, {220, 110, 90, 255}, {120, 10, 30, 255}}
)

// at returns the colour at t, clamped to [0, 1]; NaN gives the first colour.
func (r ramp) at(t float64) color.NRGBA {
	if !(t > 0) {
		return r[0]
	}
	if t >= 1 {
		return r[len(r)-1]
	}
	f := t * float64(len(r)-1)
	i := int(f)
	f -= float64(i)
	a, b := r[i], r[i+1]
	mix := func(x, y uint8) uint8 { return uint8(math.Round(float64(x) + f*(float64(y)-float64(x)))) }
	return color.NRGBA{mix(a.R, b.R), mix(a.G, b.G), mix(a.B, b.B), 255}
}

// colorBar is the key of a colour map: values lo..hi shown in colours
// r.at(pos(v)), where pos maps [lo, hi] monotonically onto [0, 1].
type colorBar struct {
	r      ramp
	lo, hi float64
	pos    func(v float64) float64
	label  string
}

// draw draws the bar upright in c: a column of colour on the left, round
// ticks with exact labels to its right and the label, turned, beyond them.
func (b colorBar) draw(c draw.Canvas) {
	bar := c
	bar.Max.X = bar.Min.X + pixels(16)
	const steps = 128
	h := (bar.Max.Y - bar.Min.Y) / steps
	for i := range steps {
		y := bar.Min.Y + vg.Length(i)*h
		c.FillPolygon(b.r.at((float64(i)+0.5)/steps), []vg.Point{{X: bar.Min.X, Y: y}, {X: bar.Max.X, Y: y}, {X: bar.Max.X, Y: y + h + pixels(0.5)}, {X: bar.Min.X, Y: y + h + pixels(0.5)}})
	}
	line := draw.LineStyle{Color: color.Black, Width: vg.Points(0.5)}
	c.StrokeLines(line, []vg.Point{bar.Min, {X: bar.Max.X, Y: bar.Min.Y}, bar.Max, {X: bar.Min.X, Y: bar.Max.Y}, bar.Min})
	sty := textStyle(tickSize)
	sty.YAlign = draw.YCenter
	widest := vg.Length(0)
	for _, t := range (Ticks{}).Ticks(b.lo, b.hi) {
		y := bar.Min.Y + vg.Length(b.pos(t.Value))*(bar.Max.Y-bar.Min.Y)
		c.StrokeLine2(line, bar.Max.X, y, bar.Max.X+pixels(5), y)
		c.FillText(sty, vg.Point{X: bar.Max.X + pixels(8), Y: y}, t.Label)
		widest = max(widest, sty.Width(t.Label))
	}
	lab := textStyle(labelSize)
	lab.Rotation, lab.XAlign, lab.YAlign = math.Pi/2, draw.XCenter, draw.YTop
	c.FillText(lab, vg.Point{X: bar.Max.X + pixels(14) + widest, Y: (bar.Min.Y + bar.Max.Y) / 2}, b.label)
}

// linearPos is the position of v on a linear bar over [lo, hi].
func linearPos(lo, hi float64) func(float64) float64 {
	return func(v float64) float64 { return (v - lo) / (hi - lo) }
}
