package cpu

// The eight-lane (AVX2) kernels are generated from their sixteen-lane
// (AVX-512) sources by internal/lanegen: Go has no generics over vector
// types, and two hand-written copies drift. TestLanesGenerated fails when a
// generated file is out of date; `go generate ./ops/cpu` rewrites them.

//go:generate go run ../../internal/lanegen/cmd/lanegen evaluate_simd16.go evaluate_simd8.go
//go:generate go run ../../internal/lanegen/cmd/lanegen relufit_simd16.go relufit_simd8.go
//go:generate go run ../../internal/lanegen/cmd/lanegen convfit_exact_simd16.go convfit_exact_simd8.go
