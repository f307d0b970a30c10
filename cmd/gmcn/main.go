// Command gmcn fits input mixtures, trains and evaluates Gaussian Mixture
// Convolution Networks on MNIST and Fashion-MNIST, and renders mixtures.
//
//	gmcn train --preset demo          # fit inputs if needed, train, evaluate
//	gmcn eval  --out runs/demo        # accuracy and confusion matrix
//	gmcn render --out runs/demo       # PNGs of input mixtures and kernels
//
// Run `gmcn help` or `gmcn <command> --help` for every flag.
package main

import (
	"fmt"
	"os"
)

const usage = `gmcn — Gaussian Mixture Convolution Networks on Gorgonia

Usage:
  gmcn <command> [flags]

Commands:
  fit-inputs  fit the images of a data set with Gaussian mixtures (cached)
  train       train a GMCN (fits inputs first if needed), evaluating every epoch
  eval        evaluate a trained run's checkpoint: accuracy and confusion matrix
  render      draw input mixtures and learned kernels of a run as PNG images
  presets     list the presets and their settings
  help        show this text

Run "gmcn <command> --help" for the flags of a command.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "fit-inputs":
		err = fitInputs(args)
	case "train":
		err = trainCmd(args)
	case "eval":
		err = evalCmd(args)
	case "render":
		err = renderCmd(args)
	case "presets":
		err = presetsCmd()
	case "help", "-h", "--help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "gmcn: unknown command %q\n\n%s", cmd, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "gmcn: %v\n", err)
		os.Exit(1)
	}
}
