package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/export"
	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/internal/runtest"
	"github.com/gmcn-go/gmcn/predict"
)

// TestPredictCommand classifies the test images of a small trained run
// through `gmcn predict` on an IDX file of them and requires, for every
// image, the class and probability of the library predictor on the run's
// own fitted test inputs (which package predict checks against
// train.Evaluate); then checks --index, --help, bad command lines and
// `gmcn export`.
func TestPredictCommand(t *testing.T) {
	r := runtest.MNIST(t)
	idx := filepath.Join(t.TempDir(), "t10k-images-idx3-ubyte")
	runtest.WriteIDX(t, idx, r.Images)
	var out bytes.Buffer
	if err := runCommand("predict", []string{"--run", r.Dir, "--top", "2", idx}, &out); err != nil {
		t.Fatal(err)
	}
	p, err := predict.LoadRun(r.Dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	want, err := p.Predict(r.Test.Mixtures, r.Test.Layout)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d output lines for %d images:\n%s", len(lines), len(want), out.String())
	}
	for i, line := range lines {
		var class int
		var prob float64
		prefix := fmt.Sprintf("%s[%d]: ", idx, i)
		_, err := fmt.Sscanf(strings.TrimPrefix(line, prefix), "%d (%f%%)", &class, &prob)
		if !strings.HasPrefix(line, prefix) || err != nil || strings.Count(line, "%") != 2 {
			t.Fatalf("line %d: %q (%v), want %q followed by two classes", i, line, err, prefix)
		}
		top := predict.Top(want[i], 1)[0]
		if class != top || math.Abs(prob-100*want[i][top]) > 0.006 {
			t.Errorf("image %d: command says class %d (%.2f%%), the predictor %d (%.2f%%)", i, class, prob, top, 100*want[i][top])
		}
	}

	out.Reset()
	if err := runCommand("predict", []string{"--run", r.Dir, "--top", "1", "--index", "7", idx}, &out); err != nil {
		t.Fatal(err)
	}
	if got, w := strings.TrimSpace(out.String()), strings.SplitN(lines[7], ", ", 2)[0]; got != w {
		t.Errorf("--index 7 printed %q, the whole file's line 7 starts %q", got, w)
	}
	out.Reset()
	if err := writeHelp(&out, "predict"); err != nil || !strings.Contains(out.String(), "Usage: gmcn predict [flags] FILE…") || !strings.Contains(out.String(), "--invert") {
		t.Errorf("help: %v, printed %q", err, out.String())
	}

	txt := filepath.Join(t.TempDir(), "notes.doc")
	os.WriteFile(txt, []byte("x"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--run", filepath.Join(t.TempDir(), "none"), idx}, "run.json"},
		{[]string{"--run", r.Dir}, "no input files"},
		{[]string{"--run", r.Dir, "--top", "0", idx}, `invalid value "0" for flag --top`},
		{[]string{"--run", r.Dir, "--top", "x", idx}, `invalid value "x"`},
		{[]string{"--run", r.Dir, "--nope", idx}, "flag provided but not defined: --nope"},
		{[]string{"--run", r.Dir, idx, "--top", "2"}, `flag "--top" after the first FILE…`},
		{[]string{"--run", r.Dir, "--index", "40", idx}, "--index 40: " + idx + " has 40 images"},
		{[]string{"--run", r.Dir, "--index", "-2", idx}, `invalid value "-2" for flag --index`},
		{[]string{"--run", r.Dir, "missing.png"}, "input file missing.png"},
		{[]string{"--run", r.Dir, txt}, "unknown file type"},
		{[]string{"--run", r.Dir, "--index", "1", txt}, "--index applies to IDX image files, and none was given"},
		{[]string{"--run", t.TempDir(), idx}, "run.json"},
	} {
		err := runCommand("predict", c.args, &out)
		gmtest.WantErr(t, err, c.want)
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error of several lines: %q", c.args, err)
		}
	}

	dir := filepath.Join(t.TempDir(), "exported")
	out.Reset()
	if err := runCommand("export", []string{"--run", r.Dir, "--out", dir, "--inputs", "2"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "wrote 47 files") {
		t.Errorf("export printed %q, want 47 files (weights, 44 kernels, 2 inputs)", out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, export.WeightsFile)); err != nil {
		t.Error(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--run", filepath.Join(t.TempDir(), "none"), "--out", dir}, "run.json"},
		{[]string{"--run", r.Dir, "extra"}, `unexpected argument "extra"`},
		{[]string{"--run", r.Dir, "--inputs", "-1"}, `invalid value "-1" for flag --inputs`},
	} {
		gmtest.WantErr(t, runCommand("export", c.args, &out), c.want)
	}
}

// runCommand parses and runs the command called name as gmcn would, with
// its standard output going to out.
func runCommand(name string, args []string, out io.Writer) error {
	r, err := parse(name, args)
	if err != nil {
		return err
	}
	switch c := r.(type) {
	case *predictCmd:
		c.stdout = out
	case *exportCmd:
		c.stdout = out
	}
	return r.run(context.Background())
}
