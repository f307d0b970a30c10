package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/gmcn-go/gmcn/train"
	pkgerrors "github.com/pkg/errors"
)

// errInterrupted is returned by a command stopped by SIGINT or SIGTERM
// after it has saved what resumes it; main exits with status 130.
var errInterrupted = errors.New("interrupted")

// trainCmd is `gmcn train`.
type trainCmd struct {
	rf        runFlags
	dev       deviceFlag
	out       string
	resume    bool
	overwrite bool
	every     time.Duration
	given     map[string]bool
	setup     *train.Setup // resolved by check, or by run from run.json with --resume
}

// resumeFlags are the flags --resume accepts: run.json fixes everything
// else, but a run may be extended to more epochs.
var resumeFlags = []string{"out", "resume", "epochs", "device", "checkpoint-every"}

func (c *trainCmd) flags(f *flagSet) {
	f.group("Run flags", func() {
		c.rf.presetFlag(f)
		f.StringVar(&c.out, "out", "", "`DIR` of the run's outputs (default: runs/<preset>)")
		f.BoolVar(&c.resume, "resume", false, "continue the run in --out from its checkpoint; its run.json fixes every setting but --epochs")
		f.BoolVar(&c.overwrite, "overwrite", false, "start afresh in an --out that already holds a run, replacing its outputs")
		c.every = 10 * time.Minute
		durationVar(f, &c.every, "checkpoint-every", "`DURATION` between checkpoints within an epoch; 0 = at the ends of epochs only")
		c.dev.register(f)
	})
	f.group("Data flags", func() { c.rf.dataFlags(f) })
	f.group("Fitting flags", func() { c.rf.fittingFlags(f) })
	f.group("Model flags", func() { c.rf.layersFlag(f); c.rf.modelFlags(f) })
	f.group("Optimisation flags", func() { c.rf.optimFlags(f) })
}

func (c *trainCmd) check(given map[string]bool) error {
	c.given = given
	if err := c.dev.check(); err != nil {
		return err
	}
	if c.resume && c.overwrite {
		return pkgerrors.New("--resume continues a run and --overwrite replaces it; give one")
	}
	if c.resume {
		var fixed []string
		for name := range given {
			if !slices.Contains(resumeFlags, name) {
				fixed = append(fixed, "--"+name)
			}
		}
		slices.Sort(fixed)
		if len(fixed) > 0 {
			return pkgerrors.Errorf("--resume continues the run as its run.json says; %s cannot change it (only --epochs can)", strings.Join(fixed, ", "))
		}
		if c.out == "" {
			c.out = filepath.Join("runs", c.rf.preset)
		}
		return nil
	}
	rc, err := c.rf.config(given)
	if err != nil {
		return err
	}
	if c.setup, err = train.Resolve(rc); err != nil {
		return err
	}
	if c.out == "" {
		c.out = filepath.Join("runs", rc.Preset)
	}
	return nil
}

func (c *trainCmd) run(ctx context.Context) error {
	if err := c.prepare(); err != nil {
		return err
	}
	device, err := c.dev.use()
	if err != nil {
		return err
	}
	start := time.Now()
	trainSet, testSet, err := train.LoadInputs(c.setup, false, os.Stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "GM ops compute on %s\n", device)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	rc := c.setup.Run
	hooks := append([]train.Hook{c.startHook()}, train.DefaultHooks(c.out)...)
	hooks = append(hooks, train.CheckpointEvery(c.out, c.every))
	opt := train.Options{Epochs: rc.Epochs, LR: rc.LR, DecayRate: rc.DecayRate, Seed: rc.Seed, Hooks: hooks, Log: os.Stderr}
	if c.resume {
		opt.Resume = filepath.Join(c.out, train.CheckpointFile)
	}
	rows, err := train.Run(ctx, c.setup.Model, trainSet, testSet, opt)
	if errors.Is(err, train.ErrInterrupted) {
		fmt.Fprintf(os.Stderr, "interrupted: checkpoint written to %s; resume with: gmcn train --out %s --resume\n", c.out, c.out)
		return errInterrupted
	}
	if err != nil {
		return err
	}
	last := rows[len(rows)-1]
	fmt.Printf("done in %s: test accuracy %.2f%% on %d test images; outputs in %s (metrics.csv, metrics.png, checkpoint.gmcn)\n",
		time.Since(start).Round(time.Second), 100*last.TestAcc, testSet.Len(), c.out)
	return nil
}

// prepare checks the run directory before anything is read or written:
// with --resume it must hold a run, whose run.json it resolves (with
// --epochs applied); without, it must not hold one unless --overwrite.
func (c *trainCmd) prepare() error {
	ckpt := filepath.Join(c.out, train.CheckpointFile)
	if c.resume {
		rc, err := train.LoadRunConfig(c.out)
		if err != nil {
			return err
		}
		if _, err := os.Stat(ckpt); err != nil {
			return pkgerrors.Errorf("--resume: %s has no checkpoint to continue from (%v)", c.out, err)
		}
		if c.given["epochs"] {
			rc.Epochs = c.rf.over.Epochs
		}
		c.setup, err = train.Resolve(rc)
		return pkgerrors.Wrapf(err, "%s", filepath.Join(c.out, train.RunConfigFile))
	}
	if c.overwrite {
		return nil
	}
	for _, name := range []string{train.CheckpointFile, train.RunConfigFile} {
		if _, err := os.Stat(filepath.Join(c.out, name)); err == nil {
			return pkgerrors.Errorf("%s already holds a run (%s); continue it with --resume or replace it with --overwrite", c.out, name)
		}
	}
	return nil
}

// startHook writes run.json, after removing the outputs of the run it
// replaces, when the training loop starts (the data loaded, the model
// built, a resumed checkpoint read); so a command that fails earlier
// leaves the directory as it was.
func (c *trainCmd) startHook() train.Hook {
	return train.Hook{Name: "run.json", Start: func(train.StartInfo) error {
		if c.overwrite {
			for _, name := range []string{train.CheckpointFile, train.MetricsFile, train.StepsFile, train.PlotFile, train.ConfusionFile} {
				if err := os.Remove(filepath.Join(c.out, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
					return err
				}
			}
		}
		return train.SaveRunConfig(c.out, c.setup.Run)
	}}
}
