package report

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock that tests move by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newFakeClock() *fakeClock               { return &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }
func fixedClock() func() time.Time           { return newFakeClock().now }
func lines(s string) []string                { return strings.Split(strings.TrimSuffix(s, "\n"), "\n") }
func lastDraw(s string) string               { return s[strings.LastIndex(s, "\r")+1:] }
func countRune(s string, r byte) (n int) {
	for i := range len(s) {
		if s[i] == r {
			n++
		}
	}
	return n
}

func TestProgressPlain(t *testing.T) {
	var out bytes.Buffer
	clock := newFakeClock()
	p := newProgress(&out, "fit", 100, false, clock.now)
	p.Set("loss", 0.123456)
	p.Set("acc", "97%")
	p.Set("loss", 0.5)
	for range 100 {
		clock.advance(100 * time.Millisecond)
		p.Add(1)
	}
	p.Finish() // the 100% line is already out: nothing to add
	if n := len(lines(out.String())); n != 10 {
		t.Fatalf("%d lines, want one per tenth:\n%s", n, out.String())
	}
	p = newProgress(&out, "fit", 100, false, clock.now)
	p.Set("loss", 0.5)
	p.Add(100)
	p.Set("acc", "98%")
	clock.advance(time.Second)
	p.Finish() // a field changed: the final line shows it
	p.Finish()
	got := lines(out.String())
	if len(got) != 12 {
		t.Fatalf("%d lines, want 10 + 2:\n%s", len(got), out.String())
	}
	for i, want := range map[int]string{
		0:  "fit [##..................]  10.0% 10/100 | 10.0 it/s | ETA 9s | loss=0.5 acc=97%",
		4:  "fit [##########..........]  50.0% 50/100 | 10.0 it/s | ETA 5s | loss=0.5 acc=97%",
		9:  "fit [####################] 100.0% 100/100 | 10.0 it/s | took 10s | loss=0.5 acc=97%",
		11: "fit [####################] 100.0% 100/100 | 100.0 it/s | took 1s | loss=0.5 acc=98%",
	} {
		if got[i] != want {
			t.Errorf("line %d:\n got %q\nwant %q", i, got[i], want)
		}
	}
	if strings.Contains(out.String(), "\r") {
		t.Error("plain output contains carriage returns")
	}
}

// TestProgressPlainSlow checks that a slow run still writes a line every
// plainInterval between tenths.
func TestProgressPlainSlow(t *testing.T) {
	var out bytes.Buffer
	clock := newFakeClock()
	p := newProgress(&out, "epoch 1", 1000, false, clock.now)
	p.Add(0)
	if out.Len() != 0 {
		t.Fatalf("output before any interval: %q", out.String())
	}
	clock.advance(plainInterval)
	p.Add(1)
	if got := lines(out.String()); len(got) != 1 || got[0] != "epoch 1 [....................]   0.1% 1/1000 | 0.0 it/s | ETA 8h19m30s" {
		t.Fatalf("got %q", out.String())
	}
}

func TestProgressTerminal(t *testing.T) {
	var out bytes.Buffer
	clock := newFakeClock()
	p := newProgress(&out, "fit", 10, true, clock.now)
	p.Set("loss", "a long value")
	clock.advance(50 * time.Millisecond)
	p.Add(1) // too soon after the start: no redraw
	if out.Len() != 0 {
		t.Fatalf("redrawn after 50ms: %q", out.String())
	}
	clock.advance(50 * time.Millisecond)
	p.Add(1)
	first := lastDraw(out.String())
	if !strings.HasPrefix(out.String(), "\r") || first != "fit [####................]  20.0% 2/10 | 20.0 it/s | ETA 400ms | loss=a long value" {
		t.Fatalf("first draw %q", out.String())
	}
	p.Set("loss", "x")
	clock.advance(time.Second)
	p.Add(8)
	second := lastDraw(out.String())
	if len(second) != len(first) || strings.TrimRight(second, " ") != "fit [####################] 100.0% 10/10 | 9.1 it/s | took 1.1s | loss=x" {
		t.Errorf("shorter line not blanked: %q after %q", second, first)
	}
	p.Finish()
	if !strings.HasSuffix(out.String(), "\n") || countRune(out.String(), '\n') != 1 {
		t.Errorf("Finish does not end the line once: %q", out.String())
	}
}

func TestProgressZeroTotalAndNil(t *testing.T) {
	var out bytes.Buffer
	p := newProgress(&out, "empty", 0, false, fixedClock())
	p.Finish()
	if got := out.String(); got != "empty [####################] 100.0% 0/0 | - it/s | ETA ?\n" {
		t.Errorf("got %q", got)
	}
	var nilP *Progress
	nilP.Add(1)
	nilP.Set("k", 1)
	nilP.Finish()
	if nilP.Done() != 0 {
		t.Errorf("nil Progress: Done() = %d, want 0", nilP.Done())
	}
	if NewProgress(&out, "x", 1).terminal {
		t.Error("a buffer is not a terminal")
	}
}

// TestProgressConcurrent adds from several goroutines (run with -race).
func TestProgressConcurrent(t *testing.T) {
	p := NewProgress(io.Discard, "fit", 4000)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 1000 {
				p.Add(1)
			}
			p.Set("k", 1.5)
		})
	}
	wg.Wait()
	p.Finish()
	if p.Done() != 4000 {
		t.Errorf("Done() = %d, want 4000", p.Done())
	}
}

// TestProgressSkip starts bars at 600 of 1000 items, as a resumed epoch
// does: the skipped items fill the bar but the rate and the time left count
// only the items of this bar, so a resume does not show an absurd rate.
func TestProgressSkip(t *testing.T) {
	for _, c := range []struct {
		name     string
		terminal bool
		add      int
		want     string
	}{
		{"plain", false, 100, "resumed [##############......]  70.0% 700/1000 | 50.0 it/s | ETA 6s"},
		{"terminal", true, 100, "resumed [##############......]  70.0% 700/1000 | 50.0 it/s | ETA 6s"},
		{"nothing added", false, 0, "resumed [############........]  60.0% 600/1000 | - it/s | ETA ?"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			clock := newFakeClock()
			p := newProgress(&out, "resumed", 1000, c.terminal, clock.now)
			p.Skip(600)
			if out.Len() != 0 {
				t.Fatalf("Skip drew %q", out.String())
			}
			clock.advance(2 * time.Second)
			p.Add(c.add)
			if c.add == 0 {
				p.Finish()
			}
			if got := strings.TrimSuffix(lastDraw(out.String()), "\n"); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
			if p.Done() != 600+c.add {
				t.Errorf("Done() = %d, want %d", p.Done(), 600+c.add)
			}
		})
	}
	var nilP *Progress
	nilP.Skip(3)
}
