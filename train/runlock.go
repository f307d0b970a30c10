package train

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/pkg/errors"
)

// LockFile is the file in a run directory that a process holding the run
// keeps locked (LockRun).
const LockFile = ".gmcn.lock"

// RunLock is a run directory held by this process; Release gives it up.
type RunLock struct {
	mu      sync.Mutex // Release may be called from a signal handler's goroutine
	dir     string
	f       *os.File
	created bool // the directory did not exist before LockRun
}

// ErrRunInUse is wrapped by LockRun's error when another process holds the
// run directory.
var ErrRunInUse = errors.New("run directory in use")

// LockRun holds the run directory dir for this process, creating it if
// needed, so that two processes never write into one run: the second one's
// LockRun fails with an error wrapping ErrRunInUse that names the holder.
// The lock is the operating system's lock on LockFile (flock on Unix), which
// dies with its process: a lock file left by a killed process is stale and
// taken over. Where the directory cannot be created or written, the error
// says so before any work is done.
func LockRun(dir string) (*RunLock, error) {
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return nil, errors.Errorf("%s is a file, not a run directory", dir)
	}
	_, statErr := os.Stat(dir)
	created := os.IsNotExist(statErr)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, errors.Wrapf(err, "creating the run directory %s", dir)
	}
	l := &RunLock{dir: dir, created: created}
	path := filepath.Join(dir, LockFile)
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			l.removeDir()
			return nil, errors.Wrapf(err, "the run directory %s is not writable", dir)
		}
		held, err := tryLock(f)
		if err != nil {
			f.Close()
			l.removeDir()
			return nil, errors.Wrapf(err, "locking %s", path)
		}
		if !held {
			holder, _ := os.ReadFile(path)
			f.Close()
			who := strings.TrimSpace(string(holder))
			if who == "" {
				who = "another process"
			}
			return nil, fmt.Errorf("%s is being written by %s; wait for it to finish or stop it (%w)", dir, who, ErrRunInUse)
		}
		// A holder that released and removed the file between our open
		// and our lock leaves us holding a file no longer in the directory.
		if same, err := samePath(f, path); err != nil || !same {
			unlock(f)
			f.Close()
			continue
		}
		l.f = f
		break
	}
	host, _ := os.Hostname()
	desc := fmt.Sprintf("gmcn (pid %d on %s, since %s)\n", os.Getpid(), host, time.Now().Format(time.DateTime))
	if err := l.f.Truncate(0); err == nil {
		l.f.WriteAt([]byte(desc), 0) // for the message of a process refused; the lock holds without it
	}
	return l, nil
}

// samePath reports whether f is still the file at path.
func samePath(f *os.File, path string) (bool, error) {
	a, err := f.Stat()
	if err != nil {
		return false, err
	}
	b, err := os.Stat(path)
	if err != nil {
		return false, nil
	}
	return os.SameFile(a, b), nil
}

// Release removes the lock file, unlocks it and, if LockRun created the
// directory and nothing else was written into it, removes the directory,
// so that a command that fails before writing leaves no trace.
func (l *RunLock) Release() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := os.Remove(filepath.Join(l.dir, LockFile))
	unlock(l.f)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	l.removeDir()
	return errors.Wrapf(err, "releasing %s", l.dir)
}

// removeDir removes the directory LockRun created if it is empty.
func (l *RunLock) removeDir() {
	if l.created {
		os.Remove(l.dir) // fails, as it should, when something was written
	}
}
