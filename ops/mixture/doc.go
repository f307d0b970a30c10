// Package mixture defines the packed Gaussian-mixture layout shared by every
// gmcn op, and the helpers around it: packing and unpacking, validation,
// amplitude↔integral conversion, the reference's ASCII PLY files, and the
// Gaussian maths that every layer above the kernels needs: a Gaussian
// prepared for evaluation (Prepare, EvalMixture, InvDet, QuadForm) and the
// fitting errors of a layer (FitErrorsOf, which evaluates through a
// device's Evaluate). The kernels of ops/cpu build on these too, so the
// packages above the ops reach no kernel but through a device.
//
// A batch of mixtures is one dense tensor of shape [B, C, N, 1+D+D·D]:
// batch, channel, component and the packed Gaussian
//
//	[w, μ_0 … μ_{D-1}, Σ_00, Σ_01, … Σ_{D-1,D-1}]
//
// with the full covariance Σ stored row-major (both triangles). D ∈ {2, 3}
// follows from the packed length (7 or 13). A mixture denotes
//
//	f(x) = Σ_k w_k · N(x; μ_k, Σ_k),  N(x; μ, Σ) = (2π)^(-D/2) det(Σ)^(-1/2) exp(-½ (x-μ)ᵀ Σ⁻¹ (x-μ)),
//
// so a weight is the integral of its component ("prior" formulation); the
// amplitude of a component is α = w / sqrt((2π)^D det Σ).
//
// "The reference" in this package's comments is the authors' implementation,
// cg-tuwien/Gaussian-Mixture-Convolution-Networks at commit c1615d8
// (docs/algorithms.md).
package mixture
