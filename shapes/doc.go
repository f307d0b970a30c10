// Package shapes is the 3D data path of gmcn: readers for meshes (OFF, PLY)
// and point clouds (XYZ/TXT), the two ModelNet directory layouts as a
// dataset.Dataset, seeded area-weighted surface sampling, the 3D input
// fitting of the reference (furthest-point sampling, one hard assignment,
// one M step; docs/algorithms.md, "Input fitting in 3D") with k-means + EM
// as an option, a seeded generator of a labelled 3D benchmark written in the
// ModelNet layout, and a renderer of 3D mixtures as projected-density
// images. Fitted inputs are cached by dataset.Loader.
//
// Fitted mixtures use the packed layout of ops/mixture with D = 3
// ([w, μ(3), Σ(3×3)], 13 values per Gaussian); the weights are integrals of
// normalised Gaussians (priors), not the amplitudes the reference stores.
//
// Point clouds are flat []float32 slices x0 y0 z0 x1 y1 z1 …; meshes are
// indexed triangle lists (polygons are fan-triangulated when read).
//
// "The reference" in this package's comments is the authors' implementation,
// cg-tuwien/Gaussian-Mixture-Convolution-Networks at commit c1615d8
// (docs/algorithms.md).
package shapes
