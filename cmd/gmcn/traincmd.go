package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gmcn-go/gmcn/dataset"
	"github.com/gmcn-go/gmcn/dist"
	"github.com/gmcn-go/gmcn/runspec"
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
	maxMemory int64 // -1: the memory available when the run starts
	given     map[string]bool
	setup     *runspec.Setup // resolved by check, or by run from run.json with --resume
}

// resumeFlags are the flags --resume accepts: run.json fixes everything
// else, but a run may be extended to more epochs, and a run's step may be
// split differently between ranks and accumulation (the checkpoint refuses
// a step of another size).
var resumeFlags = []string{"out", "resume", "epochs", "accumulate", "device", "checkpoint-every", "max-memory"}

func (c *trainCmd) flags(f *flagSet) {
	f.group("Run flags", func() {
		c.rf.presetFlag(f)
		f.StringVar(&c.out, "out", "", "`DIR` of the run's outputs, held by this process while it trains (default: runs/<preset>)")
		f.BoolVar(&c.resume, "resume", false, "continue the run in --out from its checkpoint; its run.json fixes every setting but --epochs")
		f.BoolVar(&c.overwrite, "overwrite", false, "start afresh in an --out that already holds a run, replacing its outputs")
		c.every = 10 * time.Minute
		durationVar(f, &c.every, "checkpoint-every", "`DURATION` between checkpoints within an epoch; 0 = at the ends of epochs only")
		c.maxMemory = -1
		sizeVar(f, &c.maxMemory, "max-memory", "refuse to start when the run's estimated memory is over `SIZE` (e.g. 20G, 512M, 16GiB; 0 = no check)\n(default: the memory available when it starts)")
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
			return pkgerrors.Errorf("--resume continues the run as its run.json says; %s cannot change it (only --epochs and --accumulate can)", strings.Join(fixed, ", "))
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
	if c.setup, err = runspec.Resolve(rc); err != nil {
		return err
	}
	if c.out == "" {
		c.out = filepath.Join("runs", rc.Preset)
	}
	return nil
}

// run trains alone or, under an MPI launcher in a build with the mpi tag,
// as one rank of a data-parallel run (docs/distributed.md). Rank 0 checks
// the run directory, resolves the settings (from the flags or, with
// --resume, its run.json) and sends them to the other ranks, so every rank
// trains what rank 0 was told; it alone writes outputs. A rank that fails
// prints its error and aborts the job, so no rank waits for ever.
func (c *trainCmd) run(ctx context.Context) (err error) {
	comm, err := dist.Open()
	if err != nil {
		return err
	}
	defer func() {
		if err != nil && !errors.Is(err, errInterrupted) && comm.Size() > 1 {
			fmt.Fprintf(os.Stderr, "gmcn train: rank %d of %d: %v\n", comm.Rank(), comm.Size(), err)
			comm.Abort(1)
		}
		if cerr := comm.Close(); err == nil {
			err = cerr
		}
	}()
	return c.train(ctx, comm)
}

func (c *trainCmd) train(ctx context.Context, comm dist.Comm) error {
	root := comm.Rank() == 0
	var release func()
	if root {
		lock, err := train.LockRun(c.out)
		if err != nil {
			return err
		}
		defer lock.Release()
		release = func() { lock.Release() }
	}
	ctx, intr := handleInterrupts(ctx, release)
	defer intr.close()
	if root {
		if err := c.prepare(); err != nil {
			return err
		}
		if err := checkMemory(c.setup.Model, c.maxMemory); err != nil {
			return err
		}
	}
	if err := c.shareSetup(comm); err != nil {
		return err
	}
	dev, where, err := c.dev.open()
	if err != nil {
		return err
	}
	c.setup.Model.Device = dev
	start := time.Now()
	log := io.Writer(os.Stderr)
	if !root {
		log = io.Discard
	}
	trainSet, testSet, err := c.loadInputs(comm, log)
	if err != nil {
		return err
	}
	fmt.Fprintln(log, where)
	rc := c.setup.Run
	if comm.Size() > 1 {
		fmt.Fprintf(log, "data-parallel on %d MPI ranks: a step trains on %d × %d × %d samples (ranks × --accumulate × --batch)\n",
			comm.Size(), comm.Size(), max(rc.Accumulate, 1), c.setup.Model.Batch)
	}
	hooks := append([]train.Hook{c.startHook(intr)}, train.DefaultHooks(c.out)...)
	hooks = append(hooks, train.CheckpointEvery(c.out, c.every))
	opt := train.Options{Epochs: rc.Epochs, LR: rc.LR, DecayRate: rc.DecayRate, Seed: rc.Seed, Hooks: hooks, Log: log,
		Comm: comm, Accumulate: rc.Accumulate}
	if c.resume {
		opt.Resume = filepath.Join(c.out, runspec.CheckpointFile)
	}
	rows, err := train.Run(ctx, c.setup.Model, trainSet, testSet, opt)
	if errors.Is(err, train.ErrInterrupted) {
		if root {
			fmt.Fprintf(os.Stderr, "interrupted: checkpoint written to %s; resume with: gmcn train --out %s --resume\n", c.out, c.out)
		}
		return errInterrupted
	}
	if err != nil {
		return err
	}
	if root {
		last := rows[len(rows)-1]
		fmt.Printf("done in %s: test accuracy %.2f%% on %d test images; outputs in %s (metrics.csv, metrics.png, checkpoint.gmcn)\n",
			time.Since(start).Round(time.Second), 100*last.TestAcc, testSet.Len(), c.out)
	}
	return nil
}

// shareSetup sends rank 0's resolved run configuration to the other ranks.
func (c *trainCmd) shareSetup(comm dist.Comm) error {
	if comm.Size() == 1 {
		return nil
	}
	var data []byte
	if comm.Rank() == 0 {
		var err error
		if data, err = json.Marshal(c.setup.Run); err != nil {
			return err
		}
	}
	data, err := dist.BroadcastBytes(comm, data, 0)
	if err != nil {
		return err
	}
	var rc runspec.Config
	if err := json.Unmarshal(data, &rc); err != nil {
		return pkgerrors.Wrap(err, "rank 0's run configuration")
	}
	c.setup, err = runspec.Resolve(rc)
	return pkgerrors.Wrap(err, "rank 0's run configuration")
}

// loadInputs loads the data set on every rank: rank 0 first, fitting and
// caching the inputs if needed, then the others, which find them in the
// cache when it is shared (and fit them themselves when it is not).
func (c *trainCmd) loadInputs(comm dist.Comm, log io.Writer) (trainSet, testSet *dataset.Inputs, err error) {
	if comm.Rank() == 0 {
		trainSet, testSet, err = runspec.LoadInputs(c.setup, false, log)
		if err != nil {
			return nil, nil, err
		}
	}
	if err := comm.Barrier(); err != nil {
		return nil, nil, err
	}
	if comm.Rank() != 0 {
		trainSet, testSet, err = runspec.LoadInputs(c.setup, false, log)
	}
	return trainSet, testSet, err
}

// prepare checks the run directory, which this process holds, before
// anything is read or written: with --resume it must hold a run with a
// checkpoint, whose run.json it resolves (with --epochs applied); without,
// it must not hold one unless --overwrite. A run that stopped before its
// first checkpoint (killed while it built its model or took its first
// steps) has nothing to resume: both say that --overwrite starts it again.
func (c *trainCmd) prepare() error {
	ckpt := filepath.Join(c.out, runspec.CheckpointFile)
	_, err := os.Stat(filepath.Join(c.out, runspec.ConfigFile))
	hasRun := err == nil
	_, err = os.Stat(ckpt)
	hasCkpt := err == nil
	stopped := pkgerrors.Errorf("%s holds a run that stopped before its first checkpoint (%s, no %s): there is nothing to resume; start it again with --overwrite",
		c.out, runspec.ConfigFile, runspec.CheckpointFile)
	if c.resume {
		if hasRun && !hasCkpt {
			return stopped
		}
		rc, err := runspec.LoadConfig(c.out)
		if err != nil {
			return err
		}
		if !hasCkpt {
			return pkgerrors.Errorf("--resume: %s has no checkpoint to continue from", c.out)
		}
		if c.given["epochs"] {
			rc.Epochs = c.rf.over.Epochs
		}
		if c.given["accumulate"] {
			rc.Accumulate = c.rf.over.Accumulate
		}
		c.setup, err = runspec.Resolve(rc)
		return pkgerrors.Wrapf(err, "%s", filepath.Join(c.out, runspec.ConfigFile))
	}
	// run.json keeps the data and cache folders absolute (the cache's
	// default too), so that eval, render and predict find them from any
	// working directory.
	if c.setup.Run.CacheDir == "" {
		c.setup.Run.CacheDir = c.setup.CacheDir
	}
	for _, dir := range []*string{&c.setup.Run.DataDir, &c.setup.Run.CacheDir} {
		if *dir != "" {
			if *dir, err = filepath.Abs(*dir); err != nil {
				return err
			}
		}
	}
	switch {
	case c.overwrite:
		return nil
	case hasCkpt:
		return pkgerrors.Errorf("%s already holds a run (%s); continue it with --resume or replace it with --overwrite", c.out, runspec.CheckpointFile)
	case hasRun:
		return stopped
	}
	return nil
}

// startHook writes run.json, after removing the outputs of the run it
// replaces, when the training loop starts (the data loaded, the model
// built, a resumed checkpoint read); so a command that fails earlier
// leaves the directory as it was. From then on a signal stops the run with
// a checkpoint (intr).
func (c *trainCmd) startHook(intr *interrupts) train.Hook {
	return train.Hook{Name: "run.json", Start: func(train.StartInfo) error {
		intr.start()
		if c.overwrite {
			for _, name := range []string{runspec.CheckpointFile, runspec.MetricsFile, runspec.StepsFile, runspec.PlotFile, runspec.ConfusionFile} {
				if err := os.Remove(filepath.Join(c.out, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
					return err
				}
			}
		}
		return runspec.SaveConfig(c.out, c.setup.Run)
	}}
}
