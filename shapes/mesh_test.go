package shapes

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
)

func TestReadOFF(t *testing.T) {
	tests := []struct {
		name, text  string
		verts, tris int
	}{
		{"plain", "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n", 3, 1},
		{"comments and blank lines", "# c\nOFF # header\n\n4 1 0\n0 0 0\n1 0 0\n1 1 0\n0 1 0 # v3\n4 0 1 2 3\n", 4, 2},
		{"COFF with colours", "COFF\n3 1 0\n0 0 0 255 0 0 255\n1 0 0 0 255 0 255\n0 1 0 0 0 255 255\n3 0 1 2 1 1 1\n", 3, 1},
		{"ModelNet glued counts", "OFF3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n", 3, 1},
		{"counts on header line", "OFF 3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n", 3, 1},
		{"no faces", "OFF\n2 0 0\n0 0 0\n1 0 0\n", 2, 0},
		{"CRLF", "OFF\r\n3 1 0\r\n0 0 0\r\n1 0 0\r\n0 1 0\r\n3 0 1 2\r\n", 3, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ReadOFF(strings.NewReader(tc.text), "x.off")
			if err != nil {
				t.Fatal(err)
			}
			if m.NumVertices() != tc.verts || m.NumTriangles() != tc.tris {
				t.Errorf("%d vertices, %d triangles, want %d, %d", m.NumVertices(), m.NumTriangles(), tc.verts, tc.tris)
			}
		})
	}
	m, _ := ReadOFF(strings.NewReader(tests[1].text), "x.off")
	if want := []int32{0, 1, 2, 0, 2, 3}; fmt.Sprint(m.Triangles) != fmt.Sprint(want) {
		t.Errorf("quad triangulated as %v, want %v", m.Triangles, want)
	}
	if m.Vertices[6] != 1 || m.Vertices[7] != 1 {
		t.Errorf("vertex 2 = %v, want (1, 1, 0)", m.Vertices[6:9])
	}
}

func TestReadOFFMalformed(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"empty", "", "bad.off: unexpected end of file after line 0"},
		{"bad header", "PLY\n", "bad.off:1: header"},
		{"missing counts", "OFF\n", "bad.off: unexpected end of file after line 1, want the vertex"},
		{"short counts", "OFF\n3\n", "bad.off:2: counts line has 1 values"},
		{"negative count", "OFF\n-3 1 0\n", "bad.off:2: vertex count -3"},
		{"huge count", "OFF\n999999999999 1 0\n", "bad.off:2: vertex count"},
		{"no vertices", "OFF\n0 0 0\n", "bad.off:2: the mesh has no vertices"},
		{"short vertex", "OFF\n2 0 0\n0 0 0\n1 0\n", "bad.off:4: vertex 1: 2 values"},
		{"nan vertex", "OFF\n1 0 0\nnan 0 0\n", "bad.off:3: vertex 0: coordinate 0 is NaN"},
		{"text vertex", "OFF\n1 0 0\n0 x 0\n", "bad.off:3: vertex 0: coordinate 1"},
		{"truncated vertices", "OFF\n3 1 0\n0 0 0\n", "want vertex 1"},
		{"index out of range", "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 3\n", "bad.off:6: face 0: vertex index \"3\""},
		{"negative index", "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 -1 2\n", "bad.off:6: face 0: vertex index \"-1\""},
		{"two-vertex face", "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n2 0 1\n", "bad.off:6: face 0 has 2 vertices"},
		{"missing indices", "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1\n", "bad.off:6: face 0: 2 indices for 3 vertices"},
		{"truncated faces", "OFF\n3 2 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n", "want face 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadOFF(strings.NewReader(tc.text), "bad.off")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// plyTetra is a tetrahedron with extra properties and an extra element, to
// check that unknown data is skipped in both encodings.
var plyTetra = &Mesh{
	Vertices:  []float64{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1},
	Triangles: []int32{0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3},
}

const plyTetraHeader = "ply\nformat %s 1.0\ncomment test\nelement vertex 4\nproperty uchar red\nproperty double x\nproperty float y\n" +
	"property float z\nproperty list uchar short junk\nelement face 4\nproperty list uchar int vertex_indices\nproperty float quality\n" +
	"element edge 1\nproperty int a\nproperty int b\nend_header\n"

func plyASCIIText() string {
	var b strings.Builder
	fmt.Fprintf(&b, plyTetraHeader, "ascii")
	for i := range 4 {
		v := plyTetra.Vertices[3*i:]
		fmt.Fprintf(&b, "7 %g %g %g 2 -1 5\n", v[0], v[1], v[2])
	}
	for i := range 4 {
		f := plyTetra.Triangles[3*i:]
		fmt.Fprintf(&b, "3 %d %d %d 0.5\n", f[0], f[1], f[2])
	}
	b.WriteString("0 1\n")
	return b.String()
}

func plyBinaryData(order binary.ByteOrder, name string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, plyTetraHeader, name)
	w := func(v any) { binary.Write(&b, order, v) }
	for i := range 4 {
		v := plyTetra.Vertices[3*i:]
		w(uint8(7))
		w(v[0])
		w(float32(v[1]))
		w(float32(v[2]))
		w(uint8(2))
		w(int16(-1))
		w(int16(5))
	}
	for i := range 4 {
		f := plyTetra.Triangles[3*i:]
		w(uint8(3))
		w(f[0])
		w(f[1])
		w(f[2])
		w(float32(0.5))
	}
	w(int32(0))
	w(int32(1))
	return b.Bytes()
}

func TestReadPLY(t *testing.T) {
	inputs := map[string][]byte{
		"ascii":                []byte(plyASCIIText()),
		"binary_little_endian": plyBinaryData(binary.LittleEndian, "binary_little_endian"),
		"binary_big_endian":    plyBinaryData(binary.BigEndian, "binary_big_endian"),
	}
	for name, data := range inputs {
		t.Run(name, func(t *testing.T) {
			m, err := ReadPLY(bytes.NewReader(data), "t.ply")
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(m.Vertices) != fmt.Sprint(plyTetra.Vertices) || fmt.Sprint(m.Triangles) != fmt.Sprint(plyTetra.Triangles) {
				t.Errorf("got %v %v, want %v %v", m.Vertices, m.Triangles, plyTetra.Vertices, plyTetra.Triangles)
			}
		})
	}
}

func TestReadPLYMalformed(t *testing.T) {
	ascii := plyASCIIText()
	bin := plyBinaryData(binary.LittleEndian, "binary_little_endian")
	headerLen := bytes.Index(bin, []byte("end_header\n")) + len("end_header\n")
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"not ply", []byte("off\n"), "bad.ply:1: first line"},
		{"no end_header", []byte("ply\nformat ascii 1.0\n"), "bad.ply:3: unexpected end of file in the header"},
		{"bad format", []byte("ply\nformat binary 2.0\nend_header\n"), "bad.ply:2: format line"},
		{"unknown type", []byte("ply\nformat ascii 1.0\nelement vertex 1\nproperty quad x\nend_header\n"), "bad.ply:4: property \"x\": unknown type"},
		{"property first", []byte("ply\nformat ascii 1.0\nproperty float x\nend_header\n"), "bad.ply:3: property before any element"},
		{"no xyz", []byte("ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nend_header\n0\n"), "the vertex element lacks"},
		{"huge count", []byte("ply\nformat ascii 1.0\nelement vertex 99999999999\nend_header\n"), "bad.ply:3: element vertex count"},
		{"ascii bad value", []byte(strings.Replace(ascii, "7 1 0 0", "7 1 zz 0", 1)), "bad.ply:18: value \"zz\""},
		{"ascii uchar overflow", []byte(strings.Replace(ascii, "7 1 0 0", "300 1 0 0", 1)), "bad.ply:18: value \"300\""},
		{"ascii extra value", []byte(strings.Replace(ascii, "3 0 2 1 0.5", "3 0 2 1 0.5 9", 1)), "bad.ply:21: 1 values left over"},
		{"ascii index range", []byte(strings.Replace(ascii, "3 0 2 1 0.5", "3 0 2 4 0.5", 1)), "bad.ply:21: face 0: vertex index 4"},
		{"ascii truncated", []byte(ascii[:strings.Index(ascii, "3 0 2 1")]), "unexpected end of file after line 20"},
		{"binary truncated", bin[:headerLen+10], fmt.Sprintf("bad.ply: byte offset %d: unexpected end of file", headerLen+9)},
		{"binary nan", func() []byte {
			b := bytes.Clone(bin)
			binary.LittleEndian.PutUint64(b[headerLen+1:], math.Float64bits(math.NaN()))
			return b
		}(), "vertex 0: coordinate 0 is NaN"},
		{"binary list too long", func() []byte {
			b := bytes.Clone(bin)
			face0 := headerLen + 4*(1+8+4+4+1+4)
			b[face0] = 2
			return b
		}(), "face 0 has 2 vertices"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadPLY(bytes.NewReader(tc.data), "bad.ply")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestReadXYZ(t *testing.T) {
	tests := []struct {
		name, text string
		limit      int
		want       []float32
	}{
		{"pointnet", "0.1,0.2,0.3,0,0,1\n-1,2,3,1,0,0\n", 0, []float32{0.1, 0.2, 0.3, -1, 2, 3}},
		{"spaces", "1 2 3\n4 5 6\n\n", 0, []float32{1, 2, 3, 4, 5, 6}},
		{"comma space", "1, 2, 3\n4, 5, 6\n", 0, []float32{1, 2, 3, 4, 5, 6}},
		{"limit", "1 2 3\n4 5 6\n7 8 9\n", 2, []float32{1, 2, 3, 4, 5, 6}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadXYZ(strings.NewReader(tc.text), "p.txt", tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	bad := []struct{ name, text, want string }{
		{"empty", "", "p.txt: no points"},
		{"two columns", "1,2\n", "p.txt:1: point 0: 2 values"},
		{"ragged", "1,2,3,4,5,6\n1,2,3\n", "p.txt:2: 3 columns, the first line has 6"},
		{"text", "1,2,3\n1,b,3\n", "p.txt:2: point 1: coordinate 1"},
		{"inf", "1,2,inf\n", "p.txt:1: point 0: coordinate 2 is +Inf"},
		{"float32 overflow", "1,2,1e300\n", "p.txt:1: point 0: coordinate 1e+300 overflows float32"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadXYZ(strings.NewReader(tc.text), "p.txt", 0)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// checkMesh fails if m breaks the reader's guarantees.
func checkMesh(t *testing.T, m *Mesh) {
	t.Helper()
	if len(m.Vertices)%3 != 0 || len(m.Triangles)%3 != 0 || m.NumVertices() == 0 {
		t.Fatalf("mesh of %d coordinates and %d indices", len(m.Vertices), len(m.Triangles))
	}
	for _, v := range m.Vertices {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("non-finite coordinate %v", v)
		}
	}
	for _, i := range m.Triangles {
		if i < 0 || int(i) >= m.NumVertices() {
			t.Fatalf("index %d out of [0, %d)", i, m.NumVertices())
		}
	}
}

// readFailed reports whether a reader refused its input, failing t unless
// the error names the file the input came from.
func readFailed(t *testing.T, err error, file string) bool {
	t.Helper()
	if err != nil && !strings.Contains(err.Error(), file) {
		t.Fatalf("error %v does not name the file", err)
	}
	return err != nil
}

// fuzzMeshReader fuzzes read, which must refuse an input with an error
// naming the file or return a mesh that checkMesh accepts.
func fuzzMeshReader(f *testing.F, file string, read func(r io.Reader, name string) (*Mesh, error)) {
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := read(bytes.NewReader(data), file)
		if readFailed(t, err, file) {
			return
		}
		checkMesh(t, m)
	})
}

func FuzzReadOFF(f *testing.F) {
	f.Add([]byte("OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n"))
	f.Add([]byte("OFF3 1 0\n0 0 0\n1 0 0\n0 1 0\n4 0 1 2 0\n"))
	f.Add([]byte("COFF\n3 1 0\n0 0 0 1 1 1 1\n1 0 0 1 1 1 1\n0 1 0 1 1 1 1\n3 0 1 2 1 1 1\n"))
	f.Add([]byte("OFF\n1 0 0\nnan 0 0\n"))
	fuzzMeshReader(f, "fuzz.off", ReadOFF)
}

func FuzzReadPLY(f *testing.F) {
	f.Add([]byte(plyASCIIText()))
	f.Add(plyBinaryData(binary.LittleEndian, "binary_little_endian"))
	f.Add(plyBinaryData(binary.BigEndian, "binary_big_endian"))
	f.Add([]byte("ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nproperty float z\nend_header\n1 2 3\n"))
	fuzzMeshReader(f, "fuzz.ply", ReadPLY)
}

func FuzzReadXYZ(f *testing.F) {
	f.Add([]byte("0.1,0.2,0.3,0,0,1\n-1,2,3,1,0,0\n"), 0)
	f.Add([]byte("1 2 3\n4 5 6\n"), 1)
	f.Add([]byte("1,2\n"), 0)
	f.Fuzz(func(t *testing.T, data []byte, limit int) {
		pts, err := ReadXYZ(bytes.NewReader(data), "fuzz.xyz", limit)
		if readFailed(t, err, "fuzz.xyz") {
			return
		}
		if len(pts) == 0 || len(pts)%3 != 0 || (limit > 0 && len(pts) > 3*limit) {
			t.Fatalf("%d values with limit %d", len(pts), limit)
		}
		for _, v := range pts {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("non-finite value %v", v)
			}
		}
	})
}
