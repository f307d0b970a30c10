package ply

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestReadHeader parses a binary mesh header with a comment, a list
// property and a blank line, and checks what it returns and that the reader
// is left at the body.
func TestReadHeader(t *testing.T) {
	head := "ply\nformat binary_little_endian 1.0\ncomment x\nelement vertex 3\nproperty float x\n\nproperty double y\n" +
		"element face 1\nproperty list uchar int vertex_indices\nend_header\n"
	br := bufio.NewReader(strings.NewReader(head + "BODY"))
	h, err := ReadHeader(br, 10)
	if err != nil {
		t.Fatal(err)
	}
	if h.Format != "binary_little_endian" || h.FormatLine != 2 || h.Lines != 10 || h.Bytes != int64(len(head)) || len(h.Elements) != 2 {
		t.Fatalf("header %+v", h)
	}
	v, f := h.Elements[0], h.Elements[1]
	if v.Name != "vertex" || v.Count != 3 || v.Line != 4 || len(v.Props) != 2 || v.Props[1] != (Property{Name: "y", Type: Type{8, 'f'}, Line: 7}) {
		t.Errorf("vertex element %+v", v)
	}
	if f.Count != 1 || f.Props[0] != (Property{Name: "vertex_indices", Type: Type{4, 'i'}, Count: Type{1, 'u'}, List: true, Line: 9}) {
		t.Errorf("face element %+v", f)
	}
	if rest, _ := io.ReadAll(br); string(rest) != "BODY" {
		t.Errorf("body %q, want BODY", rest)
	}
	for _, c := range []struct{ head, want string }{
		{"ply\nformat ascii 1.0\nelement vertex 11\n", "line 3: element vertex count 11, want 0 to 10"},
		{"ply\nformat ascii 1.0\nelement v 1\nproperty list float int i\n", `line 4: list property "i"`},
		{"ply\nformat ascii 2.0\n", `line 2: format line "format ascii 2.0"`},
	} {
		_, err := ReadHeader(bufio.NewReader(strings.NewReader(c.head)), 10)
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want an *Error containing %q", c.head, err, c.want)
		}
	}
}
