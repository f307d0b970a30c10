package shapes

import (
	"bufio"
	"encoding/binary"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/pkg/errors"
)

// plyType is a PLY scalar type: its size in bytes and kind ('i' signed,
// 'u' unsigned integer, 'f' floating point).
type plyType struct {
	size int
	kind byte
}

var plyTypes = map[string]plyType{
	"char": {1, 'i'}, "int8": {1, 'i'}, "uchar": {1, 'u'}, "uint8": {1, 'u'},
	"short": {2, 'i'}, "int16": {2, 'i'}, "ushort": {2, 'u'}, "uint16": {2, 'u'},
	"int": {4, 'i'}, "int32": {4, 'i'}, "uint": {4, 'u'}, "uint32": {4, 'u'},
	"float": {4, 'f'}, "float32": {4, 'f'}, "double": {8, 'f'}, "float64": {8, 'f'},
}

type plyProp struct {
	name      string
	typ       plyType // element type of a list
	countType plyType // list only
	list      bool
}

type plyElement struct {
	name  string
	count int
	props []plyProp
}

// maxPLYHeader bounds the header length in bytes.
const maxPLYHeader = 1 << 16

// plyBody reads the values of one element item after the other, in ASCII or
// binary; errors carry the file and line (ASCII) or byte offset (binary).
type plyBody interface {
	begin() error
	value(t plyType) (float64, error)
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
	format, elems, line, offset, err := readPLYHeader(br, name)
	if err != nil {
		return nil, err
	}
	var body plyBody
	switch format {
	case "ascii":
		lr := newLineReader(br, name)
		lr.line = line
		body = &plyASCII{lr: lr}
	case "binary_little_endian":
		body = &plyBinary{r: br, name: name, offset: offset, order: binary.LittleEndian}
	case "binary_big_endian":
		body = &plyBinary{r: br, name: name, offset: offset, order: binary.BigEndian}
	}
	m := &Mesh{}
	nv := -1
	for _, e := range elems {
		switch e.name {
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
			for range e.count {
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

// readPLYHeader parses the header up to end_header and returns the format,
// the elements, the number of header lines and the header length in bytes.
func readPLYHeader(br *bufio.Reader, name string) (format string, elems []plyElement, line int, offset int64, err error) {
	fail := func(format string, args ...any) error {
		return errors.Errorf("%s:%d: "+format, append([]any{name, line}, args...)...)
	}
	for {
		s, rerr := br.ReadString('\n')
		line++
		offset += int64(len(s))
		if offset > maxPLYHeader {
			return "", nil, line, offset, fail("header longer than %d bytes", maxPLYHeader)
		}
		if rerr != nil && (rerr != io.EOF || s == "") {
			if rerr == io.EOF {
				return "", nil, line, offset, fail("unexpected end of file in the header (no end_header)")
			}
			return "", nil, line, offset, fail("reading the header: %v", rerr)
		}
		f := strings.Fields(s)
		if line == 1 {
			if len(f) != 1 || f[0] != "ply" {
				return "", nil, line, offset, fail("first line %q, want \"ply\"", truncate(strings.TrimSpace(s)))
			}
			continue
		}
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "comment", "obj_info":
		case "format":
			if len(f) != 3 || f[2] != "1.0" {
				return "", nil, line, offset, fail("format line %q, want \"format ascii|binary_little_endian|binary_big_endian 1.0\"", truncate(strings.TrimSpace(s)))
			}
			switch f[1] {
			case "ascii", "binary_little_endian", "binary_big_endian":
				format = f[1]
			default:
				return "", nil, line, offset, fail("unknown format %q", truncate(f[1]))
			}
		case "element":
			if len(f) != 3 {
				return "", nil, line, offset, fail("element line has %d fields, want \"element NAME COUNT\"", len(f))
			}
			n, err := parseCount(f[2], "element "+truncate(f[1]))
			if err != nil {
				return "", nil, line, offset, fail("%v", err)
			}
			elems = append(elems, plyElement{name: f[1], count: n})
		case "property":
			if len(elems) == 0 {
				return "", nil, line, offset, fail("property before any element")
			}
			p, err := parsePLYProperty(f)
			if err != nil {
				return "", nil, line, offset, fail("%v", err)
			}
			e := &elems[len(elems)-1]
			e.props = append(e.props, p)
		case "end_header":
			if format == "" {
				return "", nil, line, offset, fail("end_header without a format line")
			}
			return format, elems, line, offset, nil
		default:
			return "", nil, line, offset, fail("unknown header keyword %q", truncate(f[0]))
		}
	}
}

func parsePLYProperty(f []string) (plyProp, error) {
	if len(f) == 5 && f[1] == "list" {
		ct, ok1 := plyTypes[f[2]]
		it, ok2 := plyTypes[f[3]]
		if !ok1 || !ok2 || ct.kind == 'f' {
			return plyProp{}, errors.Errorf("list property %q: types %q %q, want an integer count type and a known item type", truncate(f[4]), truncate(f[2]), truncate(f[3]))
		}
		return plyProp{name: f[4], typ: it, countType: ct, list: true}, nil
	}
	if len(f) != 3 {
		return plyProp{}, errors.Errorf("property line has %d fields, want \"property TYPE NAME\" or \"property list CTYPE TYPE NAME\"", len(f))
	}
	t, ok := plyTypes[f[1]]
	if !ok {
		return plyProp{}, errors.Errorf("property %q: unknown type %q", truncate(f[2]), truncate(f[1]))
	}
	return plyProp{name: f[2], typ: t}, nil
}

func readPLYVertices(body plyBody, e plyElement, m *Mesh) error {
	slot := [3]int{-1, -1, -1}
	for i, p := range e.props {
		if j := strings.Index("xyz", p.name); len(p.name) == 1 && j >= 0 {
			if p.list {
				return body.errorf("vertex property %s is a list, want a scalar", p.name)
			}
			slot[j] = i
		}
	}
	if slot[0] < 0 || slot[1] < 0 || slot[2] < 0 {
		return body.errorf("the vertex element lacks one of the properties x, y, z")
	}
	m.Vertices = make([]float64, 0, 3*min(e.count, maxPrealloc))
	var xyz [3]float64
	for i := range e.count {
		if err := body.begin(); err != nil {
			return err
		}
		for pi, p := range e.props {
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

func readPLYFaces(body plyBody, e plyElement, m *Mesh, nv int) error {
	list := -1
	for i, p := range e.props {
		if p.list && (p.name == "vertex_indices" || p.name == "vertex_index") {
			list = i
		}
	}
	if list < 0 {
		return body.errorf("the face element has no list property vertex_indices")
	}
	if e.props[list].typ.kind == 'f' {
		return body.errorf("face indices of floating-point type, want an integer type")
	}
	m.Triangles = make([]int32, 0, 3*min(e.count, maxPrealloc))
	idx := make([]int32, 0, 16)
	for i := range e.count {
		if err := body.begin(); err != nil {
			return err
		}
		idx = idx[:0]
		bad := math.NaN()
		for pi, p := range e.props {
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

func skipPLYItem(body plyBody, e plyElement) error {
	if err := body.begin(); err != nil {
		return err
	}
	for _, p := range e.props {
		if err := readPLYProp(body, p, func(float64) {}); err != nil {
			return err
		}
	}
	return body.end()
}

// readPLYProp reads one property (a scalar, or a count and that many items)
// and passes every value to use.
func readPLYProp(body plyBody, p plyProp, use func(float64)) error {
	if !p.list {
		v, err := body.value(p.typ)
		if err != nil {
			return err
		}
		use(v)
		return nil
	}
	c, err := body.value(p.countType)
	if err != nil {
		return err
	}
	if c < 0 || c > maxPolygon {
		return body.errorf("list %s of %v items, want 0 to %d", p.name, c, maxPolygon)
	}
	for range int(c) {
		v, err := body.value(p.typ)
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

func (a *plyASCII) value(t plyType) (float64, error) {
	if len(a.fields) == 0 {
		return 0, a.lr.errorf("too few values on the line")
	}
	s := a.fields[0]
	a.fields = a.fields[1:]
	var (
		v   float64
		err error
	)
	switch t.kind {
	case 'i':
		var n int64
		n, err = strconv.ParseInt(s, 10, 8*t.size)
		v = float64(n)
	case 'u':
		var n uint64
		n, err = strconv.ParseUint(s, 10, 8*t.size)
		v = float64(n)
	default:
		v, err = strconv.ParseFloat(s, 8*t.size)
	}
	if err != nil {
		return 0, a.lr.errorf("value %q does not fit its property type", truncate(s))
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

func (b *plyBinary) value(t plyType) (float64, error) {
	p := b.buf[:t.size]
	if _, err := io.ReadFull(b.r, p); err != nil {
		return 0, b.errorf("unexpected end of file (want %d more bytes)", t.size)
	}
	b.offset += int64(t.size)
	switch {
	case t.kind == 'f' && t.size == 4:
		return float64(math.Float32frombits(b.order.Uint32(p))), nil
	case t.kind == 'f':
		return math.Float64frombits(b.order.Uint64(p)), nil
	}
	var u uint64
	switch t.size {
	case 1:
		u = uint64(p[0])
	case 2:
		u = uint64(b.order.Uint16(p))
	default:
		u = uint64(b.order.Uint32(p))
	}
	if t.kind == 'i' {
		shift := 64 - 8*t.size
		return float64(int64(u<<shift) >> shift), nil
	}
	return float64(u), nil
}

func (b *plyBinary) errorf(format string, args ...any) error {
	return errors.Errorf("%s: byte offset %d: "+format, append([]any{b.name, b.offset}, args...)...)
}
