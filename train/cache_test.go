package train

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/gmcn-go/gmcn/train/report"
)

// testInputs returns n valid packed 2D mixtures of K components with labels.
func testInputs(n, k int) *Inputs {
	rng := rand.New(rand.NewPCG(5, uint64(n*100+k)))
	l := FitLayout(n, k)
	in := &Inputs{Layout: l, Mixtures: make([]float32, l.Len()), Labels: make([]uint8, n)}
	for i := 0; i < len(in.Mixtures); i += 7 {
		g := in.Mixtures[i : i+7]
		g[0] = float32(rng.Float64())
		g[1], g[2] = float32(28*rng.Float64()), float32(28*rng.Float64())
		g[3], g[4], g[5], g[6] = 2, 0.5, 0.5, 1
	}
	for i := range in.Labels {
		in.Labels[i] = uint8(rng.IntN(Classes))
	}
	return in
}

func encode(t testing.TB, settings string, in *Inputs) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := EncodeCache(&buf, settings, in); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestCacheRoundTrip(t *testing.T) {
	for _, c := range []struct{ n, k int }{{0, 1}, {1, 1}, {3, 64}} {
		in := testInputs(c.n, c.k)
		settings, got, err := DecodeCache(encode(t, "fit v1: K=64\ndata=x", in))
		if err != nil {
			t.Fatalf("n=%d K=%d: %v", c.n, c.k, err)
		}
		if settings != "fit v1: K=64\ndata=x" || got.Layout != in.Layout || !slices.Equal(got.Mixtures, in.Mixtures) ||
			!slices.Equal(got.Labels, in.Labels) {
			t.Fatalf("n=%d K=%d: round trip differs", c.n, c.k)
		}
	}
}

// TestDecodeCacheCorrupt damages a valid cache in every part and checks that
// each damage is detected with a message saying what is wrong.
func TestDecodeCacheCorrupt(t *testing.T) {
	good := encode(t, "settings", testInputs(2, 3))
	textEnd := cacheHeaderLen + len("settings")
	payload := textEnd + cacheSizesLen
	le := func(off int, v uint32) func([]byte) []byte {
		return func(b []byte) []byte {
			b[off], b[off+1], b[off+2], b[off+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
			return b
		}
	}
	flip := func(off int) func([]byte) []byte {
		return func(b []byte) []byte { b[off] ^= 0x10; return b }
	}
	for _, c := range []struct {
		name   string
		damage func([]byte) []byte
		want   string
	}{
		{"empty", func(b []byte) []byte { return nil }, "truncated"},
		{"magic", flip(0), "bad magic"},
		{"version", le(8, 2), "format version 2, this code reads version 1"},
		{"settings hash", flip(12), "settings hash"},
		{"settings text", flip(cacheHeaderLen + 2), "settings hash"},
		{"settings length", le(12+32, 1<<20), "settings text of"},
		{"settings past end", le(12+32, 1000), "truncated"},
		{"zero K", le(textEnd+4, 0), "K=0"},
		{"3D", le(textEnd+8, 3), "D=3"},
		{"huge n", le(textEnd, math.MaxUint32), "truncated or trailing"},
		{"payload", flip(payload + 5), "checksum mismatch"},
		{"label", flip(len(good) - 33), "checksum mismatch"},
		{"checksum", flip(len(good) - 1), "checksum mismatch"},
		{"truncated", func(b []byte) []byte { return b[:len(b)-1] }, "truncated or trailing"},
		{"trailing", func(b []byte) []byte { return append(b, 0) }, "truncated or trailing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := DecodeCache(c.damage(bytes.Clone(good)))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// TestDecodeCacheInvalidMixture checks that a cache with a correct checksum
// but a non-SPD or NaN mixture is rejected.
func TestDecodeCacheInvalidMixture(t *testing.T) {
	for _, c := range []struct {
		name string
		idx  int
		v    float32
		want string
	}{
		{"NaN", 1, float32(math.NaN()), "non-finite"},
		{"not SPD", 3, -1, "not positive definite"},
	} {
		in := testInputs(2, 2)
		in.Mixtures[7+c.idx] = c.v
		_, _, err := DecodeCache(encode(t, "s", in))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "n=1") {
			t.Errorf("%s: error %v, want one containing %q naming component n=1", c.name, err, c.want)
		}
	}
}

func TestReadCacheNamesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inputs.gmfit")
	write(t, path, []byte("GMCNFIT\x00garbage"))
	if _, _, err := ReadCache(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("error %v does not name %s", err, path)
	}
}

// TestLoadOrFitInputs runs the cache life cycle: fit and write, reuse, and a
// refit with a message for a changed setting, changed data, a corrupt file
// and a missing one; the written file is always valid.
func TestLoadOrFitInputs(t *testing.T) {
	im := syntheticImages(rand.New(rand.NewPCG(9, 9)), 4, 28, 28)
	s := Split{Images: im, Labels: []uint8{1, 2, 3, 4}}
	cfg := smallConfig()
	path := filepath.Join(t.TempDir(), "inputs.gmfit")
	load := func(s Split, cfg FitConfig) (*Inputs, string, int) {
		t.Helper()
		var log bytes.Buffer
		var progress bytes.Buffer
		p := report.NewProgress(&progress, "fit", s.N)
		in, err := LoadOrFitInputs(path, "synthetic", s, cfg, p, &log)
		if err != nil {
			t.Fatal(err)
		}
		return in, log.String(), p.Done()
	}
	first, msg, fitted := load(s, cfg)
	if fitted != 4 || !strings.Contains(msg, "no input cache") || !strings.Contains(msg, "wrote input cache") {
		t.Fatalf("first call: fitted %d, log %q", fitted, msg)
	}
	want, _, err := FitInputs(im, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(first.Mixtures, want) || !slices.Equal(first.Labels, s.Labels) || first.Layout != FitLayout(4, cfg.K) {
		t.Fatal("fitted inputs differ from FitInputs")
	}
	again, msg, fitted := load(s, cfg)
	if fitted != 0 || msg != "" || !slices.Equal(again.Mixtures, want) {
		t.Fatalf("second call: fitted %d, log %q", fitted, msg)
	}

	other := cfg
	other.Seed = 2
	_, msg, fitted = load(s, other)
	if fitted != 4 || !strings.Contains(msg, "other settings") || !strings.Contains(msg, "seed=1") || !strings.Contains(msg, "seed=2") {
		t.Fatalf("changed seed: fitted %d, log %q", fitted, msg)
	}
	changed := s
	changed.Labels = []uint8{1, 2, 3, 5}
	_, msg, fitted = load(changed, other)
	if fitted != 4 || !strings.Contains(msg, "other settings or data") {
		t.Fatalf("changed labels: fitted %d, log %q", fitted, msg)
	}

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 1
	write(t, path, data)
	_, msg, fitted = load(changed, other)
	if fitted != 4 || !strings.Contains(msg, "unusable") || !strings.Contains(msg, path) || !strings.Contains(msg, "checksum") {
		t.Fatalf("corrupt cache: fitted %d, log %q", fitted, msg)
	}
	if _, _, err := ReadCache(path); err != nil {
		t.Fatalf("rewritten cache: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*.tmp*")); len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
}

func TestLoadOrFitInputsErrors(t *testing.T) {
	im := syntheticImages(rand.New(rand.NewPCG(9, 9)), 2, 28, 28)
	s := Split{Images: im, Labels: []uint8{1}}
	if _, err := LoadOrFitInputs(filepath.Join(t.TempDir(), "c"), "x", s, smallConfig(), nil, nil); err == nil ||
		!strings.Contains(err.Error(), "2 images but 1 labels") {
		t.Errorf("label count: error %v", err)
	}
	s.Labels = []uint8{1, 2}
	// A regular file where the cache's folder should be.
	notDir := filepath.Join(t.TempDir(), "file")
	write(t, notDir, nil)
	missing := filepath.Join(notDir, "c")
	if _, err := LoadOrFitInputs(missing, "x", s, smallConfig(), nil, nil); err == nil || !strings.Contains(err.Error(), "could not write the cache "+missing) {
		t.Errorf("unwritable cache: error %v", err)
	}
}

// FuzzDecodeCache checks that no input makes the decoder panic, and that
// whatever it accepts is a valid batch that encodes back to the same bytes.
func FuzzDecodeCache(f *testing.F) {
	f.Add(encode(f, "settings", testInputs(2, 3)))
	f.Add(encode(f, "", testInputs(0, 1)))
	f.Add([]byte(cacheMagic))
	f.Add([]byte("GMCNFIT\x00\x01\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		settings, in, err := DecodeCache(data)
		if err != nil {
			return
		}
		if err := mixture.Validate(in.Mixtures, in.Layout); err != nil || len(in.Labels) != in.Layout.B {
			t.Fatalf("accepted invalid inputs: %v", err)
		}
		if !bytes.Equal(encode(t, settings, in), data) {
			t.Fatal("accepted data does not re-encode identically")
		}
	})
}
