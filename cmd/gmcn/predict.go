package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gmcn-go/gmcn/dataset/mnist"
	"github.com/gmcn-go/gmcn/predict"
)

// predictSynopsis is the help paragraph of gmcn predict.
const predictSynopsis = `Classifies image, IDX or shape files with a trained run and prints, per input, the top
classes with their probabilities.

2D runs (MNIST, Fashion-MNIST) read PNG, JPEG and GIF images and IDX image files
(*-ubyte, *.idx, optionally .gz; every image, or the one --index names). An image is
turned into grey levels and resized to 28×28; the models expect what MNIST holds: a
white (bright) digit or garment on black, centred, filling about the middle 20×20 pixels.
Give --invert for dark-on-light images such as scans. 3D runs read OFF and PLY meshes and
XYZ/TXT point clouds. Every input is fitted with the run's own input fitting (run.json).`

// predictCmd is `gmcn predict`.
type predictCmd struct {
	dir    runDirFlag
	top    int
	invert bool
	index  int
	files  []string
	dev    deviceFlag
	stdout io.Writer // nil: os.Stdout
	stderr io.Writer // nil: os.Stderr
}

func (c *predictCmd) flags(f *flagSet) {
	c.top, c.index = 3, -1
	f.group("Flags", func() {
		c.dir.register(f)
		intVar(f, &c.top, "top", 1, 1e6, "`N` classes to print per input, most probable first")
		f.BoolVar(&c.invert, "invert", false, "invert image grey levels (for dark digits on a light background)")
		intVar(f, &c.index, "index", -1, 1e9, "IDX files: classify only image `N` (from 0); -1 = all")
		c.dev.register(f)
	})
}

func (c *predictCmd) setOperands(files []string) { c.files = files }

func (c *predictCmd) check(given map[string]bool) error {
	if len(c.files) == 0 {
		return errors.New("no input files; give images, IDX files or shapes after the flags")
	}
	if err := c.dir.check(given); err != nil {
		return err
	}
	return c.dev.check()
}

func (c *predictCmd) run(context.Context) error {
	stdout := cmp.Or[io.Writer](c.stdout, os.Stdout)
	stderr := cmp.Or[io.Writer](c.stderr, os.Stderr)
	dev, err := c.dev.openTo(stderr)
	if err != nil {
		return err
	}
	p, err := predict.LoadRun(c.dir.run, dev)
	if err != nil {
		return err
	}
	defer p.Close()
	if p.ClassesErr != nil {
		fmt.Fprintf(stderr, "gmcn: class names unavailable (%v); printing class numbers\n", p.ClassesErr)
	}
	// A file that cannot be read or fitted is reported and skipped, so the
	// others are still classified; the command fails at the end.
	var bad []error
	skip := func(err error) {
		bad = append(bad, err)
		if len(c.files) > 1 {
			fmt.Fprintf(stderr, "gmcn predict: %v\n", err)
		}
	}
	names, mix, err := fitFiles(p, c.files, c.invert, c.index, skip, stderr)
	if err != nil {
		return err
	}
	if len(names) > 0 {
		probs, err := p.Predict(mix, p.InputLayout(len(names)))
		if err != nil {
			return err
		}
		for i, pr := range probs {
			var parts []string
			for _, k := range predict.Top(pr, c.top) {
				parts = append(parts, fmt.Sprintf("%s (%.2f%%)", p.Classes[k], 100*pr[k]))
			}
			fmt.Fprintf(stdout, "%s: %s\n", names[i], strings.Join(parts, ", "))
		}
	}
	switch {
	case len(bad) == 1 && len(c.files) == 1:
		return bad[0]
	case len(bad) > 0:
		return fmt.Errorf("%d of the %d input files could not be classified (above)", len(bad), len(c.files))
	}
	return nil
}

// fitFiles reads and fits the input files for the run of p and returns a
// name per input ("file" or "file[index]") and the packed mixtures. A file
// it cannot read or fit is passed to skip and left out; the error is for
// what no file can fix (--index without IDX files). A 2D image that looks
// dark on light while invert is off gets a warning on warn.
func fitFiles(p *predict.Predictor, files []string, invert bool, index int, skip func(error), warn io.Writer) ([]string, []float32, error) {
	if p.Setup.Model.D == 3 {
		return fitShapes(p, files, index, skip)
	}
	if index >= 0 && !slices.ContainsFunc(files, func(f string) bool { return fileKind(f) == "idx" }) {
		return nil, nil, errors.New("--index applies to IDX image files, and none was given")
	}
	im := mnist.Images{Rows: mnist.ImageRows, Cols: mnist.ImageCols}
	var names []string
	var streams []uint64
	for _, f := range files {
		if err := readable(f); err != nil {
			skip(err)
			continue
		}
		switch fileKind(f) {
		case "image":
			pix, err := predict.LoadImage(f, invert)
			if err != nil {
				skip(err)
				continue
			}
			if !invert && predict.LooksInverted(pix) {
				fmt.Fprintf(warn, "gmcn predict: %s looks dark on light (its border is bright); the models expect a light digit on black: try --invert\n", f)
			}
			im.Pixels = append(im.Pixels, pix...)
			names, streams = append(names, f), append(streams, 0)
		case "idx":
			all, err := predict.LoadIDXImages(f)
			if err != nil {
				skip(err)
				continue
			}
			first, last := 0, all.N-1
			if index >= 0 {
				if index >= all.N {
					skip(fmt.Errorf("--index %d: %s has %d images (0 to %d)", index, f, all.N, all.N-1))
					continue
				}
				first, last = index, index
			}
			for i := first; i <= last; i++ {
				im.Pixels = append(im.Pixels, all.Image(i)...)
				// Image i gets the random stream it has in training.
				names, streams = append(names, fmt.Sprintf("%s[%d]", f, i)), append(streams, uint64(i))
			}
		case "shape":
			skip(fmt.Errorf("%s: the run classifies 2D images (%s), not 3D shapes", f, p.Setup.Dataset))
		default:
			skip(unknownKind(f))
		}
	}
	if len(names) == 0 {
		return nil, nil, nil
	}
	im.N = len(names)
	mix, _, err := p.FitImages(im, streams)
	return names, mix, err
}

// fitShapes fits each 3D shape file on its own, so that one that cannot be
// read is skipped; a shape's fit does not depend on the other files.
func fitShapes(p *predict.Predictor, files []string, index int, skip func(error)) ([]string, []float32, error) {
	if index >= 0 {
		return nil, nil, errors.New("--index applies to IDX image files; the run classifies 3D shapes")
	}
	var names []string
	var mix []float32
	for _, f := range files {
		if err := readable(f); err != nil {
			skip(err)
			continue
		}
		if k := fileKind(f); k == "unknown" {
			skip(unknownKind(f))
			continue
		} else if k != "shape" {
			skip(fmt.Errorf("%s: the run classifies 3D shapes (.off, .ply, .xyz, .txt), not %s files", f, k))
			continue
		}
		m, _, err := p.FitShapes([]string{f})
		if err != nil {
			skip(err)
			continue
		}
		names, mix = append(names, f), append(mix, m...)
	}
	return names, mix, nil
}

// readable reports a missing or unreadable input file.
func readable(f string) error {
	if _, err := os.Stat(f); err != nil {
		return fmt.Errorf("input file %s: %w", f, errors.Unwrap(err))
	}
	return nil
}

// unknownKind is the error for a file whose name says no known type.
func unknownKind(f string) error {
	return fmt.Errorf("%s: unknown file type; want .png, .jpg, .gif, an IDX file (*-ubyte, *.idx), or for 3D runs .off, .ply, .xyz, .txt", f)
}

// fileKind classifies an input file by its name: "image", "idx", "shape"
// or "unknown".
func fileKind(path string) string {
	name := strings.TrimSuffix(strings.ToLower(filepath.Base(path)), ".gz")
	switch {
	case strings.HasSuffix(name, "-ubyte") || strings.HasSuffix(name, ".idx") || strings.HasSuffix(name, ".idx3"):
		return "idx"
	}
	switch filepath.Ext(name) {
	case ".png", ".jpg", ".jpeg", ".gif":
		return "image"
	case ".off", ".ply", ".xyz", ".txt":
		return "shape"
	}
	return "unknown"
}
