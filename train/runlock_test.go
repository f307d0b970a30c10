package train

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/runspec"
)

// TestLockRun checks that a run directory held by one lock refuses a second
// one with an error naming the holder, that a lock file nobody holds (left
// by a killed process) is taken over, that releasing removes the lock file
// and a directory the lock created, and the errors for a path that cannot
// be a run directory.
func TestLockRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	l, err := LockRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = LockRun(dir)
	if !errors.Is(err, ErrRunInUse) {
		t.Fatalf("second lock: %v, want ErrRunInUse", err)
	}
	gmtest.WantErr(t, err, dir, "is being written by gmcn (pid", "wait for it to finish or stop it")
	if err := os.WriteFile(filepath.Join(dir, runspec.ConfigFile), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, LockFile)); !os.IsNotExist(err) {
		t.Errorf("the lock file is still there after Release (%v)", err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("Release removed a directory holding a run: %v", err)
	}

	// A stale lock file: written, not held.
	if err := os.WriteFile(filepath.Join(dir, LockFile), []byte("gmcn (pid 1 on nowhere, since long ago)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err = LockRun(dir)
	if err != nil {
		t.Fatalf("a stale lock file was not taken over: %v", err)
	}
	l.Release()

	fresh := filepath.Join(t.TempDir(), "a", "b")
	l, err = LockRun(fresh)
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("Release left the empty directory it created (%v)", err)
	}

	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = LockRun(file)
	gmtest.WantErr(t, err, file, "is a file, not a run directory")
	_, err = LockRun(filepath.Join(file, "sub"))
	gmtest.WantErr(t, err, "creating the run directory", "sub")
}
