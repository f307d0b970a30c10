package main

import (
	"context"
	"fmt"

	"github.com/gmcn-go/gmcn/shapes"
)

// genShapesCmd is `gmcn gen-shapes`.
type genShapesCmd struct {
	out         string
	train, test int
	seed        uint64
}

func (c *genShapesCmd) flags(f *flagSet) {
	f.group("Flags", func() {
		f.StringVar(&c.out, "out", "data/shapes", "`DIR` to write the benchmark into")
		c.train, c.test, c.seed = 200, 50, 1
		intVar(f, &c.train, "train", 1, 100000, "`N` training shapes per class")
		intVar(f, &c.test, "test", 1, 100000, "`N` test shapes per class")
		seedVar(f, &c.seed, "seed", "`N` seeding the generator")
	})
}

func (c *genShapesCmd) check(map[string]bool) error { return nil }

func (c *genShapesCmd) run(context.Context) error {
	if err := shapes.GenerateModelNet(c.out, c.train, c.test, c.seed); err != nil {
		return err
	}
	fmt.Printf("wrote %d training and %d test shapes per class to %s\n", c.train, c.test, c.out)
	return nil
}
