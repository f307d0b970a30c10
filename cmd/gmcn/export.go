package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gmcn-go/gmcn/export"
	"github.com/gmcn-go/gmcn/predict"
)

// exportSynopsis is the help paragraph of gmcn export.
const exportSynopsis = `Writes a trained run for other programs: weights.safetensors (every trained parameter,
BatchNorm's running statistics and the CovScaleNorm averages, with run.json in the
metadata), kernels/convB_outO_inI.gmm.ply (every block's assembled kernels, one mixture
per output and input channel) and inputs/testK_labelY.gma.ply (the first --inputs fitted
test inputs; they need the run's data set). docs/inference.md describes the formats.`

// exportCmd is `gmcn export`.
type exportCmd struct {
	dir    runDirFlag
	out    string
	inputs int
	dev    deviceFlag
	stdout io.Writer // nil: os.Stdout
}

func (c *exportCmd) flags(f *flagSet) {
	c.inputs = 4
	f.group("Flags", func() {
		f.StringVar(&c.dir.run, "run", "runs/demo", "`DIR` of the training run (with run.json and checkpoint.gmcn)")
		f.StringVar(&c.out, "out", "", "output `DIR` (default: RUN/export)")
		intVar(f, &c.inputs, "inputs", 0, 1e6, "fitted test inputs to write; 0 = none (then the data set is not read)")
		c.dev.register(f)
	})
}

func (c *exportCmd) check(map[string]bool) error {
	if c.out == "" {
		c.out = filepath.Join(c.dir.run, "export")
	}
	return c.dev.check()
}

func (c *exportCmd) run(context.Context) error {
	dev, err := c.dev.openTo(os.Stderr)
	if err != nil {
		return err
	}
	p, err := predict.LoadRun(c.dir.run, dev)
	if err != nil {
		return err
	}
	defer p.Close()
	written, err := export.Run(p, c.out, c.inputs)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmp.Or[io.Writer](c.stdout, os.Stdout), "wrote %d files to %s (%s, kernels/, inputs/)\n", len(written), c.out, export.WeightsFile)
	return nil
}
