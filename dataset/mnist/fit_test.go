package mnist

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/dataset"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// syntheticImages returns n rows×cols images, each the sum of one to three
// random anisotropic blobs, quantised to uint8.
func syntheticImages(rng *rand.Rand, n, rows, cols int) Images {
	im := Images{N: n, Rows: rows, Cols: cols, Pixels: make([]uint8, n*rows*cols)}
	for i := range n {
		px := im.Image(i)
		v := make([]float64, rows*cols)
		for range 1 + rng.IntN(3) {
			cx, cy := 3+rng.Float64()*float64(cols-6), 3+rng.Float64()*float64(rows-6)
			sx, sy := 1+2*rng.Float64(), 1+2*rng.Float64()
			for r := range rows {
				for c := range cols {
					dx, dy := (float64(c)+0.5-cx)/sx, (float64(r)+0.5-cy)/sy
					v[r*cols+c] += math.Exp(-0.5 * (dx*dx + dy*dy))
				}
			}
		}
		for j, x := range v {
			px[j] = uint8(min(255, math.Round(255*x)))
		}
	}
	return im
}

// smallConfig is the reference method with fewer Gaussians and samples, so
// that tests stay fast.
func smallConfig() dataset.FitConfig {
	c := dataset.DefaultFitConfig(2)
	c.K, c.Points, c.NormPoints = 12, 600, 300
	return c
}

func testConfigs() []struct {
	name string
	cfg  dataset.FitConfig
} {
	em := smallConfig()
	em.EMSteps = 30
	random := em
	random.Method = dataset.RandomInit
	one := smallConfig()
	one.K = 1
	none := smallConfig()
	none.EMSteps = 0
	return []struct {
		name string
		cfg  dataset.FitConfig
	}{{"kmeans_EM1", smallConfig()}, {"kmeans_EM30", em}, {"random_EM30", random}, {"K1", one}, {"kmeans_only", none}}
}

// TestFitProperties checks every fitted mixture of synthetic images: priors
// summing to 1, symmetric positive definite covariances with variances ≥
// reg_covar, means inside the image, the prior-weighted mean of the means
// equal to the sample mean (EM and k-means both preserve it), a
// standardised mixture whose standard deviation at the same points is 1,
// and FitInputs (parallel, float32) returning the same mixtures.
func TestFitProperties(t *testing.T) {
	im := syntheticImages(rand.New(rand.NewPCG(7, 1)), 6, 28, 28)
	for _, c := range testConfigs() {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			out, l, err := FitInputs(im, cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			if l != (mixture.Layout{B: im.N, C: 1, N: cfg.K, D: 2}) || len(out) != l.Len() {
				t.Fatalf("layout %+v with %d values", l, len(out))
			}
			if err := mixture.Validate(out, l); err != nil {
				t.Fatal(err)
			}
			f := newFitter(cfg, im.Rows, im.Cols)
			for i := range im.N {
				pcg := rand.NewPCG(cfg.Seed, uint64(i))
				if err := f.fit(im.Image(i), rand.New(pcg)); err != nil {
					t.Fatal(err)
				}
				var sum, mx, my float64
				for j := range cfg.K {
					sum += f.w[j]
					mx += f.w[j] * f.mu[2*j]
					my += f.w[j] * f.mu[2*j+1]
					c := f.cov[4*j : 4*j+4]
					if c[0] < cfg.RegCovar-1e-9 || c[3] < cfg.RegCovar-1e-9 || c[1] != c[2] || !mixture.PositiveDefinite(c, 2) {
						t.Errorf("image %d component %d: covariance %v", i, j, c)
					}
					if x, y := f.mu[2*j], f.mu[2*j+1]; !(x >= 0 && x <= 28 && y >= 0 && y <= 28) {
						t.Errorf("image %d component %d: mean (%g, %g) outside the image", i, j, x, y)
					}
				}
				if math.Abs(sum-1) > 1e-12 {
					t.Errorf("image %d: priors sum to %.15g", i, sum)
				}
				px, py := pointMean(f.pts)
				if math.Abs(mx-px) > 1e-9 || math.Abs(my-py) > 1e-9 {
					t.Errorf("image %d: weighted mean of means (%g, %g), sample mean (%g, %g)", i, mx, my, px, py)
				}
				again := *pcg
				sd := f.standardize(rand.New(pcg))
				got := make([]float32, 7*cfg.K)
				f.pack(got)
				if !slices.Equal(got, mixture.Mixture(out, l, i)) {
					t.Errorf("image %d: FitInputs differs from the sequential fit", i)
				}
				if sd2 := f.standardize(rand.New(&again)); sd > 0.001 && math.Abs(sd2-1) > 1e-9 {
					t.Errorf("image %d: standardised mixture has sd %g at the same points, want 1", i, sd2)
				}
			}
		})
	}
}

func pointMean(pts []float64) (float64, float64) {
	var x, y float64
	for i := 0; i < len(pts); i += 2 {
		x += pts[i]
		y += pts[i+1]
	}
	n := float64(len(pts) / 2)
	return x / n, y / n
}

// TestFitDeterministic checks that a fit depends only on the seed: equal
// with one or two workers, different for another seed.
func TestFitDeterministic(t *testing.T) {
	im := syntheticImages(rand.New(rand.NewPCG(7, 2)), 8, 28, 28)
	cfg := smallConfig()
	fit := func(procs int, seed uint64) []float32 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		c := cfg
		c.Seed = seed
		out, _, err := FitInputs(im, c, nil)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	a := fit(2, 1)
	if !slices.Equal(a, fit(1, 1)) || !slices.Equal(a, fit(2, 1)) {
		t.Error("same seed, different mixtures")
	}
	if slices.Equal(a, fit(2, 2)) {
		t.Error("different seeds, same mixtures")
	}
}

func TestFitErrors(t *testing.T) {
	im := syntheticImages(rand.New(rand.NewPCG(7, 3)), 5, 28, 28)
	clear(im.Image(3))
	clear(im.Image(1))
	if _, _, err := FitInputs(im, smallConfig(), nil); err == nil || !strings.Contains(err.Error(), "image 1:") ||
		!strings.Contains(err.Error(), "no intensity") {
		t.Errorf("blank images 1 and 3: error %v, want one naming image 1", err)
	}
	short := im
	short.Pixels = short.Pixels[1:]
	if _, _, err := FitInputs(short, smallConfig(), nil); err == nil || !strings.Contains(err.Error(), "pixels for 5 images") {
		t.Errorf("short pixels: error %v", err)
	}
	// Every invalid setting is covered by dataset's TestFitConfigValidate;
	// these check that FitInputs validates, and refuses a valid 3D config.
	for _, c := range []struct {
		change func(*dataset.FitConfig)
		want   string
	}{
		{func(c *dataset.FitConfig) { c.Points = 5 }, "5 points"},
		{func(c *dataset.FitConfig) { *c = dataset.DefaultFitConfig(3) }, "fit config for 3D data, images are 2D"},
	} {
		cfg := smallConfig()
		c.change(&cfg)
		if _, _, err := FitInputs(im, cfg, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("config %v: error %v, want one containing %q", cfg, err, c.want)
		}
	}
}

// sampledFitter returns a fitter holding the sample points of a synthetic
// image, and the random source after sampling.
func sampledFitter(t *testing.T, cfg dataset.FitConfig, seed uint64) (*fitter, *rand.PCG) {
	t.Helper()
	im := syntheticImages(rand.New(rand.NewPCG(seed, 4)), 1, 28, 28)
	f := newFitter(cfg, 28, 28)
	pcg := rand.NewPCG(seed, 5)
	if err := f.sample(im.Image(0), rand.New(pcg)); err != nil {
		t.Fatal(err)
	}
	return f, pcg
}

// TestKMeansMatchesPlain checks the pruned k-means against a plain
// implementation of scikit-learn's algorithm (full potential per candidate,
// full distance scans): same seeds from the same random stream, same final
// centres and labels.
func TestKMeansMatchesPlain(t *testing.T) {
	for _, k := range []int{1, 5, 32} {
		cfg := smallConfig()
		cfg.K = k
		f, pcg := sampledFitter(t, cfg, uint64(k))
		state := *pcg
		f.km.seed(f.pts, rand.New(pcg))
		want := plainSeed(f.pts, k, rand.New(&state))
		if !slices.Equal(f.km.centres, want) {
			t.Fatalf("K=%d: seeds differ:\n%v\n%v", k, f.km.centres, want)
		}
		labels := plainLloyd(f.pts, want, 50)
		f.km.lloyd(f.pts, 50)
		for c := range f.km.centres {
			if math.Abs(f.km.centres[c]-want[c]) > 1e-12 {
				t.Fatalf("K=%d: centres differ:\n%v\n%v", k, f.km.centres, want)
			}
		}
		if !slices.Equal(f.km.label, labels) {
			t.Fatalf("K=%d: labels differ", k)
		}
	}
}

func plainSeed(pts []float64, k int, rng *rand.Rand) []float64 {
	s := len(pts) / 2
	centres := make([]float64, 0, 2*k)
	first := rng.IntN(s)
	centres = append(centres, pts[2*first], pts[2*first+1])
	closest := make([]float64, s)
	for i := range s {
		closest[i] = dist2(pts, i, centres, 0)
	}
	trials := 2 + int(math.Log(float64(k)))
	for c := 1; c < k; c++ {
		var pot float64
		cum := make([]float64, s)
		for i, d := range closest {
			pot += d
			cum[i] = pot
		}
		best, bestPot := -1, math.Inf(1)
		for range trials {
			v := rng.Float64() * pot
			j := min(sortSearch(cum, v), s-1)
			var p float64
			for i := range s {
				p += min(closest[i], dist2(pts, i, pts, j))
			}
			if p < bestPot {
				best, bestPot = j, p
			}
		}
		centres = append(centres, pts[2*best], pts[2*best+1])
		for i := range s {
			closest[i] = min(closest[i], dist2(pts, i, pts, best))
		}
	}
	return centres
}

func sortSearch(cum []float64, v float64) int {
	i, _ := slices.BinarySearch(cum, v)
	return i
}

// plainLloyd runs scikit-learn's Lloyd loop with full scans on centres (in
// place) and returns the labels.
func plainLloyd(pts, centres []float64, maxIter int) []int32 {
	s, k := len(pts)/2, len(centres)/2
	assign := func() []int32 {
		l := make([]int32, s)
		for i := range s {
			bd := math.Inf(1)
			for c := range k {
				if d := dist2(pts, i, centres, c); d < bd {
					l[i], bd = int32(c), d
				}
			}
		}
		return l
	}
	tol := 1e-4 * meanVariance(pts)
	var old []int32
	for range maxIter {
		labels := assign()
		sum := make([]float64, 2*k)
		count := make([]int, k)
		for i, a := range labels {
			sum[2*a] += pts[2*i]
			sum[2*a+1] += pts[2*i+1]
			count[a]++
		}
		var shift float64
		for c := range k {
			if count[c] > 0 {
				x, y := sum[2*c]/float64(count[c]), sum[2*c+1]/float64(count[c])
				shift += (x-centres[2*c])*(x-centres[2*c]) + (y-centres[2*c+1])*(y-centres[2*c+1])
				centres[2*c], centres[2*c+1] = x, y
			}
		}
		if slices.Equal(labels, old) {
			return labels
		}
		if shift <= tol {
			break
		}
		old = labels
	}
	return assign()
}

// TestEMSteps checks one E and one M step against the formulas evaluated
// independently: responsibilities from mixture.Prepare/Eval without the log
// domain, parameters by two-pass weighted moments.
func TestEMSteps(t *testing.T) {
	cfg := smallConfig()
	cfg.K = 6
	f, pcg := sampledFitter(t, cfg, 11)
	f.km.run(f.pts, cfg.LloydIters, rand.New(pcg))
	f.mStep(f.km.label)
	prep := make([]mixture.Prepared[float64], cfg.K)
	var g [7]float64
	for j := range prep {
		g[0] = f.w[j]
		copy(g[1:3], f.mu[2*j:])
		copy(g[3:7], f.cov[4*j:])
		prep[j] = mixture.Prepare(2, g[:])
	}
	f.eStep()
	k := cfg.K
	maxErr := 0.0
	for i := range cfg.Points {
		var tot float64
		for j := range prep {
			tot += prep[j].Eval(2, f.pts[2*i:2*i+2])
		}
		for j := range prep {
			r := prep[j].Eval(2, f.pts[2*i:2*i+2]) / tot
			maxErr = max(maxErr, math.Abs(r-f.resp[i*k+j]))
		}
	}
	if maxErr > 1e-12 {
		t.Errorf("responsibilities differ by %g", maxErr)
	}
	resp := slices.Clone(f.resp)
	f.mStep(nil)
	var total float64
	for j := range k {
		var n, mx, my float64
		for i := range cfg.Points {
			r := resp[i*k+j]
			n += r
			mx += r * f.pts[2*i]
			my += r * f.pts[2*i+1]
		}
		total += n
		mx, my = mx/n, my/n
		var cxx, cxy, cyy float64
		for i := range cfg.Points {
			r := resp[i*k+j]
			dx, dy := f.pts[2*i]-mx, f.pts[2*i+1]-my
			cxx += r * dx * dx
			cxy += r * dx * dy
			cyy += r * dy * dy
		}
		want := []float64{mx, my, cxx/n + cfg.RegCovar, cxy / n, cxy / n, cyy/n + cfg.RegCovar}
		got := append(slices.Clone(f.mu[2*j:2*j+2]), f.cov[4*j:4*j+4]...)
		for a := range want {
			if math.Abs(got[a]-want[a]) > 1e-9 {
				t.Errorf("component %d: parameters %v, want %v", j, got, want)
				break
			}
		}
	}
	for j := range k {
		var n float64
		for i := range cfg.Points {
			n += resp[i*k+j]
		}
		if math.Abs(f.w[j]-n/total) > 1e-12 {
			t.Errorf("component %d: weight %g, want %g", j, f.w[j], n/total)
		}
	}
}

// TestFitRecoversMixture fits many EM steps to points drawn from a known
// mixture of three Gaussians and checks that the parameters come back.
func TestFitRecoversMixture(t *testing.T) {
	truth := []struct{ w, mx, my, cxx, cxy, cyy float64 }{
		{0.5, 7, 8, 3, 1, 2},
		{0.3, 20, 6, 1.5, -0.5, 1},
		{0.2, 14, 21, 2, 0, 4},
	}
	cfg := dataset.DefaultFitConfig(2)
	cfg.K, cfg.Points, cfg.EMSteps, cfg.RegCovar, cfg.Tol = 3, 4000, 300, 1e-6, 1e-10
	f := newFitter(cfg, 28, 28)
	rng := rand.New(rand.NewPCG(3, 3))
	pts := make([]float64, 0, 2*cfg.Points)
	for len(pts) < 2*cfg.Points {
		u, c := rng.Float64(), truth[0]
		for _, g := range truth {
			if c = g; u < g.w {
				break
			}
			u -= g.w
		}
		// Cholesky factor of the covariance.
		l00 := math.Sqrt(c.cxx)
		l10 := c.cxy / l00
		l11 := math.Sqrt(c.cyy - l10*l10)
		a, b := rng.NormFloat64(), rng.NormFloat64()
		x, y := c.mx+l00*a, c.my+l10*a+l11*b
		if x >= 0 && x < 28 && y >= 0 && y < 28 {
			pts = append(pts, x, y)
		}
	}
	setPoints(f, pts)
	f.fitPoints(rng)
	for _, g := range truth {
		// The component whose mean is nearest to g.
		j, bd := 0, math.Inf(1)
		for c := range cfg.K {
			if d := math.Hypot(f.mu[2*c]-g.mx, f.mu[2*c+1]-g.my); d < bd {
				j, bd = c, d
			}
		}
		c := f.cov[4*j:]
		if math.Abs(f.w[j]-g.w) > 0.03 || bd > 0.15 || math.Abs(c[0]-g.cxx) > 0.2*g.cxx ||
			math.Abs(c[3]-g.cyy) > 0.2*g.cyy || math.Abs(c[1]-g.cxy) > 0.3 {
			t.Errorf("fitted w=%.3f μ=(%.2f, %.2f) Σ=%.2f, want %+v", f.w[j], f.mu[2*j], f.mu[2*j+1], c[:4], g)
		}
	}
}

// setPoints stores arbitrary points of the 28×28 grid in f, grouped by cell
// as sample does.
func setPoints(f *fitter, pts []float64) {
	cell := func(i int) int { return int(pts[2*i+1])*28 + int(pts[2*i]) }
	order := make([]int, len(pts)/2)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cell(a) - cell(b) })
	clear(f.km.start)
	f.km.cells = f.km.cells[:0]
	for n, i := range order {
		p := cell(i)
		f.pts[2*n], f.pts[2*n+1] = pts[2*i], pts[2*i+1]
		f.km.start[p+1]++
		f.km.centreX[p], f.km.centreY[p] = float64(p%28)+0.5, float64(p/28)+0.5
	}
	for p := range 28 * 28 {
		if f.km.start[p+1] > 0 {
			f.km.cells = append(f.km.cells, p)
		}
		f.km.start[p+1] += f.km.start[p]
	}
}

// TestEStepCutoff checks that dropping the E-step terms below respCutoff
// changes the fitted parameters only at the level of float64 summation
// rounding (≤ 1e-10, absolute below 1 and relative above; the cached
// mixtures are float32, resolution ~6e-8), on MNIST images (synthetic ones
// if MNIST is missing).
func TestEStepCutoff(t *testing.T) {
	im := syntheticImages(rand.New(rand.NewPCG(7, 6)), 4, 28, 28)
	mnistOnce.Do(func() { mnistData, mnistErr = LoadMNIST("") })
	if mnistErr == nil {
		im = mnistData.train.Images
		im.N = 4
	}
	cfg := dataset.DefaultFitConfig(2)
	cfg.EMSteps = 3
	defer func(c float64) { respCutoff = c }(respCutoff)
	for i := range im.N {
		cut, full := newFitter(cfg, im.Rows, im.Cols), newFitter(cfg, im.Rows, im.Cols)
		if err := cut.fit(im.Image(i), rand.New(rand.NewPCG(1, uint64(i)))); err != nil {
			t.Fatal(err)
		}
		respCutoff = math.Inf(-1)
		if err := full.fit(im.Image(i), rand.New(rand.NewPCG(1, uint64(i)))); err != nil {
			t.Fatal(err)
		}
		respCutoff = -53 * math.Ln2
		worst := 0.0
		for _, p := range []struct{ a, b []float64 }{{cut.w, full.w}, {cut.mu, full.mu}, {cut.cov, full.cov}} {
			for j := range p.a {
				worst = max(worst, math.Abs(p.a[j]-p.b[j])/max(1, math.Abs(p.b[j])))
			}
		}
		if worst > 1e-10 {
			t.Errorf("image %d: cutoff changes the parameters by %g", i, worst)
		}
	}
}

// TestFitOrientation checks that position 0 is the column and position 1 the
// row: the prior-weighted mean of the fitted means matches the intensity
// centroid (pixel centres) of an image whose ink sits off the diagonal.
func TestFitOrientation(t *testing.T) {
	im := Images{N: 1, Rows: 28, Cols: 28, Pixels: make([]uint8, 784)}
	var sx, sy, si float64
	for r := 16; r < 24; r++ {
		for c := 3; c < 9; c++ {
			v := uint8(40 * (c - 2))
			im.Pixels[r*28+c] = v
			sx += float64(v) * (float64(c) + 0.5)
			sy += float64(v) * (float64(r) + 0.5)
			si += float64(v)
		}
	}
	cfg := dataset.DefaultFitConfig(2)
	cfg.K = 8
	out, l, err := FitInputs(im, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	gs, err := mixture.Unpack(out, l)
	if err != nil {
		t.Fatal(err)
	}
	var mx, my, w float64
	for _, g := range gs {
		mx += g.Weight * g.Position[0]
		my += g.Weight * g.Position[1]
		w += g.Weight
	}
	// 4000 samples: the sample mean is within ~0.03 px of the centroid.
	if cx, cy := sx/si, sy/si; math.Abs(mx/w-cx) > 0.15 || math.Abs(my/w-cy) > 0.15 {
		t.Errorf("fitted centroid (%.3f, %.3f), intensity centroid (column %.3f, row %.3f)", mx/w, my/w, cx, cy)
	}
}

// TestEStepPruningExact checks that the per-cell pruning of eStep changes
// nothing: the responsibilities and the log-likelihood equal, bit for bit,
// an evaluation of every term with the same cutoff rule.
func TestEStepPruningExact(t *testing.T) {
	cfg := dataset.DefaultFitConfig(2)
	cfg.K = 24
	f, pcg := sampledFitter(t, cfg, 13)
	f.km.run(f.pts, cfg.LloydIters, rand.New(pcg))
	f.mStep(f.km.label)
	for step := range 3 {
		ll := f.eStep()
		k := cfg.K
		var want float64
		r := make([]float64, k)
		for i := range cfg.Points {
			m := math.Inf(-1)
			for j := range f.comp {
				r[j] = f.comp[j].logCoef + f.comp[j].exponent(f.pts[2*i], f.pts[2*i+1])
				m = max(m, r[j])
			}
			var s float64
			for j := range r {
				var v float64
				if d := r[j] - m; d > respCutoff {
					v = math.Exp(d)
				}
				r[j] = v
				s += v
			}
			for j := range r {
				if r[j] *= 1 / s; r[j] != f.resp[i*k+j] {
					t.Fatalf("step %d point %d component %d: responsibility %g, want %g", step, i, j, f.resp[i*k+j], r[j])
				}
			}
			want += m + math.Log(s)
		}
		if want /= float64(cfg.Points); ll != want {
			t.Fatalf("step %d: log-likelihood %v, want %v", step, ll, want)
		}
		f.mStep(nil)
	}
}

// TestFitNonSquare fits images wider than tall with more pixels than
// samples: the means stay inside [0, cols]×[0, rows] and the mixtures are
// valid.
func TestFitNonSquare(t *testing.T) {
	im := syntheticImages(rand.New(rand.NewPCG(7, 8)), 3, 40, 70)
	cfg := smallConfig()
	cfg.Points = 300
	out, l, err := FitInputs(im, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := mixture.Validate(out, l); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(out); i += 7 {
		if x, y := out[i+1], out[i+2]; x < 0 || x > 70 || y < 0 || y > 40 {
			t.Errorf("mean (%g, %g) outside the 70×40 image", x, y)
		}
	}
}
