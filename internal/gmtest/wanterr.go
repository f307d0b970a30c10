package gmtest

import (
	"strings"
	"testing"
)

// WantErr fails t unless err is non-nil and its message contains every one
// of want. A nil error stops the test (what follows usually needs the
// error); each missing substring is reported.
func WantErr(t testing.TB, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", want)
		return // Fatalf of a recording TB does not stop the goroutine
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}
