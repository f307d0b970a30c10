package train

import "sync"

var (
	mnistOnce sync.Once
	mnistData *Dataset
	mnistErr  error
)
