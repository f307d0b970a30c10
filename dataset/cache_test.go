package dataset

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/ops/mixture"
)

func encode(t testing.TB, key string, in *Inputs) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := EncodeCache(&buf, key, in); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// resum replaces the checksum of an encoded cache by the right one, so that
// a damage behind it is what the decoder meets.
func resum(b []byte) []byte {
	body := b[:len(b)-sha256.Size]
	sum := sha256.Sum256(body)
	copy(b[len(body):], sum[:])
	return b
}

func TestCacheRoundTrip(t *testing.T) {
	for _, c := range []struct{ n, k, d int }{{0, 1, 2}, {1, 1, 2}, {3, 64, 2}, {0, 1, 3}, {2, 5, 3}} {
		in := randomInputs(c.n, c.k, c.d, 4)
		key, got, err := DecodeCache(bytes.NewReader(encode(t, "fit 2D: K=64\ndata: x", in)))
		if err != nil {
			t.Fatalf("n=%d K=%d D=%d: %v", c.n, c.k, c.d, err)
		}
		if key != "fit 2D: K=64\ndata: x" || got.Layout != in.Layout || got.Classes != 4 || !slices.Equal(got.Mixtures, in.Mixtures) ||
			!slices.Equal(got.Labels, in.Labels) {
			t.Fatalf("n=%d K=%d D=%d: round trip differs", c.n, c.k, c.d)
		}
	}
}

// TestDecodeCacheCorrupt damages a valid cache in every part and checks that
// each damage is detected with a message saying what is wrong.
func TestDecodeCacheCorrupt(t *testing.T) {
	good := encode(t, "key", randomInputs(2, 3, 2, 4))
	const keyOff = 16
	sizes := keyOff + len("key")
	payload := sizes + 16
	labels := payload + 4*2*3*7
	le := func(off int, v uint32) func([]byte) []byte {
		return func(b []byte) []byte { binary.LittleEndian.PutUint32(b[off:], v); return b }
	}
	flip := func(off int) func([]byte) []byte {
		return func(b []byte) []byte { b[off] ^= 0x10; return b }
	}
	for _, c := range []struct {
		name   string
		damage func([]byte) []byte
		want   string
	}{
		{"empty", func(b []byte) []byte { return nil }, "truncated: the file ends inside the magic"},
		{"magic", flip(0), "bad magic"},
		{"old 3D format", func(b []byte) []byte { return append([]byte(oldMagic3D), b[8:]...) }, "3D input cache format of older gmcn versions"},
		{"old 2D format", le(8, 1), "format version 1, this code reads version 2 (version 1 is the 2D format of older gmcn versions)"},
		{"future version", le(8, 3), "format version 3"},
		{"key length", le(12, 1<<20), "key of 1048576 bytes"},
		{"key past end", le(12, 1000), "truncated"},
		{"zero K", le(sizes+4, 0), "K=0"},
		{"4D", le(sizes+8, 4), "D=4"},
		{"no classes", le(sizes+12, 0), "with 0 classes"},
		{"huge n", le(sizes, math.MaxUint32), "truncated: the file ends inside the mixtures"},
		{"huge n and K", func(b []byte) []byte { return le(sizes+4, math.MaxUint32)(le(sizes, math.MaxUint32)(b)) }, "more values than a file can hold"},
		{"key", flip(keyOff + 1), "checksum mismatch"},
		{"payload", flip(payload + 5), "checksum mismatch"},
		{"label", flip(labels), "checksum mismatch"},
		{"checksum", flip(len(good) - 1), "checksum mismatch"},
		{"truncated labels", func(b []byte) []byte { return b[:labels+2] }, "truncated: the file ends inside the labels"},
		{"truncated checksum", func(b []byte) []byte { return b[:len(b)-1] }, "truncated: the file ends inside the checksum"},
		{"trailing", func(b []byte) []byte { return append(b, 0) }, "trailing data"},
		{"label out of range", func(b []byte) []byte { return resum(le(labels, 4)(b)) }, "label 4 of sample 0, want 0 to 3"},
		{"NaN", func(b []byte) []byte { return resum(le(payload+4*(7+1), math.Float32bits(float32(math.NaN())))(b)) }, "non-finite"},
		{"not SPD", func(b []byte) []byte { return resum(le(payload+4*(7+3), math.Float32bits(-1))(b)) }, "not positive definite"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := DecodeCache(bytes.NewReader(c.damage(bytes.Clone(good))))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestEncodeCacheErrors(t *testing.T) {
	for _, c := range []struct {
		name   string
		key    string
		change func(*Inputs)
		want   string
	}{
		{"label", "k", func(in *Inputs) { in.Labels[1] = 4 }, "label 4 of sample 1, want 0 to 3"},
		{"label count", "k", func(in *Inputs) { in.Labels = in.Labels[:1] }, "1 labels"},
		{"layout", "k", func(in *Inputs) { in.Layout.C = 2 }, "want [n 1 K 7] or [n 1 K 13]"},
		{"classes", "k", func(in *Inputs) { in.Classes = 0 }, "0 classes"},
		{"mixture", "k", func(in *Inputs) { in.Mixtures[3] = -1 }, "not positive definite"},
		{"key", strings.Repeat("k", maxKeyLen+1), func(*Inputs) {}, "key of 65537 bytes"},
	} {
		in := randomInputs(2, 2, 2, 4)
		c.change(in)
		var buf bytes.Buffer
		if err := EncodeCache(&buf, c.key, in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

func TestReadCacheNamesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inputs.gmfit")
	if err := os.WriteFile(path, []byte("GMCNFIT\x00garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadCache(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("error %v does not name %s", err, path)
	}
	in := randomInputs(3, 4, 3, 2)
	if err := WriteCache(path, "key", in); err != nil {
		t.Fatal(err)
	}
	if key, got, err := ReadCache(path); err != nil || key != "key" || !slices.Equal(got.Mixtures, in.Mixtures) {
		t.Errorf("read back %q, %v", key, err)
	}
}

// FuzzDecodeCache checks that no input makes the decoder panic, and that
// whatever it accepts is a valid batch that encodes back to the same bytes.
func FuzzDecodeCache(f *testing.F) {
	f.Add(encode(f, "key", randomInputs(2, 3, 2, 4)))
	f.Add(encode(f, "", randomInputs(1, 2, 3, 1)))
	f.Add(encode(f, "", randomInputs(0, 1, 2, 1)))
	f.Add([]byte(cacheMagic))
	f.Add([]byte("GMCNFIT\x00\x02\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		key, in, err := DecodeCache(bytes.NewReader(data))
		if err != nil {
			return
		}
		if err := mixture.Validate(in.Mixtures, in.Layout); err != nil || len(in.Labels) != in.Layout.B {
			t.Fatalf("accepted invalid inputs: %v", err)
		}
		if !bytes.Equal(encode(t, key, in), data) {
			t.Fatal("accepted data does not re-encode identically")
		}
	})
}
