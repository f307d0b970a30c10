package shapes

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/dataset"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// randomCloud draws n points from a few anisotropic blobs.
func randomCloud(rng *rand.Rand, n int) []float32 {
	pts := make([]float32, 0, 3*n)
	for range n {
		c := float64(rng.IntN(4))
		pts = append(pts, float32(c+0.3*rng.NormFloat64()), float32(0.1*c*c+0.05*rng.NormFloat64()), float32(0.2*rng.NormFloat64()))
	}
	return pts
}

// naiveFit is the reference algorithm written out directly
// (docs/algorithms.md, "Input fitting in 3D"):
// FPS from point 0, E step of K identical isotropic components (argmax of
// the responsibilities, first on ties), M step with one-hot
// responsibilities, and the amplitude the reference stores.
func naiveFit(pts []float32, k int, eps float64) (priors, amps []float64, means, covs [][]float64) {
	n := len(pts) / 3
	p := func(i, j int) float64 { return float64(pts[3*i+j]) }
	d2 := func(i int, c []float64) float64 {
		s := 0.0
		for j := range 3 {
			s += (p(i, j) - c[j]) * (p(i, j) - c[j])
		}
		return s
	}
	var centres [][]float64
	lo, hi := []float64{math.Inf(1), math.Inf(1), math.Inf(1)}, []float64{math.Inf(-1), math.Inf(-1), math.Inf(-1)}
	for i := range n {
		for j := range 3 {
			lo[j], hi[j] = min(lo[j], p(i, j)), max(hi[j], p(i, j))
		}
	}
	ext := max(hi[0]-lo[0], hi[1]-lo[1], hi[2]-lo[2])
	next := 0
	for range k {
		centres = append(centres, []float64{p(next, 0), p(next, 1), p(next, 2)})
		best := -1.0
		for i := range n {
			m := math.Inf(1)
			for _, c := range centres {
				m = min(m, d2(i, c))
			}
			if m > best {
				best, next = m, i
			}
		}
	}
	// Responsibilities of identical components N(x; c, ext·I): the largest
	// is the smallest distance.
	assign := make([]int, n)
	for i := range n {
		bestR := math.Inf(-1)
		for c := range centres {
			if r := -d2(i, centres[c]) / (2 * ext); r > bestR {
				bestR, assign[i] = r, c
			}
		}
	}
	e := max(eps*ext*ext, 1e-9)
	for c := range k {
		var idx []int
		for i, a := range assign {
			if a == c {
				idx = append(idx, i)
			}
		}
		mu, cov := make([]float64, 3), make([]float64, 9)
		if len(idx) == 0 {
			priors, amps = append(priors, 0), append(amps, 0)
			means, covs = append(means, mu), append(covs, []float64{1, 0, 0, 0, 1, 0, 0, 0, 1})
			continue
		}
		for _, i := range idx {
			for j := range 3 {
				mu[j] += p(i, j) / float64(len(idx))
			}
		}
		for _, i := range idx {
			for r := range 3 {
				for s := range 3 {
					cov[3*r+s] += (p(i, r) - mu[r]) * (p(i, s) - mu[s]) / float64(len(idx))
				}
			}
		}
		cov[0], cov[4], cov[8] = cov[0]+e, cov[4]+e, cov[8]+e
		prior := float64(len(idx)) / float64(n)
		priors = append(priors, prior)
		amps = append(amps, prior/math.Sqrt(math.Pow(2*math.Pi, 3)*mixture.Det3(cov)))
		means, covs = append(means, mu), append(covs, cov)
	}
	return priors, amps, means, covs
}

func TestFitFPSMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct{ n, k int }{{300, 16}, {50, 50}, {40, 60}} {
		pts := randomCloud(rng, tc.n)
		cfg := dataset.DefaultFitConfig(3)
		cfg.K, cfg.Normalize = tc.k, false
		got := make([]float32, 13*tc.k)
		if err := NewFitter(cfg).Fit(pts, got); err != nil {
			t.Fatal(err)
		}
		priors, amps, means, covs := naiveFit(pts, tc.k, cfg.Eps)
		ref := make([]float32, 13*tc.k)
		for c := range tc.k {
			ref[13*c] = float32(amps[c])
			for j := range 3 {
				ref[13*c+1+j] = float32(means[c][j])
			}
			for j := range 9 {
				ref[13*c+4+j] = float32(covs[c][j])
			}
		}
		// The reference stores amplitudes; converted to integrals they must
		// be our weights (the priors).
		mixture.AmplitudesToIntegrals(ref, dataset.FitLayout(1, tc.k, 3))
		sum := 0.0
		for c := range tc.k {
			if d := math.Abs(float64(got[13*c]) - priors[c]); d > 1e-6 {
				t.Errorf("n=%d K=%d: weight %d = %g, reference prior %g", tc.n, tc.k, c, got[13*c], priors[c])
			}
			sum += float64(got[13*c])
			for j := range 13 {
				if d := math.Abs(float64(got[13*c+j] - ref[13*c+j])); d > 1e-5*max(1, math.Abs(float64(ref[13*c+j]))) {
					t.Errorf("n=%d K=%d: component %d value %d = %g, reference %g", tc.n, tc.k, c, j, got[13*c+j], ref[13*c+j])
				}
			}
		}
		if math.Abs(sum-1) > 1e-5 {
			t.Errorf("n=%d K=%d: weights sum to %g, want 1", tc.n, tc.k, sum)
		}
		if err := mixture.Validate(got, dataset.FitLayout(1, tc.k, 3)); err != nil {
			t.Error(err)
		}
	}
}

// logLikelihood returns the mean log-likelihood of pts under mix.
func logLikelihood(pts []float32, mix []float32) float64 {
	k := len(mix) / 13
	s := 0.0
	for i := 0; i < len(pts); i += 3 {
		v := 0.0
		for c := range k {
			g := mix[13*c:]
			if g[0] == 0 {
				continue
			}
			cov := make([]float64, 9)
			for j := range 9 {
				cov[j] = float64(g[4+j])
			}
			det := mixture.Det3(cov)
			inv := inverse3(cov, det)
			d := []float64{float64(pts[i] - g[1]), float64(pts[i+1] - g[2]), float64(pts[i+2] - g[3])}
			q := 0.0
			for r := range 3 {
				for c := range 3 {
					q += d[r] * inv[3*r+c] * d[c]
				}
			}
			v += float64(g[0]) * math.Exp(-q/2) / math.Sqrt(math.Pow(2*math.Pi, 3)*det)
		}
		s += math.Log(v)
	}
	return s / float64(len(pts)/3)
}

func inverse3(m []float64, det float64) []float64 {
	return []float64{
		(m[4]*m[8] - m[5]*m[7]) / det, (m[2]*m[7] - m[1]*m[8]) / det, (m[1]*m[5] - m[2]*m[4]) / det,
		(m[5]*m[6] - m[3]*m[8]) / det, (m[0]*m[8] - m[2]*m[6]) / det, (m[2]*m[3] - m[0]*m[5]) / det,
		(m[3]*m[7] - m[4]*m[6]) / det, (m[1]*m[6] - m[0]*m[7]) / det, (m[0]*m[4] - m[1]*m[3]) / det,
	}
}

// EM never decreases the likelihood: more EM steps must fit at least as
// well, and every result is a valid mixture whose weights sum to 1.
func TestFitKMeansEM(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	pts := randomCloud(rng, 400)
	prev := math.Inf(-1)
	for steps := range 4 {
		cfg := dataset.DefaultFitConfig(3)
		cfg.K, cfg.Method, cfg.EMSteps, cfg.Eps = 6, dataset.KMeansEM, steps, 1e-3
		mix, l, err := FitClouds([][]float32{pts}, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := mixture.Validate(mix, l); err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for c := range cfg.K {
			sum += float64(mix[13*c])
		}
		if math.Abs(sum-1) > 1e-5 {
			t.Errorf("%d EM steps: weights sum to %g", steps, sum)
		}
		// The normalised cloud is what was fitted.
		norm := append([]float32(nil), pts...)
		NormalizeUnitSphere(norm)
		ll := logLikelihood(norm, mix)
		if steps > 1 && ll < prev-1e-4 {
			t.Errorf("%d EM steps: log-likelihood %g < %g after %d steps", steps, ll, prev, steps-1)
		}
		prev = ll
	}
}

// Fitting must not depend on the schedule, and FitClouds must not modify
// its input.
func TestFitCloudsDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	clouds := make([][]float32, 7)
	for i := range clouds {
		clouds[i] = randomCloud(rng, 100+30*i)
	}
	keep := append([]float32(nil), clouds[3]...)
	cfg := dataset.DefaultFitConfig(3)
	cfg.K = 10
	all, _, err := FitClouds(clouds, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range clouds {
		one, _, err := FitClouds([][]float32{c}, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		for j, v := range one {
			if all[13*cfg.K*i+j] != v {
				t.Fatalf("cloud %d differs when fitted alone", i)
			}
		}
	}
	for i, v := range keep {
		if clouds[3][i] != v {
			t.Fatal("FitClouds modified its input")
		}
	}
}

func TestFitErrors(t *testing.T) {
	good := dataset.DefaultFitConfig(3)
	good.K = 2
	for _, tc := range []struct {
		name  string
		cfg   func(*dataset.FitConfig)
		cloud []float32
		want  string
	}{
		// Every invalid setting is covered by dataset's
		// TestFitConfigValidate; these check that the fit validates, and
		// refuses a valid 2D config.
		{"eps", func(c *dataset.FitConfig) { c.Eps = 0 }, []float32{0, 0, 0}, "Eps = 0"},
		{"2D", func(c *dataset.FitConfig) { *c = dataset.DefaultFitConfig(2) }, []float32{0, 0, 0}, "fit config for 2D data, shapes are 3D"},
		{"empty", nil, nil, "shape 0: fit3d: 0 values"},
		{"ragged", nil, []float32{1, 2}, "fit3d: 2 values"},
		{"nan", nil, []float32{0, 0, 0, 1, float32(math.NaN()), 0}, "point 1 has coordinate 1 = NaN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			_, _, err := FitClouds([][]float32{tc.cloud}, cfg, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// A single point (or all points equal) gives one component of covariance
// 1e-9·I; the rest are empty.
func TestFitDegenerate(t *testing.T) {
	cfg := dataset.DefaultFitConfig(3)
	cfg.K = 3
	mix, l, err := FitClouds([][]float32{{1, 2, 3, 1, 2, 3}}, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := mixture.Validate(mix, l); err != nil {
		t.Fatal(err)
	}
	if mix[0] != 1 || mix[13] != 0 || mix[26] != 0 || mix[4] != float32(minEps) {
		t.Errorf("weights %v %v %v, Σ₀₀ %v; want 1 0 0 and 1e-9", mix[0], mix[13], mix[26], mix[4])
	}
}

func TestSampleSurface(t *testing.T) {
	// Two triangles of area 0.5 and 1.5 far apart: a quarter of the
	// samples must land on the first.
	m := &Mesh{
		Vertices:  []float64{0, 0, 0, 1, 0, 0, 0, 1, 0, 10, 0, 0, 13, 0, 0, 10, 0, 1},
		Triangles: []int32{0, 1, 2, 3, 4, 5},
	}
	const n = 20000
	pts, err := SampleSurface(m, n, rand.New(rand.NewPCG(7, 8)))
	if err != nil {
		t.Fatal(err)
	}
	first := 0
	for i := 0; i < len(pts); i += 3 {
		x, y, z := pts[i], pts[i+1], pts[i+2]
		switch {
		case x < 5 && z == 0 && x >= 0 && y >= 0 && x+y <= 1+1e-6:
			first++
		case x >= 10 && y == 0 && z >= 0 && (x-10)/3+z <= 1+1e-6:
		default:
			t.Fatalf("sample (%g, %g, %g) is on neither triangle", x, y, z)
		}
	}
	// Binomial(n, 1/4): σ ≈ 61; 5σ.
	if d := math.Abs(float64(first) - n/4); d > 5*math.Sqrt(n*0.25*0.75) {
		t.Errorf("%d of %d samples on the small triangle, want about %d", first, n, n/4)
	}
	if _, err := SampleSurface(&Mesh{Vertices: []float64{0, 0, 0, 1, 1, 1}, Triangles: []int32{0, 1, 1}}, 5, rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Error("sampling a zero-area mesh succeeded")
	}
}

// meshDir returns the folder of scripts/fetch-meshes.sh, or skips.
func meshDir(t testing.TB) string {
	dir := os.Getenv("GMCN_MESHES")
	if dir == "" {
		dir = filepath.Join("..", "data", "meshes")
	}
	if _, err := os.Stat(filepath.Join(dir, "npm", "bunny.off")); err != nil {
		t.Skipf("no fetched meshes in %s (run scripts/fetch-meshes.sh): %v", dir, err)
	}
	return dir
}

// The real CGAL and npm meshes load, sample and fit to valid 128-Gaussian
// mixtures.
func TestRealMeshes(t *testing.T) {
	dir := meshDir(t)
	paths := []string{"npm/bunny.off", "npm/teapot.off", "cgal/armadillo.off", "cgal/cow.off", "cgal/elephant.off",
		"cgal/sphere.ply", "cgal/colored_tetra.ply"}
	for i := range paths {
		paths[i] = filepath.Join(dir, paths[i])
	}
	cfg := dataset.DefaultFitConfig(3)
	mix, l, err := FitShapes(paths, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := mixture.Validate(mix, l); err != nil {
		t.Fatal(err)
	}
	for i, p := range paths {
		m := mixture.Mixture(mix, l, i)
		sum, used := 0.0, 0
		for c := range cfg.K {
			sum += float64(m[13*c])
			if m[13*c] > 0 {
				used++
			}
		}
		if math.Abs(sum-1) > 1e-4 || (used < cfg.K && !strings.Contains(p, "tetra")) {
			t.Errorf("%s: weights sum to %g with %d of %d components used", p, sum, used, cfg.K)
		}
	}
}

// Every CGAL OFF and PLY file reads or fails with an error naming it.
func TestRealMeshesAllCGAL(t *testing.T) {
	dir := meshDir(t)
	files, _ := filepath.Glob(filepath.Join(dir, "cgal", "*"))
	loaded := 0
	for _, f := range files {
		m, err := LoadMesh(f)
		if err != nil {
			if !strings.Contains(err.Error(), f) {
				t.Errorf("error %v does not name the file", err)
			}
			t.Logf("%v", err)
			continue
		}
		checkMesh(t, m)
		loaded++
	}
	if loaded < 100 {
		t.Errorf("only %d of %d CGAL files loaded", loaded, len(files))
	}
}

func BenchmarkFit3D(b *testing.B) {
	for _, bc := range []struct {
		name   string
		method dataset.Method
	}{{"FPS_K128_P10000", dataset.FPSMStep}, {"KMeansEM_K128_P10000", dataset.KMeansEM}} {
		b.Run(bc.name, func(b *testing.B) {
			m, err := GenerateShape(6, rand.New(rand.NewPCG(1, 1)))
			if err != nil {
				b.Fatal(err)
			}
			pts, err := SampleSurface(m, 10000, rand.New(rand.NewPCG(2, 2)))
			if err != nil {
				b.Fatal(err)
			}
			cfg := dataset.DefaultFitConfig(3)
			cfg.Method = bc.method
			f, dst := NewFitter(cfg), make([]float32, 13*cfg.K)
			for b.Loop() {
				if err := f.Fit(pts, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
