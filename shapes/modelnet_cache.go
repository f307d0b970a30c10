package shapes

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/gmcn-go/gmcn/internal/atomicfile"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
)

// Inputs are the fitted mixtures of one split with their labels: Mixtures
// is a packed float32 batch of layout Layout ([n, 1, K, 13]), Labels[i] the
// class of mixture i and Classes the class names by label.
type Inputs struct {
	Layout   mixture.Layout
	Mixtures []float32
	Labels   []int
	Classes  []string
}

// Cache file format, the pattern of train's 2D input cache, all integers
// little-endian:
//
//	magic      8 bytes  "GMCN3DF\x00"
//	version    uint32   cacheVersion
//	hash       32 bytes SHA-256 of the settings text
//	textLen    uint32   length of the settings text (≤ maxTextLen)
//	text       the fit settings and the data identity
//	classLen   uint32   length of the class names text (≤ maxTextLen)
//	classes    class names, one per line
//	n, K, D    uint32 × 3 (D = 3)
//	mixtures   n·K·13 float32
//	labels     n uint32, each < the number of classes
//	checksum   32 bytes SHA-256 of everything above
const (
	cacheMagic   = "GMCN3DF\x00"
	cacheVersion = 1
	maxTextLen   = 1 << 20
)

// EncodeCache writes in with its settings text in the cache format.
func EncodeCache(w io.Writer, settings string, in *Inputs) error {
	l := in.Layout
	classes := strings.Join(in.Classes, "\n")
	switch {
	case len(settings) > maxTextLen || len(classes) > maxTextLen:
		return errors.Errorf("cache3d: settings or class text longer than %d bytes", maxTextLen)
	case l.C != 1 || l.D != 3 || l.N < 1 || len(in.Mixtures) != l.Len() || len(in.Labels) != l.B:
		return errors.Errorf("cache3d: inputs of layout %v with %d values and %d labels, want [n 1 K 13] with n labels",
			l.Shape(), len(in.Mixtures), len(in.Labels))
	case uint64(l.B) > math.MaxUint32 || uint64(l.N) > math.MaxUint32:
		return errors.Errorf("cache3d: layout %v too large", l.Shape())
	}
	for i, c := range in.Labels {
		if c < 0 || c >= len(in.Classes) {
			return errors.Errorf("cache3d: label %d of shape %d, want 0 to %d", c, i, len(in.Classes)-1)
		}
	}
	le := binary.LittleEndian
	var buf bytes.Buffer
	buf.WriteString(cacheMagic)
	buf.Write(le.AppendUint32(nil, cacheVersion))
	hash := sha256.Sum256([]byte(settings))
	buf.Write(hash[:])
	for _, s := range []string{settings, classes} {
		buf.Write(le.AppendUint32(nil, uint32(len(s))))
		buf.WriteString(s)
	}
	for _, v := range []int{l.B, l.N, l.D} {
		buf.Write(le.AppendUint32(nil, uint32(v)))
	}
	b := buf.AvailableBuffer()
	for _, v := range in.Mixtures {
		b = le.AppendUint32(b, math.Float32bits(v))
	}
	for _, c := range in.Labels {
		b = le.AppendUint32(b, uint32(c))
	}
	buf.Write(b)
	sum := sha256.Sum256(buf.Bytes())
	buf.Write(sum[:])
	_, err := w.Write(buf.Bytes())
	return errors.Wrap(err, "cache3d: writing")
}

// cacheReader decodes the cache format with bounds checks.
type cacheReader struct {
	data []byte
	off  uint64
}

func (r *cacheReader) bytes(n uint64, what string) ([]byte, error) {
	if uint64(len(r.data))-r.off < n {
		return nil, errors.Errorf("cache3d: truncated at byte %d: %s needs %d bytes, %d left", r.off, what, n, uint64(len(r.data))-r.off)
	}
	b := r.data[r.off : r.off+n]
	r.off += n
	return b, nil
}

func (r *cacheReader) uint32(what string) (uint64, error) {
	b, err := r.bytes(4, what)
	if err != nil {
		return 0, err
	}
	return uint64(binary.LittleEndian.Uint32(b)), nil
}

func (r *cacheReader) text(what string) (string, error) {
	n, err := r.uint32(what + " length")
	if err != nil {
		return "", err
	}
	if n > maxTextLen {
		return "", errors.Errorf("cache3d: %s of %d bytes, at most %d", what, n, maxTextLen)
	}
	b, err := r.bytes(n, what)
	return string(b), err
}

// DecodeCache decodes a cache file's content and returns its settings text
// and inputs. Every part is checked: magic, version, settings hash, sizes
// against the data length, the checksum, the labels and the mixtures
// themselves (finite, symmetric positive-definite covariances).
func DecodeCache(data []byte) (string, *Inputs, error) {
	r := &cacheReader{data: data}
	magic, err := r.bytes(8, "magic")
	if err != nil {
		return "", nil, err
	}
	if string(magic) != cacheMagic {
		return "", nil, errors.Errorf("cache3d: bad magic %q, want %q (not a gmcn 3D input cache)", magic, cacheMagic)
	}
	if v, err := r.uint32("version"); err != nil {
		return "", nil, err
	} else if v != cacheVersion {
		return "", nil, errors.Errorf("cache3d: format version %d, this code reads version %d", v, cacheVersion)
	}
	hash, err := r.bytes(sha256.Size, "settings hash")
	if err != nil {
		return "", nil, err
	}
	settings, err := r.text("settings text")
	if err != nil {
		return "", nil, err
	}
	if h := sha256.Sum256([]byte(settings)); !bytes.Equal(h[:], hash) {
		return "", nil, errors.New("cache3d: settings hash does not match the settings text")
	}
	classes, err := r.text("class names")
	if err != nil {
		return "", nil, err
	}
	var sizes [3]uint64
	for i := range sizes {
		if sizes[i], err = r.uint32("sizes"); err != nil {
			return "", nil, err
		}
	}
	n, k, d := sizes[0], sizes[1], sizes[2]
	if k < 1 || d != 3 || classes == "" {
		return "", nil, errors.Errorf("cache3d: sizes n=%d K=%d D=%d with %d bytes of class names, want K ≥ 1, D = 3 and classes", n, k, d, len(classes))
	}
	// n, k < 2³² so these sizes cannot overflow uint64.
	values := n * k * stride
	if want := r.off + 4*values + 4*n + sha256.Size; uint64(len(data)) != want {
		return "", nil, errors.Errorf("cache3d: %d bytes, sizes n=%d K=%d need %d (truncated or trailing data)", len(data), n, k, want)
	}
	body := data[:len(data)-sha256.Size]
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], data[len(body):]) {
		return "", nil, errors.New("cache3d: checksum mismatch: the file is corrupt")
	}
	in := &Inputs{Layout: FitLayout(int(n), int(k)), Mixtures: make([]float32, values), Labels: make([]int, n),
		Classes: strings.Split(classes, "\n")}
	le := binary.LittleEndian
	for i := range in.Mixtures {
		in.Mixtures[i] = math.Float32frombits(le.Uint32(data[r.off+4*uint64(i):]))
	}
	r.off += 4 * values
	for i := range in.Labels {
		c := le.Uint32(data[r.off+4*uint64(i):])
		if uint64(c) >= uint64(len(in.Classes)) {
			return "", nil, errors.Errorf("cache3d: label %d of shape %d, want 0 to %d", c, i, len(in.Classes)-1)
		}
		in.Labels[i] = int(c)
	}
	if err := mixture.Validate(in.Mixtures, in.Layout); err != nil {
		return "", nil, errors.Wrap(err, "cache3d: invalid mixture")
	}
	return settings, in, nil
}

// ReadCache reads and decodes the cache file at path; errors name the file.
func ReadCache(path string) (string, *Inputs, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", nil, errors.Wrap(err, "cache3d")
	}
	settings, in, err := DecodeCache(data)
	if err != nil {
		return "", nil, errors.Wrapf(err, "%s", path)
	}
	return settings, in, nil
}

// WriteCache writes in to path atomically (temporary file in the same
// folder, synced, renamed over path), creating the folder if needed.
func WriteCache(path, settings string, in *Inputs) error {
	var buf bytes.Buffer
	if err := EncodeCache(&buf, settings, in); err != nil {
		return errors.Wrapf(err, "%s", path)
	}
	return errors.Wrap(atomicfile.Write(path, buf.Bytes()), "cache3d")
}

// CacheSettings returns the identity of a fit of one split: the settings of
// cfg and the data (layout, variant, classes, and a SHA-256 over every
// shape's path relative to the root, label, size and modification time), so
// that a change of either invalidates a cache. File contents are not hashed:
// reading a whole data set at every start would cost more than the check is
// worth; an edit that keeps size and modification time goes unnoticed.
func CacheSettings(cfg FitConfig, ds *ModelNet, split string, s Split) (string, error) {
	h := sha256.New()
	for i, p := range s.Paths {
		st, err := os.Stat(p)
		if err != nil {
			return "", errors.Wrap(err, "cache3d")
		}
		rel, err := filepath.Rel(ds.Root, p)
		if err != nil {
			rel = p
		}
		fmt.Fprintf(h, "%s\x00%d\x00%d\x00%d\n", rel, s.Labels[i], st.Size(), st.ModTime().UnixNano())
	}
	return fmt.Sprintf("%s\ndata=%s layout=%v split=%s n=%d classes=%s files=%x",
		cfg, ds.Name, ds.Format, split, len(s.Paths), strings.Join(ds.Classes, ","), h.Sum(nil)), nil
}

// CacheFile returns the cache file name of a split fitted with cfg inside
// dir; the settings inside the file decide whether it is reused.
func CacheFile(dir string, ds *ModelNet, split string, cfg FitConfig) string {
	return filepath.Join(dir, fmt.Sprintf("%s-%s-%s-K%d-p%d-s%d.gmcn3d", ds.Name, split, cfg.Method, cfg.K, cfg.Points, cfg.Seed))
}

// LoadOrFit returns the fitted inputs of one split ("train" or "test") of
// ds: from the cache file in cacheDir if it holds exactly this fit,
// otherwise fitted anew (FitShapes, reporting to progress) and written there
// atomically. Why a cache is not used (missing, corrupt, other format
// version, other settings or data) is written to log, as is the refit;
// nothing is reused silently. A nil log discards the messages; a nil
// progress is allowed.
func LoadOrFit(ds *ModelNet, split string, cfg FitConfig, cacheDir string, progress Progress, log io.Writer) (*Inputs, error) {
	if log == nil {
		log = io.Discard
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var s Split
	switch split {
	case "train":
		s = ds.Train
	case "test":
		s = ds.Test
	default:
		return nil, errors.Errorf("modelnet: split %q, want train or test", split)
	}
	settings, err := CacheSettings(cfg, ds, split, s)
	if err != nil {
		return nil, err
	}
	file := CacheFile(cacheDir, ds, split, cfg)
	have, in, err := ReadCache(file)
	switch {
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintf(log, "shapes: no input cache %s; fitting %d %s %s shapes\n", file, len(s.Paths), ds.Name, split)
	case err != nil:
		fmt.Fprintf(log, "shapes: input cache unusable, refitting (the file is replaced): %v\n", err)
	case have != settings:
		fmt.Fprintf(log, "shapes: input cache %s was built for other settings or data, refitting\n  cached: %s\n  wanted: %s\n",
			file, oneLine(have), oneLine(settings))
	default:
		return in, nil
	}
	mix, l, err := FitShapes(s.Paths, cfg, progress)
	if p, ok := progress.(interface{ Finish() }); ok {
		p.Finish()
	}
	if err != nil {
		return nil, err
	}
	in = &Inputs{Layout: l, Mixtures: mix, Labels: s.Labels, Classes: ds.Classes}
	if err := WriteCache(file, settings, in); err != nil {
		return nil, errors.Wrapf(err, "modelnet: fitted %d shapes but could not write the cache", len(s.Paths))
	}
	fmt.Fprintf(log, "shapes: wrote input cache %s\n", file)
	return in, nil
}

// LoadModelNet opens the ModelNet copy at root (either layout, see
// OpenModelNet) and returns the fitted train and test inputs, cached in
// cacheDir (LoadOrFit). newProgress, if not nil, is called once per split
// that has to be fitted, with a label and the number of shapes; pass e.g.
// func(l string, n int) shapes.Progress { return train.NewProgress(os.Stderr, l, n) }.
func LoadModelNet(root, name string, cfg FitConfig, cacheDir string, newProgress func(label string, total int) Progress, log io.Writer) (trainSet, testSet *Inputs, err error) {
	ds, err := OpenModelNet(root, name)
	if err != nil {
		return nil, nil, err
	}
	out := [2]*Inputs{}
	for i, split := range []string{"train", "test"} {
		var p Progress
		if newProgress != nil {
			n := len(ds.Train.Paths)
			if split == "test" {
				n = len(ds.Test.Paths)
			}
			label := "fit " + ds.Name + " " + split
			p = &lazyBar{make: func() Progress { return newProgress(label, n) }}
		}
		if out[i], err = LoadOrFit(ds, split, cfg, cacheDir, p, log); err != nil {
			return nil, nil, err
		}
	}
	return out[0], out[1], nil
}

// lazyBar creates its progress bar on the first Add, so that a split
// served from the cache draws nothing.
type lazyBar struct {
	once sync.Once
	make func() Progress
	p    Progress
}

// Add creates the bar if needed and passes n on; it is called from several
// goroutines.
func (b *lazyBar) Add(n int) {
	b.once.Do(func() { b.p = b.make() })
	if b.p != nil {
		b.p.Add(n)
	}
}

// Finish finishes the bar if it was created and can be finished; it is
// called after the parallel fit has returned.
func (b *lazyBar) Finish() {
	if f, ok := b.p.(interface{ Finish() }); ok {
		f.Finish()
	}
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", "; ") }
