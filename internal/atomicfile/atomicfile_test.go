package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "f.bin")
	for _, content := range []string{"first", "second, longer"} {
		if err := Write(path, []byte(content)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("read back %q, %v; want %q", got, err, content)
		}
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, %v; want 0644", st.Mode(), err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the file (no temporary left)", len(entries))
	}
	if err := Write(filepath.Join(path, "below-a-file"), nil); err == nil {
		t.Error("writing below a regular file succeeded")
	}
}

// TestWriteFuncError checks that a failing producer leaves the old file and
// no temporary file behind.
func TestWriteFuncError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.bin")
	if err := Write(path, []byte("old")); err != nil {
		t.Fatal(err)
	}
	err := WriteFunc(path, func(w io.Writer) error {
		w.Write([]byte("partial"))
		return errors.New("producer failed")
	})
	if err == nil || !strings.Contains(err.Error(), "producer failed") || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %v, want the producer's error naming %s", err, path)
	}
	got, _ := os.ReadFile(path)
	entries, _ := os.ReadDir(filepath.Dir(path))
	if string(got) != "old" || len(entries) != 1 {
		t.Errorf("after a failed write: content %q, %d entries; want the old content and no temporary", got, len(entries))
	}
}
