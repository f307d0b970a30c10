package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/gmcn-go/gmcn/models"
	"github.com/gmcn-go/gmcn/train"
	"github.com/gmcn-go/gmcn/train/checkpoint"
	"github.com/gmcn-go/gmcn/train/report"
	G "gorgonia.org/gorgonia"
)

func fitInputs(args []string) error {
	fs := newFlagSet("fit-inputs", "Fits every training and test image of the data set with a Gaussian mixture\n(k-means initialisation and EM on intensity-sampled points) and caches the result.\nThe preset and --layers decide the Gaussians per image.")
	apply := runFlags(fs)
	fs.Parse(args)
	setup, err := apply()
	if err != nil {
		return err
	}
	start := time.Now()
	trainSet, testSet, err := train.LoadInputs(setup, false, os.Stderr)
	if err != nil {
		return err
	}
	fmt.Printf("input mixtures ready: %d training and %d test images, %d Gaussians each (%.0fs)\n",
		trainSet.Len(), testSet.Len(), trainSet.Layout.N, time.Since(start).Seconds())
	return nil
}

func trainCmd(args []string) error {
	fs := newFlagSet("train", "Trains a GMCN: fits the inputs if the cache lacks them, trains with Adam, evaluates on the\ntest set after every epoch and writes run.json, checkpoint.gmcn, metrics.csv and metrics.png\ninto --out. Ctrl-C writes a checkpoint; --resume continues from it exactly.")
	apply := runFlags(fs)
	useDevice := deviceFlag(fs)
	out := fs.String("out", "", "output directory (default: runs/<preset>)")
	resume := fs.Bool("resume", false, "continue the run in --out from its checkpoint (its run.json wins over other flags)")
	fs.Parse(args)
	setup, err := apply()
	if err != nil {
		return err
	}
	if err := useDevice(); err != nil {
		return err
	}
	if *out == "" {
		*out = filepath.Join("runs", setup.Run.Preset)
	}
	if *resume {
		if setup, err = loadSetup(*out); err != nil {
			return err
		}
	} else if err := train.SaveRunConfig(*out, setup.Run); err != nil {
		return err
	}
	start := time.Now()
	trainSet, testSet, err := train.LoadInputs(setup, false, os.Stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c := setup.Run
	opt := train.Options{Epochs: c.Epochs, LR: c.LR, DecayRate: c.DecayRate, Seed: c.Seed, Hooks: train.DefaultHooks(*out), Log: os.Stderr}
	if *resume {
		opt.Resume = filepath.Join(*out, train.CheckpointFile)
	}
	rows, err := train.Run(ctx, setup.Model, trainSet, testSet, opt)
	if errors.Is(err, train.ErrInterrupted) {
		fmt.Fprintf(os.Stderr, "\ninterrupted: checkpoint written to %s; continue with: gmcn train --out %s --resume\n", *out, *out)
		return nil
	}
	if err != nil {
		return err
	}
	last := rows[len(rows)-1]
	fmt.Printf("done in %s: test accuracy %.2f%% on %d test images; outputs in %s (metrics.csv, metrics.png, checkpoint.gmcn)\n",
		time.Since(start).Round(time.Second), 100*last.TestAcc, testSet.Len(), *out)
	return nil
}

func evalCmd(args []string) error {
	fs := newFlagSet("eval", "Evaluates the checkpoint of a training run on the test set and prints the accuracy and\nthe confusion matrix (also written to confusion.csv and drawn in confusion.png in the run directory).")
	out := fs.String("out", "runs/demo", "training output directory (with run.json and checkpoint.gmcn)")
	testLimit := fs.Int("test-limit", -1, "evaluate on the first n test images; 0 = all (default: as trained)")
	useDevice := deviceFlag(fs)
	fs.Parse(args)
	if err := useDevice(); err != nil {
		return err
	}
	setup, err := loadSetup(*out)
	if err != nil {
		return err
	}
	if *testLimit >= 0 {
		setup.Run.TestLimit = *testLimit
	}
	st, err := checkpoint.Load(filepath.Join(*out, train.CheckpointFile))
	if err != nil {
		return err
	}
	m, err := models.Build(setup.Model)
	if err != nil {
		return err
	}
	vm := G.NewTapeMachine(m.Graph)
	defer vm.Close()
	if err := m.SetState(models.State{Names: st.Names, Params: st.Params, BNMean: st.BNMean, BNVar: st.BNVar, CovNorms: st.CovNorms}); err != nil {
		return fmt.Errorf("checkpoint %s does not fit the model of %s: %w", filepath.Join(*out, train.CheckpointFile), filepath.Join(*out, train.RunConfigFile), err)
	}
	_, testSet, err := train.LoadInputs(setup, true, os.Stderr)
	if err != nil {
		return err
	}
	loss, acc, conf, err := train.Evaluate(m, m, vm, testSet, os.Stderr)
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
	if err := report.WriteConfusionCSV(filepath.Join(*out, train.ConfusionFile), conf); err != nil {
		return err
	}
	return writeConfusionPNG(filepath.Join(*out, "confusion.png"), conf, setup)
}

// loadSetup reads the run.json of the run directory dir and resolves it.
func loadSetup(dir string) (*train.Setup, error) {
	c, err := train.LoadRunConfig(dir)
	if err != nil {
		return nil, err
	}
	return train.Resolve(c)
}
