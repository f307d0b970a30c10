package shapes

import (
	"bufio"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gmcn-go/gmcn/internal/ply"
	"github.com/pkg/errors"

	"github.com/gmcn-go/gmcn/dataset"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// Format is the directory layout of a ModelNet copy.
type Format int

const (
	// MeshLayout is the original ModelNet10/40 layout:
	// ROOT/<class>/{train,test}/*.off; classes are the sorted directory
	// names. PLY meshes (*.ply) are read too, for copies converted to PLY.
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

// ModelNet is a ModelNet copy on disk: its root, its layout, class names
// and the train and test splits. It implements dataset.Dataset.
type ModelNet struct {
	Root        string
	Format      Format
	name        string
	classes     []string
	train, test ShapeSet
}

// Name returns the name of the data set ("modelnet10", "modelnet40").
func (ds *ModelNet) Name() string { return ds.name }

// Dim returns 3: shapes are fitted with 3D mixtures.
func (ds *ModelNet) Dim() int { return 3 }

// Classes returns the class names; label i is Classes()[i].
func (ds *ModelNet) Classes() []string { return ds.classes }

// Train returns the training split.
func (ds *ModelNet) Train() dataset.Split { return &ds.train }

// Test returns the test split.
func (ds *ModelNet) Test() dataset.Split { return &ds.test }

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
	open := openMeshLayout
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(root, n+"_shape_names.txt")); err == nil {
			open, name = openResampled, n
			break
		}
	}
	if name == "" {
		name = strings.ToLower(filepath.Base(filepath.Clean(root)))
	}
	ds, err := open(root, name)
	if err != nil {
		return nil, err
	}
	ds.train.name, ds.test.name = name+"/train", name+"/test"
	return ds, nil
}

func openMeshLayout(root, name string) (*ModelNet, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, errors.Wrap(err, "modelnet")
	}
	ds := &ModelNet{Root: root, name: name, Format: MeshLayout}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, e.Name(), "train")); err != nil {
			continue
		}
		label := len(ds.classes)
		ds.classes = append(ds.classes, e.Name())
		for _, sp := range []struct {
			dir   string
			split *ShapeSet
		}{{"train", &ds.train}, {"test", &ds.test}} {
			files, err := meshFiles(filepath.Join(root, e.Name(), sp.dir))
			if err != nil {
				return nil, err
			}
			sp.split.paths = append(sp.split.paths, files...)
			for range files {
				sp.split.labels = append(sp.split.labels, label)
			}
		}
	}
	if len(ds.classes) == 0 {
		return nil, errors.Errorf("modelnet: %s has neither class folders <class>/train/*.off (ModelNet10/40) (or *.ply) nor modelnet10_shape_names.txt / modelnet40_shape_names.txt (modelnet40_normal_resampled)", root)
	}
	if len(ds.train.paths) == 0 || len(ds.test.paths) == 0 {
		return nil, errors.Errorf("modelnet: %s: %d training and %d test .off/.ply files in %d classes, want both splits non-empty",
			root, len(ds.train.paths), len(ds.test.paths), len(ds.classes))
	}
	return ds, nil
}

// meshFiles returns the sorted paths of the meshes (.off, .ply, any case)
// in dir; a missing dir has none.
func meshFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, errors.Wrap(err, "modelnet")
	}
	var files []string
	for _, e := range entries {
		switch strings.ToLower(filepath.Ext(e.Name())) {
		case ".off", ".ply":
			if !e.IsDir() {
				files = append(files, filepath.Join(dir, e.Name()))
			}
		}
	}
	slices.Sort(files)
	return files, nil
}

func openResampled(root, name string) (*ModelNet, error) {
	ds := &ModelNet{Root: root, name: name, Format: ResampledLayout}
	classes, err := readList(filepath.Join(root, name+"_shape_names.txt"))
	if err != nil {
		return nil, err
	}
	label := make(map[string]int, len(classes))
	for i, c := range classes {
		label[c] = i
	}
	ds.classes = classes
	for _, sp := range []struct {
		name  string
		split *ShapeSet
	}{{"train", &ds.train}, {"test", &ds.test}} {
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
				return nil, errors.Errorf("%s:%d: shape id %q does not start with a class of %s_shape_names.txt followed by _<number>", file, i+1, ply.Truncate(id), name)
			}
			sp.split.paths = append(sp.split.paths, filepath.Join(root, id[:cut], id+".txt"))
			sp.split.labels = append(sp.split.labels, l)
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
			return nil, errors.Errorf("%s:%d: %q is not a single name", path, line, ply.Truncate(s))
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
func LoadShape(path string, cfg dataset.FitConfig, rng *rand.Rand, dst []float32) ([]float32, error) {
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
// packed float32 in dataset.FitLayout(len(paths), cfg.K, 3). A nil progress
// is allowed.
func FitShapes(paths []string, cfg dataset.FitConfig, progress dataset.Progress) ([]float32, mixture.Layout, error) {
	return fitShapes(paths, nil, cfg, progress)
}

// FitShapesStreams is FitShapes with shape i fitted from the random stream
// PCG(cfg.Seed, streams[i]), as a data set's split fits its shape at
// position streams[i]; nil streams stand for 0, 1, ….
func FitShapesStreams(paths []string, streams []int, cfg dataset.FitConfig, progress dataset.Progress) ([]float32, mixture.Layout, error) {
	if streams != nil && len(streams) != len(paths) {
		return nil, mixture.Layout{}, errors.Errorf("shapes: %d streams for %d shapes", len(streams), len(paths))
	}
	return fitShapes(paths, streams, cfg, progress)
}

// fitShapes is FitShapes with shape i using the random stream
// PCG(cfg.Seed, ids[i]); nil ids stand for 0, 1, ….
func fitShapes(paths []string, ids []int, cfg dataset.FitConfig, progress dataset.Progress) ([]float32, mixture.Layout, error) {
	return fitEach(len(paths), cfg, progress, func(w *worker, i int) ([]float32, error) {
		id := i
		if ids != nil {
			id = ids[i]
		}
		rng := rand.New(rand.NewPCG(cfg.Seed, uint64(id)))
		pts, err := LoadShape(paths[i], cfg, rng, w.points)
		if err == nil && cap(pts) > cap(w.points) {
			w.points = pts
		}
		return pts, err
	})
}
