package mnist

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"io"
	"os"

	"github.com/pkg/errors"
)

// idxTypeUint8 is the IDX element type code of unsigned bytes, the only type
// the MNIST-style data sets use.
const idxTypeUint8 = 0x08

// maxIDXDims bounds the number of dimensions of an IDX file; MNIST-style files
// have 1 (labels) or 3 (images).
const maxIDXDims = 4

// maxIDXElements bounds the element count an IDX header may declare (1 GiB of
// bytes), so that a corrupt header is reported instead of overflowing sizes.
const maxIDXElements = 1 << 30

// IDX is the content of an IDX file of unsigned bytes: its dimensions,
// outermost first, and the elements in row-major order.
type IDX struct {
	Dims []int
	Data []uint8
}

// ReadIDX reads one IDX file of unsigned bytes from r. The header is
// validated: magic 0x00 0x00, type code 0x08 (unsigned byte), 1 to 4
// dimensions, every size ≥ 1; the payload must hold exactly the declared
// number of elements, so a truncated stream and trailing data are errors.
// Memory grows with the bytes actually read, never with the declared size
// alone.
func ReadIDX(r io.Reader) (*IDX, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, errors.Wrap(noEOF(err), "idx: reading magic number")
	}
	if hdr[0] != 0 || hdr[1] != 0 {
		return nil, errors.Errorf("idx: bad magic number % x: the first two bytes must be zero (is the file an IDX file?)", hdr)
	}
	if hdr[2] != idxTypeUint8 {
		return nil, errors.Errorf("idx: element type 0x%02x is not supported, want 0x%02x (unsigned byte)", hdr[2], idxTypeUint8)
	}
	nd := int(hdr[3])
	if nd < 1 || nd > maxIDXDims {
		return nil, errors.Errorf("idx: %d dimensions, want 1 to %d", nd, maxIDXDims)
	}
	dims := make([]int, nd)
	total := 1
	for i := range dims {
		var v uint32
		if err := binary.Read(r, binary.BigEndian, &v); err != nil {
			return nil, errors.Wrapf(noEOF(err), "idx: reading size of dimension %d of %d", i, nd)
		}
		if v == 0 {
			return nil, errors.Errorf("idx: dimension %d has size 0", i)
		}
		if uint64(total)*uint64(v) > maxIDXElements {
			return nil, errors.Errorf("idx: sizes %v… declare more than %d elements", dims[:i+1], maxIDXElements)
		}
		dims[i] = int(v)
		total *= int(v)
	}
	// Reading at most total+1 bytes detects trailing data without reading an
	// unbounded stream; ReadAll grows its buffer with the data it gets.
	data, err := io.ReadAll(io.LimitReader(r, int64(total)+1))
	if err != nil {
		return nil, errors.Wrapf(err, "idx: reading %d elements of shape %v", total, dims)
	}
	switch {
	case len(data) < total:
		return nil, errors.Errorf("idx: truncated: shape %v needs %d bytes of data, got %d", dims, total, len(data))
	case len(data) > total:
		return nil, errors.Errorf("idx: trailing data after the %d bytes of shape %v", total, dims)
	}
	return &IDX{Dims: dims, Data: data}, nil
}

// noEOF turns a clean EOF inside a header into io.ErrUnexpectedEOF: a header
// cut short is a truncated file, whatever byte it stopped at.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// ReadIDXFile reads the IDX file at path, gzip-compressed (detected by its
// magic bytes 1f 8b) or raw. Errors name the file.
func ReadIDXFile(path string) (*IDX, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errors.Wrap(err, "idx")
	}
	defer f.Close()
	idx, err := readMaybeGzip(f)
	if err != nil {
		return nil, errors.Wrapf(err, "%s", path)
	}
	return idx, nil
}

// readMaybeGzip reads an IDX stream that may be gzip-compressed. The whole
// gzip stream must be valid: a corrupt or truncated archive fails its CRC
// check at the end, which ReadIDX reaches while looking for trailing data.
func readMaybeGzip(r io.Reader) (*IDX, error) {
	br := bufio.NewReader(r)
	magic, err := br.Peek(2)
	if err == nil && bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, errors.Wrap(err, "gzip")
		}
		zr.Multistream(false)
		idx, err := ReadIDX(zr)
		if err != nil {
			return nil, errors.Wrap(err, "gzip-compressed")
		}
		return idx, nil
	}
	return ReadIDX(br)
}
