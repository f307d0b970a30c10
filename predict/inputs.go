package predict

import (
	"image"
	"image/color"
	_ "image/gif"  // GIF images for LoadImage
	_ "image/jpeg" // JPEG images for LoadImage
	_ "image/png"  // PNG images for LoadImage
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/gmcn-go/gmcn/dataset"
	"github.com/gmcn-go/gmcn/dataset/mnist"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/gmcn-go/gmcn/shapes"
	"github.com/pkg/errors"
)

// LoadImage reads a PNG, JPEG or GIF image as MNIST's models see digits: it
// converts the image to grey levels (transparent parts count as black),
// inverts them if invert is set (for a dark digit on a light background,
// such as a scan), and resizes the result to 28×28 by averaging over the
// area each output pixel covers. MNIST digits are white on black, centred
// by their centre of mass in the middle 20×20 pixels; an image framed
// differently is classified as it is, without re-centring.
//
// Images of more than MaxImagePixels are refused before they are decoded:
// a small compressed file can hold an image of gigabytes.
func LoadImage(path string, invert bool) ([]uint8, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errors.Wrap(err, "image")
	}
	defer f.Close()
	cfg, _, err := image.DecodeConfig(f)
	if err != nil {
		return nil, errors.Wrapf(err, "image %s (want PNG, JPEG or GIF)", path)
	}
	if int64(cfg.Width)*int64(cfg.Height) > MaxImagePixels {
		return nil, errors.Errorf("image %s is %d×%d pixels, more than the %d a digit needs; scale it down first", path, cfg.Width, cfg.Height, MaxImagePixels)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, errors.Wrapf(err, "image %s", path)
	}
	img, _, err := image.Decode(f)
	if err != nil {
		return nil, errors.Wrapf(err, "image %s (want PNG, JPEG or GIF)", path)
	}
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	if w < 1 || h < 1 {
		return nil, errors.Errorf("image %s is empty (%d×%d pixels)", path, w, h)
	}
	grey := make([]float64, w*h)
	for y := range h {
		for x := range w {
			v := float64(color.GrayModel.Convert(img.At(b.Min.X+x, b.Min.Y+y)).(color.Gray).Y)
			if invert {
				v = 255 - v
			}
			grey[y*w+x] = v
		}
	}
	small := resizeArea(grey, w, h, mnist.ImageCols, mnist.ImageRows)
	out := make([]uint8, len(small))
	for i, v := range small {
		out[i] = uint8(math.Round(math.Min(255, math.Max(0, v))))
	}
	return out, nil
}

// MaxImagePixels is the largest image LoadImage decodes: 4096×4096, whose
// grey levels take 128 MB.
const MaxImagePixels = 4096 * 4096

// LooksInverted reports whether a 28×28 image from LoadImage has a bright
// border (mean grey level of its outermost ring above half), which MNIST's
// dark backgrounds never have: a dark digit on a light background, as a
// scan gives, that wants LoadImage's invert.
func LooksInverted(pix []uint8) bool {
	w, h := mnist.ImageCols, mnist.ImageRows
	if len(pix) != w*h {
		return false
	}
	sum, n := 0, 0
	for y := range h {
		for x := range w {
			if x == 0 || y == 0 || x == w-1 || y == h-1 {
				sum += int(pix[y*w+x])
				n++
			}
		}
	}
	return 2*sum > 255*n
}

// resizeArea resizes the w×h image src to W×H, each output pixel the mean
// of the source over the rectangle it covers (pixels partly covered count
// with the covered fraction); rows first, then columns.
func resizeArea(src []float64, w, h, W, H int) []float64 {
	rows := make([]float64, W*h)
	cx := areaWeights(w, W)
	for y := range h {
		for j, ws := range cx {
			for _, t := range ws {
				rows[y*W+j] += t.w * src[y*w+t.i]
			}
		}
	}
	out := make([]float64, W*H)
	cy := areaWeights(h, H)
	for i, ws := range cy {
		for _, t := range ws {
			for x := range W {
				out[i*W+x] += t.w * rows[t.i*W+x]
			}
		}
	}
	return out
}

// tap is one source pixel i with its weight w in an output pixel.
type tap struct {
	i int
	w float64
}

// areaWeights returns, for every one of m output pixels along an axis of n
// source pixels, the source pixels it covers and their weights (summing to
// 1).
func areaWeights(n, m int) [][]tap {
	scale := float64(n) / float64(m)
	out := make([][]tap, m)
	for j := range out {
		lo, hi := float64(j)*scale, float64(j+1)*scale
		for i := int(lo); i < n && float64(i) < hi; i++ {
			if c := math.Min(hi, float64(i+1)) - math.Max(lo, float64(i)); c > 0 {
				out[j] = append(out[j], tap{i, c / scale})
			}
		}
	}
	return out
}

// LoadIDXImages reads an IDX file of 28×28 images (as MNIST's
// t10k-images-idx3-ubyte, optionally gzipped).
func LoadIDXImages(path string) (mnist.Images, error) {
	idx, err := mnist.ReadIDXFile(path)
	if err != nil {
		return mnist.Images{}, err
	}
	if len(idx.Dims) != 3 || idx.Dims[1] != mnist.ImageRows || idx.Dims[2] != mnist.ImageCols {
		return mnist.Images{}, errors.Errorf("%s: IDX data of shape %v, want images [n %d %d]", path, idx.Dims, mnist.ImageRows, mnist.ImageCols)
	}
	return mnist.Images{N: idx.Dims[0], Rows: mnist.ImageRows, Cols: mnist.ImageCols, Pixels: idx.Data}, nil
}

// FitImages fits the images im as the run's training images were fitted
// (mnist.FitInputsStreams with the run's fit settings), image i from the
// random stream streams[i]: an image of a data set's split gets its
// training-time mixture with its index in the split as stream. nil streams
// stand for 0, 1, ….
func (p *Predictor) FitImages(im mnist.Images, streams []uint64) ([]float32, mixture.Layout, error) {
	if d := p.Setup.Model.D; d != 2 {
		return nil, mixture.Layout{}, errors.Errorf("the run's model classifies %dD shapes (%s), not images", d, p.Setup.Dataset)
	}
	return mnist.FitInputsStreams(im, streams, p.Setup.Fit, nil)
}

// FitShapes fits the mesh (.off, .ply) or point-cloud (.xyz, .txt) files as
// the run's training shapes were fitted (shapes.FitShapesStreams with the
// run's fit settings). A file of the run's data set is fitted from the
// random stream it has there (its position in its split), so that it gets
// exactly its training-time mixture and predict agrees with eval; any other
// file from stream 0, so that its mixture does not depend on the other
// files.
func (p *Predictor) FitShapes(paths []string) ([]float32, mixture.Layout, error) {
	if d := p.Setup.Model.D; d != 3 {
		return nil, mixture.Layout{}, errors.Errorf("the run's model classifies %dD images (%s), not 3D shapes", d, p.Setup.Dataset)
	}
	mix, _, err := shapes.FitShapesStreams(paths, p.shapeStreams(paths), p.Setup.Fit, nil)
	return mix, p.InputLayout(len(paths)), err
}

// shapeStreams returns each path's position in its split of the run's
// data set, or 0 for a path that is not in it (or when the data set cannot
// be opened: then every file is new to the run).
func (p *Predictor) shapeStreams(paths []string) []int {
	streams := make([]int, len(paths))
	ds, err := p.Setup.OpenDataset(false)
	if err != nil {
		return streams
	}
	pos := map[string]int{}
	for _, split := range []dataset.Split{ds.Train(), ds.Test()} {
		if s, ok := split.(*shapes.ShapeSet); ok {
			for i, path := range s.Paths() {
				pos[absPath(path)] = i
			}
		}
	}
	for i, path := range paths {
		streams[i] = pos[absPath(path)]
	}
	return streams
}

// absPath returns path made absolute and clean, or path itself when that
// fails.
func absPath(path string) string {
	if a, err := filepath.Abs(path); err == nil {
		return a
	}
	return path
}
