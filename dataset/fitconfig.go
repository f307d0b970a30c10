package dataset

import (
	"fmt"
	"math"

	"github.com/pkg/errors"
)

// Method selects the fitting algorithm of an input mixture.
type Method int

const (
	// KMeansInit (2D) runs k-means (k-means++ seeding and Lloyd iterations)
	// on the sample points, turns the clusters into the initial mixture as
	// scikit-learn's init_params="kmeans" does, and then runs EMSteps EM
	// steps. It is the reference's 2D method.
	KMeansInit Method = iota
	// RandomInit (2D) draws every point's responsibilities uniformly at
	// random and normalises them, as scikit-learn's init_params="random"
	// does, and then runs EMSteps EM steps.
	RandomInit
	// FPSMStep (3D) is the reference's fitting of the paper's best ModelNet
	// result ("init-5-128"): furthest-point sampling of K centres, one hard
	// assignment of every point to its nearest centre, one M step.
	FPSMStep
	// KMeansEM (3D) starts like FPSMStep, refines the assignment with Lloyd
	// iterations (k-means seeded by the FPS centres) and then runs EMSteps
	// EM steps.
	KMeansEM
)

// methodNames are the names of the methods on the command line, in run.json
// and in cache keys.
var methodNames = [...]string{KMeansInit: "kmeans", RandomInit: "random", FPSMStep: "fps", KMeansEM: "kmeans-em"}

// methodDims is the dimension each method fits.
var methodDims = [...]int{KMeansInit: 2, RandomInit: 2, FPSMStep: 3, KMeansEM: 3}

// String returns the name of m ("kmeans", "random", "fps", "kmeans-em").
func (m Method) String() string {
	if m >= 0 && int(m) < len(methodNames) {
		return methodNames[m]
	}
	return fmt.Sprintf("Method(%d)", int(m))
}

// ParseMethod returns the Method named s.
func ParseMethod(s string) (Method, error) {
	for m, name := range methodNames {
		if s == name {
			return Method(m), nil
		}
	}
	return 0, errors.Errorf("fit method %q, want kmeans or random (2D), fps or kmeans-em (3D)", s)
}

// FitConfig holds the settings of the input fitting, 2D and 3D. Some fields
// apply to one dimension only, as their comments say. DefaultFitConfig
// returns the reference settings of a dimension; the zero value is not
// valid.
type FitConfig struct {
	// Dim is the dimension of the data, 2 (images) or 3 (shapes).
	Dim int
	// K is the number of Gaussians per sample.
	K int
	// Points is the number of points a sample is turned into. 2D: points
	// drawn per image with probability proportional to the pixel intensity
	// and jittered by U[0,1)² within the pixel. 3D: surface points sampled
	// from a mesh, or the maximum number of points read from an XYZ file
	// (its first Points lines; 0 = all, as the reference does).
	Points int
	// Method is the fitting algorithm; it decides the dimension it applies
	// to.
	Method Method
	// EMSteps is the number of EM iterations (one E and one M step each)
	// after the initialisation. 2D: the maximum; 1 reproduces the
	// reference's "k-means + one EM step", more steps stop early once the
	// mean log-likelihood changes by less than Tol. 3D: used by KMeansEM
	// only.
	EMSteps int
	// Tol (2D) is the EM convergence threshold on the change of the mean
	// log-likelihood per point (scikit-learn's tol).
	Tol float64
	// RegCovar (2D) is added to the diagonal of every covariance in each M
	// step (scikit-learn's reg_covar), so every variance is at least
	// RegCovar.
	RegCovar float64
	// LloydIters bounds the Lloyd iterations of k-means. 2D: it stops
	// earlier once no label changes or the centres move by a total squared
	// distance of at most 1e-4 times the mean per-axis variance of the
	// points (scikit-learn's criteria). 3D: used by KMeansEM only, which
	// stops earlier once no assignment changes.
	LloydIters int
	// NormPoints (2D) is the number of uniform random points in the enlarged
	// bounding box of the positions at which the mixture is evaluated for
	// the weight standardisation (docs/algorithms.md, "Weight
	// standardisation").
	NormPoints int
	// Eps (3D) is the relative covariance epsilon: every M step adds
	// max(Eps·(longest bounding-box side)², 1e-9)·I to the covariances.
	Eps float64
	// Normalize (3D) centres every cloud at its centroid and scales it into
	// the unit sphere before fitting (PointNet++'s pc_normalize), so that
	// raw ModelNet meshes in arbitrary units give comparable mixtures.
	Normalize bool
	// Seed makes the fit deterministic: sample i of a split uses the random
	// stream PCG(Seed, i), whatever the parallel schedule and whatever
	// limit selected it (2D: point sampling, k-means and standardisation;
	// 3D: mesh sampling, the fitting itself being deterministic).
	Seed uint64
}

// DefaultFitConfig returns the reference settings of dimension dim.
//
// 2D: K = 64, 4000 points, k-means initialisation, one EM step, reg_covar
// 0.1, tol 5e-5, at most 100 Lloyd iterations, 1000 standardisation points,
// seed 1.
//
// 3D: K = 128, 10,000 points, FPS + one M step with epsilon 1e-5,
// unit-sphere normalisation, seed 1; the k-means + EM settings (20 Lloyd
// iterations, 1 EM step) apply only when Method is changed to KMeansEM.
//
// Any other dim gives a configuration that Validate rejects.
func DefaultFitConfig(dim int) FitConfig {
	if dim == 3 {
		return FitConfig{Dim: 3, K: 128, Points: 10000, Method: FPSMStep, LloydIters: 20, EMSteps: 1, Eps: 1e-5,
			Normalize: true, Seed: 1}
	}
	return FitConfig{Dim: dim, K: 64, Points: 4000, Method: KMeansInit, EMSteps: 1, Tol: 5e-5, RegCovar: 0.1,
		LloydIters: 100, NormPoints: 1000, Seed: 1}
}

// Validate reports the first invalid setting.
func (c FitConfig) Validate() error {
	switch {
	case c.Dim != 2 && c.Dim != 3:
		return errors.Errorf("fit config: Dim = %d, want 2 or 3", c.Dim)
	case c.K < 1:
		return errors.Errorf("fit config: K = %d, want ≥ 1", c.K)
	case c.Method < 0 || int(c.Method) >= len(methodDims):
		return errors.Errorf("fit config: unknown method %v", c.Method)
	case methodDims[c.Method] != c.Dim:
		return errors.Errorf("fit config: method %v fits %dD data, the data is %dD", c.Method, methodDims[c.Method], c.Dim)
	case c.EMSteps < 0 || c.LloydIters < 0:
		return errors.Errorf("fit config: EMSteps = %d, LloydIters = %d, want ≥ 0", c.EMSteps, c.LloydIters)
	}
	if c.Dim == 3 {
		switch {
		case c.Points < 0:
			return errors.Errorf("fit config: Points = %d, want ≥ 0", c.Points)
		case !(c.Eps > 0) || math.IsInf(c.Eps, 0):
			return errors.Errorf("fit config: Eps = %g, want finite > 0 (it keeps the covariances positive definite)", c.Eps)
		}
		return nil
	}
	switch {
	case c.Points < c.K:
		return errors.Errorf("fit config: %d points for K = %d Gaussians, want at least K", c.Points, c.K)
	case c.Method == RandomInit && c.EMSteps < 1:
		return errors.Errorf("fit config: random init needs EMSteps ≥ 1, got %d", c.EMSteps)
	case !(c.Tol >= 0) || math.IsInf(c.Tol, 0):
		return errors.Errorf("fit config: Tol = %g, want finite ≥ 0", c.Tol)
	case !(c.RegCovar > 0) || math.IsInf(c.RegCovar, 0):
		return errors.Errorf("fit config: RegCovar = %g, want finite > 0 (it keeps the covariances positive definite)", c.RegCovar)
	case c.Method == KMeansInit && c.LloydIters < 1:
		return errors.Errorf("fit config: LloydIters = %d, want ≥ 1", c.LloydIters)
	case c.NormPoints < 2:
		return errors.Errorf("fit config: NormPoints = %d, want ≥ 2 (a sample standard deviation needs two points)", c.NormPoints)
	}
	return nil
}

// String describes every setting that changes the fitted mixtures of c's
// dimension; it is the settings half of a cache key.
func (c FitConfig) String() string {
	s := fmt.Sprintf("fit %dD: K=%d points=%d method=%v", c.Dim, c.K, c.Points, c.Method)
	switch {
	case c.Dim == 2:
		s += fmt.Sprintf(" em_steps=%d tol=%g reg_covar=%g lloyd_iters=%d norm_points=%d",
			c.EMSteps, c.Tol, c.RegCovar, c.LloydIters, c.NormPoints)
	case c.Method == KMeansEM:
		s += fmt.Sprintf(" lloyd_iters=%d em_steps=%d eps=%g normalize=%t", c.LloydIters, c.EMSteps, c.Eps, c.Normalize)
	default:
		s += fmt.Sprintf(" eps=%g normalize=%t", c.Eps, c.Normalize)
	}
	return s + fmt.Sprintf(" seed=%d", c.Seed)
}

// tag is the short form of c in cache file names; the full settings are
// checked inside the file.
func (c FitConfig) tag() string {
	if c.Dim == 2 {
		return fmt.Sprintf("k%d-em%d-%v", c.K, c.EMSteps, c.Method)
	}
	return fmt.Sprintf("k%d-%v-p%d-s%d", c.K, c.Method, c.Points, c.Seed)
}
