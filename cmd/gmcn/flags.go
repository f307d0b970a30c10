package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"
)

// flagSet is a command's flag set that also remembers which group each
// flag was registered in, for the help text.
type flagSet struct {
	*flag.FlagSet
	groups []flagGroup
}

// flagGroup is a titled part of a help text's flag list.
type flagGroup struct {
	title string
	names []string
}

// newFlagSet returns a silent flag set that returns its errors: the caller
// reports them, and writes the help text itself.
func newFlagSet(name string) *flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &flagSet{FlagSet: fs}
}

// group calls register and files the flags it registers under title.
func (f *flagSet) group(title string, register func()) {
	var before []string
	f.VisitAll(func(fl *flag.Flag) { before = append(before, fl.Name) })
	register()
	g := flagGroup{title: title}
	f.VisitAll(func(fl *flag.Flag) {
		if !slices.Contains(before, fl.Name) {
			g.names = append(g.names, fl.Name)
		}
	})
	f.groups = append(f.groups, g)
}

// bounded is a flag value that accepts only numbers in a range, so that a
// value out of range is an error naming the flag at parse time rather than
// a surprise later. NaN is outside every range.
type bounded[T cmp.Ordered] struct {
	p      *T
	lo, hi T
	loOpen bool // the range excludes lo
	parse  func(string) (T, error)
	format func(T) string
}

func (b *bounded[T]) String() string {
	if b.p == nil {
		return ""
	}
	return b.format(*b.p)
}

func (b *bounded[T]) Set(s string) error {
	v, err := b.parse(s)
	if err != nil || !(v >= b.lo && v <= b.hi) || (b.loOpen && v == b.lo) {
		return fmt.Errorf("want %s", b.want())
	}
	*b.p = v
	return nil
}

// want describes the accepted range.
func (b *bounded[T]) want() string {
	open := "["
	if b.loOpen {
		open = "("
	}
	return fmt.Sprintf("a value in %s%s, %s]", open, b.format(b.lo), b.format(b.hi))
}

// intVar registers a flag for an integer in [lo, hi]; *p is the default.
func intVar(f *flagSet, p *int, name string, lo, hi int, usage string) {
	f.Var(&bounded[int]{p: p, lo: lo, hi: hi, parse: strconv.Atoi, format: strconv.Itoa}, name, usage)
}

// floatVar registers a flag for a number in [lo, hi], or (lo, hi] with
// loOpen; *p is the default.
func floatVar(f *flagSet, p *float64, name string, lo, hi float64, loOpen bool, usage string) {
	f.Var(&bounded[float64]{p: p, lo: lo, hi: hi, loOpen: loOpen,
		parse:  func(s string) (float64, error) { return strconv.ParseFloat(s, 64) },
		format: func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }}, name, usage)
}

// seedVar registers a flag for a seed, any integer in [0, 2⁶⁴); *p is the
// default.
func seedVar(f *flagSet, p *uint64, name, usage string) {
	f.Var(&bounded[uint64]{p: p, lo: 0, hi: math.MaxUint64,
		parse:  func(s string) (uint64, error) { return strconv.ParseUint(s, 10, 64) },
		format: func(v uint64) string { return strconv.FormatUint(v, 10) }}, name, usage)
}

// durationVar registers a flag for a duration in [0, 1000 h]; *p is the
// default.
func durationVar(f *flagSet, p *time.Duration, name, usage string) {
	f.Var(&bounded[time.Duration]{p: p, lo: 0, hi: 1000 * time.Hour, parse: time.ParseDuration,
		format: time.Duration.String}, name, usage)
}
