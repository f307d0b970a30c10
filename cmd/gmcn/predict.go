package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gmcn-go/gmcn/dataset/mnist"
	"github.com/gmcn-go/gmcn/predict"
)

const predictSynopsis = `Classifies image, IDX or shape files with a trained run and prints, per input, the top
classes with their probabilities.

2D runs (MNIST, Fashion-MNIST) read PNG, JPEG and GIF images and IDX image files
(*-ubyte, *.idx, optionally .gz; every image, or the one --index names). An image is
turned into grey levels and resized to 28×28; the models expect what MNIST holds: a
white (bright) digit or garment on black, centred, filling about the middle 20×20 pixels.
Give --invert for dark-on-light images such as scans. 3D runs read OFF and PLY meshes and
XYZ/TXT point clouds. Every input is fitted with the run's own input fitting (run.json).`

// predictCmd runs `gmcn predict`, writing the predictions to stdout.
func predictCmd(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("predict", flag.ContinueOnError)
	run := fs.String("run", "", "run directory with run.json and checkpoint.gmcn (required)")
	top := fs.Int("top", 3, "classes to print per input, most probable first (≥ 1)")
	invert := fs.Bool("invert", false, "invert image grey levels (for dark digits on a light background)")
	index := fs.Int("index", -1, "IDX files: classify only the image with this index (from 0); -1 = all")
	files, help, err := parseCommand(fs, "predict", "[flags] FILE…", predictSynopsis, args, stdout)
	if err != nil || help {
		return err
	}
	switch {
	case *run == "":
		return errors.New("predict: --run DIR is required: the directory of a trained run")
	case *top < 1:
		return fmt.Errorf("predict: --top %d: want at least 1", *top)
	case *index < -1:
		return fmt.Errorf("predict: --index %d: want an image index ≥ 0, or -1 for all", *index)
	case len(files) == 0:
		return errors.New("predict: no input files; give images, IDX files or shapes after the flags")
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("predict: input file %s: %w", f, errors.Unwrap(err))
		}
	}
	p, err := predict.LoadRun(*run)
	if err != nil {
		return err
	}
	defer p.Close()
	if p.ClassesErr != nil {
		fmt.Fprintf(os.Stderr, "gmcn: class names unavailable (%v); printing class numbers\n", p.ClassesErr)
	}
	names, mix, err := fitFiles(p, files, *invert, *index)
	if err != nil {
		return err
	}
	probs, err := p.Predict(mix, p.InputLayout(len(names)))
	if err != nil {
		return err
	}
	for i, pr := range probs {
		var parts []string
		for _, c := range predict.Top(pr, *top) {
			parts = append(parts, fmt.Sprintf("%s (%.2f%%)", p.Classes[c], 100*pr[c]))
		}
		fmt.Fprintf(stdout, "%s: %s\n", names[i], strings.Join(parts, ", "))
	}
	return nil
}

// fitFiles reads and fits the input files for the run of p and returns a
// name per input ("file" or "file[index]") and the packed mixtures.
func fitFiles(p *predict.Predictor, files []string, invert bool, index int) ([]string, []float32, error) {
	if p.Setup.Model.D == 3 {
		if index >= 0 {
			return nil, nil, errors.New("predict: --index applies to IDX image files; the run classifies 3D shapes")
		}
		for _, f := range files {
			if k := fileKind(f); k != "shape" {
				return nil, nil, fmt.Errorf("predict: %s: the run classifies 3D shapes (.off, .ply, .xyz, .txt), not %s files", f, k)
			}
		}
		mix, _, err := p.FitShapes(files)
		return files, mix, err
	}
	im := mnist.Images{Rows: mnist.ImageRows, Cols: mnist.ImageCols}
	var names []string
	var streams []uint64
	idxFiles := 0
	for _, f := range files {
		switch fileKind(f) {
		case "image":
			pix, err := predict.LoadImage(f, invert)
			if err != nil {
				return nil, nil, err
			}
			im.Pixels = append(im.Pixels, pix...)
			names, streams = append(names, f), append(streams, 0)
		case "idx":
			idxFiles++
			all, err := predict.LoadIDXImages(f)
			if err != nil {
				return nil, nil, err
			}
			first, last := 0, all.N-1
			if index >= 0 {
				if index >= all.N {
					return nil, nil, fmt.Errorf("predict: --index %d: %s has %d images (0 to %d)", index, f, all.N, all.N-1)
				}
				first, last = index, index
			}
			for i := first; i <= last; i++ {
				im.Pixels = append(im.Pixels, all.Image(i)...)
				// Image i gets the random stream it has in training.
				names, streams = append(names, fmt.Sprintf("%s[%d]", f, i)), append(streams, uint64(i))
			}
		case "shape":
			return nil, nil, fmt.Errorf("predict: %s: the run classifies 2D images (%s), not 3D shapes", f, p.Setup.Dataset)
		default:
			return nil, nil, fmt.Errorf("predict: %s: unknown file type; want .png, .jpg, .gif, an IDX file (*-ubyte, *.idx), or for 3D runs .off, .ply, .xyz, .txt", f)
		}
	}
	if index >= 0 && idxFiles == 0 {
		return nil, nil, errors.New("predict: --index applies to IDX image files, and none was given")
	}
	im.N = len(names)
	mix, _, err := p.FitImages(im, streams)
	return names, mix, err
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

// parseCommand parses args with fs (flag.ContinueOnError) and returns the
// arguments after the flags, rejecting any that look like a flag: the flag
// package stops at the first file, so a flag after a file would otherwise
// be taken for a file. With -h or --help it prints the command's usage to
// stdout and reports help.
func parseCommand(fs *flag.FlagSet, name, form, synopsis string, args []string, stdout io.Writer) (rest []string, help bool, err error) {
	fs.SetOutput(io.Discard)
	err = fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(stdout, "Usage: gmcn %s %s\n\n%s\n\nFlags:\n", name, form, synopsis)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return nil, true, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("%s: %v (see gmcn %s --help)", name, err, name)
	}
	for _, a := range fs.Args() {
		if strings.HasPrefix(a, "-") {
			return nil, false, fmt.Errorf("%s: %q after the files: put every flag before the first file", name, a)
		}
	}
	return fs.Args(), false, nil
}
