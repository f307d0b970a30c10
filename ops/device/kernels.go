package device

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
)

// Kernels is every numeric computation the ops perform, forward and
// backward, for element type T. Each method is named for the computation and
// documented with what it computes; ops/cpu's functions of the same names
// give the formulas. Backward methods take the incoming gradient g = ∂L/∂y
// and write ∂L/∂input into their first argument.
type Kernels[T Float] interface {
	// Integrate writes y[m] = Σ_k w[m,k] for every mixture m of x.
	Integrate(y, x []T, l mixture.Layout) error
	// IntegrateBackward writes ∂L/∂x: g[m] on every weight, 0 elsewhere.
	IntegrateBackward(dx, g []T, l mixture.Layout) error

	// Conv writes the analytic convolution of data x (layout lx) with
	// kernels k (layout lk) into y (layout ConvLayout(lx, lk)).
	Conv(y, x, k []T, lx, lk mixture.Layout) error
	// ConvBackwardData writes ∂L/∂x of Conv.
	ConvBackwardData(dx, g, k []T, lx, lk mixture.Layout) error
	// ConvBackwardKernels writes ∂L/∂k of Conv.
	ConvBackwardKernels(dk, g, x []T, lx, lk mixture.Layout) error

	// ConvFit writes the fused convolution-fitting of data x (layout lx)
	// with kernels k (layout lk) into y (layout ConvFitLayout(lx, lk, s.N)):
	// s.N Gaussians per output mixture standing for Conv's output mixture,
	// selected as s says.
	ConvFit(y, x, k []T, lx, lk mixture.Layout, s ConvFitSelect) error
	// ConvFitSaving is ConvFit that also returns what ConvFitBackward can
	// reuse for the same x and k (see Saved).
	ConvFitSaving(y, x, k []T, lx, lk mixture.Layout, s ConvFitSelect) (Saved, error)
	// ConvFitBackward writes ∂L/∂x and ∂L/∂k of ConvFit, taking the same
	// discrete decisions (tree, selection) as ConvFit does for x and k; a
	// nil destination is not computed. saved is nil or what ConvFitSaving
	// returned for these x, k, layouts and s.
	ConvFitBackward(dx, dk, g, x, k []T, lx, lk mixture.Layout, s ConvFitSelect, saved Saved) error

	// Block writes into y (shape b.Shape(lx, lk)) one GMCN block of data
	// x (layout lx) and kernels k (layout lk) as b describes it: the
	// convolution or fused convolution-fitting, ÷Fi, the ReLU fit, the
	// reduction and the integrals if b.Integrate, which it equals; b has
	// passed b.Check(lx, lk). A device can
	// keep the intermediates where they are made (a GPU's memory).
	Block(y, x, k []T, lx, lk mixture.Layout, b BlockSpec) error
	// BlockSaving is Block that also returns what BlockBackward can reuse
	// for the same x and k (see Saved).
	BlockSaving(y, x, k []T, lx, lk mixture.Layout, b BlockSpec) (Saved, error)
	// BlockBackward writes ∂L/∂x and ∂L/∂k of Block, with the discrete
	// decisions Block takes for x and k; a nil destination is not computed.
	// saved is nil or what BlockSaving returned for these x, k, layouts and b.
	BlockBackward(dx, dk, g, x, k []T, lx, lk mixture.Layout, b BlockSpec, saved Saved) error

	// Evaluate writes y[b,c,i] = Σ_k w_k N(p_i; μ_k, Σ_k) of the mixtures x
	// at the point sets pts [pb, pc, m, D] (pb ∈ {1, B}, pc ∈ {1, C}).
	Evaluate(y, x, pts []T, l mixture.Layout, pb, pc, m int) error
	// EvaluateBackwardMixture writes ∂L/∂x of Evaluate.
	EvaluateBackwardMixture(dx, x, pts, g []T, l mixture.Layout, pb, pc, m int) error
	// EvaluateBackwardPoints writes ∂L/∂pts of Evaluate.
	EvaluateBackwardPoints(dp, x, pts, g []T, l mixture.Layout, pb, pc, m int) error

	// ReLUFit writes into y (same layout) the dense fit of every mixture m
	// of x plus its constant kappa[m]: the mixture part of
	// max(f + κ, 0) = fit + max(κ, 0). kappa holds one value per mixture, or
	// is nil for κ = 0. t is nil, or holds one value per component: the
	// values of the function to fit at the centroids, given instead of
	// computed from x. opts are resolved with ReLUFitOptions.Resolve.
	ReLUFit(y, x, kappa, t []T, l mixture.Layout, opts ReLUFitOptions) error
	// ReLUFitSaving is ReLUFit that also returns what ReLUFitBackward can
	// reuse for the same x, kappa and t (see Saved).
	ReLUFitSaving(y, x, kappa, t []T, l mixture.Layout, opts ReLUFitOptions) (Saved, error)
	// ReLUFitBackward writes ∂L/∂x, ∂L/∂κ and ∂L/∂t of ReLUFit; a nil
	// destination is not computed (kappa nil: κ = 0; t nil: no given
	// targets). saved is nil or what ReLUFitSaving returned for this x,
	// kappa, t, l and opts.
	ReLUFitBackward(dx, dkappa, dt, x, kappa, t, g []T, l mixture.Layout, opts ReLUFitOptions, saved Saved) error

	// TreeHEM reduces every mixture of x to np components into y (layout l
	// with N = np); o has passed o.Check(l, np).
	TreeHEM(y, x []T, l mixture.Layout, np int, o TreeHEMOptions) error
	// TreeHEMSaving is TreeHEM that also returns what TreeHEMBackward can
	// reuse for the same x (see Saved).
	TreeHEMSaving(y, x []T, l mixture.Layout, np int, o TreeHEMOptions) (Saved, error)
	// TreeHEMBackward writes ∂L/∂x of TreeHEM, taking the same discrete
	// decisions (tree, selections) as TreeHEM does for x; saved is nil or
	// what TreeHEMSaving returned for this x, l, np and o.
	TreeHEMBackward(dx, x, g []T, l mixture.Layout, np int, o TreeHEMOptions, saved Saved) error
	// MEM reduces every mixture of x to np ≥ 1 components with the
	// modified EM into y (layout l with N = np).
	MEM(y, x []T, l mixture.Layout, np int) error
	// MEMBackward writes ∂L/∂x of MEM, taking the same initial selection as
	// MEM does for x; the likelihoods carry no gradient.
	MEMBackward(dx, x, g []T, l mixture.Layout, np int) error

	// KeepLargest writes the np ≤ N components of largest weight of every
	// mixture of x, largest first, into y (layout l with N = np).
	KeepLargest(y, x []T, l mixture.Layout, np int) error
	// KeepLargestBackward writes ∂L/∂x of KeepLargest.
	KeepLargestBackward(dx, x, g []T, l mixture.Layout, np int) error

	// MeanTraces writes τ[m] = mean_k tr Σ_k of every mixture m of x.
	MeanTraces(tau []float64, x []T, l mixture.Layout) error
	// ScaleMixtures scales mixture m in space by s[m]: μ ← s·μ, Σ ← s²·Σ.
	ScaleMixtures(y, x []T, l mixture.Layout, s []T) error
	// ScaleMixturesBackward writes ∂L/∂x of ScaleMixtures with s constant.
	ScaleMixturesBackward(dx, g []T, l mixture.Layout, s []T) error
	// CovScaleBackward writes ∂L/∂x of ScaleMixtures with s[m] = sqrt(D/τ[m])
	// a function of x (per-sample CovScaleNorm).
	CovScaleBackward(dx, g, x []T, l mixture.Layout, s []T, tau []float64) error

	// KernelEpsilon returns ε = cfg.Epsilon(max |A·Aᵀ|) over the d×d factors
	// a, that is CovEpsilon·max(1, max |A·Aᵀ|); the ops treat it as a
	// constant.
	KernelEpsilon(a []T, d int, cfg KernelConfig) (float64, error)
	// AssembleKernel writes the packed kernel [F_o, F_i, N_k, ·] (layout l)
	// from raw weights w, raw positions p and factors a.
	AssembleKernel(y, w, p, a []T, l mixture.Layout, cfg KernelConfig, eps float64) error
	// AssembleKernelBackward writes ∂L/∂w, ∂L/∂p and ∂L/∂a of
	// AssembleKernel; a nil destination is not computed.
	AssembleKernelBackward(dw, dp, da, g, a []T, l mixture.Layout, cfg KernelConfig) error

	// WeightDecay returns mean(w²) + mean((A·Aᵀ − I)²) over the raw weights
	// w and the d×d factors a.
	WeightDecay(w, a []T, d int) (float64, error)
	// WeightDecayBackward writes g·∂/∂w and g·∂/∂a of WeightDecay; a nil
	// destination is not computed.
	WeightDecayBackward(dw, da, w, a []T, d int, g T) error

	// StandardiseScale writes sd[m], the standard deviation of mixture m's
	// values over a grid in its bounding box.
	StandardiseScale(sd []float64, x []T, l mixture.Layout) error
	// Standardise multiplies every weight of mixture m by gain/sd[m].
	Standardise(y, x []T, sd []float64, gain T, l mixture.Layout) error
	// StandardiseBackward writes ∂L/∂x of Standardise with sd constant and
	// returns ∂L/∂gain.
	StandardiseBackward(dx, x, g []T, sd []float64, gain T, l mixture.Layout) (T, error)

	// ScaleWeights multiplies every weight by s and copies positions and
	// covariances; with the incoming gradient as x it is its own backward.
	ScaleWeights(y, x []T, l mixture.Layout, s T) error

	// ScaleAxes scales every mixture of x in space by its own per-axis
	// factors: μ_d ← s_d·μ_d, Σ_ij ← s_i·s_j·Σ_ij, weights unchanged. s holds
	// sb·sc rows of D factors (sb ∈ {1, B}, sc ∈ {1, C}); mixture (b, c)
	// reads row (b mod sb)·sc + (c mod sc), so a size of 1 broadcasts.
	ScaleAxes(y, x, s []T, l mixture.Layout, sb, sc int) error
	// ScaleAxesBackward writes ∂L/∂x and ∂L/∂s of ScaleAxes, the latter
	// summed over the mixtures that share a row of s; a nil destination is
	// not computed.
	ScaleAxesBackward(dx, ds, g, x, s []T, l mixture.Layout, sb, sc int) error
}

// Saved is what a forward computation (a Kernels method named …Saving)
// leaves for the backward computation of the same op: intermediate results
// the output does not determine, such as the ReLU fit's sums or TreeHEM's
// decisions, so that the backward need not recompute them. It is opaque to
// the ops and nil when a device keeps nothing. The ops hand it back only to
// the same device and element type, with the same parameters and inputs
// bitwise equal to the forward's; a backward given nil recomputes what it
// needs, and one given state it does not recognise reports an error.
type Saved any

// Releasable is a Saved whose storage a later forward computation of the
// same sizes may take over. The ops call Release once no computation uses
// the state any more and do not use it after; state never released is left
// to the garbage collector. It is implemented by pointer types, which the
// ops compare.
type Releasable interface{ Release() }

// Device is one place the ops can run on: its float32 and float64 kernels
// and which of their computations leave the Go runtime.
type Device struct {
	// Name describes the device in logs and errors, e.g. "cpu".
	Name string
	// F32 and F64 are the kernels for each element type.
	F32 Kernels[float32]
	F64 Kernels[float64]
	// External holds the Kernels method names that run outside the Go
	// runtime (on a GPU); nil for a device that computes in Go. A method
	// with variants that the device computes in different places is named
	// with the variant for each one that leaves the runtime:
	// "ReLUFit/constant" is the ReLU fit with constants, "ReLUFit/targets"
	// the fit to given targets, "ReLUFit/refined" the refined fit (likewise
	// ReLUFitSaving and ReLUFitBackward), while
	// "ReLUFit" alone covers only the plain fit.
	External map[string]bool
}

// Check reports a device that lacks a name or kernels, or whose External
// names a computation that Kernels does not have.
func (d *Device) Check() error {
	switch {
	case d == nil:
		return errors.New("device: nil Device")
	case d.Name == "":
		return errors.New("device: Device has no name")
	case d.F32 == nil || d.F64 == nil:
		return errors.Errorf("device %q: needs both float32 and float64 kernels", d.Name)
	}
	all := Computations()
	for name := range d.External {
		method, v, qualified := strings.Cut(name, "/")
		if !all[method] {
			return errors.Errorf("device %q: External names %q, which is not a Kernels method", d.Name, name)
		}
		if qualified && !slices.Contains(variants[method], v) {
			return errors.Errorf("device %q: External names %q, but %s has the variants %v", d.Name, name, method, variants[method])
		}
	}
	return nil
}

// ReLUFitCall returns the name External gives the ReLU-fit computation name
// (ReLUFit, ReLUFitSaving or ReLUFitBackward) when called with constants,
// with given targets or with opts: the plain name for the plain fit, with
// "/refined" for the refined fit, "/targets" for the fit to given targets and
// "/constant" for the fit with constants, the cases a device may compute
// elsewhere (the refined fit takes precedence, then given targets, then
// constants).
func ReLUFitCall(name string, constant, targets bool, opts ReLUFitOptions) string {
	switch {
	case opts.Refine:
		return name + "/refined"
	case targets:
		return name + "/targets"
	case constant:
		return name + "/constant"
	}
	return name
}

// variants are the variants of the Kernels methods that have some, as
// External names them.
var variants = map[string][]string{
	"ReLUFit":         {"constant", "targets", "refined"},
	"ReLUFitSaving":   {"constant", "targets", "refined"},
	"ReLUFitBackward": {"constant", "targets", "refined"},
}

// Placement says where d computes: its name, and for a device with
// external computations the ones (and the variants) it computes in Go.
func (d *Device) Placement() string {
	if len(d.External) == 0 {
		return d.Name + " (every computation in Go)"
	}
	var inGo []string
	for name := range Computations() {
		if !d.External[name] {
			inGo = append(inGo, name)
			continue
		}
		for _, v := range variants[name] {
			if !d.External[name+"/"+v] {
				inGo = append(inGo, name+"/"+v)
			}
		}
	}
	slices.Sort(inGo)
	return fmt.Sprintf("%s; in Go on the CPU: %s", d.Name, strings.Join(inGo, ", "))
}

// Extern reports whether any of the named computations (with their
// variant, if any: External) runs outside the Go runtime on d.
func (d *Device) Extern(computations ...string) bool {
	for _, c := range computations {
		if d.External[c] {
			return true
		}
	}
	return false
}

// ExternalNames returns the set of names External can hold: every Kernels
// method name and every variant of one ("ReLUFit/targets" …).
func ExternalNames() map[string]bool {
	names := Computations()
	for method, vs := range variants {
		for _, v := range vs {
			names[method+"/"+v] = true
		}
	}
	return names
}

// Computations returns the set of Kernels method names.
func Computations() map[string]bool {
	t := reflect.TypeFor[Kernels[float32]]()
	all := make(map[string]bool, t.NumMethod())
	for i := range t.NumMethod() {
		all[t.Method(i).Name] = true
	}
	return all
}
