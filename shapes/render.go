package shapes

import (
	"bytes"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"

	"github.com/pkg/errors"
	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"

	"github.com/gmcn-go/gmcn/dataset"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// View is a camera direction for rendering 3D mixtures: the scene is turned
// by Azimuth about the up axis (z), then tilted by Elevation about the
// screen's horizontal axis, and projected along the line of sight. Angles
// are in radians.
type View struct {
	Azimuth, Elevation float64
}

// DefaultView looks from 30° above the horizon, turned by 30°.
var DefaultView = View{Azimuth: math.Pi / 6, Elevation: math.Pi / 6}

// rows returns the screen's right, up and line-of-sight axes in world
// coordinates (the rows of the view rotation).
func (v View) rows() [3][3]float64 {
	sa, ca := math.Sincos(v.Azimuth)
	se, ce := math.Sincos(v.Elevation)
	right := [3]float64{ca, sa, 0}
	depth := [3]float64{-sa * ce, ca * ce, se}
	up := [3]float64{sa * se, -ca * se, ce}
	return [3][3]float64{right, up, depth}
}

// ProjectDensity returns the density of one 3D mixture (packed [w, μ, Σ] ×
// K, D = 3) projected onto the screen of view, sampled at the centres of
// size×size pixels, row by row from the top: integrating a Gaussian along the
// line of sight leaves the 2D Gaussian with the projected mean P μ and
// covariance P Σ Pᵀ (P = the right and up rows of the view), weight
// unchanged, so the image is Σ_k w_k N(x; Pμ_k, PΣ_kPᵀ). The frame is the
// square around the origin that holds every component with positive weight
// to 2.5 σ.
func ProjectDensity(mix []float32, size int, view View) ([]float64, error) {
	if size < 8 {
		return nil, errors.Errorf("render: size %d, want ≥ 8 pixels", size)
	}
	if len(mix) == 0 || len(mix)%stride != 0 {
		return nil, errors.Errorf("render: %d values, want a positive multiple of 13 (3D Gaussians)", len(mix))
	}
	k := len(mix) / stride
	if err := mixture.Validate(mix, dataset.FitLayout(1, k, 3)); err != nil {
		return nil, errors.Wrap(err, "render")
	}
	p := view.rows()
	type g2 struct{ w, mx, my, a, b, c float64 } // w·norm, mean, inverse covariance [a b; b c]
	gs := make([]g2, 0, k)
	extent := 0.0
	for i := range k {
		g := mix[stride*i : stride*(i+1)]
		var mu [2]float64
		var cov [2][2]float64
		for r := range 2 {
			for j := range 3 {
				mu[r] += p[r][j] * float64(g[1+j])
			}
			for s := range 2 {
				for j := range 3 {
					for l := range 3 {
						cov[r][s] += p[r][j] * float64(g[4+3*j+l]) * p[s][l]
					}
				}
			}
		}
		det := cov[0][0]*cov[1][1] - cov[0][1]*cov[1][0]
		if g[0] > 0 {
			sd := math.Sqrt(max(cov[0][0], cov[1][1]))
			extent = max(extent, math.Abs(mu[0])+2.5*sd, math.Abs(mu[1])+2.5*sd)
		}
		if g[0] == 0 || !(det > 0) {
			continue
		}
		gs = append(gs, g2{w: float64(g[0]) / (2 * math.Pi * math.Sqrt(det)), mx: mu[0], my: mu[1],
			a: cov[1][1] / det, b: -cov[0][1] / det, c: cov[0][0] / det})
	}
	if !(extent > 0) {
		extent = 1
	}
	vals := make([]float64, size*size)
	for py := range size {
		y := extent * (1 - 2*(float64(py)+0.5)/float64(size))
		for px := range size {
			x := extent * (2*(float64(px)+0.5)/float64(size) - 1)
			s := 0.0
			for _, g := range gs {
				dx, dy := x-g.mx, y-g.my
				s += g.w * math.Exp(-0.5*(g.a*dx*dx+2*g.b*dx*dy+g.c*dy*dy))
			}
			vals[py*size+px] = s
		}
	}
	return vals, nil
}

// RenderDensity draws ProjectDensity's image of one 3D mixture, scaled to
// the image's maximum and shown with a square root (so faint parts stay
// visible) in a black–red–yellow–white map. Negative weights are drawn as
// negative density (clipped at black).
func RenderDensity(mix []float32, size int, view View) (*image.RGBA, error) {
	vals, err := ProjectDensity(mix, size, view)
	if err != nil {
		return nil, err
	}
	peak := 0.0
	for _, v := range vals {
		peak = max(peak, v)
	}
	img := image.NewRGBA(image.Rect(0, 0, size, size))
	for i, v := range vals {
		t := 0.0
		if peak > 0 {
			t = math.Sqrt(max(v, 0) / peak)
		}
		img.Pix[4*i], img.Pix[4*i+1], img.Pix[4*i+2], img.Pix[4*i+3] = heat(t)
	}
	return img, nil
}

// heat maps t ∈ [0, 1] to black → red → yellow → white.
func heat(t float64) (r, g, b, a uint8) {
	c := func(v float64) uint8 { return uint8(math.Round(255 * min(max(v, 0), 1))) }
	return c(3 * t), c(3*t - 1), c(3*t - 2), 255
}

// RenderPNG draws several 3D mixtures side by side (RenderDensity, size
// pixels each, from each of views in a row per mixture), each row captioned
// with its title, and returns the PNG file's bytes.
func RenderPNG(mixtures [][]float32, titles []string, size int, views []View) ([]byte, error) {
	if len(mixtures) == 0 || len(titles) != len(mixtures) || len(views) == 0 {
		return nil, errors.Errorf("render: %d mixtures, %d titles and %d views, want as many titles as mixtures and at least one of each",
			len(mixtures), len(titles), len(views))
	}
	const caption = 16
	img := image.NewRGBA(image.Rect(0, 0, len(views)*size, len(mixtures)*(size+caption)))
	draw.Draw(img, img.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
	for i, m := range mixtures {
		y := i * (size + caption)
		d := font.Drawer{Dst: img, Src: image.NewUniform(color.Black), Face: basicfont.Face7x13, Dot: fixed.P(4, y+12)}
		d.DrawString(titles[i])
		for j, v := range views {
			tile, err := RenderDensity(m, size, v)
			if err != nil {
				return nil, errors.Wrapf(err, "render %s", titles[i])
			}
			r := image.Rect(j*size, y+caption, (j+1)*size, y+caption+size)
			draw.Draw(img, r, tile, image.Point{}, draw.Src)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, errors.Wrap(err, "render: encoding PNG")
	}
	return buf.Bytes(), nil
}
