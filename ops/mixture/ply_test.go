package mixture

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
)

// plyRandom returns n random valid components of dimension d: standard
// normal weights, positions of standard deviation 10 and covariances
// 12·A·Aᵀ + 0.2·I (A uniform in [−½, ½), so 12·A·Aᵀ has the entry variance of
// a product of standard normal factors).
func plyRandom(rng *rand.Rand, n, d int) []Gaussian {
	gs := make([]Gaussian, n)
	for i := range gs {
		g := Gaussian{Weight: rng.NormFloat64(), Position: make([]float64, d), Covariance: make([]float64, d*d)}
		for j := range g.Position {
			g.Position[j] = 10 * rng.NormFloat64()
		}
		gmtest.SPD(g.Covariance, rng, d, 12, 0.2)
		gs[i] = g
	}
	return gs
}

func plyEqual(t *testing.T, got, want []Gaussian, tol float64, what string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d components, want %d", what, len(got), len(want))
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }
	for i := range want {
		g, w := got[i], want[i]
		ok := near(g.Weight, w.Weight) && len(g.Position) == len(w.Position) && len(g.Covariance) == len(w.Covariance)
		for j := range w.Position {
			ok = ok && near(g.Position[j], w.Position[j])
		}
		for j := range w.Covariance {
			ok = ok && near(g.Covariance[j], w.Covariance[j])
		}
		if !ok {
			t.Fatalf("%s: component %d is %+v, want %+v", what, i, g, w)
		}
	}
}

func TestPLYRoundTrip(t *testing.T) {
	for _, d := range []int{2, 3} {
		rng := rand.New(rand.NewPCG(61, uint64(d)))
		gs := plyRandom(rng, 17, d)
		var buf bytes.Buffer
		if err := WritePLY(&buf, gs); err != nil {
			t.Fatal(err)
		}
		got, err := ReadPLY(&buf)
		if err != nil {
			t.Fatalf("%dD: %v", d, err)
		}
		plyEqual(t, got, gs, 0, "write→read")
	}
}

// TestPLYReferenceHeader reads a file laid out exactly as the reference
// writes it and checks the header text WritePLY produces for 3D.
func TestPLYReferenceHeader(t *testing.T) {
	const file = "ply\nformat ascii 1.0\nelement component 2\n" +
		"property float x\nproperty float y\nproperty float z\n" +
		"property float covxx\nproperty float covxy\nproperty float covxz\n" +
		"property float covyy\nproperty float covyz\nproperty float covzz\n" +
		"property float weight\nend_header\n" +
		"1 2 3 2 0.5 0 1 0 3 0.25\n" +
		"-1\t0  0 1 0 0 1 0 1 7\r\n"
	gs, err := ReadPLY(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	want := []Gaussian{
		{Weight: 0.25, Position: []float64{1, 2, 3}, Covariance: []float64{2, 0.5, 0, 0.5, 1, 0, 0, 0, 3}},
		{Weight: 7, Position: []float64{-1, 0, 0}, Covariance: []float64{1, 0, 0, 0, 1, 0, 0, 0, 1}},
	}
	plyEqual(t, gs, want, 0, "reference file")
	var buf bytes.Buffer
	if err := WritePLY(&buf, want); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), file[:strings.Index(file, "end_header")+len("end_header\n")]) {
		t.Errorf("written header differs from the reference's:\n%s", buf.String())
	}
}

// TestPLYPropertyOrder reads a 2D file whose properties come in another
// order, with comments.
func TestPLYPropertyOrder(t *testing.T) {
	const file = "ply\nformat ascii 1.0\ncomment made by hand\nelement component 1\n" +
		"property double weight\nproperty float covyy\nproperty float y\nproperty float covxy\nproperty float x\nproperty float covxx\n" +
		"end_header\n0.5 9 2 1 1 4\n\n"
	gs, err := ReadPLY(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	plyEqual(t, gs, []Gaussian{{Weight: 0.5, Position: []float64{1, 2}, Covariance: []float64{4, 1, 1, 9}}}, 0, "reordered 2D")
}

func TestPLYMalformed(t *testing.T) {
	const head2 = "ply\nformat ascii 1.0\nelement component 1\nproperty float x\nproperty float y\nproperty float covxx\nproperty float covxy\nproperty float covyy\nproperty float weight\nend_header\n"
	cases := []struct {
		name, file, want string
	}{
		{"empty", "", "line 1: unexpected end of file in the header"},
		{"no magic", "plx\n", `line 1: first line "plx", want "ply"`},
		{"binary format", "ply\nformat binary_little_endian 1.0\nend_header\n", `line 2: format "binary_little_endian"; a mixture file is "format ascii 1.0"`},
		{"no end_header", "ply\nformat ascii 1.0\nelement component 1\nproperty float x\n", "no end_header"},
		{"other element", "ply\nformat ascii 1.0\nelement vertex 3\nend_header\n", `line 3: element "vertex"; a mixture file holds "element component <N>"`},
		{"two elements", "ply\nformat ascii 1.0\nelement component 1\nelement component 2\nend_header\n", "line 4: a second element"},
		{"zero components", "ply\nformat ascii 1.0\nelement component 0\nend_header\n", "line 3: component count 0, want at least 1"},
		{"negative count", "ply\nformat ascii 1.0\nelement component -5\n", "line 3: element component count -5, want 0 to"},
		{"huge count", "ply\nformat ascii 1.0\nelement component 99999999999999999999\n", `line 3: element component count "99999999999999999999" is not an integer`},
		{"property first", "ply\nformat ascii 1.0\nproperty float x\n", "line 3: property before any element"},
		{"list property", "ply\nformat ascii 1.0\nelement component 1\nproperty list uchar int x\nend_header\n", `line 4: property "x" is a list`},
		{"int property", "ply\nformat ascii 1.0\nelement component 1\nproperty int x\nend_header\n", `line 4: property "x" has an integer type`},
		{"unknown property", "ply\nformat ascii 1.0\nelement component 1\nproperty float nx\nend_header\n", `line 4: unknown property "nx"`},
		{"duplicate property", "ply\nformat ascii 1.0\nelement component 1\nproperty float x\nproperty float x\nend_header\n", `line 5: property "x" declared twice`},
		{"missing weight", "ply\nformat ascii 1.0\nelement component 1\nproperty float x\nproperty float y\nproperty float covxx\nproperty float covxy\nproperty float covyy\nend_header\n", `line 9: 2D mixture (from its properties) lacks property "weight"`},
		{"3D without covzz", strings.Replace(head2, "property float weight\n", "property float weight\nproperty float z\n", 1), `lacks property "covxz"`},
		{"end_header first", "ply\nend_header\n", "line 2: end_header without a format line"},
		{"junk in header", "ply\nformat ascii 1.0\nhello\n", `line 3: unknown header keyword "hello"`},
		{"too few values", head2 + "1 2 3 4\n", "line 11: expected 6 values, got 4"},
		{"too many values", head2 + "1 2 3 0 3 1 9\n", "line 11: expected 6 values, got 7"},
		{"not a number", head2 + "1 2 abc 0 1 1\n", "line 11: value 3 (covxx)"},
		{"NaN", head2 + "1 NaN 1 0 1 1\n", "line 11: component 0: non-finite"},
		{"Inf", head2 + "1 2 1 0 1 -Inf\n", "line 11: component 0: non-finite"},
		{"not positive definite", head2 + "0 0 1 2 1 1\n", "line 11: component 0: covariance"},
		{"missing component", head2, "file ends after 0 of 1 components"},
		{"extra component", head2 + "0 0 1 0 1 1\n0 0 1 0 1 1\n", "line 12: unexpected \"0 0 1 0 1 1\" after the 1 components"},
		{"line too long", "ply\ncomment " + strings.Repeat("x", 2<<20) + "\n", "line 2: header longer than 65536 bytes"},
		{"no element", "ply\nformat ascii 1.0\nend_header\n", `line 3: no element`},
		{"value line too long", head2 + strings.Repeat("1", 2<<20) + "\n", "line 11: bufio.Scanner: token too long"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadPLY(strings.NewReader(c.file))
			if err == nil {
				t.Fatalf("no error, want one mentioning %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "ply: ") {
				t.Errorf("error %q, want a ply error mentioning %q", err, c.want)
			}
		})
	}
}

func TestWritePLYRejects(t *testing.T) {
	good := Gaussian{Weight: 1, Position: []float64{0, 0}, Covariance: []float64{1, 0, 0, 1}}
	cases := []struct {
		name string
		gs   []Gaussian
		want string
	}{
		{"empty", nil, "at least one component"},
		{"1D", []Gaussian{{Weight: 1, Position: []float64{0}, Covariance: []float64{1}}}, "dimension 1"},
		{"mixed dimensions", []Gaussian{good, {Weight: 1, Position: []float64{0, 0, 0}, Covariance: make([]float64, 9)}}, "component 1 has 3 position"},
		{"NaN weight", []Gaussian{good, {Weight: math.NaN(), Position: []float64{0, 0}, Covariance: []float64{1, 0, 0, 1}}}, "component 1: non-finite"},
		{"not positive definite", []Gaussian{{Weight: 1, Position: []float64{0, 0}, Covariance: []float64{-1, 0, 0, 1}}}, "component 0: covariance"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := WritePLY(&bytes.Buffer{}, c.gs)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one mentioning %q", err, c.want)
			}
		})
	}
}

// TestPLYFiles checks the suffix conventions: a .gma.ply file holds
// amplitudes, LoadPLY returns integrals either way, and the saved file is
// complete with no temporary file left behind.
func TestPLYFiles(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(62, 0))
	gs := plyRandom(rng, 5, 3)
	orig := gs[0].Weight
	for _, name := range []string{"a.gma.ply", "a.gmm.ply"} {
		path := filepath.Join(dir, name)
		if err := SavePLY(path, gs); err != nil {
			t.Fatal(err)
		}
		if gs[0].Weight != orig {
			t.Fatal("SavePLY modified its input")
		}
		got, err := LoadPLY(path)
		if err != nil {
			t.Fatal(err)
		}
		plyEqual(t, got, gs, 1e-12, name+" save→load")
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := ReadPLY(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		// The stored weight is the amplitude w / sqrt((2π)³ det Σ) for .gma.ply.
		want := gs[0].Weight
		if name == "a.gma.ply" {
			want /= math.Sqrt(math.Pow(2*math.Pi, 3) * Det(gs[0].Covariance, 3))
		}
		if math.Abs(raw[0].Weight-want) > 1e-12*math.Abs(want) {
			t.Errorf("%s stores weight %g, want %g", name, raw[0].Weight, want)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Errorf("directory holds %d entries, want the 2 saved files", len(entries))
	}
	path := filepath.Join(dir, "a.gmm.ply")
	before, _ := os.ReadFile(path)
	bad := []Gaussian{{Weight: 1, Position: []float64{0, 0, 0}, Covariance: make([]float64, 9)}}
	if err := SavePLY(path, bad); err == nil {
		t.Error("SavePLY accepted a singular covariance")
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("a failed SavePLY changed the existing file")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("a failed SavePLY left %d entries, want 2", len(entries))
	}
	for _, name := range []string{"a.ply", "a.gmm.txt"} {
		if err := SavePLY(filepath.Join(dir, name), gs); err == nil || !strings.Contains(err.Error(), ".gma.ply") {
			t.Errorf("SavePLY(%q): error %v, want the suffix rule", name, err)
		}
		if _, err := LoadPLY(filepath.Join(dir, name)); err == nil || !strings.Contains(err.Error(), ".gmm.ply") {
			t.Errorf("LoadPLY(%q): error %v, want the suffix rule", name, err)
		}
	}
	if _, err := LoadPLY(filepath.Join(dir, "missing.gmm.ply")); err == nil {
		t.Error("LoadPLY of a missing file gave no error")
	}
}

// FuzzReadPLY checks that ReadPLY never panics and that whatever it accepts
// survives a write→read round trip unchanged.
func FuzzReadPLY(f *testing.F) {
	var b2, b3 bytes.Buffer
	WritePLY(&b2, plyRandom(rand.New(rand.NewPCG(63, 2)), 3, 2))
	WritePLY(&b3, plyRandom(rand.New(rand.NewPCG(63, 3)), 3, 3))
	f.Add(b2.String())
	f.Add(b3.String())
	f.Add("ply\nformat ascii 1.0\nelement component 1\nproperty float weight\nproperty float covyy\nproperty float y\nproperty float covxy\nproperty float x\nproperty float covxx\nend_header\n0.5 9 2 1 1 4\n")
	f.Add("ply\nformat ascii 1.0\nelement component 2\nproperty float x\nend_header\n")
	f.Add("ply\nformat ascii 1.0\nelement component 1000000000\nproperty float x\nproperty float y\nproperty float covxx\nproperty float covxy\nproperty float covyy\nproperty float weight\nend_header\n0 0 1 0 1 1\n")
	f.Add("ply\n")
	f.Fuzz(func(t *testing.T, s string) {
		gs, err := ReadPLY(strings.NewReader(s))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := WritePLY(&buf, gs); err != nil {
			t.Fatalf("accepted components cannot be written: %v", err)
		}
		again, err := ReadPLY(&buf)
		if err != nil {
			t.Fatalf("written file cannot be read: %v", err)
		}
		plyEqual(t, again, gs, 0, "fuzz round trip")
	})
}
