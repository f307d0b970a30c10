package dataset

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/pkg/errors"
)

// Loader returns fitted inputs from the cache files in a folder, fitting
// and writing what the folder lacks.
type Loader struct {
	// Dir is the cache folder; it is created when a cache is written.
	Dir string
	// Log receives why a cache is not used (missing, corrupt, another
	// format version, other settings or data) and every refit; nothing is
	// reused silently. Nil discards the messages.
	Log io.Writer
	// NewProgress, if not nil, is called once per split that has to be
	// fitted, with a label and the number of samples, so that a split served
	// from the cache draws no progress bar.
	NewProgress func(label string, total int) Progress
}

// File returns the cache file of split s fitted with cfg. Its name holds
// the split, the main settings, the sample count and the start of the
// data's digest, so that two data sets of one name (two ModelNet folders
// given with --data, say) keep separate caches; the key inside the file
// decides whether it is reused.
func (l Loader) File(s Split, cfg FitConfig) (string, error) {
	digest, err := digestOf(s)
	if err != nil {
		return "", err
	}
	return l.file(s, cfg, digest), nil
}

func (l Loader) file(s Split, cfg FitConfig, digest []byte) string {
	name := strings.ReplaceAll(s.Name(), "/", "-")
	return filepath.Join(l.Dir, fmt.Sprintf("%s-%s-n%d-%x.gmfit", name, cfg.tag(), s.Len(), digest[:6]))
}

func digestOf(s Split) ([]byte, error) {
	digest, err := s.Digest()
	if err != nil {
		return nil, errors.Wrapf(err, "%s: digest of the data", s.Name())
	}
	if len(digest) < 6 {
		return nil, errors.Errorf("%s: the data's digest has %d bytes, want ≥ 6", s.Name(), len(digest))
	}
	return digest, nil
}

// cacheKey returns the cache key of split s with the given digest fitted
// with cfg: every fit setting and the digest of the split's content.
func cacheKey(s Split, cfg FitConfig, digest []byte) string {
	return fmt.Sprintf("%s\ndata: n=%d sha256=%x", cfg, s.Len(), digest)
}

// LoadOrFit returns the inputs of split s, whose labels are below classes,
// fitted with cfg: from the cache file (File) if its key matches,
// otherwise fitted anew and written to the cache file atomically. The key
// is every fit setting and the split's Digest.
func (l Loader) LoadOrFit(s Split, classes int, cfg FitConfig) (*Inputs, error) {
	log := l.Log
	if log == nil {
		log = io.Discard
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	digest, err := digestOf(s)
	if err != nil {
		return nil, err
	}
	key, file := cacheKey(s, cfg, digest), l.file(s, cfg, digest)
	have, in, err := ReadCache(file)
	switch {
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintf(log, "dataset: no input cache %s; fitting %d samples of %s\n", file, s.Len(), s.Name())
		l.reportOld3D(log, s)
	case err != nil:
		fmt.Fprintf(log, "dataset: input cache unusable, refitting (the file is replaced): %v\n", err)
	case have != key:
		fmt.Fprintf(log, "dataset: input cache %s was built for other settings or data, refitting\n  cached: %s\n  wanted: %s\n",
			file, oneLine(have), oneLine(key))
	case in.Classes != classes:
		fmt.Fprintf(log, "dataset: input cache %s has %d classes, the data set %d, refitting\n", file, in.Classes, classes)
	default:
		return in, nil
	}
	var p Progress
	if l.NewProgress != nil {
		p = l.NewProgress("fit "+s.Name(), s.Len())
	}
	mix, err := s.Fit(cfg, p)
	if f, ok := p.(interface{ Finish() }); ok {
		f.Finish()
	}
	if err != nil {
		return nil, err
	}
	in = &Inputs{Layout: FitLayout(s.Len(), cfg.K, cfg.Dim), Mixtures: mix, Labels: s.Labels(), Classes: classes}
	if err := WriteCache(file, key, in); err != nil {
		return nil, errors.Wrapf(err, "%s: fitted %d samples but could not write the cache %s", s.Name(), s.Len(), file)
	}
	fmt.Fprintf(log, "dataset: wrote input cache %s\n", file)
	return in, nil
}

// Load returns the fitted test split of ds and, unless testOnly, its
// training split, each limited with Split.Limit (a limit ≤ 0: all), through
// LoadOrFit. cfg must be of ds's
// dimension.
func (l Loader) Load(ds Dataset, cfg FitConfig, trainLimit, testLimit int, testOnly bool) (trainSet, testSet *Inputs, err error) {
	if cfg.Dim != ds.Dim() {
		return nil, nil, errors.Errorf("%s: a fit config for %dD data, the data set is %dD", ds.Name(), cfg.Dim, ds.Dim())
	}
	classes := len(ds.Classes())
	if !testOnly {
		if trainSet, err = l.LoadOrFit(ds.Train().Limit(trainLimit), classes, cfg); err != nil {
			return nil, nil, err
		}
	}
	testSet, err = l.LoadOrFit(ds.Test().Limit(testLimit), classes, cfg)
	return trainSet, testSet, err
}

// reportOld3D names the 3D caches of s that older gmcn versions wrote
// (*.gmcn3d, a name this code never reads), so that their space can be
// reclaimed.
func (l Loader) reportOld3D(log io.Writer, s Split) {
	old, _ := filepath.Glob(filepath.Join(l.Dir, strings.ReplaceAll(s.Name(), "/", "-")+"-*.gmcn3d"))
	for _, f := range old {
		fmt.Fprintf(log, "dataset: %s is an input cache of an older gmcn version, no longer read; it can be deleted\n", f)
	}
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", "; ") }
