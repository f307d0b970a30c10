package cpu

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/internal/lanegen"
)

// TestLanesGenerated checks that every eight-lane file that lanes.go
// generates is what internal/lanegen makes of its sixteen-lane source now:
// an edit of a source without `go generate ./ops/cpu`, or an edit of a
// generated file, fails here.
func TestLanesGenerated(t *testing.T) {
	directives, err := os.ReadFile("lanes.go")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.Lines(string(directives)) {
		f := strings.Fields(line)
		if len(f) != 6 || f[0] != "//go:generate" || !strings.HasSuffix(f[3], "/lanegen") {
			continue
		}
		n++
		src, err := os.ReadFile(f[4])
		if err != nil {
			t.Fatal(err)
		}
		want, err := lanegen.Narrow(src, f[4])
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(f[5])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what internal/lanegen makes of %s: run go generate ./ops/cpu", f[5], f[4])
		}
	}
	if n == 0 {
		t.Fatal("lanes.go has no lanegen directive")
	}
}
