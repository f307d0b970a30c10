package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/gmcn-go/gmcn/ops"
	"github.com/gmcn-go/gmcn/train"
	"github.com/pkg/errors"
)

// deviceFlag registers --device; use selects that device for every GM op the
// command builds afterwards. The default is the last device of the build:
// cuda in a gmcuda build, else cpu. A CUDA device that is built in but cannot
// start says why on standard error and the command runs on the CPU.
func deviceFlag(fs *flag.FlagSet) (use func() error) {
	devs := ops.Devices()
	name := fs.String("device", devs[len(devs)-1], "where the GM ops compute; this build has "+strings.Join(devs, ", ")+
		"\n(cuda needs a build with -tags gmcuda and a GPU: docs/cuda.md)")
	return func() error {
		d, err := ops.OpenDevice(*name)
		if errors.Is(err, ops.ErrDeviceUnavailable) {
			fmt.Fprintf(os.Stderr, "gmcn: --device %s: %v; the GM ops run on the CPU\n", *name, err)
			d, err = ops.OpenDevice("cpu")
		}
		if err != nil {
			return errors.Wrap(err, "--device")
		}
		fmt.Fprintf(os.Stderr, "GM ops compute on %s\n", d.Name)
		return ops.UseDevice(d)
	}
}

// runFlags registers the flags that select a RunConfig: a preset and
// per-setting overrides. apply returns the preset with every flag the user
// set applied, resolved.
func runFlags(fs *flag.FlagSet) (apply func() (*train.Setup, error)) {
	preset := fs.String("preset", "demo", "preset to start from: "+strings.Join(presetNames(), ", "))
	dataset := fs.String("dataset", "", "data set: "+strings.Join(train.DatasetNames(), ", ")+" (default: the preset's)")
	data := fs.String("data", "", "MNIST/Fashion-MNIST: directory with the IDX files (default: MNIST from the Go module cache,\nFashion-MNIST from /usr/share/datasets/fashion-mnist); ModelNet: the data set's root, either\nModelNet10|40/<class>/{train,test}/*.off or modelnet40_normal_resampled/")
	root := fs.String("root", "", "ModelNet: the data set's root directory (the same as --data)")
	cache := fs.String("cache", "cache", "directory for fitted input mixtures")
	layers := fs.String("layers", "", `model in the paper's notation, e.g. "1/64 -> 8/32 -> 16/16 -> 10" (default: the preset's)`)
	radii := fs.String("radii", "", "comma-separated kernel radius per block, e.g. 1.5,2,2.5 (default: the preset's)")
	reduction := fs.String("reduction", "", "reduction: treehem2, treehem4, treehem8, mem or max (keep the largest weights) (default: the preset's)")
	fused := fs.Int("fused", -1, "fused convolution-fitting to fused × N_p Gaussians per block; 0 = the unfused path (default: the preset's)")
	dense := fs.Int("dense", -1, "hidden units of a dense head after integration; 0 = none (default: the preset's)")
	batch := fs.Int("batch", 0, "batch size (default: the preset's)")
	epochs := fs.Int("epochs", 0, "epochs (default: the preset's)")
	lr := fs.Float64("lr", 0, "Adam learning rate (default: the preset's)")
	decay := fs.Float64("weight-decay", -1, "weight-decay rate: the decay step uses lr = rate × initial lr (default: the preset's)")
	seed := fs.Int64("seed", -1, "seed for kernel initialisation and shuffling (default: the preset's)")
	trainLimit := fs.Int("train-limit", -1, "use only the first n training images; 0 = all (default: the preset's)")
	testLimit := fs.Int("test-limit", -1, "evaluate on the first n test images; 0 = all 10,000 (default: the preset's)")
	fitEM := fs.Int("fit-em", -1, "EM steps of the input fitting after k-means (default: the preset's, 1 as in the paper)")
	fitInit := fs.String("fit-init", "", "input fitting: 2D kmeans or random; 3D fps or kmeans-em (default: the preset's)")
	fitPoints := fs.Int("fit-points", 0, "3D: surface points sampled per mesh (default 10,000)")
	return func() (*train.Setup, error) {
		c, ok := train.Presets[*preset]
		if !ok {
			return nil, errors.Errorf("unknown preset %q (have %s)", *preset, strings.Join(presetNames(), ", "))
		}
		c.Radii = append([]float64(nil), c.Radii...)
		set := func(cond bool, f func()) {
			if cond {
				f()
			}
		}
		set(*dataset != "", func() { c.Dataset = *dataset })
		set(*data != "", func() { c.DataDir = *data })
		set(*root != "", func() { c.DataDir = *root })
		if *root != "" && *data != "" && *root != *data {
			return nil, errors.Errorf("--root %q and --data %q disagree; give one", *root, *data)
		}
		c.CacheDir = *cache
		set(*layers != "", func() { c.Layers, c.Radii = *layers, nil })
		set(*reduction != "", func() { c.Reduction = *reduction })
		if *fused < -1 {
			return nil, errors.Errorf("--fused %d: want a factor ≥ 1, or 0 for the unfused path", *fused)
		}
		set(*fused >= 0, func() { c.Fused = *fused })
		set(*dense >= 0, func() { c.DenseHead = *dense })
		set(*batch > 0, func() { c.Batch = *batch })
		set(*epochs > 0, func() { c.Epochs = *epochs })
		set(*lr > 0, func() { c.LR = *lr })
		set(*decay >= 0, func() { c.DecayRate = *decay })
		set(*seed >= 0, func() { c.Seed = uint64(*seed) })
		set(*trainLimit >= 0, func() { c.TrainLimit = *trainLimit })
		set(*testLimit >= 0, func() { c.TestLimit = *testLimit })
		set(*fitEM >= 0, func() { c.FitEM = *fitEM })
		set(*fitInit != "", func() { c.FitInit = *fitInit })
		set(*fitPoints > 0, func() { c.FitPoints = *fitPoints })
		if *radii != "" {
			c.Radii = nil
			for _, f := range strings.Split(*radii, ",") {
				r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
				if err != nil {
					return nil, errors.Errorf("--radii: %q is not a number", f)
				}
				c.Radii = append(c.Radii, r)
			}
		}
		return train.Resolve(c)
	}
}

func presetNames() []string {
	var names []string
	for n := range train.Presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func presetsCmd() error {
	for _, n := range presetNames() {
		p := train.Presets[n]
		fmt.Printf("%s:\n  %s on %s, radii %v, %s, batch %d, %d epochs, lr %g", n, p.Layers, p.Dataset, p.Radii, p.Reduction, p.Batch, p.Epochs, p.LR)
		if p.Fused > 0 {
			fmt.Printf(", fused ×%d", p.Fused)
		}
		if p.TrainLimit > 0 {
			fmt.Printf(", first %d training images", p.TrainLimit)
		}
		fmt.Println()
	}
	return nil
}

// newFlagSet returns a flag set whose --help prints the command's synopsis
// and every flag.
func newFlagSet(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: gmcn %s [flags]\n\n%s\n\nFlags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}
