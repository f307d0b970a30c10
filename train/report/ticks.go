package report

import (
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
)

// Ticks is a plot.Ticker that marks about N round values, 1, 2 or 5 times a
// power of ten apart, and labels each with its exact decimal value. Labels
// are built from the integer multiple of the step rather than formatted from
// a float, so 1.85 is never shown as "1.9" and every label, read back, is
// the tick's value.
type Ticks struct {
	// N is the largest number of ticks wanted; below 2 means 6.
	N int
	// Integer restricts the ticks to whole numbers, for counts and epochs.
	Integer bool
}

// step is a tick spacing mant·10^exp with mant ∈ {1, 2, 5}.
type step struct{ mant, exp int }

func (s step) value() float64 { return float64(s.mant) * math.Pow10(s.exp) }

// Ticks returns the labelled ticks in [min, max]; none where the range is
// empty or not finite.
func (t Ticks) Ticks(min, max float64) []plot.Tick {
	s, ok := t.step(min, max)
	if !ok {
		return nil
	}
	lo, hi := s.span(min, max)
	ticks := make([]plot.Tick, 0, hi-lo+1)
	for k := lo; k <= hi; k++ {
		ticks = append(ticks, s.tick(k))
	}
	return ticks
}

// Range returns an interval holding [min, max] whose ends are ticks of
// itself, so that an axis starts and ends on a labelled value; [min, max]
// where no step fits. Widening can coarsen the step, which moves the ends
// again, so it repeats until they stay.
func (t Ticks) Range(min, max float64) (lo, hi float64) {
	lo, hi = min, max
	for {
		s, ok := t.step(lo, hi)
		if !ok {
			return lo, hi
		}
		v := s.value()
		l, h := s.tick(int(math.Floor(lo/v+1e-9))).Value, s.tick(int(math.Ceil(hi/v-1e-9))).Value
		if l == lo && h == hi {
			return lo, hi
		}
		lo, hi = l, h
	}
}

// step returns the smallest round spacing that puts at most N ticks in
// [min, max], or false for an empty or infinite range.
func (t Ticks) step(min, max float64) (step, bool) {
	if !(max > min) || math.IsInf(max-min, 0) {
		return step{}, false
	}
	n := t.N
	if n < 2 {
		n = 6
	}
	e := int(math.Floor(math.Log10((max - min) / float64(n))))
	for ; ; e++ {
		for _, m := range [...]int{1, 2, 5} {
			s := step{m, e}
			// Too fine a step for the magnitude would overflow the
			// integer multiples (and label nothing readable).
			if t.Integer && s.value() < 1 || math.Max(math.Abs(min), math.Abs(max))/s.value() > 1e15 {
				continue
			}
			if lo, hi := s.span(min, max); hi-lo+1 <= n {
				return s, true
			}
		}
	}
}

// span returns the first and last multiples of s in [min, max]; a relative
// slack of 1e-9 keeps an end that is a multiple up to rounding (1.85/0.05).
func (s step) span(min, max float64) (lo, hi int) {
	v := s.value()
	return int(math.Ceil(min/v - 1e-9)), int(math.Floor(max/v + 1e-9))
}

// tick returns the k-th multiple of s with its label and, as its value,
// the float nearest that decimal.
func (s step) tick(k int) plot.Tick {
	label := s.label(k)
	v, _ := strconv.ParseFloat(label, 64) // a decimal number always parses
	return plot.Tick{Value: v, Label: label}
}

// label writes k·mant·10^exp in decimal with exactly max(0, -exp) decimals.
func (s step) label(k int) string {
	n := k * s.mant
	if n == 0 {
		return "0"
	}
	sign := ""
	if n < 0 {
		sign, n = "-", -n
	}
	digits := strconv.Itoa(n)
	if s.exp >= 0 {
		return sign + digits + strings.Repeat("0", s.exp)
	}
	d := -s.exp
	if len(digits) <= d {
		digits = strings.Repeat("0", d-len(digits)+1) + digits
	}
	return sign + digits[:len(digits)-d] + "." + digits[len(digits)-d:]
}
