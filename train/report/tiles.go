package report

import (
	"image"
	"math"

	"github.com/pkg/errors"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Tiles is a figure of square images of one quantity, such as the density
// of fitted inputs or of convolution kernels, drawn in a grid with one
// colour bar. Values of one sign are drawn black → red → yellow → white from
// 0 up; signed values blue (negative), white (0) and red (positive), on a
// scale symmetric about 0.
type Tiles struct {
	// Title is the figure's first line; Note, if any, a second one in
	// smaller type, for what the reader must know to read the colours.
	Title, Note string
	// Size is the side of a tile in pixels; Cols the tiles per row.
	Size, Cols int
	// Values holds Size×Size values per tile, row by row from the top.
	Values [][]float64
	// Captions has one line per tile, drawn above it; nil or "" for none.
	Captions []string
	// Key labels the colour bar: what the values are.
	Key string
	// PerTile scales each tile to its own largest magnitude, so the colour
	// bar shows fractions of it; otherwise one scale spans every tile.
	PerTile bool
	// Sqrt makes colours follow the square root of the magnitude, so faint
	// parts stay visible; the colour bar's ticks follow.
	Sqrt bool
}

// Tile figure layout in pixels.
const (
	tileGap     = 6
	tileCaption = 16
	tileMargin  = 10
	tileBar     = 120
)

// PlotTiles draws t and returns the PNG bytes. The figure is
// 20 + Cols·(Size+6) + 120 pixels wide, or wider where the title or the note
// needs it; its height follows from the number of rows, the caption line (16
// pixels, when there are captions) and the title and note lines.
func PlotTiles(t Tiles) ([]byte, error) {
	n := len(t.Values)
	switch {
	case t.Size < 1 || t.Cols < 1:
		return nil, errors.Errorf("plotting tiles: size %d and %d columns, want ≥ 1 of each", t.Size, t.Cols)
	case n == 0:
		return nil, errors.New("plotting tiles: no tiles, want at least one")
	case t.Captions != nil && len(t.Captions) != n:
		return nil, errors.Errorf("plotting tiles: %d captions for %d tiles", len(t.Captions), n)
	}
	peak, signed := 0.0, false
	peaks := make([]float64, n)
	for i, v := range t.Values {
		if len(v) != t.Size*t.Size {
			return nil, errors.Errorf("plotting tiles: tile %d has %d values, want %d×%d", i, len(v), t.Size, t.Size)
		}
		for _, x := range v {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, errors.Errorf("plotting tiles: tile %d has the value %g, want finite values", i, x)
			}
			peaks[i] = max(peaks[i], math.Abs(x))
			signed = signed || x < 0
		}
		peak = max(peak, peaks[i])
	}

	bar := colorBar{r: heat, label: t.Key}
	if t.PerTile {
		peak = 1
	}
	if peak == 0 {
		peak = 1 // all zero: any scale shows it, as 0
	}
	bar.lo, bar.hi = 0, peak
	if signed {
		bar.r, bar.lo = blueRed, -peak
	}
	// pos is where a value v of a tile whose scale is m lies on the bar.
	pos := func(v, m float64) float64 {
		f := math.Abs(v) / m
		if t.Sqrt {
			f = math.Sqrt(f)
		}
		if !signed {
			return f
		}
		return 0.5 + math.Copysign(f, v)/2
	}
	bar.pos = func(v float64) float64 { return pos(v, peak) }

	capH := 0
	for _, c := range t.Captions {
		if c != "" {
			capH = tileCaption
		}
	}
	top := 36
	if t.Note != "" {
		top += 20
	}
	rows := (n + t.Cols - 1) / t.Cols
	cellW, cellH := t.Size+tileGap, t.Size+tileGap+capH
	w, h := 2*tileMargin+t.Cols*cellW+tileBar, top+rows*cellH+tileMargin
	title, note := textStyle(titleSize), textStyle(tickSize)
	for _, l := range []vg.Length{title.Width(t.Title), note.Width(t.Note)} {
		w = max(w, 2*tileMargin+int(math.Ceil(float64(l/pixels(1)))))
	}
	img := newCanvas(w, h)
	c := draw.New(img)
	at := func(x, y int) vg.Point { return vg.Point{X: pixels(float64(x)), Y: pixels(float64(h - y))} }

	title.YAlign = draw.YCenter
	c.FillText(title, at(tileMargin, 18), t.Title)
	if t.Note != "" {
		note.YAlign = draw.YCenter
		c.FillText(note, at(tileMargin, 44), t.Note)
	}
	caption := textStyle(9)
	caption.YAlign = draw.YBottom
	for i, v := range t.Values {
		x, y := tileMargin+(i%t.Cols)*cellW, top+(i/t.Cols)*cellH
		if t.Captions != nil && t.Captions[i] != "" {
			c.FillText(caption, at(x, y+capH-4), t.Captions[i])
		}
		scale := peak
		if t.PerTile {
			scale = peaks[i]
		}
		tile := image.NewNRGBA(image.Rect(0, 0, t.Size, t.Size))
		for j, x := range v {
			p := 0.0
			if scale > 0 {
				p = pos(x, scale)
			} else if signed {
				p = 0.5
			}
			tile.SetNRGBA(j%t.Size, j/t.Size, bar.r.at(p))
		}
		y += capH
		c.DrawImage(vg.Rectangle{Min: at(x, y+t.Size), Max: at(x+t.Size, y)}, tile)
	}
	key := c
	key.Min, key.Max = at(w-tileBar+10, top+min(rows*cellH, 320)-tileGap), at(w-tileBar+10, top+capH)
	key.Max.X = c.Max.X
	bar.draw(key)
	return encodePNG(img)
}
