package shapes

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/dataset"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

func TestGenerateModelNetLayout(t *testing.T) {
	dir := t.TempDir()
	if err := GenerateModelNet(dir, 2, 1, 9); err != nil {
		t.Fatal(err)
	}
	ds, err := OpenModelNet(dir, "modelnet10")
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(GeneratedClasses))
	if ds.Format != MeshLayout || !slices.Equal(ds.Classes(), want) || len(ds.train.paths) != 20 || len(ds.test.paths) != 10 {
		t.Fatalf("format %v, classes %v, %d/%d shapes; want off, %v, 20/10", ds.Format, ds.Classes(), len(ds.train.paths), len(ds.test.paths), want)
	}
	for i, p := range ds.test.paths {
		if c := ds.Classes()[ds.test.labels[i]]; filepath.Base(p) != c+"_0003.off" {
			t.Errorf("test shape %s labelled %s", p, c)
		}
	}
	// Same seed, same bytes; the classes differ from each other.
	again := t.TempDir()
	if err := GenerateModelNet(again, 2, 1, 9); err != nil {
		t.Fatal(err)
	}
	for _, p := range ds.train.paths {
		a, _ := os.ReadFile(p)
		b, err := os.ReadFile(filepath.Join(again, must(filepath.Rel(dir, p))))
		if err != nil || !bytes.Equal(a, b) {
			t.Fatalf("%s differs between two runs with the same seed (%v)", p, err)
		}
	}
	for _, p := range ds.train.paths {
		m, err := LoadMesh(p)
		if err != nil {
			t.Fatal(err)
		}
		checkMesh(t, m)
		if _, err := NewSampler(m); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
}

// TestOpenModelNetPLY checks that a ModelNet-layout folder of PLY meshes,
// mixed with OFF ones, is read with every mesh in its class and split.
func TestOpenModelNetPLY(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "cone", "train", "cone_0001.ply"), plyASCIIText())
	writeFile(t, filepath.Join(root, "cone", "test", "cone_0002.PLY"), plyASCIIText())
	writeFile(t, filepath.Join(root, "tetra", "test", "notes.txt"), "not a mesh")
	os.MkdirAll(filepath.Join(root, "tetra", "train"), 0o755)
	if err := WriteOFF(filepath.Join(root, "tetra", "train", "tetra_0001.off"), plyTetra); err != nil {
		t.Fatal(err)
	}
	ds, err := OpenModelNet(root, "modelnet10")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ds.Classes(), []string{"cone", "tetra"}) || len(ds.train.paths) != 2 || len(ds.test.paths) != 1 ||
		!slices.Equal(ds.train.labels, []int{0, 1}) || filepath.Base(ds.test.paths[0]) != "cone_0002.PLY" {
		t.Fatalf("classes %v, train %v %v, test %v", ds.Classes(), ds.train.paths, ds.train.labels, ds.test.paths)
	}
	for _, p := range append(ds.Train().(*ShapeSet).Paths(), ds.test.paths...) {
		m, err := LoadMesh(p)
		if err != nil {
			t.Fatal(err)
		}
		checkMesh(t, m)
	}
}

// TestGenerateModelNetRefusesNonEmpty checks that shapes are never written
// among the files of an earlier run or of anything else.
func TestGenerateModelNetRefusesNonEmpty(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "chair", "train", "old.off"), "OFF\n0 0 0\n")
	err := GenerateModelNet(dir, 1, 1, 1)
	if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("err %v: want a not-empty error naming %s", err, dir)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d entries in %s after the refusal, want the 1 that was there", len(entries), dir)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// Two draws of one class differ, and unknown classes are errors.
func TestGenerateShapeVariation(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for c := range GeneratedClasses {
		a, err := GenerateShape(c, rng)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := GenerateShape(c, rng)
		if slices.Equal(a.Vertices, b.Vertices) {
			t.Errorf("class %s: two draws are identical", GeneratedClasses[c])
		}
	}
	if _, err := GenerateShape(len(GeneratedClasses), rng); err == nil {
		t.Error("GenerateShape accepted an unknown class")
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// resampledFixture writes a tiny modelnet40_normal_resampled copy with a
// class whose name contains '_' (as night_stand does).
func resampledFixture(t *testing.T) string {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(13, 14))
	writeFile(t, filepath.Join(dir, "modelnet10_shape_names.txt"), "night_stand\nchair\n")
	writeFile(t, filepath.Join(dir, "modelnet10_train.txt"), "chair_0001\nnight_stand_0001\nchair_0002\n")
	writeFile(t, filepath.Join(dir, "modelnet10_test.txt"), "night_stand_0002\n")
	for _, id := range []string{"chair_0001", "chair_0002", "night_stand_0001", "night_stand_0002"} {
		var b strings.Builder
		for range 200 {
			fmt.Fprintf(&b, "%f,%f,%f,0,0,1\n", rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64())
		}
		class := id[:strings.LastIndexByte(id, '_')]
		writeFile(t, filepath.Join(dir, class, id+".txt"), b.String())
	}
	return dir
}

func TestOpenModelNetResampled(t *testing.T) {
	dir := resampledFixture(t)
	ds, err := OpenModelNet(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if ds.Format != ResampledLayout || ds.Name() != "modelnet10" || !slices.Equal(ds.Classes(), []string{"night_stand", "chair"}) {
		t.Fatalf("got %v %s %v", ds.Format, ds.Name(), ds.Classes())
	}
	if !slices.Equal(ds.train.labels, []int{1, 0, 1}) || !slices.Equal(ds.test.labels, []int{0}) ||
		ds.test.paths[0] != filepath.Join(dir, "night_stand", "night_stand_0002.txt") {
		t.Errorf("train labels %v, test %v %v", ds.train.labels, ds.test.labels, ds.test.paths)
	}
	cfg := dataset.DefaultFitConfig(3)
	cfg.K, cfg.Points = 8, 100
	mix, l, err := FitShapes(ds.train.paths, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := mixture.Validate(mix, l); err != nil {
		t.Fatal(err)
	}
}

func TestOpenModelNetErrors(t *testing.T) {
	bad := resampledFixture(t)
	writeFile(t, filepath.Join(bad, "modelnet10_test.txt"), "sofa_0001\n")
	badLine := resampledFixture(t)
	writeFile(t, filepath.Join(badLine, "modelnet10_train.txt"), "chair_0001\nchair 0002\n")
	noTest := t.TempDir()
	writeFile(t, filepath.Join(noTest, "chair", "train", "chair_0001.off"), "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n")
	for _, tc := range []struct{ name, root, want string }{
		{"missing", filepath.Join(t.TempDir(), "nope"), "no such file"},
		{"empty", t.TempDir(), "has neither class folders"},
		{"unknown class", bad, "modelnet10_test.txt:1: shape id \"sofa_0001\""},
		{"bad line", badLine, "modelnet10_train.txt:2: \"chair 0002\" is not a single name"},
		{"no test split", noTest, "1 training and 0 test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := OpenModelNet(tc.root, "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	// A corrupt shape file fails the fit with an error naming file and line.
	ds, err := OpenModelNet(resampledFixture(t), "")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, ds.test.paths[0], "1,2,3\n4,x,6\n")
	cfg := dataset.DefaultFitConfig(3)
	cfg.K = 4
	if _, _, err := FitShapes(ds.test.paths, cfg, nil); err == nil || !strings.Contains(err.Error(), ds.test.paths[0]+":2:") {
		t.Errorf("error %v, want it to name %s:2", err, ds.test.paths[0])
	}
}

// TestLoadModelNetCache runs ModelNet through dataset.Loader: fit and
// cache, reuse (also from a copy of the data in another folder), a limited
// split that fits its shapes exactly as the whole split does, and refits with
// a reason for a corrupt cache and for changed data.
func TestLoadModelNetCache(t *testing.T) {
	root, cache := t.TempDir(), t.TempDir()
	if err := GenerateModelNet(root, 2, 1, 3); err != nil {
		t.Fatal(err)
	}
	cfg := dataset.DefaultFitConfig(3)
	cfg.K, cfg.Points = 8, 300
	var log bytes.Buffer
	loader := dataset.Loader{Dir: cache, Log: &log}
	load := func(root string, limit int) (tr, te *dataset.Inputs) {
		t.Helper()
		ds, err := OpenModelNet(root, "modelnet10")
		if err != nil {
			t.Fatal(err)
		}
		if tr, te, err = loader.Load(ds, cfg, limit, limit, false); err != nil {
			t.Fatal(err)
		}
		return tr, te
	}
	tr, te := load(root, 0)
	if tr.Layout != dataset.FitLayout(20, 8, 3) || te.Layout != dataset.FitLayout(10, 8, 3) || tr.Classes != 10 || len(te.Labels) != 10 {
		t.Fatalf("layouts %v %v, %d classes", tr.Layout, te.Layout, tr.Classes)
	}
	if c := strings.Count(log.String(), "wrote input cache"); c != 2 {
		t.Errorf("log %q: want two caches written", log.String())
	}
	// Second load, and a load of a copy in another folder: from the cache,
	// identical.
	moved := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.CopyFS(moved, os.DirFS(root)); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{root, moved} {
		log.Reset()
		tr2, _ := load(r, 0)
		if log.Len() != 0 || !slices.Equal(tr.Mixtures, tr2.Mixtures) || !slices.Equal(tr.Labels, tr2.Labels) {
			t.Errorf("load from %s: log %q, equal %v", r, log.String(), slices.Equal(tr.Mixtures, tr2.Mixtures))
		}
	}
	// A limited split takes every other shape and fits each exactly as the
	// whole split did.
	lim, _ := load(root, 10)
	per := 8 * 13
	for i := range 10 {
		if !slices.Equal(lim.Mixtures[i*per:(i+1)*per], tr.Mixtures[2*i*per:(2*i+1)*per]) || lim.Labels[i] != tr.Labels[2*i] {
			t.Fatalf("limited split: shape %d differs from shape %d of the whole split", i, 2*i)
		}
	}
	// Corruption and changed data are refitted with a reason.
	ds, err := OpenModelNet(root, "modelnet10")
	if err != nil {
		t.Fatal(err)
	}
	file, err := loader.File(ds.Train(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(file)
	data[len(data)/2] ^= 1
	os.WriteFile(file, data, 0o644)
	log.Reset()
	load(root, 0)
	if !strings.Contains(log.String(), "checksum mismatch") {
		t.Errorf("log %q: want the checksum reason", log.String())
	}
	mesh := filepath.Join(root, "box", "test", "box_0003.off")
	data, _ = os.ReadFile(mesh)
	os.WriteFile(mesh, append(data, '\n'), 0o644)
	log.Reset()
	load(root, 0)
	if !strings.Contains(log.String(), "no input cache") || !strings.Contains(log.String(), "fitting 10 samples of modelnet10/test") {
		t.Errorf("log %q: changed data must be fitted into a cache file of its own", log.String())
	}
	// The original data still has its cache: two --data folders of one
	// data set name do not refit each other's caches in turn.
	os.WriteFile(mesh, data, 0o644)
	log.Reset()
	load(root, 0)
	if strings.Contains(log.String(), "fitting") {
		t.Errorf("log %q: the original data's cache must be reused", log.String())
	}
}

// TestOld3DCacheReported checks that a cache file of the 3D format older
// gmcn versions wrote is named in the log as no longer read.
func TestOld3DCacheReported(t *testing.T) {
	root, cache := t.TempDir(), t.TempDir()
	if err := GenerateModelNet(root, 1, 1, 3); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(cache, "modelnet10-train-fps-K8-p300-s1.gmcn3d")
	writeFile(t, old, "GMCN3DF\x00")
	ds, err := OpenModelNet(root, "modelnet10")
	if err != nil {
		t.Fatal(err)
	}
	cfg := dataset.DefaultFitConfig(3)
	cfg.K, cfg.Points = 8, 300
	var log bytes.Buffer
	if _, _, err := (dataset.Loader{Dir: cache, Log: &log}).Load(ds, cfg, 0, 0, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), old+" is an input cache of an older gmcn version") {
		t.Errorf("log %q does not report %s", log.String(), old)
	}
}

func TestRenderDensity(t *testing.T) {
	// One Gaussian at the origin, long along x (σ = 2), thin along y and z.
	g := []float32{1, 0, 0, 0, 4, 0, 0, 0, 0.04, 0, 0, 0, 0.04}
	img, err := RenderDensity(g, 41, View{})
	if err != nil {
		t.Fatal(err)
	}
	// View{} looks along y: x is horizontal, z vertical. The centre is the
	// brightest pixel; the horizontal profile is wider than the vertical.
	red := func(x, y int) uint8 { return img.RGBAAt(x, y).R }
	if c := img.RGBAAt(20, 20); c.R != 255 || c.G != 255 || c.B != 255 {
		t.Errorf("centre %v, want white", c)
	}
	if red(30, 20) <= red(20, 30) {
		t.Errorf("horizontal %d ≤ vertical %d: the x axis is not horizontal", red(30, 20), red(20, 30))
	}
	// Turned by 90°, the long axis points along the line of sight.
	img2, _ := RenderDensity(g, 41, View{Azimuth: math.Pi / 2})
	if img2.RGBAAt(30, 20).R > red(30, 20) {
		t.Error("turning by 90° did not shorten the horizontal profile")
	}
	for _, bad := range [][]float32{nil, g[:12], {1, 0, 0, 0, -1, 0, 0, 0, 1, 0, 0, 0, 1}} {
		if _, err := RenderDensity(bad, 41, View{}); err == nil {
			t.Errorf("RenderDensity accepted %v", bad)
		}
	}
	if png, err := RenderPNG([][]float32{g}, []string{"g"}, 32, []View{DefaultView, {}}); err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("RenderPNG: %v", err)
	}
}
