package main

import (
	"errors"
	"flag"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gmcn-go/gmcn/models"
	"github.com/gmcn-go/gmcn/ops"
	"github.com/gmcn-go/gmcn/runspec"
)

// TestParseTrain checks that exactly the flags given replace the preset's
// settings, zero values included, and the settings only train has.
func TestParseTrain(t *testing.T) {
	for _, c := range []struct {
		args   string
		change func(*runspec.Config)
		out    string
		every  time.Duration
	}{
		{"", func(*runspec.Config) {}, "runs/demo", 10 * time.Minute},
		{"--epochs 5 --lr 0.5 --batch 7", func(c *runspec.Config) { c.Epochs, c.LR, c.Batch = 5, 0.5, 7 }, "runs/demo", 10 * time.Minute},
		{"--train-limit 0 --fit-em 0 --seed 0 --weight-decay 0", func(c *runspec.Config) { c.TrainLimit, c.FitEM, c.Seed, c.DecayRate = 0, 0, 0, 0 }, "runs/demo", 10 * time.Minute},
		{"--layers 1/8->4/4->10 --kernel-gaussians 3", func(c *runspec.Config) { c.Layers, c.Radii, c.Kernel = "1/8->4/4->10", nil, 3 }, "runs/demo", 10 * time.Minute},
		{"--radii 1,2,3 --reduction mem --dense 4", func(c *runspec.Config) { c.Radii, c.Reduction, c.DenseHead = []float64{1, 2, 3}, "mem", 4 }, "runs/demo", 10 * time.Minute},
		{"--root d --data d --cache c --out o --checkpoint-every 0", func(c *runspec.Config) { c.DataDir, c.CacheDir = "d", "c" }, "o", 0},
		{"--preset paper --fused 2", func(c *runspec.Config) {
			*c = runspec.Presets["paper"]
			c.Fused, c.FusedNegative, c.FusedMin = 2, ops.DefaultConvFitNegative, models.DefaultFusedMin
		}, "runs/paper", 10 * time.Minute},
		{"--preset paper --fused 16 --fused-negative 1 --fused-min 1", func(c *runspec.Config) {
			*c = runspec.Presets["paper"]
			c.Fused, c.FusedNegative, c.FusedMin = 16, 1, 1
		}, "runs/paper", 10 * time.Minute},
		{"--bias normal --reduction mem", func(c *runspec.Config) { c.Bias, c.Reduction = "normal", "mem" }, "runs/demo", 10 * time.Minute},
	} {
		r, err := parse("train", strings.Fields(c.args))
		if err != nil {
			t.Errorf("%q: %v", c.args, err)
			continue
		}
		tc := r.(*trainCmd)
		want := runspec.Presets["demo"]
		c.change(&want)
		if !reflect.DeepEqual(tc.setup.Run, want) || tc.out != c.out || tc.every != c.every {
			t.Errorf("%q:\n got %+v, out %q, every %v\nwant %+v, out %q, every %v", c.args, tc.setup.Run, tc.out, tc.every, want, c.out, c.every)
		}
	}
}

// TestParseRunDir checks --run and its synonym --out.
func TestParseRunDir(t *testing.T) {
	for _, c := range []struct{ cmd, args, want string }{
		{"eval", "", "runs/demo"},
		{"eval", "--run a", "a"},
		{"eval", "--out b", "b"},
		{"render", "--out c --run c --inputs 3", "c"},
	} {
		r, err := parse(c.cmd, strings.Fields(c.args))
		if err != nil {
			t.Errorf("%s %q: %v", c.cmd, c.args, err)
			continue
		}
		var got string
		switch r := r.(type) {
		case *evalCmd:
			got = r.dir.run
		case *renderCmd:
			got = r.dir.run
		}
		if got != c.want {
			t.Errorf("%s %q: run directory %q, want %q", c.cmd, c.args, got, c.want)
		}
	}
}

// FuzzParse parses arbitrary command lines of every command: the parser
// must not panic, --help must give flag.ErrHelp, every other error must be
// a usage error of one line, and a train command it accepts must be
// resolved (or resume).
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"train", "train --epochs 3 --lr 0.01", "train --layers 1/8->4/4->10 --radii 1,2", "train --resume --epochs 4",
		"train -h", "train --lr NaN", "train --seed 18446744073709551615", "train --checkpoint-every 1h30m",
		"fit-inputs --preset paper --fit-em 2", "eval --run x --test-limit 5", "render --inputs 3 --size 32",
		"gen-shapes --train 2 --test 1 --out d", "presets", "version", "nope --x",
		"train --layers 1/4->2/2->10 --dataset fashion-mnist --dense 3", "train --fused 4 --reduction max",
		"train --bias negative-softplus",
	} {
		name, args, _ := strings.Cut(s, " ")
		f.Add(name, strings.ReplaceAll(args, " ", "\x00"))
	}
	f.Add("train", "--a\nb")
	f.Fuzz(func(t *testing.T, name, joined string) {
		var args []string
		if joined != "" {
			args = strings.Split(joined, "\x00")
		}
		r, err := parse(name, args)
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		if err != nil {
			var u usageError
			if !errors.As(err, &u) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("parse(%q, %q): error %q is not a one-line usage error", name, args, err)
			}
			return
		}
		if tc, ok := r.(*trainCmd); ok && !tc.resume && tc.setup == nil {
			t.Fatalf("parse(%q, %q): train accepted without a resolved setup", name, args)
		}
	})
}
