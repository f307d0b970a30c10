package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gmcn-go/gmcn/models"
	"github.com/gmcn-go/gmcn/ops"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/gmcn-go/gmcn/train"
	"github.com/gmcn-go/gmcn/train/checkpoint"
	"gorgonia.org/tensor"
)

func renderCmd(args []string) error {
	fs := newFlagSet("render", "Draws --inputs fitted test inputs of a run (inputs.png, from the run's input cache; 2D: the first ones,\n3D: spread over the classes) and, if the run has a\ncheckpoint, its first-layer kernels (kernels.png) as density images with a colour bar.")
	out := fs.String("out", "runs/demo", "training output directory (with run.json; checkpoint.gmcn for kernels)")
	n := fs.Int("inputs", 16, "number of input mixtures to draw")
	size := fs.Int("size", 96, "pixels per drawn mixture")
	fs.Parse(args)
	setup, err := loadSetup(*out)
	if err != nil {
		return err
	}
	_, testSet, err := train.LoadInputs(setup, true, os.Stderr)
	if err != nil {
		return err
	}
	ds, err := setup.OpenDataset()
	if err != nil {
		return err
	}
	l := testSet.Layout
	l.B = min(*n, l.B)
	if l.D == 3 {
		return render3D(filepath.Join(*out, "inputs.png"), testSet, l.B, *size, ds.Classes())
	}
	if err := writeInputs2D(filepath.Join(*out, "inputs.png"), testSet, l.B, *size, ds.Name(), ds.Classes()); err != nil {
		return err
	}
	fmt.Printf("wrote %s\n", filepath.Join(*out, "inputs.png"))
	st, err := checkpoint.Load(filepath.Join(*out, train.CheckpointFile))
	if err != nil {
		fmt.Printf("no kernels drawn: %v\n", err)
		return nil
	}
	mc := setup.Model
	m, err := models.Build(mc)
	if err != nil {
		return err
	}
	if err := m.SetState(models.State{Names: st.Names, Params: st.Params, BNMean: st.BNMean, BNVar: st.BNVar, CovNorms: st.CovNorms}); err != nil {
		return err
	}
	raw := m.Kernels[0].Learnables()
	k, err := ops.NewAssembleKernel(mc.Layout.Blocks[0].Radius).Do(raw[0].Value(), raw[1].Value(), raw[2].Value())
	if err != nil {
		return err
	}
	kt := k.(*tensor.Dense)
	kl, err := mixture.LayoutOf(kt.Shape())
	if err != nil {
		return err
	}
	var data []float64
	switch d := kt.Data().(type) {
	case []float32:
		for _, v := range d {
			data = append(data, float64(v))
		}
	case []float64:
		data = d
	}
	r := 2 * mc.Layout.Blocks[0].Radius
	if err := writeKernels(filepath.Join(*out, "kernels.png"), data, kl, *size, r); err != nil {
		return err
	}
	fmt.Printf("wrote %s (%d×%d kernels of the first layer)\n", filepath.Join(*out, "kernels.png"), kl.B, kl.C)
	return nil
}
