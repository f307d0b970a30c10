package mnist

import (
	"math"
	"math/rand/v2"
	"sync"

	"github.com/pkg/errors"

	"github.com/gmcn-go/gmcn/dataset"
	"github.com/gmcn-go/gmcn/internal/parallel"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// fitVersion identifies the fitting code in the digest of a split; it
// changes whenever a code change alters the fitted mixtures for the same
// settings, so that caches written by older code are refitted.
const fitVersion = 1

// FitInputs fits a D = 2 mixture of cfg.K Gaussians to every image of im, in
// parallel, and returns them packed as float32 in the layout
// dataset.FitLayout(im.N, cfg.K, 2): weights standardised per sample
// (docs/algorithms.md, "Weight standardisation"), positions (column, row)
// and covariances in pixel units. A nil progress is allowed. An image
// without any intensity cannot be sampled and is an error naming it.
func FitInputs(im Images, cfg dataset.FitConfig, progress dataset.Progress) ([]float32, mixture.Layout, error) {
	return FitInputsStreams(im, nil, cfg, progress)
}

// FitInputsStreams is FitInputs with image i fitted from the random stream
// PCG(cfg.Seed, streams[i]) instead of PCG(cfg.Seed, i); nil streams stand
// for 0, 1, …. An image gets the mixture it has in the fit of its whole
// split when its stream is its index there, whatever else is fitted with
// it.
func FitInputsStreams(im Images, streams []uint64, cfg dataset.FitConfig, progress dataset.Progress) ([]float32, mixture.Layout, error) {
	if streams != nil && len(streams) != im.N {
		return nil, mixture.Layout{}, errors.Errorf("fit inputs: %d random streams for %d images", len(streams), im.N)
	}
	if err := cfg.Validate(); err != nil {
		return nil, mixture.Layout{}, err
	}
	if cfg.Dim != 2 {
		return nil, mixture.Layout{}, errors.Errorf("fit inputs: a fit config for %dD data, images are 2D", cfg.Dim)
	}
	if im.N < 0 || im.Rows < 1 || im.Cols < 1 || len(im.Pixels) != im.N*im.Rows*im.Cols {
		return nil, mixture.Layout{}, errors.Errorf("fit inputs: %d pixels for %d images of %d×%d", len(im.Pixels), im.N, im.Rows, im.Cols)
	}
	l := dataset.FitLayout(im.N, cfg.K, 2)
	out := make([]float32, l.Len())
	fitters := make([]*fitter, parallel.Workers(im.N))
	var (
		mu       sync.Mutex
		firstErr error
		errIndex = im.N
	)
	parallel.ForWorker(im.N, func(w, i int) {
		if fitters[w] == nil {
			fitters[w] = newFitter(cfg, im.Rows, im.Cols)
		}
		f := fitters[w]
		stream := uint64(i)
		if streams != nil {
			stream = streams[i]
		}
		rng := rand.New(rand.NewPCG(cfg.Seed, stream))
		err := f.fit(im.Image(i), rng)
		if err == nil {
			f.standardize(rng)
			f.pack(mixture.Mixture(out, l, i))
		}
		mu.Lock()
		// Report the lowest failing index, so the error does not depend on
		// the schedule.
		if err != nil && i < errIndex {
			firstErr, errIndex = errors.Wrapf(err, "fit inputs: image %d", i), i
		}
		mu.Unlock()
		if progress != nil {
			progress.Add(1)
		}
	})
	if firstErr != nil {
		return nil, mixture.Layout{}, firstErr
	}
	return out, l, nil
}

// fitter holds the scratch space of one worker; nothing is allocated per image.
type fitter struct {
	cfg  dataset.FitConfig
	cols int

	cdf  []int     // cumulative pixel intensities
	pts  []float64 // sample points, x (column) and y (row) interleaved
	resp []float64 // responsibilities [Points][K]

	// Mixture parameters in float64: weights (priors), means [K][2] and
	// covariances [K][4] row-major.
	w, mu, cov []float64
	acc        []float64 // M-step sums [K][6]: n, Σx, Σy, Σxx, Σxy, Σyy
	comp       []comp2   // evaluation form of the components
	upper      []float64 // [K] per-cell upper bounds of the E-step log-terms
	cand       []int32   // [K] components not pruned in the current cell
	norm       []float64 // standardisation evaluations

	km kmeans
}

func newFitter(cfg dataset.FitConfig, rows, cols int) *fitter {
	k, s := cfg.K, cfg.Points
	f := &fitter{
		cfg: cfg, cols: cols,
		cdf:   make([]int, rows*cols),
		pts:   make([]float64, 2*s),
		resp:  make([]float64, s*k),
		w:     make([]float64, k),
		mu:    make([]float64, 2*k),
		cov:   make([]float64, 4*k),
		acc:   make([]float64, 6*k),
		comp:  make([]comp2, k),
		upper: make([]float64, k),
		cand:  make([]int32, k),
		norm:  make([]float64, cfg.NormPoints),
	}
	f.km = newKMeans(s, k, rows, cols)
	return f
}

// fit fits the mixture of the image with pixels pix into f.w, f.mu, f.cov,
// before standardisation: the weights are priors summing to 1. All
// randomness comes from rng.
func (f *fitter) fit(pix []uint8, rng *rand.Rand) error {
	if err := f.sample(pix, rng); err != nil {
		return err
	}
	f.fitPoints(rng)
	return nil
}

// fitPoints fits the mixture to the sample points in f.pts.
func (f *fitter) fitPoints(rng *rand.Rand) {
	k := f.cfg.K
	switch f.cfg.Method {
	case dataset.KMeansInit:
		f.km.run(f.pts, f.cfg.LloydIters, rng)
		f.mStep(f.km.label)
	case dataset.RandomInit:
		for i := range f.cfg.Points {
			r := f.resp[i*k : (i+1)*k]
			var s float64
			for j := range r {
				r[j] = rng.Float64()
				s += r[j]
			}
			for j := range r {
				r[j] /= s
			}
		}
		f.mStep(nil)
	}
	prev := math.Inf(-1)
	for range f.cfg.EMSteps {
		ll := f.eStep()
		f.mStep(nil)
		if math.Abs(ll-prev) < f.cfg.Tol {
			break
		}
		prev = ll
	}
}

// sample draws cfg.Points pixels with probability ∝ intensity (inverse CDF
// of the integer intensities, exact) and jitters each by U[0,1)² within its
// pixel: point = (column + u, row + v). The points are stored grouped by
// pixel, in pixel order, as the pruning of k-means and the E step needs
// (f.km.start, f.km.cells).
func (f *fitter) sample(pix []uint8, rng *rand.Rand) error {
	total := 0
	for i, p := range pix {
		total += int(p)
		f.cdf[i] = total
	}
	if total == 0 {
		return errors.New("image has no intensity (all pixels 0): nothing to sample")
	}
	start := f.km.start
	clear(start)
	for range f.cfg.Points {
		u := rng.IntN(total)
		// First pixel whose cumulative intensity exceeds u.
		lo, hi := 0, len(f.cdf)-1
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if f.cdf[m] > u {
				hi = m
			} else {
				lo = m + 1
			}
		}
		start[lo+1]++
	}
	f.km.cells = f.km.cells[:0]
	for p := range len(pix) {
		if start[p+1] > 0 {
			f.km.cells = append(f.km.cells, p)
		}
		start[p+1] += start[p]
	}
	for _, p := range f.km.cells {
		col, row := float64(p%f.cols), float64(p/f.cols)
		f.km.centreX[p], f.km.centreY[p] = col+0.5, row+0.5
		for i := start[p]; i < start[p+1]; i++ {
			f.pts[2*i] = col + rng.Float64()
			f.pts[2*i+1] = row + rng.Float64()
		}
	}
	return nil
}

// eps10 is scikit-learn's 10·ε added to every component mass n_k, which keeps
// an empty component's mean and covariance defined (mean 0, covariance
// reg_covar·I, weight ≈ 0).
const eps10 = 10 * 2.220446049250313e-16

// mStep sets the parameters from the responsibilities r_ik:
//
//	n_k = Σ_i r_ik + 10ε,  w_k = n_k / Σ_j n_j,  μ_k = Σ_i r_ik x_i / n_k,
//	Σ_k = Σ_i r_ik x_i x_iᵀ / n_k − μ_k μ_kᵀ + reg_covar·I.
//
// With labels (k-means initialisation) r_ik is 1 for k = labels[i] and 0
// otherwise; with nil labels it is read from f.resp, skipping zeros
// (underflowed responsibilities). The one-pass second moment is exact enough
// in float64 for coordinates below 10³ (cancellation error ~1e-10, far below
// reg_covar).
func (f *fitter) mStep(labels []int32) {
	k := f.cfg.K
	clear(f.acc)
	if labels != nil {
		for i, j := range labels {
			f.accumulate(int(j), 1, f.pts[2*i], f.pts[2*i+1])
		}
	} else {
		for i := range f.cfg.Points {
			x, y := f.pts[2*i], f.pts[2*i+1]
			for j, r := range f.resp[i*k : (i+1)*k] {
				if r != 0 {
					f.accumulate(j, r, x, y)
				}
			}
		}
	}
	var total float64
	for j := range k {
		a := f.acc[6*j : 6*j+6]
		n := a[0] + eps10
		mx, my := a[1]/n, a[2]/n
		c := f.cov[4*j : 4*j+4]
		c[0] = a[3]/n - mx*mx + f.cfg.RegCovar
		c[1] = a[4]/n - mx*my
		c[2] = c[1]
		c[3] = a[5]/n - my*my + f.cfg.RegCovar
		f.mu[2*j], f.mu[2*j+1] = mx, my
		f.w[j] = n
		total += n
	}
	for j := range k {
		f.w[j] /= total
	}
}

// accumulate adds point (x, y) with responsibility r to the sums of
// component j.
func (f *fitter) accumulate(j int, r, x, y float64) {
	a := f.acc[6*j : 6*j+6 : 6*j+6]
	rx, ry := r*x, r*y
	a[0] += r
	a[1] += rx
	a[2] += ry
	a[3] += rx * x
	a[4] += rx * y
	a[5] += ry * y
}

// comp2 is a 2D component in evaluation form, from mixture.Prepare (inverse and
// normalisation computed once per component and step):
// w·N(x) = coef·exp(−½ (a Δx² + 2b Δx Δy + c Δy²)), Δ = x − (mx, my).
type comp2 struct {
	coef, logCoef, mx, my, a, b, c float64
	lmin, lmax                     float64 // eigenvalues of Σ⁻¹
}

// exponent returns −½ (x−μ)ᵀ Σ⁻¹ (x−μ).
func (c *comp2) exponent(x, y float64) float64 {
	dx, dy := x-c.mx, y-c.my
	return -0.5 * (c.a*dx*dx + 2*c.b*dx*dy + c.c*dy*dy)
}

// prepare puts the current parameters into evaluation form.
func (f *fitter) prepare() {
	var g [7]float64
	for j := range f.comp {
		g[0] = f.w[j]
		copy(g[1:3], f.mu[2*j:2*j+2])
		copy(g[3:7], f.cov[4*j:4*j+4])
		p := mixture.Prepare(2, g[:])
		a, b, c := p.Inv[0], (p.Inv[1]+p.Inv[2])/2, p.Inv[3]
		// Eigenvalues of the symmetric 2×2 inverse [[a b] [b c]].
		mean, rad := (a+c)/2, math.Hypot((a-c)/2, b)
		f.comp[j] = comp2{coef: p.Coef, logCoef: math.Log(p.Coef), mx: p.Mu[0], my: p.Mu[1],
			a: a, b: b, c: c, lmin: mean - rad, lmax: mean + rad}
	}
}

// respCutoff is the log-ratio below which a component's term in the E step
// is not evaluated and its responsibility is 0: exp(respCutoff) = 2⁻⁵³, so
// the term cannot change the normalising sum (which is ≥ 1 after dividing by
// the largest term) in float64, and it changes a component's sums by at most
// 2⁻⁵³ of what the point gives its dominant component. About three in four
// terms of an MNIST fit fall below it; TestEStepCutoff checks the fits
// against the full evaluation.
var respCutoff = -53 * math.Ln2

// boundSlack absorbs the rounding of the per-cell bounds in eStep (values of
// order 10³, rounding of order 1e-12), so a pruned term is certainly below
// respCutoff.
const boundSlack = 1e-6

// eStep sets the responsibilities r_ik = w_k N(x_i; μ_k, Σ_k) / Σ_j w_j
// N(x_i; μ_j, Σ_j), computed in the log domain with the maximum subtracted so
// that far points do not underflow to 0/0 (terms below respCutoff are 0),
// and returns the mean log-likelihood per point.
//
// The log-terms e_j(x) = log(w_j norm_j) − ½ (x−μ_j)ᵀ Σ_j⁻¹ (x−μ_j) are bounded
// over each pixel cell with the eigenvalues λ of Σ_j⁻¹ and the nearest and
// farthest distance of μ_j to the cell: log(w_j norm_j) − ½ λ_max d_max² ≤
// e_j ≤ log(w_j norm_j) − ½ λ_min d_min². With L the largest lower bound, a
// component whose upper bound is below L + respCutoff is below the cutoff for
// every point of the cell and is skipped; the result is the same, bit for
// bit, as evaluating every term (the skipped terms are exact zeros).
func (f *fitter) eStep() float64 {
	k := f.cfg.K
	f.prepare()
	var ll float64
	for _, p := range f.km.cells {
		cand := f.cellCandidates(p)
		for i := f.km.start[p]; i < f.km.start[p+1]; i++ {
			x, y := f.pts[2*i], f.pts[2*i+1]
			r := f.resp[i*k : (i+1)*k : (i+1)*k]
			clear(r)
			m := math.Inf(-1)
			for _, j := range cand {
				c := &f.comp[j]
				e := c.logCoef + c.exponent(x, y)
				r[j] = e
				if e > m {
					m = e
				}
			}
			var s float64
			for _, j := range cand {
				var v float64
				if d := r[j] - m; d > respCutoff {
					v = math.Exp(d)
				}
				r[j] = v
				s += v
			}
			inv := 1 / s
			for _, j := range cand {
				r[j] *= inv
			}
			ll += m + math.Log(s)
		}
	}
	return ll / float64(f.cfg.Points)
}

// cellCandidates returns the components that can be above respCutoff for
// some point of cell p (see eStep), in increasing order.
func (f *fitter) cellCandidates(p int) []int32 {
	best := math.Inf(-1)
	for j := range f.comp {
		c := &f.comp[j]
		lo, hi := f.km.rectDist2(p, c.mx, c.my)
		f.upper[j] = c.logCoef - 0.5*c.lmin*lo
		best = max(best, c.logCoef-0.5*c.lmax*hi)
	}
	n := 0
	for j, u := range f.upper {
		if u+boundSlack >= best+respCutoff {
			f.cand[n] = int32(j)
			n++
		}
	}
	return f.cand[:n]
}

// standardize divides the weights by the sample standard deviation (N−1) of
// the mixture evaluated at NormPoints uniform random points of the bounding
// box of the positions, enlarged by 15% on each side (docs/algorithms.md,
// "Weight standardisation": per-sample mode without learnable scale; sd
// clamped to ≥ 0.001), and returns that
// standard deviation. Its points come from the random stream
// PCG(Seed, index) continued after the fit, so they are fixed by the seed.
func (f *fitter) standardize(rng *rand.Rand) float64 {
	lo := [2]float64{math.Inf(1), math.Inf(1)}
	hi := [2]float64{math.Inf(-1), math.Inf(-1)}
	for j := range f.cfg.K {
		for a := range 2 {
			lo[a] = min(lo[a], f.mu[2*j+a])
			hi[a] = max(hi[a], f.mu[2*j+a])
		}
	}
	f.prepare()
	var mean float64
	for i := range f.norm {
		var x [2]float64
		for a := range 2 {
			x[a] = lo[a] + (rng.Float64()*1.3-0.15)*(hi[a]-lo[a])
		}
		var v float64
		for j := range f.comp {
			c := &f.comp[j]
			v += c.coef * math.Exp(c.exponent(x[0], x[1]))
		}
		f.norm[i] = v
		mean += f.norm[i]
	}
	mean /= float64(len(f.norm))
	var ss float64
	for _, v := range f.norm {
		ss += (v - mean) * (v - mean)
	}
	sd := max(math.Sqrt(ss/float64(len(f.norm)-1)), 0.001)
	for j := range f.w {
		f.w[j] /= sd
	}
	return sd
}

// pack writes the mixture as packed float32 Gaussians [w, μx, μy, Σ] into dst.
func (f *fitter) pack(dst []float32) {
	for j := range f.cfg.K {
		g := dst[7*j : 7*j+7]
		g[0] = float32(f.w[j])
		g[1], g[2] = float32(f.mu[2*j]), float32(f.mu[2*j+1])
		for a := range 4 {
			g[3+a] = float32(f.cov[4*j+a])
		}
	}
}
