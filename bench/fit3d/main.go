// Command fit3d measures the 3D input fitting on ModelNet-sized data: n
// point clouds of p points each (default 4,000 × 10,000, ModelNet10's
// training-set size and the PointNet++ resampling) fitted to K = 128
// Gaussians. The clouds are surface samples of the generated benchmark's
// shapes (shapes.GenerateShape, class i mod 10, seed PCG(seed, i)); they are
// all sampled first, so the fitting time is measured alone, over all cores.
//
// With -render it instead fits real meshes (as fetched by
// scripts/fetch-meshes.sh) and draws their mixtures as projected densities
// into a PNG.
//
// Usage:
//
//	go run ./bench/fit3d -n 4000 -points 10000 -k 128 -method fps
//	go run ./bench/fit3d -render docs/meshes3d.png -meshes data/meshes
package main

import (
	"flag"
	"fmt"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/gmcn-go/gmcn/dataset"
	"github.com/gmcn-go/gmcn/internal/parallel"
	"github.com/gmcn-go/gmcn/shapes"
)

func main() {
	n := flag.Int("n", 4000, "number of point clouds")
	points := flag.Int("points", 10000, "points per cloud")
	k := flag.Int("k", 128, "Gaussians per cloud")
	method := flag.String("method", "fps", "fit method: fps or kmeans-em")
	seed := flag.Uint64("seed", 1, "random seed")
	render := flag.String("render", "", "fit real meshes and write their renders to this PNG instead of benchmarking")
	meshes := flag.String("meshes", "data/meshes", "folder of scripts/fetch-meshes.sh (for -render)")
	flag.Parse()
	log.SetFlags(0)
	m, err := dataset.ParseMethod(*method)
	if err != nil {
		log.Fatal(err)
	}
	cfg := dataset.DefaultFitConfig(3)
	cfg.K, cfg.Points, cfg.Method, cfg.Seed = *k, *points, m, *seed
	if *render != "" {
		if err := renderMeshes(*render, *meshes, cfg); err != nil {
			log.Fatal(err)
		}
		return
	}
	if err := benchmark(*n, cfg); err != nil {
		log.Fatal(err)
	}
}

func benchmark(n int, cfg dataset.FitConfig) error {
	nc := len(shapes.GeneratedClasses)
	samplers := make([]*shapes.Sampler, nc)
	for c := range nc {
		m, err := shapes.GenerateShape(c, rand.New(rand.NewPCG(cfg.Seed, uint64(c))))
		if err != nil {
			return err
		}
		if samplers[c], err = shapes.NewSampler(m); err != nil {
			return err
		}
	}
	start := time.Now()
	clouds := make([][]float32, n)
	parallel.For(n, func(i int) {
		clouds[i] = samplers[i%nc].Sample(make([]float32, 0, 3*cfg.Points), cfg.Points, rand.New(rand.NewPCG(cfg.Seed, uint64(i))))
	})
	sampling := time.Since(start)
	start = time.Now()
	mix, l, err := shapes.FitClouds(clouds, cfg, nil)
	if err != nil {
		return err
	}
	fit := time.Since(start)
	// Keep the result observable so the fit cannot be optimised away, and
	// report a sanity figure: the mean number of non-empty components.
	used := 0
	for i := 0; i < len(mix); i += 13 {
		if mix[i] > 0 {
			used++
		}
	}
	fmt.Printf("fit3d: %d clouds × %d points → K=%d, method %v, GOMAXPROCS=%d (%s/%s)\n",
		n, cfg.Points, cfg.K, cfg.Method, runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH)
	fmt.Printf("sampling %.2f s (not part of the figure)\n", sampling.Seconds())
	fmt.Printf("fitting  %.2f s = %.2f ms per cloud, %.0f clouds/s; %.1f of %d components non-empty on average\n",
		fit.Seconds(), 1e3*fit.Seconds()/float64(n), float64(n)/fit.Seconds(), float64(used)/float64(l.B), cfg.K)
	return nil
}

// renderMeshes fits the real meshes that are present and renders them from
// two views each.
func renderMeshes(out, dir string, cfg dataset.FitConfig) error {
	names := []string{"npm/bunny.off", "npm/teapot.off", "cgal/armadillo.off", "cgal/cow.off", "cgal/elephant.off"}
	var paths, titles []string
	for _, name := range names {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			paths = append(paths, p)
			titles = append(titles, fmt.Sprintf("%s: %d Gaussians, %v fit of %d surface points",
				strings.TrimSuffix(filepath.Base(name), ".off"), cfg.K, cfg.Method, cfg.Points))
		}
	}
	if len(paths) == 0 {
		return fmt.Errorf("fit3d: none of %v in %s; run scripts/fetch-meshes.sh", names, dir)
	}
	mix, l, err := shapes.FitShapes(paths, cfg, nil)
	if err != nil {
		return err
	}
	all := make([][]float32, len(paths))
	for i := range all {
		all[i] = mix[i*l.N*13 : (i+1)*l.N*13]
	}
	views := []shapes.View{{Azimuth: math.Pi / 6, Elevation: math.Pi / 8}, {Azimuth: math.Pi * 2 / 3, Elevation: math.Pi / 8},
		{Azimuth: 0, Elevation: math.Pi / 2}}
	png, err := shapes.RenderPNG(all, titles, 200, views)
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		return err
	}
	fmt.Printf("wrote %s (%d meshes)\n", out, len(paths))
	return nil
}
