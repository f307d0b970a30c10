package report

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Redraw policy of Progress: on a terminal the line is redrawn in place at
// most every termInterval; elsewhere (logs, pipes) a new line is written at
// every tenth of the total and at least every plainInterval, so logs stay
// short but a slow run still shows signs of life.
const (
	termInterval  = 100 * time.Millisecond
	plainInterval = 30 * time.Second
	barWidth      = 20
)

// Progress is a progress bar on an io.Writer: percentage, counts, items per
// second, estimated time left and optional extra fields (loss, accuracy, …).
// On a terminal it redraws one line in place with a carriage return;
// otherwise it writes plain lines. It is safe for concurrent use, and a nil
// *Progress does nothing, so callers may pass nil for silence.
type Progress struct {
	mu       sync.Mutex
	w        io.Writer
	label    string
	total    int
	done     int
	skipped  int // items of done finished before this bar started, kept out of the rate
	terminal bool
	now      func() time.Time
	start    time.Time
	last     time.Time // time of the last output
	lastTick int       // tenth of total at the last plain line
	width    int       // length of the last terminal line, to blank it
	shown    int       // done at the last output
	stale    bool      // fields changed since the last output
	keys     []string
	values   map[string]string
	finished bool
}

// NewProgress returns a progress bar for total items labelled label, writing
// to w. Whether w is a terminal decides between in-place redraws and plain
// lines.
func NewProgress(w io.Writer, label string, total int) *Progress {
	return newProgress(w, label, total, isTerminal(w), time.Now)
}

func newProgress(w io.Writer, label string, total int, terminal bool, now func() time.Time) *Progress {
	t := now()
	return &Progress{w: w, label: label, total: max(total, 0), terminal: terminal, now: now, start: t, last: t,
		values: make(map[string]string)}
}

// isTerminal reports whether w is a character device such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Add records n more finished items and redraws if it is time to.
func (p *Progress) Add(n int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	now := p.now()
	if p.terminal {
		if now.Sub(p.last) >= termInterval || p.done >= p.total {
			p.draw(now)
		}
		return
	}
	tick := 0
	if p.total > 0 {
		tick = 10 * min(p.done, p.total) / p.total
	}
	if tick > p.lastTick || now.Sub(p.last) >= plainInterval {
		p.lastTick = tick
		p.draw(now)
	}
}

// Skip records n items finished before this bar started, such as the
// batches a resumed run did before it was interrupted: they fill the bar and
// shorten the time left, but the rate counts only the items added since the
// bar started. It draws nothing; the next Add does.
func (p *Progress) Skip(n int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	p.skipped += n
}

// Done returns the number of items finished so far, skipped ones included;
// 0 for a nil *Progress.
func (p *Progress) Done() int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// Set sets the extra field key to value, shown after the rate in the order
// the keys were first set; floats are shown with 4 significant digits. It
// takes effect at the next redraw.
func (p *Progress) Set(key string, value any) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.values[key]; !ok {
		p.keys = append(p.keys, key)
	}
	p.stale = true
	switch v := value.(type) {
	case float64, float32:
		p.values[key] = fmt.Sprintf("%.4g", v)
	default:
		p.values[key] = fmt.Sprint(v)
	}
}

// Finish draws the final state with the total elapsed time and ends the
// line; in plain mode it writes no line if the last one already shows the
// final state. Later calls do nothing.
func (p *Progress) Finish() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return
	}
	p.finished = true
	if p.terminal {
		p.draw(p.now())
		fmt.Fprintln(p.w)
		return
	}
	if p.last == p.start || p.shown != p.done || p.stale {
		p.draw(p.now())
	}
}

// draw writes the current state; the caller holds p.mu. Write errors are
// ignored: a broken progress display must not stop the work it reports on.
func (p *Progress) draw(now time.Time) {
	p.last, p.shown, p.stale = now, p.done, false
	line := p.line(now)
	if !p.terminal {
		fmt.Fprintln(p.w, line)
		return
	}
	pad := max(p.width-len(line), 0)
	p.width = len(line)
	fmt.Fprintf(p.w, "\r%s%s", line, strings.Repeat(" ", pad))
}

// line formats "label [####......]  42.0% 420/1000 | 12.3 it/s | ETA 47s | loss=0.25".
func (p *Progress) line(now time.Time) string {
	var b strings.Builder
	frac := 1.0
	if p.total > 0 {
		frac = min(float64(p.done)/float64(p.total), 1)
	}
	filled := int(frac * barWidth)
	fmt.Fprintf(&b, "%s [%s%s] %5.1f%% %d/%d", p.label, strings.Repeat("#", filled), strings.Repeat(".", barWidth-filled),
		100*frac, p.done, p.total)
	elapsed := now.Sub(p.start)
	if ran := p.done - p.skipped; ran > 0 && elapsed > 0 {
		rate := float64(ran) / elapsed.Seconds()
		fmt.Fprintf(&b, " | %.1f it/s", rate)
		if p.finished || p.done >= p.total {
			fmt.Fprintf(&b, " | took %s", roundDuration(elapsed))
		} else {
			left := time.Duration(float64(p.total-p.done) / rate * float64(time.Second))
			fmt.Fprintf(&b, " | ETA %s", roundDuration(left))
		}
	} else {
		b.WriteString(" | - it/s | ETA ?")
	}
	if len(p.keys) > 0 {
		b.WriteString(" |")
		for _, k := range p.keys {
			fmt.Fprintf(&b, " %s=%s", k, p.values[k])
		}
	}
	return b.String()
}

// roundDuration rounds to whole seconds, or to 0.1 s below 10 s, so that
// short times stay informative and long ones short.
func roundDuration(d time.Duration) time.Duration {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}
