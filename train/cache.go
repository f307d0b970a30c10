package train

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/gmcn-go/gmcn/internal/atomicfile"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/gmcn-go/gmcn/train/report"
	"github.com/pkg/errors"
)

// Inputs are fitted input mixtures with their labels: Mixtures is a packed
// float32 batch of layout Layout ([n, 1, K, 7]) and Labels[i] the class of
// mixture i.
type Inputs struct {
	Layout   mixture.Layout
	Mixtures []float32
	Labels   []uint8
}

// Cache file format, all integers little-endian:
//
//	magic     8 bytes  "GMCNFIT\x00"
//	version   uint32   cacheVersion
//	hash      32 bytes SHA-256 of the settings text
//	textLen   uint32   length of the settings text (≤ maxSettingsLen)
//	text      textLen bytes: every fit setting and the data set identity
//	n, K, D   uint32 × 3 (D = 2)
//	mixtures  n·K·7 float32
//	labels    n bytes
//	checksum  32 bytes SHA-256 of everything above
//
// The settings text is stored next to its hash so that a mismatch can be
// reported in words.
const (
	cacheMagic     = "GMCNFIT\x00"
	cacheVersion   = 1
	maxSettingsLen = 1 << 16
	cacheHeaderLen = 8 + 4 + sha256.Size + 4
	cacheSizesLen  = 3 * 4
)

// CacheSettings returns the identity of a fit: the settings of cfg and the
// data it is applied to (name, count, size and a SHA-256 of pixels and
// labels), so that a change of either invalidates a cache.
func CacheSettings(cfg FitConfig, name string, s Split) string {
	h := sha256.New()
	h.Write(s.Pixels)
	h.Write(s.Labels)
	return fmt.Sprintf("%s\ndata=%s n=%d size=%dx%d sha256=%x", cfg, name, s.N, s.Rows, s.Cols, h.Sum(nil))
}

// EncodeCache writes in with its settings text in the cache format.
func EncodeCache(w io.Writer, settings string, in *Inputs) error {
	l := in.Layout
	switch {
	case len(settings) > maxSettingsLen:
		return errors.Errorf("cache: settings text of %d bytes, at most %d", len(settings), maxSettingsLen)
	case l.C != 1 || l.D != 2 || len(in.Mixtures) != l.Len() || len(in.Labels) != l.B:
		return errors.Errorf("cache: inputs of layout %v with %d values and %d labels, want [n 1 K 7] with n labels",
			l.Shape(), len(in.Mixtures), len(in.Labels))
	case uint64(l.B) > math.MaxUint32 || uint64(l.N) > math.MaxUint32:
		return errors.Errorf("cache: layout %v too large", l.Shape())
	}
	var buf bytes.Buffer
	buf.Grow(cacheHeaderLen + len(settings) + cacheSizesLen + 4*len(in.Mixtures) + len(in.Labels) + sha256.Size)
	buf.WriteString(cacheMagic)
	le := binary.LittleEndian
	buf.Write(le.AppendUint32(nil, cacheVersion))
	hash := sha256.Sum256([]byte(settings))
	buf.Write(hash[:])
	buf.Write(le.AppendUint32(nil, uint32(len(settings))))
	buf.WriteString(settings)
	for _, v := range []int{l.B, l.N, l.D} {
		buf.Write(le.AppendUint32(nil, uint32(v)))
	}
	b := buf.AvailableBuffer()
	for _, v := range in.Mixtures {
		b = le.AppendUint32(b, math.Float32bits(v))
	}
	buf.Write(b)
	buf.Write(in.Labels)
	sum := sha256.Sum256(buf.Bytes())
	buf.Write(sum[:])
	_, err := w.Write(buf.Bytes())
	return errors.Wrap(err, "cache: writing")
}

// DecodeCache decodes a cache file's content and returns its settings text
// and inputs. Every part is checked: magic, version, settings hash, sizes
// against the data length, the SHA-256 checksum, and the mixtures themselves
// (finite, symmetric positive definite covariances).
func DecodeCache(data []byte) (string, *Inputs, error) {
	le := binary.LittleEndian
	if len(data) < cacheHeaderLen {
		return "", nil, errors.Errorf("cache: truncated: %d bytes, a header needs %d", len(data), cacheHeaderLen)
	}
	if string(data[:8]) != cacheMagic {
		return "", nil, errors.Errorf("cache: bad magic %q, want %q (not a gmcn input cache)", data[:8], cacheMagic)
	}
	if v := le.Uint32(data[8:]); v != cacheVersion {
		return "", nil, errors.Errorf("cache: format version %d, this code reads version %d", v, cacheVersion)
	}
	hash := data[12 : 12+sha256.Size]
	textLen := uint64(le.Uint32(data[12+sha256.Size:]))
	if textLen > maxSettingsLen {
		return "", nil, errors.Errorf("cache: settings text of %d bytes, at most %d", textLen, maxSettingsLen)
	}
	off := uint64(cacheHeaderLen)
	if uint64(len(data)) < off+textLen+cacheSizesLen {
		return "", nil, errors.Errorf("cache: truncated: %d bytes, header and settings need %d", len(data), off+textLen+cacheSizesLen)
	}
	settings := string(data[off : off+textLen])
	if h := sha256.Sum256([]byte(settings)); !bytes.Equal(h[:], hash) {
		return "", nil, errors.New("cache: settings hash does not match the settings text")
	}
	off += textLen
	n, k, d := uint64(le.Uint32(data[off:])), uint64(le.Uint32(data[off+4:])), uint64(le.Uint32(data[off+8:]))
	off += cacheSizesLen
	if k < 1 || d != 2 {
		return "", nil, errors.Errorf("cache: sizes n=%d K=%d D=%d, want K ≥ 1 and D = 2", n, k, d)
	}
	// n, k < 2³² so the sizes below cannot overflow uint64.
	values := n * k * uint64(mixture.PackedLen(2))
	want := off + 4*values + n + sha256.Size
	if uint64(len(data)) != want {
		return "", nil, errors.Errorf("cache: %d bytes, sizes n=%d K=%d need %d (truncated or trailing data)", len(data), n, k, want)
	}
	body := data[:len(data)-sha256.Size]
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], data[len(body):]) {
		return "", nil, errors.New("cache: checksum mismatch: the file is corrupt")
	}
	in := &Inputs{Layout: FitLayout(int(n), int(k)), Mixtures: make([]float32, values)}
	for i := range in.Mixtures {
		in.Mixtures[i] = math.Float32frombits(le.Uint32(data[off+4*uint64(i):]))
	}
	off += 4 * values
	in.Labels = bytes.Clone(data[off : off+n])
	if err := mixture.Validate(in.Mixtures, in.Layout); err != nil {
		return "", nil, errors.Wrap(err, "cache: invalid mixture")
	}
	return settings, in, nil
}

// ReadCache reads and decodes the cache file at path; errors name the file.
func ReadCache(path string) (string, *Inputs, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", nil, errors.Wrap(err, "cache")
	}
	settings, in, err := DecodeCache(data)
	if err != nil {
		return "", nil, errors.Wrapf(err, "%s", path)
	}
	return settings, in, nil
}

// WriteCache writes in to path atomically (WriteFileAtomic: a temporary
// file beside path, synced, then renamed over it), so a crash never leaves a
// partial cache under the real name.
func WriteCache(path, settings string, in *Inputs) error {
	var buf bytes.Buffer
	if err := EncodeCache(&buf, settings, in); err != nil {
		return errors.Wrapf(err, "%s", path)
	}
	return errors.Wrap(atomicfile.Write(path, buf.Bytes()), "cache")
}

// LoadOrFitInputs returns the input mixtures of split s of the data set
// name, fitted with cfg: from cacheFile if it holds exactly this fit,
// otherwise fitted anew (FitInputs, reporting to progress) and written to
// cacheFile atomically. Why a cache is not used (missing, corrupt, other
// format version, other settings or data) is written to log, as is the
// refit; nothing is reused silently. A nil log discards the messages.
func LoadOrFitInputs(cacheFile, name string, s Split, cfg FitConfig, progress *report.Progress, log io.Writer) (*Inputs, error) {
	if log == nil {
		log = io.Discard
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(s.Labels) != s.N {
		return nil, errors.Errorf("fit inputs: %s has %d images but %d labels", name, s.N, len(s.Labels))
	}
	settings := CacheSettings(cfg, name, s)
	have, in, err := ReadCache(cacheFile)
	switch {
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintf(log, "train: no input cache %s; fitting %d %s images\n", cacheFile, s.N, name)
	case err != nil:
		fmt.Fprintf(log, "train: input cache unusable, refitting (the file is replaced): %v\n", err)
	case have != settings:
		fmt.Fprintf(log, "train: input cache %s was built for other settings or data, refitting\n  cached: %s\n  wanted: %s\n",
			cacheFile, oneLine(have), oneLine(settings))
	default:
		return in, nil
	}
	mix, l, err := FitInputs(s.Images, cfg, progress)
	progress.Finish()
	if err != nil {
		return nil, err
	}
	in = &Inputs{Layout: l, Mixtures: mix, Labels: bytes.Clone(s.Labels)}
	if err := WriteCache(cacheFile, settings, in); err != nil {
		return nil, errors.Wrapf(err, "fit inputs: fitted %d %s images but could not write the cache %s (fix the path or call FitInputs without a cache)",
			s.N, name, cacheFile)
	}
	fmt.Fprintf(log, "train: wrote input cache %s\n", cacheFile)
	return in, nil
}

func oneLine(s string) string { return string(bytes.ReplaceAll([]byte(s), []byte("\n"), []byte("; "))) }
