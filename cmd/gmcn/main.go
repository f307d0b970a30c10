// Command gmcn fits input mixtures, trains and evaluates Gaussian Mixture
// Convolution Networks on MNIST, Fashion-MNIST and ModelNet-layout 3D data, and renders mixtures.
//
//	gmcn train --preset demo          # fit inputs if needed, train, evaluate
//	gmcn eval  --out runs/demo        # accuracy and confusion matrix
//	gmcn render --out runs/demo       # PNGs of input mixtures and kernels
//	gmcn predict --run runs/demo digit.png # top classes of new inputs
//	gmcn export --run runs/demo       # safetensors weights, mixture PLY files
//	gmcn gen-shapes --out data/shapes # generated 3D benchmark in the ModelNet10 layout
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
  predict     classify image, IDX or shape files with a trained run: top classes and probabilities
  export      write a trained run as safetensors weights and mixture PLY files
  gen-shapes  write the generated 3D shape benchmark (10 classes, OFF meshes, ModelNet10 layout)
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
	case "predict":
		err = predictCmd(args, os.Stdout)
	case "export":
		err = exportCmd(args, os.Stdout)
	case "gen-shapes":
		err = genShapesCmd(args)
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
