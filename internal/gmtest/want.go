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

// WantClose fails t unless got and want have the same length and
// RelErr(got, want) ≤ tol; a NaN in got fails, so an element a kernel never
// wrote (a NaN-poisoned buffer) cannot pass.
func WantClose[A, B Float](t testing.TB, what string, got []A, want []B, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
		return // Fatalf of a recording TB does not stop the goroutine
	}
	if e := RelErr(got, want); !(e <= tol) {
		t.Errorf("%s: differs by %.3g relative to max|want| = %.3g, want ≤ %.3g", what, e, MaxAbs(want), tol)
	}
}
