package main

import (
	"fmt"

	"github.com/gmcn-go/gmcn/shapes"
)

func genShapesCmd(args []string) error {
	fs := newFlagSet("gen-shapes", "Writes gmcn's generated 3D shape benchmark: 10 classes of procedurally generated meshes with\nrandom rotation, anisotropic scale, deformation, noise and partial occlusion, as OFF files in\nthe ModelNet10 layout (<class>/{train,test}/*.off). It is our own benchmark, not ModelNet;\ntrain on it with: gmcn train --preset modelnet-cpu --data DIR")
	out := fs.String("out", "data/shapes", "output directory")
	nTrain := fs.Int("train", 200, "training shapes per class")
	nTest := fs.Int("test", 50, "test shapes per class")
	seed := fs.Uint64("seed", 1, "generator seed")
	fs.Parse(args)
	if err := shapes.GenerateModelNet(*out, *nTrain, *nTest, *seed); err != nil {
		return err
	}
	fmt.Printf("wrote %d training and %d test shapes per class to %s\n", *nTrain, *nTest, *out)
	return nil
}
