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
	"github.com/gmcn-go/gmcn/internal/ply"
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

// maxComponents bounds the component count a header may declare.
const maxComponents = 1 << 30

// ReadPLY reads one mixture in the reference's ASCII PLY format (2D or 3D,
// see the package comment) and returns its components with the weights as
// stored; whether those are amplitudes or integrals depends on the file (see
// LoadPLY). Every component must be finite with a symmetric positive-definite
// covariance. Errors name the offending line.
func ReadPLY(r io.Reader) ([]Gaussian, error) {
	br := bufio.NewReader(r)
	ph, err := ply.ReadHeader(br, maxComponents)
	if e, ok := err.(*ply.Error); ok {
		return nil, errors.Errorf("ply: line %d: %s", e.Line, e.Msg)
	}
	if err != nil {
		return nil, errors.Wrap(err, "ply")
	}
	h, err := mixtureHeader(ph)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	line := ph.Lines
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
		return nil, fail("unexpected %q after the %d components the header declares", ply.Truncate(s), h.n)
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

// mixtureHeader checks that a PLY header is one of a mixture file (ASCII,
// one element "component" of float or double properties, each a known one
// at most once) and resolves it.
func mixtureHeader(ph ply.Header) (plyHeader, error) {
	var h plyHeader
	fail := func(line int, format string, args ...any) error {
		return errors.Errorf("ply: line %d: %s", line, fmt.Sprintf(format, args...))
	}
	if ph.Format != "ascii" {
		return h, fail(ph.FormatLine, `format %q; a mixture file is "format ascii 1.0"`, ph.Format)
	}
	if len(ph.Elements) == 0 {
		return h, fail(ph.Lines, `no element; a mixture file holds "element component <N>"`)
	}
	e := ph.Elements[0]
	switch {
	case e.Name != "component":
		return h, fail(e.Line, `element %q; a mixture file holds "element component <N>"`, ply.Truncate(e.Name))
	case len(ph.Elements) > 1:
		return h, fail(ph.Elements[1].Line, `a second element %q; a mixture file holds only "component"`, ply.Truncate(ph.Elements[1].Name))
	case e.Count < 1:
		return h, fail(e.Line, "component count %d, want at least 1", e.Count)
	}
	h.n = e.Count
	seen := map[string]bool{}
	for _, p := range e.Props {
		switch {
		case p.List:
			return h, fail(p.Line, "property %q is a list; a mixture's properties are float or double scalars", ply.Truncate(p.Name))
		case p.Type.Kind != 'f':
			return h, fail(p.Line, "property %q has an integer type; only float and double are supported", ply.Truncate(p.Name))
		}
		if _, ok := plyProperties[p.Name]; !ok {
			return h, fail(p.Line, "unknown property %q", ply.Truncate(p.Name))
		}
		if seen[p.Name] {
			return h, fail(p.Line, "property %q declared twice", p.Name)
		}
		seen[p.Name] = true
		h.names = append(h.names, p.Name)
	}
	return h, h.resolve(seen, func(format string, args ...any) error { return fail(ph.Lines, format, args...) })
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
