package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/gmcn-go/gmcn/export"
	"github.com/gmcn-go/gmcn/predict"
)

const exportSynopsis = `Writes a trained run for other programs: weights.safetensors (every trained parameter,
BatchNorm's running statistics and the CovScaleNorm averages, with run.json in the
metadata), kernels/convB_outO_inI.gmm.ply (every block's assembled kernels, one mixture
per output and input channel) and inputs/testK_labelY.gma.ply (the first --inputs fitted
test inputs; they need the run's data set). docs/inference.md describes the formats.`

// exportCmd runs `gmcn export`, naming what it wrote on stdout.
func exportCmd(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	run := fs.String("run", "", "run directory with run.json and checkpoint.gmcn (required)")
	out := fs.String("out", "", "output directory (default: RUN/export)")
	inputs := fs.Int("inputs", 4, "fitted test inputs to write; 0 = none (then the data set is not read)")
	rest, help, err := parseCommand(fs, "export", "[flags]", exportSynopsis, args, stdout)
	if err != nil || help {
		return err
	}
	switch {
	case len(rest) > 0:
		return fmt.Errorf("export: unexpected argument %q: export takes only flags (--run DIR --out DIR)", rest[0])
	case *run == "":
		return errors.New("export: --run DIR is required: the directory of a trained run")
	case *inputs < 0:
		return fmt.Errorf("export: --inputs %d: want ≥ 0", *inputs)
	}
	if *out == "" {
		*out = filepath.Join(*run, "export")
	}
	p, err := predict.LoadRun(*run)
	if err != nil {
		return err
	}
	defer p.Close()
	written, err := export.Run(p, *out, *inputs)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %d files to %s (%s, kernels/, inputs/)\n", len(written), *out, export.WeightsFile)
	return nil
}
