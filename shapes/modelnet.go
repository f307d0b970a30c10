package shapes

import (
	"bufio"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pkg/errors"

	"github.com/gmcn-go/gmcn/ops/mixture"
)

// Format is the directory layout of a ModelNet copy.
type Format int

const (
	// MeshLayout is the original ModelNet10/40 layout:
	// ROOT/<class>/{train,test}/*.off; classes are the sorted directory
	// names.
	MeshLayout Format = iota
	// ResampledLayout is PointNet++'s modelnet40_normal_resampled:
	// ROOT/<name>_shape_names.txt (one class per line, in label order),
	// ROOT/<name>_{train,test}.txt (one shape id such as chair_0001 per
	// line) and ROOT/<class>/<id>.txt point clouds, where name is
	// modelnet10 or modelnet40.
	ResampledLayout
)

// String returns the name of f.
func (f Format) String() string {
	if f == MeshLayout {
		return "off"
	}
	return "resampled"
}

// Split is one part (train or test) of a data set: shape files and labels.
type Split struct {
	Paths  []string
	Labels []int
}

// ModelNet is a ModelNet copy on disk: its layout, class names (label i is
// Classes[i]) and the train and test splits.
type ModelNet struct {
	Root    string
	Name    string
	Format  Format
	Classes []string
	Train   Split
	Test    Split
}

// OpenModelNet lists the ModelNet copy at root, in either layout. name
// selects the variant of a resampled copy (modelnet10 or modelnet40; ""
// prefers modelnet40 when both are present); for the mesh layout it only
// names the data set ("" = the base name of root, lower-cased). Missing or
// malformed list files are errors naming the file and line; an empty split is
// an error.
func OpenModelNet(root, name string) (*ModelNet, error) {
	if st, err := os.Stat(root); err != nil {
		return nil, errors.Wrap(err, "modelnet")
	} else if !st.IsDir() {
		return nil, errors.Errorf("modelnet: %s is not a directory", root)
	}
	names := []string{name}
	if name == "" {
		names = []string{"modelnet40", "modelnet10"}
	}
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(root, n+"_shape_names.txt")); err == nil {
			return openResampled(root, n)
		}
	}
	if name == "" {
		name = strings.ToLower(filepath.Base(filepath.Clean(root)))
	}
	return openMeshLayout(root, name)
}

func openMeshLayout(root, name string) (*ModelNet, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, errors.Wrap(err, "modelnet")
	}
	ds := &ModelNet{Root: root, Name: name, Format: MeshLayout}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, e.Name(), "train")); err != nil {
			continue
		}
		label := len(ds.Classes)
		ds.Classes = append(ds.Classes, e.Name())
		for _, sp := range []struct {
			dir   string
			split *Split
		}{{"train", &ds.Train}, {"test", &ds.Test}} {
			files, err := filepath.Glob(filepath.Join(root, e.Name(), sp.dir, "*.off"))
			if err != nil {
				return nil, errors.Wrap(err, "modelnet")
			}
			slices.Sort(files)
			sp.split.Paths = append(sp.split.Paths, files...)
			for range files {
				sp.split.Labels = append(sp.split.Labels, label)
			}
		}
	}
	if len(ds.Classes) == 0 {
		return nil, errors.Errorf("modelnet: %s has neither class folders <class>/train/*.off (ModelNet10/40) nor modelnet10_shape_names.txt / modelnet40_shape_names.txt (modelnet40_normal_resampled)", root)
	}
	if len(ds.Train.Paths) == 0 || len(ds.Test.Paths) == 0 {
		return nil, errors.Errorf("modelnet: %s: %d training and %d test .off files in %d classes, want both splits non-empty",
			root, len(ds.Train.Paths), len(ds.Test.Paths), len(ds.Classes))
	}
	return ds, nil
}

func openResampled(root, name string) (*ModelNet, error) {
	ds := &ModelNet{Root: root, Name: name, Format: ResampledLayout}
	classes, err := readList(filepath.Join(root, name+"_shape_names.txt"))
	if err != nil {
		return nil, err
	}
	label := make(map[string]int, len(classes))
	for i, c := range classes {
		label[c] = i
	}
	ds.Classes = classes
	for _, sp := range []struct {
		name  string
		split *Split
	}{{"train", &ds.Train}, {"test", &ds.Test}} {
		file := filepath.Join(root, name+"_"+sp.name+".txt")
		ids, err := readList(file)
		if err != nil {
			return nil, err
		}
		for i, id := range ids {
			// Ids are <class>_<number>; class names may contain '_'
			// (night_stand, flower_pot), so split at the last one.
			cut := strings.LastIndexByte(id, '_')
			l, ok := label[id[:max(cut, 0)]]
			if cut < 0 || !ok {
				return nil, errors.Errorf("%s:%d: shape id %q does not start with a class of %s_shape_names.txt followed by _<number>", file, i+1, truncate(id), name)
			}
			sp.split.Paths = append(sp.split.Paths, filepath.Join(root, id[:cut], id+".txt"))
			sp.split.Labels = append(sp.split.Labels, l)
		}
		if len(ids) == 0 {
			return nil, errors.Errorf("modelnet: %s lists no shapes", file)
		}
	}
	return ds, nil
}

// readList returns the non-empty lines of a list file, trimmed; a line with
// inner white space is an error naming the file and line.
func readList(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errors.Wrap(err, "modelnet")
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var out []string
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		if strings.ContainsAny(s, " \t") {
			return nil, errors.Errorf("%s:%d: %q is not a single name", path, line, truncate(s))
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, errors.Wrapf(err, "modelnet: reading %s", path)
	}
	return out, nil
}

// LoadShape returns the point cloud of one shape file as the fitting sees
// it: a mesh (.off, .ply) sampled at cfg.Points surface points with rng, or
// the first cfg.Points points of an XYZ/TXT file (all if cfg.Points is 0).
// dst is reused for the points when it is large enough.
func LoadShape(path string, cfg FitConfig, rng *rand.Rand, dst []float32) ([]float32, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".txt", ".xyz":
		return LoadXYZ(path, cfg.Points)
	}
	if cfg.Points < 1 {
		return nil, errors.Errorf("shape %s: a mesh needs Points ≥ 1 surface samples", path)
	}
	m, err := LoadMesh(path)
	if err != nil {
		return nil, err
	}
	s, err := NewSampler(m)
	if err != nil {
		return nil, errors.Wrap(err, path)
	}
	return s.Sample(dst[:0], cfg.Points, rng), nil
}

// FitShapes loads every shape of paths (LoadShape, shape i with the random
// stream PCG(cfg.Seed, i)) and fits it with cfg, in parallel over all cores;
// only one point cloud per worker is in memory at a time. The result is
// packed float32 in FitLayout(len(paths), cfg.K). A nil progress is allowed.
func FitShapes(paths []string, cfg FitConfig, progress Progress) ([]float32, mixture.Layout, error) {
	return fitEach(len(paths), cfg, progress, func(w *worker, i int) ([]float32, error) {
		rng := rand.New(rand.NewPCG(cfg.Seed, uint64(i)))
		pts, err := LoadShape(paths[i], cfg, rng, w.points)
		if err == nil && cap(pts) > cap(w.points) {
			w.points = pts
		}
		return pts, err
	})
}
