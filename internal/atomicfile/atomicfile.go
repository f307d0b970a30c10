// Package atomicfile writes files so that readers see either the old or the
// complete new content, never a partial file.
package atomicfile

import (
	"bufio"
	"io"
	"os"
	"path/filepath"

	"github.com/pkg/errors"
)

// Write writes data to a temporary file beside path, syncs it and
// renames it over path, so a reader never sees a half-written file and an
// interrupted write leaves the old file intact.
func Write(path string, data []byte) error {
	return WriteFunc(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteFunc is Write for content that is produced by write rather than held
// in memory: write streams it into the temporary file, and an error from
// write leaves path untouched.
func WriteFunc(path string, write func(w io.Writer) error) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return errors.Wrapf(err, "creating directory %s", dir)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return errors.Wrapf(err, "creating a temporary file for %s", path)
	}
	tmp := f.Name()
	bw := bufio.NewWriter(f)
	werr := write(bw)
	if werr == nil {
		werr = bw.Flush()
	}
	// CreateTemp makes the file 0600; a data file should be as readable as
	// one written by os.WriteFile.
	merr := f.Chmod(0o644)
	serr := f.Sync()
	cerr := f.Close()
	if err := firstError(werr, merr, serr, cerr); err != nil {
		os.Remove(tmp)
		return errors.Wrapf(err, "writing %s", path)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return errors.Wrapf(err, "renaming %s to %s", tmp, path)
	}
	return nil
}

func firstError(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
