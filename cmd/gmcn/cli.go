package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// runner is one invocation of a command: flags registers its flags, check
// validates them once parsed (given holds the names of the flags on the
// command line) without reading or writing anything, and run does the work.
type runner interface {
	flags(f *flagSet)
	check(given map[string]bool) error
	run(ctx context.Context) error
}

// command is a gmcn subcommand: its name, its line in the command list, the
// paragraph of its help text and a fresh runner. A command that takes
// operands (files) after its flags names them in operands, and its runner
// implements operandTaker.
type command struct {
	name, summary, synopsis string
	new                     func() runner
	operands                string
}

// operandTaker is a runner that takes the arguments after its flags.
type operandTaker interface {
	setOperands(args []string)
}

// commands lists the subcommands in the order of the usage text.
var commands = []command{
	{"fit-inputs", "fit the images of a data set with Gaussian mixtures (cached)",
		"Fits every training and test image of the data set with a Gaussian mixture (k-means\ninitialisation and EM on intensity-sampled points) and caches the result. The preset and\n--layers decide the Gaussians per image.",
		func() runner { return new(fitInputsCmd) }, ""},
	{"train", "train a GMCN (fits inputs first if needed), evaluating every epoch",
		"Trains a GMCN: fits the inputs if the cache lacks them, trains with Adam, evaluates on the\ntest set after every epoch and writes run.json, checkpoint.gmcn, metrics.csv and metrics.png\ninto --out. Ctrl-C or SIGTERM writes a checkpoint and exits with status 130; --resume\ncontinues from it exactly (and --resume --epochs N extends a run to N epochs).",
		func() runner { return new(trainCmd) }, ""},
	{"eval", "evaluate a trained run's checkpoint: accuracy and confusion matrix",
		"Evaluates the checkpoint of a training run on the test set and prints the accuracy and\nthe confusion matrix (also written to confusion.csv in the run directory).",
		func() runner { return new(evalCmd) }, ""},
	{"render", "draw input mixtures and learned kernels of a run as PNG images",
		"Draws --inputs fitted test inputs of a run (inputs.png, from the run's input cache; 2D: the\nfirst ones, 3D: spread over the classes) and, if the run has a checkpoint, its first-layer\nkernels (kernels.png) as density images: red is positive, blue negative, brighter is larger.",
		func() runner { return new(renderCmd) }, ""},
	{"predict", "classify image, IDX or shape files with a trained run: top classes and probabilities",
		predictSynopsis, func() runner { return new(predictCmd) }, "FILE…"},
	{"export", "write a trained run as safetensors weights and mixture PLY files",
		exportSynopsis, func() runner { return new(exportCmd) }, ""},
	{"gen-shapes", "write the generated 3D shape benchmark (10 classes, OFF meshes, ModelNet10 layout)",
		"Writes gmcn's generated 3D shape benchmark: 10 classes of procedurally generated meshes with\nrandom rotation, anisotropic scale, deformation, noise and partial occlusion, as OFF files in\nthe ModelNet10 layout (<class>/{train,test}/*.off). It is our own benchmark, not ModelNet;\ntrain on it with: gmcn train --preset modelnet-cpu --data DIR",
		func() runner { return new(genShapesCmd) }, ""},
	{"presets", "list the presets and their settings", "Lists the presets of --preset and their settings.",
		func() runner { return new(presetsCmd) }, ""},
	{"version", "print the version, the build and the devices of this binary",
		"Prints the module version and VCS revision, the Go version, whether the AVX-512/AVX2\nkernels are built in (GOEXPERIMENT=simd) and the devices the GM ops can compute on.",
		func() runner { return new(versionCmd) }, ""},
}

// usageError marks an error in the command line itself, as opposed to one
// in doing what it asks; main exits with status 2 for it.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// lookup returns the command called name.
func lookup(name string) (command, error) {
	i := slices.IndexFunc(commands, func(c command) bool { return c.name == name })
	if i < 0 {
		return command{}, usageError{fmt.Errorf("gmcn: unknown command %q; run gmcn help", name)}
	}
	return commands[i], nil
}

// parse parses the arguments of the command called name into a checked
// runner. It never exits and reads or writes nothing: --help gives
// flag.ErrHelp, and every other problem a usageError whose message starts
// with "gmcn <name>:".
// flagName finds a flag name as the flag package's errors write it.
var flagName = regexp.MustCompile(`(for flag |not defined: |an argument: )-`)

func parse(name string, args []string) (runner, error) {
	c, err := lookup(name)
	if err != nil {
		return nil, err
	}
	r := c.new()
	f := newFlagSet(c.name)
	r.flags(f)
	if err := f.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		// The flag package quotes values but not flag names, which may hold
		// line breaks; the error must stay one line. It names flags with
		// one dash; gmcn's help and messages use two.
		msg := strings.ReplaceAll(err.Error(), "\n", `\n`)
		msg = flagName.ReplaceAllString(msg, "$1--")
		return nil, usageError{fmt.Errorf("gmcn %s: %s; run gmcn help %s", name, msg, name)}
	}
	if t, ok := r.(operandTaker); ok && c.operands != "" {
		// The flag package stops at the first operand, so a flag after one
		// would be taken for a file.
		for _, a := range f.Args() {
			if strings.HasPrefix(a, "-") {
				return nil, usageError{fmt.Errorf("gmcn %s: flag %q after the first %s: put every flag before the operands; run gmcn help %s", name, a, c.operands, name)}
			}
		}
		t.setOperands(f.Args())
	} else if f.NArg() > 0 {
		return nil, usageError{fmt.Errorf("gmcn %s: unexpected argument %q: every setting is a flag (%s); run gmcn help %s", name, f.Arg(0), extraHint(name), name)}
	}
	given := map[string]bool{}
	f.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	if err := r.check(given); err != nil {
		return nil, usageError{fmt.Errorf("gmcn %s: %v", name, err)}
	}
	return r, nil
}

// extraHint says which flag takes what a user most likely meant by a
// positional argument of the command called name.
func extraHint(name string) string {
	switch name {
	case "train":
		return "a run's directory is --out DIR"
	case "eval", "render", "export":
		return "a run's directory is --run DIR"
	case "gen-shapes":
		return "the output directory is --out DIR"
	}
	return "this command takes no arguments"
}

// writeUsage writes the list of commands.
func writeUsage(w io.Writer) {
	fmt.Fprint(w, "gmcn — Gaussian Mixture Convolution Networks on Gorgonia\n\nUsage:\n  gmcn <command> [flags]\n\nCommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "  %-11s %s\n\nRun \"gmcn help <command>\" for the flags of a command.\n", "help", "show this text, or a command's flags")
}

// writeHelp writes the help text of the command called name: its synopsis
// and its flags, group by group.
func writeHelp(w io.Writer, name string) error {
	c, err := lookup(name)
	if err != nil {
		return err
	}
	f := newFlagSet(c.name)
	c.new().flags(f)
	fmt.Fprintf(w, "Usage: gmcn %s\n\n%s\n", strings.TrimSpace(c.name+" [flags] "+c.operands), c.synopsis)
	for _, g := range f.groups {
		fmt.Fprintf(w, "\n%s:\n", g.title)
		for _, name := range g.names {
			writeFlag(w, f.Lookup(name))
		}
	}
	return nil
}

// writeFlag writes one flag of a help text: its name and argument, then its
// usage, with the default where the usage does not say it already.
func writeFlag(w io.Writer, fl *flag.Flag) {
	arg, usage := flag.UnquoteUsage(fl)
	if arg == "value" {
		arg = ""
	}
	fmt.Fprintf(w, "  %s\n", strings.TrimSpace("--"+fl.Name+" "+arg))
	if fl.DefValue != "" && fl.DefValue != "false" && fl.DefValue != "0" && !strings.Contains(usage, "(default") {
		usage += fmt.Sprintf(" (default %s)", fl.DefValue)
	}
	for _, line := range strings.Split(usage, "\n") {
		fmt.Fprintf(w, "      %s\n", line)
	}
}
