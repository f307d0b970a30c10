package shapes

import (
	"math"
	"sync"

	"github.com/pkg/errors"

	"github.com/gmcn-go/gmcn/dataset"
	"github.com/gmcn-go/gmcn/internal/parallel"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// fitVersion identifies the fitting code in the digest of a split; it
// changes whenever a code change alters the fitted mixtures for the same
// settings.
const fitVersion = 1

// minEps is the smallest absolute covariance epsilon, used when a cloud's
// bounding box is (nearly) a point, as in the reference.
const minEps = 1e-9

// stride is the packed length of a 3D Gaussian.
const stride = 13

// Fitter fits one point cloud after the other, reusing its scratch space;
// it is not safe for concurrent use (use one per goroutine).
type Fitter struct {
	cfg     dataset.FitConfig
	xyz     [3][]float64 // points, structure of arrays
	dist    []float64    // squared distance to the nearest centre
	assign  []int32      // nearest centre
	centres []float64    // K × 3
	count   []int
	mix     []float64 // K × 13, the working mixture
	acc     []float64 // K × 13 accumulators of the M step
	prep    []mixture.Prepared[float64]
	logp    []float64 // K, per point in the E step
}

// NewFitter returns a Fitter for cfg, which must be a valid 3D config.
func NewFitter(cfg dataset.FitConfig) *Fitter {
	k := cfg.K
	return &Fitter{cfg: cfg, centres: make([]float64, 3*k), count: make([]int, k), mix: make([]float64, stride*k),
		acc: make([]float64, stride*k), prep: make([]mixture.Prepared[float64], k), logp: make([]float64, k)}
}

// Fit fits cfg.K Gaussians to the points pts (x y z per point, not
// modified) and writes them packed as [w, μ, Σ] float32 to dst[:13·K]. The
// weights are priors (count/N for the hard assignment, Σ responsibilities/N
// after EM), i.e. integrals that sum to 1 over the non-empty components; an
// empty component is {0, 0, I}, as in the reference.
func (f *Fitter) Fit(pts []float32, dst []float32) error {
	n := len(pts) / 3
	switch {
	case n == 0 || len(pts)%3 != 0:
		return errors.Errorf("fit3d: %d values, want a positive multiple of 3 (x y z per point)", len(pts))
	case len(dst) < stride*f.cfg.K:
		return errors.Errorf("fit3d: output of %d values, K = %d needs %d", len(dst), f.cfg.K, stride*f.cfg.K)
	}
	eps, err := f.load(pts)
	if err != nil {
		return err
	}
	f.fps()
	if f.cfg.Method == dataset.KMeansEM {
		f.lloyd()
	}
	f.hardMStep(eps)
	if f.cfg.Method == dataset.KMeansEM {
		for range f.cfg.EMSteps {
			f.emStep(eps)
		}
	}
	for i, v := range f.mix {
		dst[i] = float32(v)
	}
	return nil
}

// load copies pts into the structure-of-arrays scratch and returns the
// absolute covariance epsilon max(Eps·(longest AABB side)², 1e-9).
func (f *Fitter) load(pts []float32) (float64, error) {
	n := len(pts) / 3
	for j := range f.xyz {
		f.xyz[j] = grow(f.xyz[j], n)
	}
	f.dist = grow(f.dist, n)
	if cap(f.assign) < n {
		f.assign = make([]int32, n)
	}
	f.assign = f.assign[:n]
	lo := [3]float64{math.Inf(1), math.Inf(1), math.Inf(1)}
	hi := [3]float64{math.Inf(-1), math.Inf(-1), math.Inf(-1)}
	for i := range n {
		for j := range 3 {
			v := float64(pts[3*i+j])
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, errors.Errorf("fit3d: point %d has coordinate %d = %v, want finite", i, j, v)
			}
			f.xyz[j][i] = v
			lo[j], hi[j] = min(lo[j], v), max(hi[j], v)
		}
	}
	if f.cfg.Normalize {
		normalizeSoA(&f.xyz, &lo, &hi)
	}
	ext := max(hi[0]-lo[0], hi[1]-lo[1], hi[2]-lo[2])
	return max(f.cfg.Eps*ext*ext, minEps), nil
}

func grow(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// normalizeSoA is NormalizeUnitSphere on the scratch arrays; it updates the
// bounding box lo, hi.
func normalizeSoA(xyz *[3][]float64, lo, hi *[3]float64) {
	n := len(xyz[0])
	var c [3]float64
	for j := range 3 {
		for _, v := range xyz[j] {
			c[j] += v
		}
		c[j] /= float64(n)
	}
	r2 := 0.0
	for i := range n {
		dx, dy, dz := xyz[0][i]-c[0], xyz[1][i]-c[1], xyz[2][i]-c[2]
		r2 = max(r2, dx*dx+dy*dy+dz*dz)
	}
	s := 1.0
	if r2 > 0 {
		s = 1 / math.Sqrt(r2)
	}
	for j := range 3 {
		for i, v := range xyz[j] {
			xyz[j][i] = (v - c[j]) * s
		}
		lo[j], hi[j] = (lo[j]-c[j])*s, (hi[j]-c[j])*s
	}
}

// fps places the K centres by furthest-point sampling from point 0 and
// leaves every point assigned to its nearest centre. The reference's E step
// with K identical isotropic components and equal priors assigns each point
// to the nearest centre, the first one on ties, which is exactly what the
// running minimum of FPS holds at the end, so the hard assignment costs
// nothing extra. With fewer distinct points than K the surplus centres
// repeat a point and stay empty.
func (f *Fitter) fps() {
	x, y, z := f.xyz[0], f.xyz[1], f.xyz[2]
	for i := range f.dist {
		f.dist[i] = math.Inf(1)
	}
	next := 0
	for k := range f.cfg.K {
		cx, cy, cz := x[next], y[next], z[next]
		f.centres[3*k], f.centres[3*k+1], f.centres[3*k+2] = cx, cy, cz
		far, best := 0, -1.0
		for i := range f.dist {
			dx, dy, dz := x[i]-cx, y[i]-cy, z[i]-cz
			d := dx*dx + dy*dy + dz*dz
			if d < f.dist[i] {
				f.dist[i] = d
				f.assign[i] = int32(k)
			}
			if f.dist[i] > best {
				best, far = f.dist[i], i
			}
		}
		next = far
	}
}

// lloyd runs k-means iterations from the current assignment: centres become
// the means of their points, points move to the nearest centre, until no
// assignment changes or LloydIters is reached. An empty cluster keeps its
// centre.
func (f *Fitter) lloyd() {
	x, y, z := f.xyz[0], f.xyz[1], f.xyz[2]
	k := f.cfg.K
	for range f.cfg.LloydIters {
		sum := f.acc[:3*k]
		clear(sum)
		clear(f.count)
		for i, a := range f.assign {
			sum[3*a] += x[i]
			sum[3*a+1] += y[i]
			sum[3*a+2] += z[i]
			f.count[a]++
		}
		for c := range k {
			if f.count[c] > 0 {
				inv := 1 / float64(f.count[c])
				f.centres[3*c], f.centres[3*c+1], f.centres[3*c+2] = sum[3*c]*inv, sum[3*c+1]*inv, sum[3*c+2]*inv
			}
		}
		changed := false
		for i := range f.assign {
			best, arg := math.Inf(1), int32(0)
			for c := range k {
				dx, dy, dz := x[i]-f.centres[3*c], y[i]-f.centres[3*c+1], z[i]-f.centres[3*c+2]
				if d := dx*dx + dy*dy + dz*dz; d < best {
					best, arg = d, int32(c)
				}
			}
			if arg != f.assign[i] {
				f.assign[i] = arg
				changed = true
			}
		}
		if !changed {
			return
		}
	}
}

// hardMStep sets f.mix from the one-hot responsibilities of f.assign: prior
// = count/N, mean = centroid, covariance = biased sample covariance + eps·I
// (computed about the centroid, two passes, for accuracy); an empty
// component becomes {0, 0, I}.
func (f *Fitter) hardMStep(eps float64) {
	x, y, z := f.xyz[0], f.xyz[1], f.xyz[2]
	n := len(x)
	clear(f.acc)
	clear(f.count)
	for i, a := range f.assign {
		g := f.acc[stride*int(a):]
		g[1] += x[i]
		g[2] += y[i]
		g[3] += z[i]
		f.count[a]++
	}
	for c := range f.cfg.K {
		g := f.mix[stride*c : stride*(c+1)]
		clear(g)
		if f.count[c] == 0 {
			g[4], g[8], g[12] = 1, 1, 1
			continue
		}
		inv := 1 / float64(f.count[c])
		a := f.acc[stride*c:]
		g[0] = float64(f.count[c]) / float64(n)
		g[1], g[2], g[3] = a[1]*inv, a[2]*inv, a[3]*inv
	}
	for i, a := range f.assign {
		g := f.mix[stride*int(a):]
		s := f.acc[stride*int(a):]
		accumulateCov(s, 1, x[i]-g[1], y[i]-g[2], z[i]-g[3])
	}
	for c := range f.cfg.K {
		if f.count[c] > 0 {
			setCov(f.mix[stride*c:], f.acc[stride*c:], 1/float64(f.count[c]), 0, 0, 0, eps)
		}
	}
}

// accumulateCov adds r·d dᵀ (upper triangle) to the slots 4..9 of s.
func accumulateCov(s []float64, r, dx, dy, dz float64) {
	s[4] += r * dx * dx
	s[5] += r * dx * dy
	s[6] += r * dx * dz
	s[7] += r * dy * dy
	s[8] += r * dy * dz
	s[9] += r * dz * dz
}

// setCov writes the covariance inv·S − m mᵀ + eps·I, with S the upper
// triangle accumulated in s[4:10], as a full symmetric matrix into g[4:13].
func setCov(g, s []float64, inv, mx, my, mz, eps float64) {
	xx := s[4]*inv - mx*mx + eps
	xy := s[5]*inv - mx*my
	xz := s[6]*inv - mx*mz
	yy := s[7]*inv - my*my + eps
	yz := s[8]*inv - my*mz
	zz := s[9]*inv - mz*mz + eps
	copy(g[4:13], []float64{xx, xy, xz, xy, yy, yz, xz, yz, zz})
}

// emStep runs one E step (responsibilities in the log domain) and one M step
// with covariance epsilon eps. Components whose responsibilities sum to less
// than minMass points become empty ({0, 0, I}): their covariance would be
// eps·I around an arbitrary point.
func (f *Fitter) emStep(eps float64) {
	const minMass = 1e-6
	x, y, z := f.xyz[0], f.xyz[1], f.xyz[2]
	n := len(x)
	k := f.cfg.K
	for c := range k {
		if g := f.mix[stride*c:]; g[0] > 0 {
			f.prep[c] = mixture.Prepare(3, g[:stride])
		} else {
			f.prep[c] = mixture.Prepared[float64]{}
		}
	}
	acc := f.acc
	clear(acc)
	var pt [3]float64
	for i := range n {
		pt[0], pt[1], pt[2] = x[i], y[i], z[i]
		m := math.Inf(-1)
		for c := range k {
			p := &f.prep[c]
			if p.Coef <= 0 {
				f.logp[c] = math.Inf(-1)
				continue
			}
			l := math.Log(p.Coef) + p.Exponent(3, pt[:])
			f.logp[c] = l
			m = max(m, l)
		}
		sum := 0.0
		for c := range k {
			e := math.Exp(f.logp[c] - m)
			f.logp[c] = e
			sum += e
		}
		inv := 1 / sum
		for c := range k {
			r := f.logp[c] * inv
			if r == 0 {
				continue
			}
			g := f.mix[stride*c:]
			a := acc[stride*c:]
			a[0] += r
			dx, dy, dz := x[i]-g[1], y[i]-g[2], z[i]-g[3]
			a[1] += r * dx
			a[2] += r * dy
			a[3] += r * dz
			accumulateCov(a, r, dx, dy, dz)
		}
	}
	for c := range k {
		g := f.mix[stride*c : stride*(c+1)]
		a := acc[stride*c:]
		if !(a[0] >= minMass) {
			clear(g)
			g[4], g[8], g[12] = 1, 1, 1
			continue
		}
		inv := 1 / a[0]
		// Moments were taken about the old mean μ₀; with m = E[x − μ₀] the
		// new mean is μ₀ + m and the covariance E[(x−μ₀)(x−μ₀)ᵀ] − m mᵀ.
		mx, my, mz := a[1]*inv, a[2]*inv, a[3]*inv
		g[0] = a[0] / float64(n)
		g[1], g[2], g[3] = g[1]+mx, g[2]+my, g[3]+mz
		setCov(g, a, inv, mx, my, mz, eps)
	}
}

// FitClouds fits every point cloud with cfg, in parallel over all cores, and
// returns the mixtures packed as float32 in dataset.FitLayout(len(clouds), cfg.K, 3).
// The clouds are not modified (normalisation works on a copy). A nil
// progress is allowed. The first failing cloud (lowest index) is reported.
func FitClouds(clouds [][]float32, cfg dataset.FitConfig, progress dataset.Progress) ([]float32, mixture.Layout, error) {
	return fitEach(len(clouds), cfg, progress, func(_ *worker, i int) ([]float32, error) { return clouds[i], nil })
}

// worker is the per-goroutine scratch of fitEach.
type worker struct {
	fitter *Fitter
	points []float32
}

// fitEach fits n shapes in parallel; load returns the points of shape i and
// may use the worker's points buffer.
func fitEach(n int, cfg dataset.FitConfig, progress dataset.Progress, load func(w *worker, i int) ([]float32, error)) ([]float32, mixture.Layout, error) {
	if err := cfg.Validate(); err != nil {
		return nil, mixture.Layout{}, err
	}
	if cfg.Dim != 3 {
		return nil, mixture.Layout{}, errors.Errorf("fit3d: a fit config for %dD data, shapes are 3D", cfg.Dim)
	}
	l := dataset.FitLayout(n, cfg.K, 3)
	out := make([]float32, l.Len())
	workers := make([]*worker, parallel.Workers(n))
	var (
		mu       sync.Mutex
		firstErr error
		errIndex = n
	)
	parallel.ForWorker(n, func(w, i int) {
		if workers[w] == nil {
			workers[w] = &worker{fitter: NewFitter(cfg)}
		}
		wk := workers[w]
		pts, err := load(wk, i)
		if err == nil {
			err = wk.fitter.Fit(pts, mixture.Mixture(out, l, i))
		}
		if err != nil {
			mu.Lock()
			if i < errIndex {
				errIndex, firstErr = i, err
			}
			mu.Unlock()
		}
		if progress != nil {
			progress.Add(1)
		}
	})
	if firstErr != nil {
		return nil, mixture.Layout{}, errors.Wrapf(firstErr, "fit3d: shape %d", errIndex)
	}
	return out, l, nil
}
