package mixture

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/gmcn-go/gmcn/internal/atomicfile"
	"github.com/pkg/errors"
)

// The reference stores one mixture per ASCII PLY file:
//
//	ply
//	format ascii 1.0
//	element component N
//	property float x
//	property float y
//	property float z
//	property float covxx
//	property float covxy
//	property float covxz
//	property float covyy
//	property float covyz
//	property float covzz
//	property float weight
//	end_header
//
// followed by one component per line, the values separated by whitespace in
// the order of the properties. The reference writes 3D mixtures only; this
// package also reads and writes 2D mixtures, whose properties are
// x y covxx covxy covyy weight. Properties are matched by name, so any order
// is accepted; the lower triangle of Σ is filled from the upper one.
//
// The file name says what the weight column holds: "*.gma.ply" amplitudes
// (the peak value α of the un-normalised Gaussian), "*.gmm.ply" priors, i.e.
// integrals of normalised Gaussians, which is what every gmcn op works with.

// plySlot says where a PLY property goes in a packed Gaussian of dimension d:
// packed index for 3D and for 2D (−1 where the property has no 2D meaning).
type plySlot struct{ in3D, in2D int }

var plyProperties = map[string]plySlot{
	"weight": {0, 0},
	"x":      {1, 1}, "y": {2, 2}, "z": {3, -1},
	"covxx": {4, 3}, "covxy": {5, 4}, "covxz": {6, -1},
	"covyy": {8, 6}, "covyz": {9, -1}, "covzz": {12, -1},
}

// plyOrder lists the properties in the order the reference writes them.
var plyOrder = map[int][]string{
	2: {"x", "y", "covxx", "covxy", "covyy", "weight"},
	3: {"x", "y", "z", "covxx", "covxy", "covxz", "covyy", "covyz", "covzz", "weight"},
}

// plyMirror lists the (upper, lower) packed covariance index pairs whose
// lower entry is filled from the upper one, per dimension.
var plyMirror = map[int][][2]int{
	2: {{4, 5}},
	3: {{5, 7}, {6, 10}, {9, 11}},
}

// maxPreallocate bounds the capacity reserved from a header's component
// count, so that a lying header cannot make ReadPLY allocate much memory.
const maxPreallocate = 1 << 16

// ReadPLY reads one mixture in the reference's ASCII PLY format (2D or 3D,
// see the package comment) and returns its components with the weights as
// stored; whether those are amplitudes or integrals depends on the file (see
// LoadPLY). Every component must be finite with a symmetric positive-definite
// covariance. Errors name the offending line.
func ReadPLY(r io.Reader) ([]Gaussian, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	line := 0
	next := func() (string, bool) {
		for sc.Scan() {
			line++
			if s := strings.TrimSpace(sc.Text()); s != "" {
				return s, true
			}
		}
		return "", false
	}
	fail := func(format string, args ...any) error {
		return errors.Errorf("ply: line %d: %s", line, fmt.Sprintf(format, args...))
	}
	h, err := readPLYHeader(next, fail)
	if serr := sc.Err(); serr != nil {
		return nil, errors.Wrapf(serr, "ply: line %d", line+1)
	}
	if err != nil {
		return nil, err
	}
	d, cols := h.d, h.cols
	gs := make([]Gaussian, 0, min(h.n, maxPreallocate))
	g := make([]float64, PackedLen(d))
	for len(gs) < h.n {
		s, ok := next()
		if !ok {
			if err := sc.Err(); err != nil {
				return nil, errors.Wrapf(err, "ply: line %d", line+1)
			}
			return nil, errors.Errorf("ply: file ends after %d of %d components", len(gs), h.n)
		}
		f := strings.Fields(s)
		if len(f) != len(cols) {
			return nil, fail("expected %d values, got %d", len(cols), len(f))
		}
		for i, v := range f {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, fail("value %d (%s): %v", i+1, h.names[i], err)
			}
			g[cols[i]] = x
		}
		for _, m := range plyMirror[d] {
			g[m[1]] = g[m[0]]
		}
		if err := validateGaussian(g, d); err != nil {
			return nil, errors.Wrapf(err, "ply: line %d: component %d", line, len(gs))
		}
		gs = append(gs, Gaussian{
			Weight:     g[0],
			Position:   append([]float64(nil), g[1:1+d]...),
			Covariance: append([]float64(nil), g[1+d:]...),
		})
	}
	if s, ok := next(); ok {
		return nil, fail("unexpected %q after the %d components the header declares", truncate(s), h.n)
	}
	if err := sc.Err(); err != nil {
		return nil, errors.Wrapf(err, "ply: line %d", line+1)
	}
	return gs, nil
}

// plyHeader is what ReadPLY needs from a header: the component count, the
// dimension, and per data column its packed index and property name.
type plyHeader struct {
	n, d  int
	cols  []int
	names []string
}

func readPLYHeader(next func() (string, bool), fail func(string, ...any) error) (plyHeader, error) {
	var h plyHeader
	s, ok := next()
	if !ok || s != "ply" {
		return h, fail(`expected the magic line "ply", got %q`, truncate(s))
	}
	seen := map[string]bool{}
	format, element := false, false
	for {
		s, ok := next()
		if !ok {
			return h, fail("file ends inside the header (no end_header)")
		}
		f := strings.Fields(s)
		switch f[0] {
		case "comment", "obj_info":
		case "format":
			if len(f) != 3 || f[1] != "ascii" || f[2] != "1.0" {
				return h, fail(`expected "format ascii 1.0", got %q`, truncate(s))
			}
			format = true
		case "element":
			if element {
				return h, fail("a second element %q; a mixture file holds only \"component\"", truncate(s))
			}
			if len(f) != 3 || f[1] != "component" {
				return h, fail(`expected "element component <N>", got %q`, truncate(s))
			}
			n, err := strconv.Atoi(f[2])
			if err != nil || n < 1 {
				return h, fail("component count %q must be an integer ≥ 1", f[2])
			}
			h.n, element = n, true
		case "property":
			if !element {
				return h, fail("property before the element line")
			}
			if len(f) != 3 {
				return h, fail(`expected "property <float|double> <name>", got %q`, truncate(s))
			}
			switch f[1] {
			case "float", "float32", "double", "float64":
			default:
				return h, fail("property %q has type %q; only float and double are supported", f[2], f[1])
			}
			if _, ok := plyProperties[f[2]]; !ok {
				return h, fail("unknown property %q", truncate(f[2]))
			}
			if seen[f[2]] {
				return h, fail("property %q declared twice", f[2])
			}
			seen[f[2]] = true
			h.names = append(h.names, f[2])
		case "end_header":
			if !format || !element {
				return h, fail("end_header before the format and element lines")
			}
			return h, h.resolve(seen, fail)
		default:
			return h, fail("unexpected header line %q", truncate(s))
		}
	}
}

// resolve decides the dimension from the declared properties (3D if any
// z-property is present), checks that exactly that dimension's properties
// are there and maps every column to its packed index.
func (h *plyHeader) resolve(seen map[string]bool, fail func(string, ...any) error) error {
	h.d = 2
	for _, p := range []string{"z", "covxz", "covyz", "covzz"} {
		if seen[p] {
			h.d = 3
		}
	}
	want := plyOrder[h.d]
	for _, p := range want {
		if !seen[p] {
			return fail("%dD mixture (from its properties) lacks property %q", h.d, p)
		}
	}
	h.cols = make([]int, len(h.names))
	for i, p := range h.names {
		if h.d == 3 {
			h.cols[i] = plyProperties[p].in3D
		} else {
			h.cols[i] = plyProperties[p].in2D
		}
	}
	return nil
}

// truncate shortens s for error messages.
func truncate(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// WritePLY writes the components gs (all of one dimension, 2 or 3, at least
// one) in the reference's ASCII PLY format, weights as given. Values are
// written in the shortest form that reads back to the same float64. Every
// component must be finite with a symmetric positive-definite covariance, so
// that everything written can be read back.
func WritePLY(w io.Writer, gs []Gaussian) error {
	if len(gs) == 0 {
		return errors.New("ply: a mixture file needs at least one component")
	}
	d := gs[0].Dims()
	if d != 2 && d != 3 {
		return errors.Errorf("ply: component 0 has dimension %d, expected 2 or 3", d)
	}
	order := plyOrder[d]
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "ply\nformat ascii 1.0\nelement component %d\n", len(gs))
	for _, p := range order {
		fmt.Fprintf(bw, "property float %s\n", p)
	}
	bw.WriteString("end_header\n")
	g := make([]float64, PackedLen(d))
	var buf []byte
	for i, c := range gs {
		if c.Dims() != d || len(c.Covariance) != d*d {
			return errors.Errorf("ply: component %d has %d position and %d covariance values, component 0 has D = %d", i, c.Dims(), len(c.Covariance), d)
		}
		g[0] = c.Weight
		copy(g[1:], c.Position)
		copy(g[1+d:], c.Covariance)
		if err := validateGaussian(g, d); err != nil {
			return errors.Wrapf(err, "ply: component %d", i)
		}
		buf = buf[:0]
		for j, p := range order {
			if j > 0 {
				buf = append(buf, ' ')
			}
			slot := plyProperties[p].in2D
			if d == 3 {
				slot = plyProperties[p].in3D
			}
			buf = strconv.AppendFloat(buf, g[slot], 'g', -1, 64)
		}
		buf = append(buf, '\n')
		bw.Write(buf)
	}
	return errors.Wrap(bw.Flush(), "ply")
}

// plyAmplitudes reports whether path holds amplitudes (".gma.ply") or
// integrals (".gmm.ply"), and rejects other names.
func plyAmplitudes(path string) (bool, error) {
	switch {
	case strings.HasSuffix(path, ".gma.ply"):
		return true, nil
	case strings.HasSuffix(path, ".gmm.ply"):
		return false, nil
	}
	return false, errors.Errorf("ply: %q: the name must end in .gma.ply (amplitudes) or .gmm.ply (integrals)", path)
}

// convertWeights applies conv to the weights of gs in place through a packed
// [1, 1, N, ·] copy.
func convertWeights(gs []Gaussian, conv func([]float64, Layout)) error {
	l := Layout{B: 1, C: 1, N: len(gs), D: gs[0].Dims()}
	data, err := Pack[float64](l, gs)
	if err != nil {
		return err
	}
	conv(data, l)
	for i := range gs {
		gs[i].Weight = data[i*l.Stride()]
	}
	return nil
}

// LoadPLY reads the mixture file at path and returns its components with
// integral weights, converting from amplitudes for ".gma.ply" files; other
// names than *.gma.ply and *.gmm.ply are rejected.
func LoadPLY(path string) ([]Gaussian, error) {
	amp, err := plyAmplitudes(path)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, errors.Wrap(err, "ply")
	}
	defer f.Close()
	gs, err := ReadPLY(f)
	if err != nil {
		return nil, errors.Wrapf(err, "%s", path)
	}
	if amp {
		if err := convertWeights(gs, AmplitudesToIntegrals[float64]); err != nil {
			return nil, errors.Wrapf(err, "%s", path)
		}
	}
	return gs, nil
}

// SavePLY writes the components gs, whose weights are integrals, to path,
// converting them to amplitudes for ".gma.ply" files; gs is not modified.
// The file is written to a temporary file in the same directory and renamed
// into place, so a reader never sees a partial file and a failed write
// leaves an existing file untouched.
func SavePLY(path string, gs []Gaussian) (err error) {
	amp, err := plyAmplitudes(path)
	if err != nil {
		return err
	}
	if len(gs) == 0 {
		return errors.Errorf("ply: %s: a mixture file needs at least one component", path)
	}
	out := gs
	if amp {
		out = make([]Gaussian, len(gs))
		copy(out, gs)
		if err := convertWeights(out, IntegralsToAmplitudes[float64]); err != nil {
			return errors.Wrapf(err, "ply: %s", path)
		}
	}
	var buf bytes.Buffer
	if err := WritePLY(&buf, out); err != nil {
		return errors.Wrapf(err, "%s", path)
	}
	return errors.Wrap(atomicfile.Write(path, buf.Bytes()), "ply")
}
