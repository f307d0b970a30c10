package main

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"

	"github.com/gmcn-go/gmcn/models"
	pkgerrors "github.com/pkg/errors"
)

// availableMemory returns the memory a new run may use now: the smaller of
// the system's MemAvailable (/proc/meminfo) and what the cgroup's
// memory.max leaves, and false where neither can be read.
func availableMemory() (int64, bool) {
	avail, ok := int64(0), false
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, found := strings.CutPrefix(sc.Text(), "MemAvailable:"); found {
				kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				if err == nil {
					avail, ok = kb*1024, true
				}
			}
		}
		f.Close()
	}
	limit, lerr := os.ReadFile("/sys/fs/cgroup/memory.max")
	used, uerr := os.ReadFile("/sys/fs/cgroup/memory.current")
	if lerr == nil && uerr == nil {
		l, err1 := strconv.ParseInt(string(bytes.TrimSpace(limit)), 10, 64) // "max" when unlimited
		u, err2 := strconv.ParseInt(string(bytes.TrimSpace(used)), 10, 64)
		if err1 == nil && err2 == nil && (!ok || l-u < avail) {
			avail, ok = max(l-u, 0), true
		}
	}
	return avail, ok
}

// parseSize reads a memory size: a number of bytes with an optional unit,
// K, M, G or T (powers of 1000) or Ki, Mi, Gi or Ti (powers of 1024), each
// optionally followed by B.
func parseSize(s string) (int64, error) {
	num := strings.TrimSuffix(strings.TrimSpace(s), "B")
	mult := 1.0
	for i, u := range []string{"K", "M", "G", "T"} {
		if v, ok := strings.CutSuffix(num, u+"i"); ok {
			num, mult = v, float64(int64(1)<<(10*(i+1)))
			break
		}
		if v, ok := strings.CutSuffix(num, u); ok {
			num, mult = v, 1e3
			for range i {
				mult *= 1e3
			}
			break
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || !(v >= 0) || v*mult > 1e18 {
		return 0, pkgerrors.Errorf("size %q: want bytes, e.g. 20G, 512M or 16GiB", s)
	}
	return int64(v * mult), nil
}

// sizeVar registers a flag for a memory size (parseSize); *p is the
// default.
func sizeVar(f *flagSet, p *int64, name, usage string) {
	f.Var(&bounded[int64]{p: p, lo: 0, hi: 1e18, parse: parseSize, format: models.FormatBytes}, name, usage)
}

// checkMemory refuses a run whose estimated memory exceeds limit (when
// limit > 0) or, with limit < 0, the memory available now.
func checkMemory(cfg models.Config, limit int64) error {
	if limit == 0 {
		return nil
	}
	e, err := cfg.EstimateMemory()
	if err != nil {
		return err
	}
	what := "--max-memory"
	if limit < 0 {
		avail, ok := availableMemory()
		if !ok {
			return nil
		}
		limit, what = avail, "available"
	}
	if e.Bytes <= limit {
		return nil
	}
	return pkgerrors.Errorf("the run needs about %s of memory (batch %d; largest intermediate: %s), more than the %s %s; lower --batch or the layers' sizes, or set --max-memory (0: no check; the estimate: docs/results.md, \"Memory\")",
		models.FormatBytes(e.Bytes), cfg.Batch, e.Largest, models.FormatBytes(limit), what)
}
