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
	"sync/atomic"
	"testing"

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
	if ds.Format != MeshLayout || !slices.Equal(ds.Classes, want) || len(ds.Train.Paths) != 20 || len(ds.Test.Paths) != 10 {
		t.Fatalf("format %v, classes %v, %d/%d shapes; want off, %v, 20/10", ds.Format, ds.Classes, len(ds.Train.Paths), len(ds.Test.Paths), want)
	}
	for i, p := range ds.Test.Paths {
		if c := ds.Classes[ds.Test.Labels[i]]; filepath.Base(p) != c+"_0003.off" {
			t.Errorf("test shape %s labelled %s", p, c)
		}
	}
	// Same seed, same bytes; the classes differ from each other.
	again := t.TempDir()
	if err := GenerateModelNet(again, 2, 1, 9); err != nil {
		t.Fatal(err)
	}
	for _, p := range ds.Train.Paths {
		a, _ := os.ReadFile(p)
		b, err := os.ReadFile(filepath.Join(again, must(filepath.Rel(dir, p))))
		if err != nil || !bytes.Equal(a, b) {
			t.Fatalf("%s differs between two runs with the same seed (%v)", p, err)
		}
	}
	for _, p := range ds.Train.Paths {
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
	if ds.Format != ResampledLayout || ds.Name != "modelnet10" || !slices.Equal(ds.Classes, []string{"night_stand", "chair"}) {
		t.Fatalf("got %v %s %v", ds.Format, ds.Name, ds.Classes)
	}
	if !slices.Equal(ds.Train.Labels, []int{1, 0, 1}) || !slices.Equal(ds.Test.Labels, []int{0}) ||
		ds.Test.Paths[0] != filepath.Join(dir, "night_stand", "night_stand_0002.txt") {
		t.Errorf("train labels %v, test %v %v", ds.Train.Labels, ds.Test.Labels, ds.Test.Paths)
	}
	cfg := DefaultFitConfig()
	cfg.K, cfg.Points = 8, 100
	mix, l, err := FitShapes(ds.Train.Paths, cfg, nil)
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
	writeFile(t, ds.Test.Paths[0], "1,2,3\n4,x,6\n")
	cfg := DefaultFitConfig()
	cfg.K = 4
	if _, _, err := FitShapes(ds.Test.Paths, cfg, nil); err == nil || !strings.Contains(err.Error(), ds.Test.Paths[0]+":2:") {
		t.Errorf("error %v, want it to name %s:2", err, ds.Test.Paths[0])
	}
}

// countProgress counts what a Progress receives; Add is called from the
// fitting workers concurrently.
type countProgress struct {
	n        atomic.Int64
	finished int
}

func (c *countProgress) Add(n int) { c.n.Add(int64(n)) }
func (c *countProgress) Finish()   { c.finished++ }

func TestLoadModelNetCache(t *testing.T) {
	root, cache := t.TempDir(), t.TempDir()
	if err := GenerateModelNet(root, 2, 1, 3); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultFitConfig()
	cfg.K, cfg.Points = 8, 300
	var log bytes.Buffer
	var bars []*countProgress
	newBar := func(string, int) Progress { b := &countProgress{}; bars = append(bars, b); return b }
	tr, te, err := LoadModelNet(root, "modelnet10", cfg, cache, newBar, &log)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Layout != FitLayout(20, 8) || te.Layout != FitLayout(10, 8) || len(tr.Classes) != 10 || len(te.Labels) != 10 {
		t.Fatalf("layouts %v %v, %d classes", tr.Layout, te.Layout, len(tr.Classes))
	}
	if len(bars) != 2 || bars[0].n.Load() != 20 || bars[1].n.Load() != 10 || bars[0].finished != 1 {
		t.Errorf("progress bars %+v", bars)
	}
	if c := strings.Count(log.String(), "wrote input cache"); c != 2 {
		t.Errorf("log %q: want two caches written", log.String())
	}
	// Second load: from the cache, identical, no bar drawn.
	log.Reset()
	bars = nil
	tr2, _, err := LoadModelNet(root, "modelnet10", cfg, cache, newBar, &log)
	if err != nil {
		t.Fatal(err)
	}
	if log.Len() != 0 || len(bars) != 0 || !slices.Equal(tr.Mixtures, tr2.Mixtures) || !slices.Equal(tr.Labels, tr2.Labels) {
		t.Errorf("second load: log %q, %d bars, equal %v", log.String(), len(bars), slices.Equal(tr.Mixtures, tr2.Mixtures))
	}
	// Corruption and changed data are refitted with a reason.
	file := CacheFile(cache, &ModelNet{Name: "modelnet10"}, "train", cfg)
	data, _ := os.ReadFile(file)
	data[len(data)/2] ^= 1
	os.WriteFile(file, data, 0o644)
	log.Reset()
	if _, _, err := LoadModelNet(root, "modelnet10", cfg, cache, nil, &log); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "checksum mismatch") {
		t.Errorf("log %q: want the checksum reason", log.String())
	}
	os.Remove(filepath.Join(root, "box", "test", "box_0003.off"))
	log.Reset()
	if _, te3, err := LoadModelNet(root, "modelnet10", cfg, cache, nil, &log); err != nil || te3.Layout.B != 9 {
		t.Fatalf("after removing a shape: %v", err)
	}
	if !strings.Contains(log.String(), "other settings or data") {
		t.Errorf("log %q: want the settings reason", log.String())
	}
}

func TestDecodeCacheErrors(t *testing.T) {
	in := &Inputs{Layout: FitLayout(2, 1), Mixtures: make([]float32, 26), Labels: []int{0, 1}, Classes: []string{"a", "b"}}
	for i := range 2 {
		g := in.Mixtures[13*i:]
		g[0], g[4], g[8], g[12] = 0.5, 1, 1, 1
	}
	var buf bytes.Buffer
	if err := EncodeCache(&buf, "s", in); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	if s, got, err := DecodeCache(good); err != nil || s != "s" || !slices.Equal(got.Classes, in.Classes) || !slices.Equal(got.Mixtures, in.Mixtures) {
		t.Fatalf("round trip: %v", err)
	}
	flip := func(i int) []byte { b := bytes.Clone(good); b[i] ^= 0xff; return b }
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"short", good[:5], "truncated"},
		{"magic", flip(0), "bad magic"},
		{"version", flip(8), "format version"},
		{"hash", flip(12), "settings hash"},
		{"trailing", append(bytes.Clone(good), 0), "trailing"},
		{"checksum", flip(len(good) - 40), "checksum"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := DecodeCache(tc.data); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	in.Labels[1] = 2
	if err := EncodeCache(&buf, "s", in); err == nil {
		t.Error("EncodeCache accepted label 2 of 2 classes")
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
