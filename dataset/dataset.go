package dataset

// Dataset is a labelled data set with a training and a test split, each of
// whose samples is fitted to one Gaussian mixture of dimension Dim.
type Dataset interface {
	// Name identifies the data set in messages and cache file names
	// ("mnist", "modelnet10").
	Name() string
	// Dim is the spatial dimension of the fitted mixtures, 2 or 3.
	Dim() int
	// Classes returns the class names; label i is Classes()[i].
	Classes() []string
	// Train and Test return the two splits. Train is nil for a data set
	// opened for its test split only (the mnist package's Open can).
	Train() Split
	Test() Split
}

// Split is one part of a data set: a sequence of labelled samples that can
// be fitted to mixtures.
type Split interface {
	// Name identifies the split in messages and cache file names, as
	// data set and part ("mnist/train").
	Name() string
	// Len returns the number of samples.
	Len() int
	// Labels returns the label of every sample.
	Labels() []int
	// Digest returns a digest of the split's content: every byte its
	// samples are fitted from, their labels and the version of the fitting
	// code, but not where the files are. It is the data half of a cache key.
	Digest() ([]byte, error)
	// Limit returns n of the samples (all of them if n ≤ 0 or n ≥ Len),
	// chosen by the data set: the first n of a split in random order, n
	// spread evenly over a split sorted by class. A sample fits to the same
	// mixture, bit for bit, in the limited split as in the whole one.
	Limit(n int) Split
	// Fit fits every sample with cfg and returns the mixtures packed as
	// float32 in FitLayout(Len(), cfg.K, cfg.Dim), reporting each finished
	// sample to p (nil allowed).
	Fit(cfg FitConfig, p Progress) ([]float32, error)
}

// Progress receives the number of samples finished; it is called from
// several goroutines. A progress bar that also has a Finish() method is
// finished by Loader after fitting.
type Progress interface {
	Add(n int)
}
