package mnist

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// encodeIDX returns an IDX file of unsigned bytes with the given dimensions
// and data (not checked against each other, so tests can build bad files).
func encodeIDX(dims []int, data []byte) []byte {
	b := []byte{0, 0, idxTypeUint8, byte(len(dims))}
	for _, d := range dims {
		b = binary.BigEndian.AppendUint32(b, uint32(d))
	}
	return append(b, data...)
}

func gzipBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func seq(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}

func TestReadIDX(t *testing.T) {
	good := encodeIDX([]int{2, 3, 4}, seq(24))
	gz := gzipBytes(t, good)
	for _, c := range []struct {
		name    string
		data    []byte
		dims    []int
		wantErr string
	}{
		{"raw", good, []int{2, 3, 4}, ""},
		{"gzip", gz, []int{2, 3, 4}, ""},
		{"labels", encodeIDX([]int{5}, seq(5)), []int{5}, ""},
		{"empty", nil, nil, "reading magic"},
		{"wrong magic", append([]byte{0, 1}, good[2:]...), nil, "bad magic"},
		{"text file", []byte("hello world, not idx"), nil, "bad magic"},
		{"float type", append([]byte{0, 0, 0x0d}, good[3:]...), nil, "element type 0x0d"},
		{"no dims", []byte{0, 0, 8, 0}, nil, "0 dimensions"},
		{"too many dims", []byte{0, 0, 8, 9}, nil, "9 dimensions"},
		{"zero size", encodeIDX([]int{2, 0, 4}, nil), nil, "dimension 1 has size 0"},
		{"huge sizes", encodeIDX([]int{1 << 16, 1 << 16}, nil), nil, "declare more than"},
		{"header cut", good[:9], nil, "size of dimension 1"},
		{"truncated data", good[:len(good)-1], nil, "truncated: shape [2 3 4] needs 24 bytes of data, got 23"},
		{"trailing data", append(bytes.Clone(good), 0), nil, "trailing data"},
		{"truncated gzip", gz[:len(gz)-10], nil, "gzip"},
		{"gzip crc", append(bytes.Clone(gz[:len(gz)-8]), 0, 0, 0, 0, 0, 0, 0, 0), nil, "checksum"},
	} {
		t.Run(c.name, func(t *testing.T) {
			idx, err := readMaybeGzip(bytes.NewReader(c.data))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !equalInts(idx.Dims, c.dims) {
				t.Fatalf("dims %v, want %v", idx.Dims, c.dims)
			}
			n := 1
			for _, d := range c.dims {
				n *= d
			}
			if !bytes.Equal(idx.Data, seq(n)) {
				t.Fatalf("data differs")
			}
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestReadIDXFileNamesFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad-idx1-ubyte")
	if err := os.WriteFile(bad, []byte{0, 0, 8, 1, 0, 0, 0, 5, 1, 2}, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{bad, filepath.Join(dir, "missing")} {
		_, err := ReadIDXFile(p)
		if err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("ReadIDXFile(%s): error %v does not name the file", p, err)
		}
	}
}

// FuzzReadIDX checks that no input makes the reader panic or return an IDX
// whose data disagrees with its dimensions, and that what it accepts it
// reads back identically after re-encoding.
func FuzzReadIDX(f *testing.F) {
	good := encodeIDX([]int{2, 3}, seq(6))
	f.Add(good)
	f.Add(gzipBytes(f, good))
	f.Add(encodeIDX([]int{3}, seq(3)))
	f.Add(good[:7])
	f.Add([]byte{0, 0, 8, 4, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 42})
	f.Add([]byte{0x1f, 0x8b, 8, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		idx, err := readMaybeGzip(bytes.NewReader(data))
		if err != nil {
			return
		}
		n := 1
		for _, d := range idx.Dims {
			if d < 1 {
				t.Fatalf("accepted dimension %d", d)
			}
			n *= d
		}
		if n != len(idx.Data) {
			t.Fatalf("dims %v but %d bytes", idx.Dims, len(idx.Data))
		}
		again, err := ReadIDX(bytes.NewReader(encodeIDX(idx.Dims, idx.Data)))
		if err != nil || !equalInts(again.Dims, idx.Dims) || !bytes.Equal(again.Data, idx.Data) {
			t.Fatalf("re-encoded IDX reads back differently: %v", err)
		}
	})
}
