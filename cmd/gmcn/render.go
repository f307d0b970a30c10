package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"

	"github.com/gmcn-go/gmcn/dataset"
	"github.com/gmcn-go/gmcn/internal/atomicfile"
	"github.com/gmcn-go/gmcn/models"
	"github.com/gmcn-go/gmcn/ops"
	"github.com/gmcn-go/gmcn/ops/cpu"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/gmcn-go/gmcn/shapes"
	"github.com/gmcn-go/gmcn/train"
	"github.com/gmcn-go/gmcn/train/checkpoint"
	"gorgonia.org/tensor"
)

// renderCmd is `gmcn render`.
type renderCmd struct {
	dir     runDirFlag
	n, size int
}

func (c *renderCmd) flags(f *flagSet) {
	f.group("Flags", func() {
		c.dir.register(f)
		c.n, c.size = 16, 96
		intVar(f, &c.n, "inputs", 1, 10000, "`N` input mixtures to draw")
		intVar(f, &c.size, "size", 8, 4096, "`PIXELS` per side of a drawn mixture")
	})
}

func (c *renderCmd) check(given map[string]bool) error { return c.dir.check(given) }

func (c *renderCmd) run(context.Context) error {
	dir, n, size := c.dir.run, c.n, c.size
	setup, err := loadSetup(dir)
	if err != nil {
		return err
	}
	_, testSet, err := train.LoadInputs(setup, true, os.Stderr)
	if err != nil {
		return err
	}
	l := testSet.Layout
	l.B = min(n, l.B)
	if l.D == 3 {
		return render3D(filepath.Join(dir, "inputs.png"), testSet, l.B, size)
	}
	if err := writeDensityGrid(filepath.Join(dir, "inputs.png"), testSet.Mixtures[:l.Len()], l, size, [4]float64{0, 28, 0, 28}); err != nil {
		return err
	}
	fmt.Printf("wrote %s\n", filepath.Join(dir, "inputs.png"))
	st, err := checkpoint.Load(filepath.Join(dir, train.CheckpointFile))
	if err != nil {
		fmt.Printf("no kernels drawn: %v\n", err)
		return nil
	}
	mc := setup.Model
	m, err := models.Build(mc)
	if err != nil {
		return err
	}
	if err := m.SetState(models.State{Names: st.Names, Params: st.Params, BNMean: st.BNMean, BNVar: st.BNVar, CovNorms: st.CovNorms}); err != nil {
		return err
	}
	raw := m.Kernels[0].Learnables()
	k, err := ops.NewAssembleKernel(mc.Layout.Blocks[0].Radius).Do(raw[0].Value(), raw[1].Value(), raw[2].Value())
	if err != nil {
		return err
	}
	kt := k.(*tensor.Dense)
	kl, err := mixture.LayoutOf(kt.Shape())
	if err != nil {
		return err
	}
	var data []float64
	switch d := kt.Data().(type) {
	case []float32:
		for _, v := range d {
			data = append(data, float64(v))
		}
	case []float64:
		data = d
	}
	r := 2 * mc.Layout.Blocks[0].Radius
	if err := writeDensityGrid(filepath.Join(dir, "kernels.png"), data, kl, size, [4]float64{-r, r, -r, r}); err != nil {
		return err
	}
	fmt.Printf("wrote %s (%d×%d kernels of the first layer)\n", filepath.Join(dir, "kernels.png"), kl.B, kl.C)
	return nil
}

// writeDensityGrid draws every 2D mixture of the packed batch as one tile of
// a grid (rows: batch, columns: channel), each over the box [x0,x1]×[y0,y1]
// with its own symmetric colour scale, and writes a PNG.
func writeDensityGrid[T mixture.Float](path string, data []T, l mixture.Layout, size int, box [4]float64) error {
	if l.D != 2 {
		return fmt.Errorf("render: only 2D mixtures can be drawn as density images, got D = %d", l.D)
	}
	cols := l.C
	if l.C == 1 {
		cols = min(8, l.B)
	}
	tiles := l.Mixtures()
	rows := (tiles + cols - 1) / cols
	img := image.NewRGBA(image.Rect(0, 0, cols*(size+2), rows*(size+2)))
	vals := make([]float64, size*size)
	ps := make([]cpu.Prepared[float64], l.N)
	g := make([]float64, l.Stride())
	for m := range tiles {
		mx := mixture.Mixture(data, l, m)
		for k := range ps {
			for j := range g {
				g[j] = float64(mx[k*l.Stride()+j])
			}
			ps[k] = cpu.Prepare(2, g)
		}
		peak := 0.0
		var p [2]float64
		for i := range vals {
			p[0] = box[0] + (box[1]-box[0])*(float64(i%size)+0.5)/float64(size)
			p[1] = box[2] + (box[3]-box[2])*(float64(i/size)+0.5)/float64(size)
			vals[i] = cpu.EvalMixture(2, ps, p[:])
			peak = math.Max(peak, math.Abs(vals[i]))
		}
		ox, oy := (m%cols)*(size+2), (m/cols)*(size+2)
		for i, v := range vals {
			t := 0.0
			if peak > 0 {
				t = math.Sqrt(math.Abs(v) / peak)
			}
			c := color.RGBA{0, 0, 0, 255}
			if v > 0 {
				c.R, c.G = uint8(255*t), uint8(80*t)
			} else {
				c.B, c.G = uint8(255*t), uint8(80*t)
			}
			img.SetRGBA(ox+i%size, oy+i/size, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return err
	}
	return atomicfile.Write(path, buf.Bytes())
}

// render3D draws n 3D test inputs spread evenly over the test set (ModelNet
// splits are sorted by class), each from three views, with the projected
// density of shapes.RenderPNG.
func render3D(path string, s *dataset.Inputs, n, size int) error {
	per := s.Layout.N * s.Layout.Stride()
	var mixes [][]float32
	var titles []string
	for k := range n {
		i := k * s.Len() / n
		mixes = append(mixes, s.Mixtures[i*per:(i+1)*per])
		titles = append(titles, fmt.Sprintf("test %d, class %d", i, s.Labels[i]))
	}
	views := []shapes.View{shapes.DefaultView, {Azimuth: 2.1, Elevation: 0.5}, {Azimuth: 0, Elevation: 1.5}}
	png, err := shapes.RenderPNG(mixes, titles, size, views)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, png); err != nil {
		return err
	}
	fmt.Printf("wrote %s (3D kernels are not drawn)\n", path)
	return nil
}
