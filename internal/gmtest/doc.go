// Package gmtest holds the helpers the tests of gmcn share: random packed
// mixtures and SPD matrices, float32↔float64 converters, difference
// measures, finite differences, gradient checks of kernels and of Gorgonia
// graphs (GraphGrad) and error-message checks.
//
// Only _test.go files may import it (TestOnlyImportedByTests enforces this),
// so nothing here is part of any built program.
//
// "The reference" in this package's comments is the authors' implementation,
// cg-tuwien/Gaussian-Mixture-Convolution-Networks at commit c1615d8
// (docs/algorithms.md).
package gmtest

// Float is the element type of the helpers: the two element types of the
// ops.
type Float interface{ ~float32 | ~float64 }
