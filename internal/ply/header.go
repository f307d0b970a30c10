// Package ply reads the header of a PLY file (the polygon file format of
// Greg Turk): its format, its elements and their properties. Package shapes
// reads meshes with it, in any of the three formats, and ops/mixture the
// reference's ASCII mixture files; each then reads the body it expects.
package ply

import (
	"bufio"
	"io"
	"strconv"
	"strings"

	"github.com/pkg/errors"
)

// Type is a PLY scalar type: its size in bytes and kind ('i' signed, 'u'
// unsigned integer, 'f' floating point).
type Type struct {
	Size int
	Kind byte
}

// Types are the scalar types by their names in a header, both spellings.
var Types = map[string]Type{
	"char": {1, 'i'}, "int8": {1, 'i'}, "uchar": {1, 'u'}, "uint8": {1, 'u'},
	"short": {2, 'i'}, "int16": {2, 'i'}, "ushort": {2, 'u'}, "uint16": {2, 'u'},
	"int": {4, 'i'}, "int32": {4, 'i'}, "uint": {4, 'u'}, "uint32": {4, 'u'},
	"float": {4, 'f'}, "float32": {4, 'f'}, "double": {8, 'f'}, "float64": {8, 'f'},
}

// Property is one property of an element: a scalar of Type, or with List a
// list of Type items preceded by a count of type Count.
type Property struct {
	Name  string
	Type  Type
	Count Type // list only
	List  bool
	Line  int // of its header line
}

// Element is one element of the header with its item count and properties.
type Element struct {
	Name  string
	Count int
	Props []Property
	Line  int // of its header line
}

// Header is a parsed PLY header.
type Header struct {
	// Format is "ascii", "binary_little_endian" or "binary_big_endian".
	Format     string
	FormatLine int
	Elements   []Element
	// Lines is the number of header lines, end_header included; Bytes
	// their length, where the body starts.
	Lines int
	Bytes int64
}

// MaxBytes bounds the length of a header.
const MaxBytes = 1 << 16

// Error is an error in a header, at a line.
type Error struct {
	Line int
	Msg  string
}

func (e *Error) Error() string { return "line " + strconv.Itoa(e.Line) + ": " + e.Msg }

// ReadHeader reads a header from br up to and including its end_header
// line, leaving br at the first byte of the body. Element counts above
// maxCount are refused. Errors in the header are *Error; an error of the
// reader is returned wrapped.
func ReadHeader(br *bufio.Reader, maxCount int) (Header, error) {
	var h Header
	fail := func(format string, args ...any) error {
		return &Error{Line: h.Lines, Msg: errors.Errorf(format, args...).Error()}
	}
	for {
		s, rerr := br.ReadString('\n')
		h.Lines++
		h.Bytes += int64(len(s))
		if h.Bytes > MaxBytes {
			return h, fail("header longer than %d bytes", MaxBytes)
		}
		if rerr != nil && (rerr != io.EOF || s == "") {
			if rerr == io.EOF {
				return h, fail("unexpected end of file in the header (no end_header)")
			}
			return h, errors.Wrapf(rerr, "line %d: reading the header", h.Lines)
		}
		f := strings.Fields(s)
		if h.Lines == 1 {
			if len(f) != 1 || f[0] != "ply" {
				return h, fail("first line %q, want \"ply\"", Truncate(strings.TrimSpace(s)))
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
				return h, fail("format line %q, want \"format ascii|binary_little_endian|binary_big_endian 1.0\"", Truncate(strings.TrimSpace(s)))
			}
			switch f[1] {
			case "ascii", "binary_little_endian", "binary_big_endian":
				h.Format, h.FormatLine = f[1], h.Lines
			default:
				return h, fail("unknown format %q", Truncate(f[1]))
			}
		case "element":
			if len(f) != 3 {
				return h, fail("element line has %d fields, want \"element NAME COUNT\"", len(f))
			}
			n, err := ParseCount(f[2], "element "+Truncate(f[1]), maxCount)
			if err != nil {
				return h, fail("%v", err)
			}
			h.Elements = append(h.Elements, Element{Name: f[1], Count: n, Line: h.Lines})
		case "property":
			if len(h.Elements) == 0 {
				return h, fail("property before any element")
			}
			p, err := parseProperty(f)
			if err != nil {
				return h, fail("%v", err)
			}
			p.Line = h.Lines
			e := &h.Elements[len(h.Elements)-1]
			e.Props = append(e.Props, p)
		case "end_header":
			if h.Format == "" {
				return h, fail("end_header without a format line")
			}
			return h, nil
		default:
			return h, fail("unknown header keyword %q", Truncate(f[0]))
		}
	}
}

func parseProperty(f []string) (Property, error) {
	if len(f) == 5 && f[1] == "list" {
		ct, ok1 := Types[f[2]]
		it, ok2 := Types[f[3]]
		if !ok1 || !ok2 || ct.Kind == 'f' {
			return Property{}, errors.Errorf("list property %q: types %q %q, want an integer count type and a known item type", Truncate(f[4]), Truncate(f[2]), Truncate(f[3]))
		}
		return Property{Name: f[4], Type: it, Count: ct, List: true}, nil
	}
	if len(f) != 3 {
		return Property{}, errors.Errorf("property line has %d fields, want \"property TYPE NAME\" or \"property list CTYPE TYPE NAME\"", len(f))
	}
	t, ok := Types[f[1]]
	if !ok {
		return Property{}, errors.Errorf("property %q: unknown type %q", Truncate(f[2]), Truncate(f[1]))
	}
	return Property{Name: f[2], Type: t}, nil
}

// ParseCount parses the item count s of what (e.g. "element vertex"): an
// integer from 0 to max. Mesh headers of other formats (OFF) give their
// counts alike.
func ParseCount(s, what string, max int) (int, error) {
	n, err := strconv.Atoi(s)
	switch {
	case err != nil:
		return 0, errors.Errorf("%s count %q is not an integer", what, Truncate(s))
	case n < 0 || n > max:
		return 0, errors.Errorf("%s count %d, want 0 to %d", what, n, max)
	}
	return n, nil
}

// Truncate shortens s for an error message.
func Truncate(s string) string {
	const n = 40
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
