package report

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// series is one named curve of a chart panel.
type series struct {
	Name  string
	Color color.RGBA
	X, Y  []float64
}

// panel is one chart: a title, its y-axis label and its curves.
type panel struct {
	Title  string
	YLabel string
	Series []series
}

var (
	blue   = color.RGBA{31, 119, 180, 255}
	orange = color.RGBA{255, 127, 14, 255}
	grey   = color.RGBA{200, 200, 200, 255}
	black  = color.RGBA{0, 0, 0, 255}
)

// PlotMetrics renders the loss and accuracy curves of rows side by side and
// returns the PNG bytes.
func PlotMetrics(rows []EpochMetrics) ([]byte, error) {
	var ep, trL, teL, trA, teA []float64
	for _, r := range rows {
		ep = append(ep, float64(r.Epoch))
		trL, teL = append(trL, r.TrainLoss), append(teL, r.TestLoss)
		trA, teA = append(trA, 100*r.TrainAcc), append(teA, 100*r.TestAcc)
	}
	return plotPanels([]panel{
		{Title: "loss", YLabel: "NLL", Series: []series{{"train", blue, ep, trL}, {"test", orange, ep, teL}}},
		{Title: "accuracy", YLabel: "%", Series: []series{{"train", blue, ep, trA}, {"test", orange, ep, teA}}},
	}, 480, 360)
}

// plotPanels draws the panels in a row, each w×h pixels, and encodes a PNG.
func plotPanels(panels []panel, w, h int) ([]byte, error) {
	img := image.NewRGBA(image.Rect(0, 0, w*len(panels), h))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	for i, p := range panels {
		drawPanel(img, image.Rect(i*w, 0, (i+1)*w, h), p)
	}
	var buf bytes.Buffer
	err := png.Encode(&buf, img)
	return buf.Bytes(), err
}

func drawPanel(img *image.RGBA, r image.Rectangle, p panel) {
	plot := image.Rect(r.Min.X+60, r.Min.Y+30, r.Max.X-15, r.Max.Y-40)
	xmin, xmax, ymin, ymax := bounds(p.Series)
	px := func(x float64) int { return plot.Min.X + int((x-xmin)/(xmax-xmin)*float64(plot.Dx())) }
	py := func(y float64) int { return plot.Max.Y - int((y-ymin)/(ymax-ymin)*float64(plot.Dy())) }
	for i := 0; i <= 4; i++ {
		y := ymin + float64(i)/4*(ymax-ymin)
		line(img, plot.Min.X, py(y), plot.Max.X, py(y), grey)
		label(img, r.Min.X+4, py(y)+4, fmt.Sprintf("%.3g", y))
		x := xmin + float64(i)/4*(xmax-xmin)
		label(img, px(x)-8, plot.Max.Y+16, fmt.Sprintf("%.3g", x))
	}
	line(img, plot.Min.X, plot.Max.Y, plot.Max.X, plot.Max.Y, black)
	line(img, plot.Min.X, plot.Min.Y, plot.Min.X, plot.Max.Y, black)
	label(img, plot.Min.X+plot.Dx()/2-20, r.Min.Y+18, p.Title)
	label(img, plot.Min.X+plot.Dx()/2-16, r.Max.Y-8, "epoch")
	label(img, r.Min.X+4, r.Min.Y+18, p.YLabel)
	for si, s := range p.Series {
		for j := 1; j < len(s.X); j++ {
			line(img, px(s.X[j-1]), py(s.Y[j-1]), px(s.X[j]), py(s.Y[j]), s.Color)
		}
		for j := range s.X {
			dot(img, px(s.X[j]), py(s.Y[j]), s.Color)
		}
		ly := plot.Min.Y + 12 + 14*si
		line(img, plot.Max.X-80, ly-4, plot.Max.X-64, ly-4, s.Color)
		label(img, plot.Max.X-60, ly, s.Name)
	}
}

// bounds returns the data range, widened where it is empty so no axis has
// zero extent.
func bounds(ss []series) (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, s := range ss {
		for i := range s.X {
			if math.IsNaN(s.Y[i]) || math.IsInf(s.Y[i], 0) {
				continue
			}
			xmin, xmax = math.Min(xmin, s.X[i]), math.Max(xmax, s.X[i])
			ymin, ymax = math.Min(ymin, s.Y[i]), math.Max(ymax, s.Y[i])
		}
	}
	if xmin > xmax {
		xmin, xmax, ymin, ymax = 0, 1, 0, 1
	}
	if xmax == xmin {
		xmin, xmax = xmin-1, xmax+1
	}
	if ymax == ymin {
		ymin, ymax = ymin-1, ymax+1
	}
	pad := 0.05 * (ymax - ymin)
	return xmin, xmax, ymin - pad, ymax + pad
}

func line(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA) {
	n := max(abs(x1-x0), abs(y1-y0), 1)
	for i := 0; i <= n; i++ {
		img.SetRGBA(x0+(x1-x0)*i/n, y0+(y1-y0)*i/n, c)
	}
}

func dot(img *image.RGBA, x, y int, c color.RGBA) {
	for dx := -2; dx <= 2; dx++ {
		for dy := -2; dy <= 2; dy++ {
			img.SetRGBA(x+dx, y+dy, c)
		}
	}
}

func label(img *image.RGBA, x, y int, s string) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(black), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
