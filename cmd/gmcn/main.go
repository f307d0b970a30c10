// Command gmcn fits input mixtures, trains and evaluates Gaussian Mixture
// Convolution Networks on MNIST, Fashion-MNIST and ModelNet-layout 3D data, and renders mixtures.
//
//	gmcn train --preset demo --out runs/demo  # fit inputs if needed, train, evaluate
//	gmcn eval  --run runs/demo                # accuracy and confusion matrix
//	gmcn render --run runs/demo               # PNGs of input mixtures and kernels
//	gmcn gen-shapes --out data/shapes         # generated 3D benchmark in the ModelNet10 layout
//	mpirun -np 2 gmcn-mpi train --preset demo # data-parallel on 2 MPI ranks (make build-mpi)
//
// Run `gmcn help` or `gmcn help <command>` for every flag. Exit status: 0
// on success, 1 when a command fails, 2 for a bad command line, 130 when
// SIGINT or SIGTERM stopped training (after writing its checkpoint).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
)

func main() {
	os.Exit(cli(os.Args[1:]))
}

// cli runs the command line args and returns the exit status.
func cli(args []string) int {
	if len(args) == 0 {
		writeUsage(os.Stderr)
		return 2
	}
	switch name := args[0]; name {
	case "help", "-h", "-help", "--help":
		if len(args) == 1 {
			writeUsage(os.Stdout)
			return 0
		}
		if len(args) > 2 {
			fmt.Fprintf(os.Stderr, "gmcn help: want one command, got %q; run gmcn help\n", args[1:])
			return 2
		}
		if err := writeHelp(os.Stdout, args[1]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		return 0
	}
	r, err := parse(args[0], args[1:])
	switch {
	case errors.Is(err, flag.ErrHelp):
		writeHelp(os.Stdout, args[0])
		return 0
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	err = r.run(context.Background())
	switch {
	case errors.Is(err, errInterrupted):
		return 130
	case err != nil:
		fmt.Fprintf(os.Stderr, "gmcn %s: %v\n", args[0], err)
		return 1
	}
	return 0
}
