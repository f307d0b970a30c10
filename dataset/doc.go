// Package dataset is the data path shared by the 2D and 3D data sets: the
// Dataset and Split interfaces the data sets implement, the fitting
// settings (FitConfig), the fitted inputs (Inputs), and their on-disk cache
// (Loader, EncodeCache, DecodeCache).
//
// A data set turns each sample of a split (an image, a mesh, a point cloud)
// into one Gaussian mixture of K components in the packed layout of package
// github.com/gmcn-go/gmcn/ops/mixture, [n, 1, K, 1+D+D²], weights as
// integrals (docs/algorithms.md, "Input fitting in 2D" and "Input fitting in
// 3D"). Fitting is slow, so a Loader keeps every fitted split in a cache file
// whose key is the content of the split (a digest of the raw images or
// meshes and labels) together with the fit settings: a copy of the data at
// another path reuses the cache, changed data or settings refit it.
//
// The data sets live in their own packages: dataset/mnist (MNIST and
// Fashion-MNIST) and shapes (ModelNet). Nothing is used silently: a cache
// that is missing, corrupt, written by another format version or for other
// data or settings is refitted with a message saying why.
//
// "The reference" in this package's comments is the authors' implementation,
// cg-tuwien/Gaussian-Mixture-Convolution-Networks at commit c1615d8
// (docs/algorithms.md).
package dataset
