package shapes

import (
	"bufio"
	"bytes"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gmcn-go/gmcn/internal/ply"
	"github.com/pkg/errors"
)

// Mesh is an indexed triangle mesh: Vertices holds x y z per vertex and
// Triangles three vertex indices per triangle.
type Mesh struct {
	Vertices  []float64
	Triangles []int32
}

// NumVertices returns the number of vertices of m.
func (m *Mesh) NumVertices() int { return len(m.Vertices) / 3 }

// NumTriangles returns the number of triangles of m.
func (m *Mesh) NumTriangles() int { return len(m.Triangles) / 3 }

// Limits on what a file header may declare. They keep a corrupt or hostile
// header from making a reader allocate gigabytes: capacity is reserved for at
// most maxPrealloc items and grows only with data actually read.
const (
	maxElements   = 1 << 26
	maxPolygon    = 1 << 16
	maxPrealloc   = 1 << 16
	maxLineLength = 1 << 20
)

// LoadMesh reads the mesh file at path, choosing the reader by extension:
// .off (OFF, COFF, NOFF, CNOFF) or .ply (ASCII or binary).
func LoadMesh(path string) (*Mesh, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errors.Wrap(err, "mesh")
	}
	defer f.Close()
	switch strings.ToLower(filepath.Ext(path)) {
	case ".off":
		return ReadOFF(f, path)
	case ".ply":
		return ReadPLY(f, path)
	}
	return nil, errors.Errorf("mesh %s: unknown extension %q, want .off or .ply", path, filepath.Ext(path))
}

// lineReader yields the non-blank lines of r with comments (from '#' to the
// end of the line) removed, counting lines for error messages.
type lineReader struct {
	sc   *bufio.Scanner
	name string
	line int
}

func newLineReader(r io.Reader, name string) *lineReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLineLength)
	return &lineReader{sc: sc, name: name}
}

// scan returns the fields of the next non-empty line, or nil at the end of
// the input.
func (lr *lineReader) scan() ([]string, error) {
	for lr.sc.Scan() {
		lr.line++
		text := lr.sc.Bytes()
		if i := bytes.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		if f := strings.Fields(string(text)); len(f) > 0 {
			return f, nil
		}
	}
	if err := lr.sc.Err(); err != nil {
		return nil, lr.errorf("reading after this line: %v", err)
	}
	return nil, nil
}

// next is scan for input that must go on: at the end of the input it returns
// an error that says what was expected.
func (lr *lineReader) next(want string) ([]string, error) {
	f, err := lr.scan()
	if err == nil && f == nil {
		err = errors.Errorf("%s: unexpected end of file after line %d, want %s", lr.name, lr.line, want)
	}
	return f, err
}

func (lr *lineReader) errorf(format string, args ...any) error {
	return errors.Errorf("%s:%d: "+format, append([]any{lr.name, lr.line}, args...)...)
}

// parseCoords parses the first three fields as finite coordinates.
func parseCoords(f []string, dst []float64) error {
	if len(f) < 3 {
		return errors.Errorf("%d values, want at least x y z", len(f))
	}
	for j := range 3 {
		v, err := strconv.ParseFloat(f[j], 64)
		if err != nil {
			return errors.Errorf("coordinate %d: %q is not a number", j, f[j])
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return errors.Errorf("coordinate %d is %v, want a finite number", j, v)
		}
		dst[j] = v
	}
	return nil
}

// appendPolygon fan-triangulates the polygon idx (already range-checked)
// onto tris: (0,1,2), (0,2,3), …, which is exact for the convex polygons
// mesh files hold.
func appendPolygon(tris []int32, idx []int32) []int32 {
	for j := 1; j+1 < len(idx); j++ {
		tris = append(tris, idx[0], idx[j], idx[j+1])
	}
	return tris
}

// ReadOFF reads an ASCII OFF mesh; name is used in errors only. The header
// keyword may be OFF, COFF, NOFF or CNOFF (colours and normals after the
// coordinates are ignored, as are face colours after the indices), and, as in
// some ModelNet files, the counts may follow the keyword on the same line
// ("OFF490 518 0"). Comments start with '#'. Polygons are fan-triangulated.
// Errors name the file and line.
func ReadOFF(r io.Reader, name string) (*Mesh, error) {
	lr := newLineReader(r, name)
	f, err := lr.next("the OFF header")
	if err != nil {
		return nil, err
	}
	key := f[0]
	rest := f[1:]
	if i := strings.Index(key, "OFF"); i >= 0 && len(key) > i+3 {
		rest = append([]string{key[i+3:]}, rest...)
		key = key[:i+3]
	}
	switch key {
	case "OFF", "COFF", "NOFF", "CNOFF":
	default:
		return nil, lr.errorf("header %q, want OFF, COFF, NOFF or CNOFF", ply.Truncate(f[0]))
	}
	if len(rest) == 0 {
		if rest, err = lr.next("the vertex and face counts"); err != nil {
			return nil, err
		}
	}
	if len(rest) < 2 {
		return nil, lr.errorf("counts line has %d values, want vertices faces [edges]", len(rest))
	}
	nv, err := ply.ParseCount(rest[0], "vertex", maxElements)
	if err != nil {
		return nil, lr.errorf("%v", err)
	}
	nf, err := ply.ParseCount(rest[1], "face", maxElements)
	if err != nil {
		return nil, lr.errorf("%v", err)
	}
	if nv == 0 {
		return nil, lr.errorf("the mesh has no vertices")
	}
	m := &Mesh{Vertices: make([]float64, 0, 3*min(nv, maxPrealloc)), Triangles: make([]int32, 0, 3*min(nf, maxPrealloc))}
	var xyz [3]float64
	for i := range nv {
		if f, err = lr.next("vertex " + strconv.Itoa(i)); err != nil {
			return nil, err
		}
		if err := parseCoords(f, xyz[:]); err != nil {
			return nil, lr.errorf("vertex %d: %v", i, err)
		}
		m.Vertices = append(m.Vertices, xyz[:]...)
	}
	idx := make([]int32, 0, 16)
	for i := range nf {
		if f, err = lr.next("face " + strconv.Itoa(i)); err != nil {
			return nil, err
		}
		n, err := strconv.Atoi(f[0])
		switch {
		case err != nil:
			return nil, lr.errorf("face %d: vertex count %q is not an integer", i, ply.Truncate(f[0]))
		case n < 3 || n > maxPolygon:
			return nil, lr.errorf("face %d has %d vertices, want 3 to %d", i, n, maxPolygon)
		case len(f) < 1+n:
			return nil, lr.errorf("face %d: %d indices for %d vertices", i, len(f)-1, n)
		}
		idx = idx[:0]
		for _, s := range f[1 : 1+n] {
			v, err := strconv.Atoi(s)
			if err != nil || v < 0 || v >= nv {
				return nil, lr.errorf("face %d: vertex index %q, want an integer in [0, %d)", i, ply.Truncate(s), nv)
			}
			idx = append(idx, int32(v))
		}
		m.Triangles = appendPolygon(m.Triangles, idx)
	}
	return m, nil
}
