package report

import (
	"math"
	"slices"
	"strconv"
	"testing"
)

// TestTicks checks the labels of a table of ranges, including the ones
// gonum/plot's default ticker mislabels (1.85 shown as "1.9", 2.25 as "2.2"),
// and that every label reads back as exactly its tick's value.
func TestTicks(t *testing.T) {
	for _, c := range []struct {
		min, max float64
		ticks    Ticks
		want     []string
	}{
		{1.8, 1.9, Ticks{N: 3}, []string{"1.80", "1.85", "1.90"}},
		{1.83, 1.87, Ticks{N: 3}, []string{"1.84", "1.86"}},
		{2.2, 2.3, Ticks{N: 3}, []string{"2.20", "2.25", "2.30"}},
		{2.21, 2.29, Ticks{N: 3}, []string{"2.25"}},
		{0, 1, Ticks{}, []string{"0", "0.2", "0.4", "0.6", "0.8", "1.0"}},
		{0, 100, Ticks{}, []string{"0", "20", "40", "60", "80", "100"}},
		{93.85, 96.45, Ticks{}, []string{"94.0", "94.5", "95.0", "95.5", "96.0"}},
		{-0.3, 0.3, Ticks{N: 7}, []string{"-0.3", "-0.2", "-0.1", "0", "0.1", "0.2", "0.3"}},
		{0.0001, 0.01, Ticks{N: 3}, []string{"0.005", "0.010"}},
		{1e-5, 3e-5, Ticks{N: 3}, []string{"0.00001", "0.00002", "0.00003"}},
		{1, 3, Ticks{}, []string{"1.0", "1.5", "2.0", "2.5", "3.0"}},
		{1, 3, Ticks{Integer: true}, []string{"1", "2", "3"}},
		{0, 1, Ticks{Integer: true}, []string{"0", "1"}},
		{0, 80, Ticks{Integer: true}, []string{"0", "20", "40", "60", "80"}},
		{0.5, 0.9, Ticks{Integer: true}, nil},
		{2, 2, Ticks{}, nil},
		{3, 2, Ticks{}, nil},
		{math.NaN(), 1, Ticks{}, nil},
		{0, math.Inf(1), Ticks{}, nil},
		{1e20, 1e20 + 1e6, Ticks{N: 2}, []string{"100000000000000000000", "100000000000001000000"}},
	} {
		got := c.ticks.Ticks(c.min, c.max)
		var labels []string
		for _, tk := range got {
			labels = append(labels, tk.Label)
			if v, err := strconv.ParseFloat(tk.Label, 64); err != nil || v != tk.Value {
				t.Errorf("%+v on [%g, %g]: tick %g labelled %q", c.ticks, c.min, c.max, tk.Value, tk.Label)
			}
			if tk.Value < c.min-1e-9 || tk.Value > c.max+1e-9 {
				t.Errorf("%+v on [%g, %g]: tick %q outside the range", c.ticks, c.min, c.max, tk.Label)
			}
		}
		if !slices.Equal(labels, c.want) {
			t.Errorf("%+v on [%g, %g]: labels %q, want %q", c.ticks, c.min, c.max, labels, c.want)
		}
	}
}

// TestTicksRange checks that an axis widened by Range starts and ends on
// ticks and still holds the data.
func TestTicksRange(t *testing.T) {
	for _, c := range []struct {
		min, max, lo, hi float64
		ticks            Ticks
	}{
		{93.85, 96.45, 93, 97, Ticks{}}, // 93.5–96.5 would need 7 ticks of 0.5
		{0.1438, 0.29, 0.1, 0.3, Ticks{}},
		{0.1438, 0.29, 0.14, 0.3, Ticks{N: 10}},
		{1.85, 1.85, 1.85, 1.85, Ticks{}},
		{0.2, 3.7, 0, 4, Ticks{Integer: true}},
		{0.578, 1.12, 0.4, 1.2, Ticks{}}, // 0.5–1.2 would be labelled from 0.6 only
	} {
		lo, hi := c.ticks.Range(c.min, c.max)
		if math.Abs(lo-c.lo) > 1e-12 || math.Abs(hi-c.hi) > 1e-12 {
			t.Errorf("%+v.Range(%g, %g) = %g, %g, want %g, %g", c.ticks, c.min, c.max, lo, hi, c.lo, c.hi)
		}
		if ticks := c.ticks.Ticks(lo, hi); lo < hi && (ticks[0].Value != lo || ticks[len(ticks)-1].Value != hi) {
			t.Errorf("%+v.Range(%g, %g) = %g, %g, whose ticks are %v", c.ticks, c.min, c.max, lo, hi, ticks)
		}
	}
}
