package shapes

import (
	"bufio"
	"encoding/binary"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/gmcn-go/gmcn/internal/ply"
	"github.com/pkg/errors"
)

// plyBody reads the values of one element item after the other, in ASCII or
// binary; errors carry the file and line (ASCII) or byte offset (binary).
type plyBody interface {
	begin() error
	value(t ply.Type) (float64, error)
	end() error
	errorf(format string, args ...any) error
}

// ReadPLY reads a PLY mesh (format ascii, binary_little_endian or
// binary_big_endian 1.0); name is used in errors only. The vertex element
// must have scalar x, y and z properties; the optional face element a list
// property vertex_indices (or vertex_index), whose polygons are
// fan-triangulated. Other properties and elements are read and ignored. A
// file without faces gives a mesh without triangles (a point set). Errors
// name the file and the line (ASCII) or byte offset (binary).
func ReadPLY(r io.Reader, name string) (*Mesh, error) {
	br := bufio.NewReader(r)
	h, err := ply.ReadHeader(br, maxElements)
	if e, ok := err.(*ply.Error); ok {
		return nil, errors.Errorf("%s:%d: %s", name, e.Line, e.Msg)
	}
	if err != nil {
		return nil, errors.Wrap(err, name)
	}
	var body plyBody
	switch h.Format {
	case "ascii":
		lr := newLineReader(br, name)
		lr.line = h.Lines
		body = &plyASCII{lr: lr}
	case "binary_little_endian":
		body = &plyBinary{r: br, name: name, offset: h.Bytes, order: binary.LittleEndian}
	case "binary_big_endian":
		body = &plyBinary{r: br, name: name, offset: h.Bytes, order: binary.BigEndian}
	}
	m := &Mesh{}
	nv := -1
	for _, e := range h.Elements {
		switch e.Name {
		case "vertex":
			if err := readPLYVertices(body, e, m); err != nil {
				return nil, err
			}
			nv = m.NumVertices()
		case "face":
			if nv < 0 {
				return nil, errors.Errorf("%s: the face element comes before the vertex element", name)
			}
			if err := readPLYFaces(body, e, m, nv); err != nil {
				return nil, err
			}
		default:
			for range e.Count {
				if err := skipPLYItem(body, e); err != nil {
					return nil, err
				}
			}
		}
	}
	if nv <= 0 {
		return nil, errors.Errorf("%s: no vertices (a PLY mesh needs a vertex element with at least one vertex)", name)
	}
	return m, nil
}

func readPLYVertices(body plyBody, e ply.Element, m *Mesh) error {
	slot := [3]int{-1, -1, -1}
	for i, p := range e.Props {
		if j := strings.Index("xyz", p.Name); len(p.Name) == 1 && j >= 0 {
			if p.List {
				return body.errorf("vertex property %s is a list, want a scalar", p.Name)
			}
			slot[j] = i
		}
	}
	if slot[0] < 0 || slot[1] < 0 || slot[2] < 0 {
		return body.errorf("the vertex element lacks one of the properties x, y, z")
	}
	m.Vertices = make([]float64, 0, 3*min(e.Count, maxPrealloc))
	var xyz [3]float64
	for i := range e.Count {
		if err := body.begin(); err != nil {
			return err
		}
		for pi, p := range e.Props {
			if err := readPLYProp(body, p, func(v float64) {
				for j, s := range slot {
					if s == pi {
						xyz[j] = v
					}
				}
			}); err != nil {
				return err
			}
		}
		if err := body.end(); err != nil {
			return err
		}
		for j, v := range xyz {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return body.errorf("vertex %d: coordinate %d is %v, want a finite number", i, j, v)
			}
		}
		m.Vertices = append(m.Vertices, xyz[:]...)
	}
	return nil
}

func readPLYFaces(body plyBody, e ply.Element, m *Mesh, nv int) error {
	list := -1
	for i, p := range e.Props {
		if p.List && (p.Name == "vertex_indices" || p.Name == "vertex_index") {
			list = i
		}
	}
	if list < 0 {
		return body.errorf("the face element has no list property vertex_indices")
	}
	if e.Props[list].Type.Kind == 'f' {
		return body.errorf("face indices of floating-point type, want an integer type")
	}
	m.Triangles = make([]int32, 0, 3*min(e.Count, maxPrealloc))
	idx := make([]int32, 0, 16)
	for i := range e.Count {
		if err := body.begin(); err != nil {
			return err
		}
		idx = idx[:0]
		bad := math.NaN()
		for pi, p := range e.Props {
			add := func(float64) {}
			if pi == list {
				add = func(v float64) {
					if v < 0 || v >= float64(nv) {
						bad = v
					}
					idx = append(idx, int32(v))
				}
			}
			if err := readPLYProp(body, p, add); err != nil {
				return err
			}
		}
		if err := body.end(); err != nil {
			return err
		}
		if !math.IsNaN(bad) {
			return body.errorf("face %d: vertex index %v, want 0 to %d", i, bad, nv-1)
		}
		if len(idx) < 3 {
			return body.errorf("face %d has %d vertices, want at least 3", i, len(idx))
		}
		m.Triangles = appendPolygon(m.Triangles, idx)
	}
	return nil
}

func skipPLYItem(body plyBody, e ply.Element) error {
	if err := body.begin(); err != nil {
		return err
	}
	for _, p := range e.Props {
		if err := readPLYProp(body, p, func(float64) {}); err != nil {
			return err
		}
	}
	return body.end()
}

// readPLYProp reads one property (a scalar, or a count and that many items)
// and passes every value to use.
func readPLYProp(body plyBody, p ply.Property, use func(float64)) error {
	if !p.List {
		v, err := body.value(p.Type)
		if err != nil {
			return err
		}
		use(v)
		return nil
	}
	c, err := body.value(p.Count)
	if err != nil {
		return err
	}
	if c < 0 || c > maxPolygon {
		return body.errorf("list %s of %v items, want 0 to %d", p.Name, c, maxPolygon)
	}
	for range int(c) {
		v, err := body.value(p.Type)
		if err != nil {
			return err
		}
		use(v)
	}
	return nil
}

// plyASCII reads one item per line.
type plyASCII struct {
	lr     *lineReader
	fields []string
}

func (a *plyASCII) begin() (err error) {
	a.fields, err = a.lr.next("a PLY element line")
	return err
}

func (a *plyASCII) value(t ply.Type) (float64, error) {
	if len(a.fields) == 0 {
		return 0, a.lr.errorf("too few values on the line")
	}
	s := a.fields[0]
	a.fields = a.fields[1:]
	var (
		v   float64
		err error
	)
	switch t.Kind {
	case 'i':
		var n int64
		n, err = strconv.ParseInt(s, 10, 8*t.Size)
		v = float64(n)
	case 'u':
		var n uint64
		n, err = strconv.ParseUint(s, 10, 8*t.Size)
		v = float64(n)
	default:
		v, err = strconv.ParseFloat(s, 8*t.Size)
	}
	if err != nil {
		return 0, a.lr.errorf("value %q does not fit its property type", ply.Truncate(s))
	}
	return v, nil
}

func (a *plyASCII) end() error {
	if len(a.fields) > 0 {
		return a.lr.errorf("%d values left over on the line", len(a.fields))
	}
	return nil
}

func (a *plyASCII) errorf(format string, args ...any) error { return a.lr.errorf(format, args...) }

// plyBinary reads packed values, counting the byte offset from the start of
// the file.
type plyBinary struct {
	r      *bufio.Reader
	name   string
	offset int64
	order  binary.ByteOrder
	buf    [8]byte
}

func (b *plyBinary) begin() error { return nil }
func (b *plyBinary) end() error   { return nil }

func (b *plyBinary) value(t ply.Type) (float64, error) {
	p := b.buf[:t.Size]
	if _, err := io.ReadFull(b.r, p); err != nil {
		return 0, b.errorf("unexpected end of file (want %d more bytes)", t.Size)
	}
	b.offset += int64(t.Size)
	switch {
	case t.Kind == 'f' && t.Size == 4:
		return float64(math.Float32frombits(b.order.Uint32(p))), nil
	case t.Kind == 'f':
		return math.Float64frombits(b.order.Uint64(p)), nil
	}
	var u uint64
	switch t.Size {
	case 1:
		u = uint64(p[0])
	case 2:
		u = uint64(b.order.Uint16(p))
	default:
		u = uint64(b.order.Uint32(p))
	}
	if t.Kind == 'i' {
		shift := 64 - 8*t.Size
		return float64(int64(u<<shift) >> shift), nil
	}
	return float64(u), nil
}

func (b *plyBinary) errorf(format string, args ...any) error {
	return errors.Errorf("%s: byte offset %d: "+format, append([]any{b.name, b.offset}, args...)...)
}
