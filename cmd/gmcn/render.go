package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gmcn-go/gmcn/models"
	"github.com/gmcn-go/gmcn/runspec"
	"github.com/gmcn-go/gmcn/train/checkpoint"
)

// renderCmd is `gmcn render`.
type renderCmd struct {
	dir     runDirFlag
	n, size int
	dev     deviceFlag
}

func (c *renderCmd) flags(f *flagSet) {
	f.group("Flags", func() {
		c.dir.register(f)
		c.n, c.size = 16, 96
		intVar(f, &c.n, "inputs", 1, 10000, "`N` input mixtures to draw")
		intVar(f, &c.size, "size", 8, 4096, "`PIXELS` per side of a drawn mixture")
		c.dev.register(f)
	})
}

func (c *renderCmd) check(given map[string]bool) error {
	if err := c.dir.check(given); err != nil {
		return err
	}
	return c.dev.check()
}

func (c *renderCmd) run(context.Context) error {
	dir, n, size := c.dir.run, c.n, c.size
	setup, err := runspec.LoadSetup(dir)
	if err != nil {
		return err
	}
	_, testSet, err := runspec.LoadInputs(setup, true, os.Stderr)
	if err != nil {
		return err
	}
	classes := setup.Run.Classes
	l := testSet.Layout
	l.B = min(n, l.B)
	if l.D == 3 {
		return render3D(filepath.Join(dir, "inputs.png"), testSet, l.B, size, classes)
	}
	if err := writeInputs2D(filepath.Join(dir, "inputs.png"), testSet, l.B, size, setup.Dataset, classes); err != nil {
		return err
	}
	fmt.Printf("wrote %s\n", filepath.Join(dir, "inputs.png"))
	st, err := checkpoint.Load(filepath.Join(dir, runspec.CheckpointFile))
	if err != nil {
		fmt.Printf("no kernels drawn: %v\n", err)
		return nil
	}
	mc := setup.Model
	if mc.Device, err = c.dev.openTo(os.Stderr); err != nil {
		return err
	}
	m, err := models.Build(mc)
	if err != nil {
		return err
	}
	if err := m.SetState(models.State{Names: st.Names, Params: st.Params, BNMean: st.BNMean, BNVar: st.BNVar, CovNorms: st.CovNorms}); err != nil {
		return err
	}
	data, kl, err := m.AssembledKernel(0)
	if err != nil {
		return err
	}
	r := 2 * mc.Layout.Blocks[0].Radius
	if err := writeKernels(filepath.Join(dir, "kernels.png"), data, kl, size, r); err != nil {
		return err
	}
	fmt.Printf("wrote %s (%d×%d kernels of the first layer)\n", filepath.Join(dir, "kernels.png"), kl.B, kl.C)
	return nil
}
