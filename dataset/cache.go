package dataset

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"io"
	"math"
	"os"

	"github.com/pkg/errors"

	"github.com/gmcn-go/gmcn/internal/atomicfile"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// Cache file format, all integers little-endian:
//
//	magic     8 bytes  "GMCNFIT\x00"
//	version   uint32   cacheVersion
//	keyLen    uint32   length of the key text (≤ maxKeyLen)
//	key       keyLen bytes: the fit settings and the digest of the data
//	n, K, D   uint32 × 3 (D = 2 or 3)
//	classes   uint32   number of classes
//	mixtures  n·K·(1+D+D²) float32
//	labels    n uint32, each < classes
//	checksum  32 bytes SHA-256 of everything above
//
// The key is stored as text so that a mismatch can be reported in words.
// Version 1 was the 2D-only format of older gmcn versions (same magic, byte
// labels); the 3D inputs had their own format with magic oldMagic3D.
const (
	cacheMagic   = "GMCNFIT\x00"
	oldMagic3D   = "GMCN3DF\x00"
	cacheVersion = 2
	maxKeyLen    = 1 << 16
)

// chunkValues is how many float32 or labels the decoder reads at a time, so
// that memory grows with the data actually present, never with sizes a
// corrupt header declares.
const chunkValues = 1 << 16

// EncodeCache writes in with its key in the cache format to w, streaming:
// nothing but in is held in memory.
func EncodeCache(w io.Writer, key string, in *Inputs) error {
	if len(key) > maxKeyLen {
		return errors.Errorf("cache: key of %d bytes, at most %d", len(key), maxKeyLen)
	}
	if err := in.Check(); err != nil {
		return errors.Wrap(err, "cache: encoding")
	}
	l := in.Layout
	if uint64(l.B) > math.MaxUint32 || uint64(l.N) > math.MaxUint32 || uint64(in.Classes) > math.MaxUint32 {
		return errors.Errorf("cache: layout %v with %d classes too large", l.Shape(), in.Classes)
	}
	h := sha256.New()
	bw := bufio.NewWriter(io.MultiWriter(w, h))
	le := binary.LittleEndian
	var b []byte
	b = append(b, cacheMagic...)
	b = le.AppendUint32(b, cacheVersion)
	b = le.AppendUint32(b, uint32(len(key)))
	b = append(b, key...)
	for _, v := range []int{l.B, l.N, l.D, in.Classes} {
		b = le.AppendUint32(b, uint32(v))
	}
	// A bufio.Writer keeps its first error and returns it from Flush.
	bw.Write(b)
	writeUint32s(bw, in.Mixtures, math.Float32bits)
	writeUint32s(bw, in.Labels, func(v int) uint32 { return uint32(v) })
	if err := bw.Flush(); err != nil {
		return errors.Wrap(err, "cache: writing")
	}
	_, err := w.Write(h.Sum(nil))
	return errors.Wrap(err, "cache: writing")
}

// writeUint32s writes bits(v) of every value of vs little-endian to w,
// chunkValues values at a time.
func writeUint32s[T any](w io.Writer, vs []T, bits func(T) uint32) {
	b := make([]byte, 0, 4*min(len(vs), chunkValues))
	for i := 0; i < len(vs); i += chunkValues {
		b = b[:0]
		for _, v := range vs[i:min(i+chunkValues, len(vs))] {
			b = binary.LittleEndian.AppendUint32(b, bits(v))
		}
		w.Write(b)
	}
}

// cacheReader reads the cache format from a stream and hashes what it
// reads; a stream that ends early is reported with what was being read.
type cacheReader struct {
	r   io.Reader
	h   hash.Hash
	buf []byte
}

func (r *cacheReader) read(n int, what string) ([]byte, error) {
	if cap(r.buf) < n {
		r.buf = make([]byte, n)
	}
	b := r.buf[:n]
	if _, err := io.ReadFull(r.r, b); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, errors.Errorf("cache: truncated: the file ends inside the %s", what)
		}
		return nil, errors.Wrapf(err, "cache: reading the %s", what)
	}
	r.h.Write(b)
	return b, nil
}

func (r *cacheReader) uint32(what string) (uint64, error) {
	b, err := r.read(4, what)
	if err != nil {
		return 0, err
	}
	return uint64(binary.LittleEndian.Uint32(b)), nil
}

// values reads n little-endian uint32 values in chunks and passes each to
// put.
func (r *cacheReader) values(n uint64, what string, put func(uint32)) error {
	for n > 0 {
		m := min(n, chunkValues)
		b, err := r.read(int(4*m), what)
		if err != nil {
			return err
		}
		for i := range int(m) {
			put(binary.LittleEndian.Uint32(b[4*i:]))
		}
		n -= m
	}
	return nil
}

// DecodeCache reads one cache from r and returns its key and inputs. Every
// part is checked: magic, format version (the formats of older gmcn
// versions are named as such), sizes, the checksum, the end of the stream,
// the labels and the mixtures themselves (finite, symmetric
// positive-definite covariances).
func DecodeCache(r io.Reader) (string, *Inputs, error) {
	cr := &cacheReader{r: r, h: sha256.New()}
	magic, err := cr.read(8, "magic")
	if err != nil {
		return "", nil, err
	}
	switch string(magic) {
	case cacheMagic:
	case oldMagic3D:
		return "", nil, errors.Errorf("cache: the 3D input cache format of older gmcn versions (magic %q), this code reads %q version %d",
			oldMagic3D, cacheMagic, cacheVersion)
	default:
		return "", nil, errors.Errorf("cache: bad magic %q, want %q (not a gmcn input cache)", magic, cacheMagic)
	}
	if v, err := cr.uint32("version"); err != nil {
		return "", nil, err
	} else if v != cacheVersion {
		return "", nil, errors.Errorf("cache: format version %d, this code reads version %d (version 1 is the 2D format of older gmcn versions)",
			v, cacheVersion)
	}
	keyLen, err := cr.uint32("key length")
	if err != nil {
		return "", nil, err
	}
	if keyLen > maxKeyLen {
		return "", nil, errors.Errorf("cache: key of %d bytes, at most %d", keyLen, maxKeyLen)
	}
	kb, err := cr.read(int(keyLen), "key")
	if err != nil {
		return "", nil, err
	}
	key := string(kb)
	var sizes [4]uint64
	for i := range sizes {
		if sizes[i], err = cr.uint32("sizes"); err != nil {
			return "", nil, err
		}
	}
	n, k, d, classes := sizes[0], sizes[1], sizes[2], sizes[3]
	if k < 1 || (d != 2 && d != 3) || classes < 1 {
		return "", nil, errors.Errorf("cache: sizes n=%d K=%d D=%d with %d classes, want K ≥ 1, D = 2 or 3 and at least one class",
			n, k, d, classes)
	}
	// n, K < 2³² and the packed length is at most 13, so the count fits
	// in 68 bits: check before multiplying.
	stride := uint64(mixture.PackedLen(int(d)))
	if n > math.MaxUint64/(k*stride) {
		return "", nil, errors.Errorf("cache: sizes n=%d K=%d D=%d declare more values than a file can hold", n, k, d)
	}
	in := &Inputs{Layout: FitLayout(int(n), int(k), int(d)), Classes: int(classes)}
	if err := cr.values(n*k*stride, "mixtures", func(v uint32) { in.Mixtures = append(in.Mixtures, math.Float32frombits(v)) }); err != nil {
		return "", nil, err
	}
	if err := cr.values(n, "labels", func(v uint32) { in.Labels = append(in.Labels, int(v)) }); err != nil {
		return "", nil, err
	}
	sum := cr.h.Sum(nil)
	var stored [sha256.Size]byte
	if _, err := io.ReadFull(r, stored[:]); err != nil {
		return "", nil, errors.New("cache: truncated: the file ends inside the checksum")
	}
	if string(sum) != string(stored[:]) {
		return "", nil, errors.New("cache: checksum mismatch: the file is corrupt")
	}
	switch _, err := io.ReadFull(r, stored[:1]); {
	case err == nil:
		return "", nil, errors.New("cache: trailing data after the checksum")
	case err != io.EOF:
		return "", nil, errors.Wrap(err, "cache: reading past the checksum")
	}
	if err := in.Check(); err != nil {
		return "", nil, errors.Wrap(err, "cache")
	}
	return key, in, nil
}

// ReadCache reads and decodes the cache file at path; errors name the file.
func ReadCache(path string) (string, *Inputs, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", nil, errors.Wrap(err, "cache")
	}
	defer f.Close()
	key, in, err := DecodeCache(bufio.NewReader(f))
	if err != nil {
		return "", nil, errors.Wrapf(err, "%s", path)
	}
	return key, in, nil
}

// WriteCache writes in with its key to path atomically (atomicfile.WriteFunc:
// a temporary file beside path, synced, then renamed over it), so a crash
// never leaves a partial cache under the real name; the folder is created if
// needed.
func WriteCache(path, key string, in *Inputs) error {
	return errors.Wrap(atomicfile.WriteFunc(path, func(w io.Writer) error { return EncodeCache(w, key, in) }), "cache")
}
