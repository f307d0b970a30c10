package main

import (
	"fmt"

	"github.com/gmcn-go/gmcn/dataset"
	"github.com/gmcn-go/gmcn/internal/atomicfile"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/gmcn-go/gmcn/shapes"
	"github.com/gmcn-go/gmcn/train/report"
	"github.com/pkg/errors"
)

// writeInputs2D draws the first n 2D test inputs of s over the 28×28 pixel
// frame of the images they were fitted to, captioned with their index and
// class, and writes the PNG to path. One colour scale spans every tile: the
// inputs are fitted to images of the same range, so their densities compare
// directly and the colour bar's numbers hold for every tile.
func writeInputs2D(path string, s *dataset.Inputs, n, size int, dataName string, classes []string) error {
	l := s.Layout
	l.B = n
	tiles, err := densityTiles(s.Mixtures[:l.Len()], l, size, [4]float64{0, 28, 0, 28})
	if err != nil {
		return err
	}
	captions := make([]string, n)
	for i := range captions {
		captions[i] = fmt.Sprintf("test %d: %s", i, className(classes, s.Labels[i]))
	}
	return writeTiles(path, report.Tiles{
		Title: fmt.Sprintf("fitted inputs: the first %d %s test images, %d Gaussians each", n, dataName, l.N),
		Note:  "density of the mixture over the 28×28-pixel image frame; one colour scale for all tiles",
		Size:  size, Cols: min(8, n), Values: tiles, Captions: captions, Key: "density per pixel²",
	})
}

// writeKernels draws the kernels of layout l (output channels × input
// channels), each over [−r, r]², and writes the PNG to path. One colour scale
// spans every kernel, so their strengths compare; a kernel drawn in pale
// colours is a weak one, not a badly scaled one.
func writeKernels[T mixture.Float](path string, data []T, l mixture.Layout, size int, r float64) error {
	tiles, err := densityTiles(data, l, size, [4]float64{-r, r, -r, r})
	if err != nil {
		return err
	}
	captions := make([]string, l.Mixtures())
	for i := range captions {
		// Numbered from 0, as export's conv1_out<o>_in<i>.gmm.ply files.
		captions[i] = fmt.Sprintf("out %d ← in %d", i/l.C, i%l.C)
	}
	cols := l.C
	if l.C == 1 {
		cols = min(8, l.B)
	}
	return writeTiles(path, report.Tiles{
		Title: fmt.Sprintf("first-layer kernels: %d output × %d input channels, %d Gaussians each", l.B, l.C, l.N),
		Note:  fmt.Sprintf("kernel value over [−%g, %g]²; red positive, blue negative; one colour scale for all kernels", r, r),
		Size:  size, Cols: cols, Values: tiles, Captions: captions, Key: "kernel value",
	})
}

// render3D draws n 3D test inputs spread evenly over the test set (ModelNet
// splits are sorted by class), each from three views side by side, two
// inputs a row, captioned with its index and class, as the projected density of
// shapes.ProjectDensity. Each tile is scaled to its own maximum: the
// projected peak of a thin spring and of a solid box differ by orders of
// magnitude, and a shared scale would leave most shapes black.
func render3D(path string, s *dataset.Inputs, n, size int, classes []string) error {
	per := s.Layout.N * s.Layout.Stride()
	views := []shapes.View{shapes.DefaultView, {Azimuth: 2.1, Elevation: 0.5}, {Azimuth: 0, Elevation: 1.5}}
	var tiles [][]float64
	var captions []string
	for k := range n {
		i := k * s.Len() / n
		for j, v := range views {
			vals, err := shapes.ProjectDensity(s.Mixtures[i*per:(i+1)*per], size, v)
			if err != nil {
				return errors.Wrapf(err, "test input %d", i)
			}
			tiles = append(tiles, vals)
			caption := ""
			if j == 0 {
				caption = fmt.Sprintf("test %d: %s", i, className(classes, s.Labels[i]))
			}
			captions = append(captions, caption)
		}
	}
	if err := writeTiles(path, report.Tiles{
		Title: fmt.Sprintf("fitted 3D inputs: %d test shapes, %d Gaussians each, three views", n, s.Layout.N),
		Note:  "projected density; each tile scaled to its own maximum, square-root colour scale",
		Size:  size, Cols: len(views) * min(2, n), Values: tiles, Captions: captions, Key: "fraction of the tile's maximum",
		PerTile: true, Sqrt: true,
	}); err != nil {
		return err
	}
	fmt.Printf("wrote %s (3D kernels are not drawn)\n", path)
	return nil
}

// densityTiles evaluates every 2D mixture of the packed batch (rows: batch,
// columns: channel) at the centres of size×size pixels over the box
// [x0,x1]×[y0,y1], row by row from y0.
func densityTiles[T mixture.Float](data []T, l mixture.Layout, size int, box [4]float64) ([][]float64, error) {
	if l.D != 2 {
		return nil, errors.Errorf("render: only 2D mixtures can be drawn as density images, got D = %d", l.D)
	}
	if err := mixture.Validate(data, l); err != nil {
		return nil, errors.Wrap(err, "render")
	}
	tiles := make([][]float64, l.Mixtures())
	ps := make([]mixture.Prepared[float64], l.N)
	g := make([]float64, l.Stride())
	for m := range tiles {
		mx := mixture.Mixture(data, l, m)
		for k := range ps {
			for j := range g {
				g[j] = float64(mx[k*l.Stride()+j])
			}
			ps[k] = mixture.Prepare(2, g)
		}
		vals := make([]float64, size*size)
		var p [2]float64
		for i := range vals {
			p[0] = box[0] + (box[1]-box[0])*(float64(i%size)+0.5)/float64(size)
			p[1] = box[2] + (box[3]-box[2])*(float64(i/size)+0.5)/float64(size)
			vals[i] = mixture.EvalMixture(2, ps, p[:])
		}
		tiles[m] = vals
	}
	return tiles, nil
}

// writeConfusionPNG draws the confusion matrix with the class names and
// writes the PNG to path.
func writeConfusionPNG(path string, conf [][]int, classes []string) error {
	png, err := report.PlotConfusion(conf, classes)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, png); err != nil {
		return err
	}
	fmt.Printf("wrote %s\n", path)
	return nil
}

// className returns the name of class label, or the label itself where the
// data set names fewer classes.
func className(classes []string, label int) string {
	if label >= 0 && label < len(classes) {
		return classes[label]
	}
	return fmt.Sprint(label)
}

// writeTiles draws t and writes the PNG atomically to path.
func writeTiles(path string, t report.Tiles) error {
	png, err := report.PlotTiles(t)
	if err != nil {
		return errors.Wrap(err, path)
	}
	return atomicfile.Write(path, png)
}
