package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gmcn-go/gmcn/predict"
	"github.com/gmcn-go/gmcn/runspec"
	"github.com/gmcn-go/gmcn/train/report"
	"github.com/pkg/errors"
)

// fitInputsCmd is `gmcn fit-inputs`.
type fitInputsCmd struct {
	rf    runFlags
	setup *runspec.Setup
}

func (c *fitInputsCmd) flags(f *flagSet) {
	f.group("Run flags", func() { c.rf.presetFlag(f) })
	f.group("Data flags", func() { c.rf.dataFlags(f) })
	f.group("Fitting flags", func() { c.rf.fittingFlags(f); c.rf.layersFlag(f) })
}

func (c *fitInputsCmd) check(given map[string]bool) error {
	rc, err := c.rf.config(given)
	if err != nil {
		return err
	}
	c.setup, err = runspec.Resolve(rc)
	return err
}

func (c *fitInputsCmd) run(context.Context) error {
	start := time.Now()
	trainSet, testSet, err := runspec.LoadInputs(c.setup, false, os.Stderr)
	if err != nil {
		return err
	}
	fmt.Printf("input mixtures ready: %d training and %d test images, %d Gaussians each (%.0fs)\n",
		trainSet.Len(), testSet.Len(), trainSet.Layout.N, time.Since(start).Seconds())
	return nil
}

// runDirFlag is --run DIR, the directory of an existing run, with --out
// kept as a synonym for the scripts written before --run.
type runDirFlag struct{ run, out string }

func (d *runDirFlag) register(f *flagSet) {
	f.StringVar(&d.run, "run", "runs/demo", "`DIR` of the training run (with run.json and checkpoint.gmcn)")
	f.StringVar(&d.out, "out", "", "`DIR`: the old name of --run, kept for scripts (in export, --out is the output folder)")
}

// check takes --out for --run when only --out is given.
func (d *runDirFlag) check(given map[string]bool) error {
	if given["out"] {
		if given["run"] && d.run != d.out {
			return errors.Errorf("--run %q and --out %q disagree; give --run", d.run, d.out)
		}
		d.run = d.out
	}
	return nil
}

// evalCmd is `gmcn eval`.
type evalCmd struct {
	dir       runDirFlag
	dev       deviceFlag
	testLimit int
	given     map[string]bool
}

func (c *evalCmd) flags(f *flagSet) {
	f.group("Flags", func() {
		c.dir.register(f)
		intVar(f, &c.testLimit, "test-limit", 0, 1e9, "evaluate on the first `N` test images; 0 = all (default: as trained)")
		c.dev.register(f)
	})
}

func (c *evalCmd) check(given map[string]bool) error {
	c.given = given
	if err := c.dir.check(given); err != nil {
		return err
	}
	return c.dev.check()
}

func (c *evalCmd) run(context.Context) error {
	dir := c.dir.run
	dev, err := c.dev.openTo(os.Stderr)
	if err != nil {
		return err
	}
	p, err := predict.LoadRun(dir, dev)
	if err != nil {
		return err
	}
	defer p.Close()
	if c.given["test-limit"] {
		p.Setup.Run.TestLimit = c.testLimit
	}
	_, testSet, err := runspec.LoadInputs(p.Setup, true, os.Stderr)
	if err != nil {
		return err
	}
	loss, acc, conf, err := p.Evaluate(testSet, os.Stderr)
	if err != nil {
		return err
	}
	fmt.Printf("test accuracy %.2f%% (%d images), mean NLL %.4f\n\nconfusion matrix (rows: true class, columns: predicted)\n", 100*acc, testSet.Len(), loss)
	fmt.Print("     ")
	for j := range conf {
		fmt.Printf("%6d", j)
	}
	fmt.Println()
	for i, r := range conf {
		fmt.Printf("%4d ", i)
		for _, v := range r {
			fmt.Printf("%6d", v)
		}
		fmt.Println()
	}
	if err := report.WriteConfusionCSV(filepath.Join(dir, runspec.ConfusionFile), conf); err != nil {
		return err
	}
	return writeConfusionPNG(filepath.Join(dir, "confusion.png"), conf, p.Classes)
}

// presetsCmd is `gmcn presets`.
type presetsCmd struct{}

func (presetsCmd) flags(*flagSet)              {}
func (presetsCmd) check(map[string]bool) error { return nil }

func (presetsCmd) run(context.Context) error {
	for _, n := range presetNames() {
		p := runspec.Presets[n]
		fmt.Printf("%s:\n  %s on %s, radii %v, %s, batch %d, %d epochs, lr %g", n, p.Layers, p.Dataset, p.Radii, p.Reduction, p.Batch, p.Epochs, p.LR)
		if p.Fused > 0 {
			fmt.Printf(", fused ×%d", p.Fused)
			if p.FusedTargets != "" {
				fmt.Printf(" (%s targets)", p.FusedTargets)
			}
			if p.FusedNegative != 0 {
				fmt.Printf(" (negative groups ×%g)", p.FusedNegative)
			}
			if p.FusedMin != 0 {
				fmt.Printf(" (at least %d Gaussians)", p.FusedMin)
			}
		}
		if p.TrainLimit > 0 {
			fmt.Printf(", first %d training images", p.TrainLimit)
		}
		fmt.Println()
	}
	return nil
}
