# gmcn — Gaussian Mixture Convolution Networks for Gorgonia.
# `make help` lists the targets.

GO        ?= go
PKGS      ?= ./...
BENCHTIME ?= 1s
BENCH     ?= .

.PHONY: interrupt-check cuda-emu-test build-cuda gpu-bundle build build-mpi mpi-deps mpi-test mpi-bench data smoke example race help test test-plain test-simd vet fmt-check bench demo deps ptx cuda-check

help: ## list targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

build: ## build bin/gmcn with the SIMD kernels (AVX-512/AVX2; a plain `go run` is about 4.8× slower per training step)
	GOEXPERIMENT=simd $(GO) build -o bin/gmcn ./cmd/gmcn

build-mpi: mpi-deps ## build bin/gmcn-mpi, the MPI build (mpi tag) for `mpirun -np P bin/gmcn-mpi train …` (docs/distributed.md)
	GOEXPERIMENT=simd $(GO) build -tags mpi -o bin/gmcn-mpi ./cmd/gmcn

mpi-deps: ## install Open MPI from Debian (openmpi-bin, libopenmpi-dev) for the MPI build
	sh scripts/install-mpi.sh

# Open MPI refuses root without --allow-run-as-root; --oversubscribe lets 2
# ranks share fewer cores.
MPIRUN = mpirun --allow-run-as-root --oversubscribe

mpi-test: build build-mpi ## the MPI build's vet and tests on 2 ranks: collectives, the 2-rank equivalence test, 2 ranks vs --accumulate 2 on MNIST
	$(GO) vet -tags mpi ./dist ./train ./cmd/gmcn
	$(GO) test -c -tags mpi -o bin/dist-mpi.test ./dist
	$(GO) test -c -tags mpi -o bin/train-mpi.test ./train
	GMCN_MPI_RANKS=2 $(MPIRUN) -np 2 bin/dist-mpi.test -test.count=1
	GMCN_MPI_RANKS=2 $(MPIRUN) -np 2 -x GOMAXPROCS=1 bin/train-mpi.test -test.count=1 -test.run 'MPI|DataParallel'
	bash scripts/mpi-check.sh

mpi-bench: build-mpi ## time the MPI all-reduce on 2 ranks for step-sized buffers (docs/perf.md)
	$(GO) test -c -tags mpi -o bin/dist-mpi.test ./dist
	$(MPIRUN) -np 2 bin/dist-mpi.test -test.run '^$$' -test.bench AllReduce -test.benchtime 300x

data: ## copy MNIST (and Fashion-MNIST if installed) into data/, for running bin/gmcn where no go command is: GMCN_DATA=$$PWD/data
	bash scripts/prepare-data.sh data

test: test-plain test-simd ## run all tests, with and without the SIMD kernels

test-plain: ## run all tests with the portable (scalar) kernels
	$(GO) test -count=1 $(PKGS)

test-simd: ## run the kernel tests with GOEXPERIMENT=simd (AVX-512 or AVX2 kernels, as the CPU has)
	GOEXPERIMENT=simd $(GO) test -count=1 ./ops/...

race: ## the tests of the parallel kernels, training loop (data-parallel ranks included), communicators and data code under the race detector; the ops again with the SIMD kernels
	$(GO) test -race -count=1 ./ops/... ./dataset/... ./train/... ./shapes ./models ./gmnode ./dist
	GOEXPERIMENT=simd $(GO) test -race -count=1 ./ops/... ./gmnode

vet: ## go vet, plain and SIMD builds, and the SIMD build for arm64 (the amd64-only files' tags)
	$(GO) vet $(PKGS)
	GOEXPERIMENT=simd $(GO) vet $(PKGS)
	GOARCH=arm64 GOEXPERIMENT=simd $(GO) vet $(PKGS)

fmt-check: ## fail if any Go file is not gofmt-formatted
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

bench: ## run the benchmarks (BENCH=regexp, BENCHTIME=1s)
	GOEXPERIMENT=simd $(GO) test -run '^$$' -bench '$(BENCH)' -benchtime $(BENCHTIME) $(PKGS)

deps: ## install the Debian packages the project needs (datasets)
	bash scripts/install-deps.sh

interrupt-check: build ## train 10,000 steps on MNIST twice, once stopped by SIGINT and SIGTERM and resumed: the runs must agree (about 5 minutes; docs/results.md)
	bash scripts/interrupt-check.sh

smoke: build ## a one-minute check that training works: 2,000 MNIST images, 2 epochs, 1,000 test images (runs/smoke)
	bin/gmcn train --preset demo --train-limit 2000 --test-limit 1000 --epochs 2 --out runs/smoke --overwrite

demo: build ## fit MNIST inputs (cached), train the demo GMCN, evaluate on all 10,000 test images, plot
	bin/gmcn train --preset demo --out runs/demo --overwrite
	bin/gmcn render --run runs/demo

example: ## run the gmnode Example: a GM graph trained a few Adam steps
	$(GO) test -count=1 -run 'ExampleConv' -v ./gmnode

ptx: ## regenerate cudaops/ptx from cudaops/*.cu (needs nvcc: scripts/install-cuda.sh)
	bash scripts/ptx.sh

# CGO_CFLAGS only silence C warnings inside gorgonia.org/cu itself.
CUDA_CGO = CGO_CFLAGS="-Wno-deprecated-declarations -Wno-implicit-function-declaration"

cuda-check: ## toolchain, PTX up to date, gmcuda build + vet, GPU test binary (bin/cudaops.test)
	bash scripts/install-cuda.sh
	bash scripts/ptx.sh -check
	$(CUDA_CGO) $(GO) build -tags gmcuda ./...
	$(CUDA_CGO) $(GO) vet -tags gmcuda ./...
	$(CUDA_CGO) $(GO) test -c -tags gmcuda -o bin/cudaops.test ./cudaops

# The emulated CUDA device: the gmcuda build with the emulator as its driver
# (cudaops/emu_*.cc), compiled with AddressSanitizer.
EMU_TAGS = gmcuda,gmcudaemu
EMU_ASAN = CGO_CXXFLAGS="-g -O1 -fsanitize=address -fno-omit-frame-pointer"
EMU_SCHEDULES ?= forward reverse shuffled:7

cuda-emu-test: ## the CUDA kernels without a GPU: cudaops on the emulated device under each schedule, the ops and gmnode suites with every op on it, gpu-check.sh against it (AddressSanitizer; docs/cuda.md)
	$(GO) vet -tags $(EMU_TAGS) ./cudaops ./ops ./gmnode
	mkdir -p bin
	$(EMU_ASAN) $(GO) test -c -asan -tags $(EMU_TAGS) -o bin/cudaops-emu.test ./cudaops
	$(EMU_ASAN) $(GO) test -c -asan -tags $(EMU_TAGS) -o bin/ops-emu.test ./ops
	$(EMU_ASAN) $(GO) test -c -asan -tags $(EMU_TAGS) -o bin/gmnode-emu.test ./gmnode
	cd cudaops && for s in $(EMU_SCHEDULES); do GMCN_CUDAEMU_SCHEDULE=$$s ../bin/cudaops-emu.test -test.count=1 || exit 1; done
	cd ops && GMCN_TEST_DEVICE=cuda ../bin/ops-emu.test -test.count=1
	cd gmnode && GMCN_TEST_DEVICE=cuda ../bin/gmnode-emu.test -test.count=1
	bash scripts/gpu-build.sh --emulated
	bash scripts/prepare-data.sh data
	GPU_CHECK_OUT=bin/gpu-check-emu bash scripts/gpu-check.sh --small

build-cuda: ## build bin/gmcn-cuda, gmcn with the CUDA device (installs Debian's libcuda1, about 30 MB, if missing; runs where an NVIDIA driver is)
	bash scripts/install-cuda.sh --libcuda
	GOEXPERIMENT=simd $(CUDA_CGO) $(GO) build -tags gmcuda -o bin/gmcn-cuda ./cmd/gmcn

gpu-bundle: ## bin/gpu-bundle.tar.xz: the gmcuda test binaries, bin/gmcn, MNIST and the sources, for scripts/gpu-check.sh on a GPU machine without Go (docs/cuda.md); BASE=rev adds rev's train test binary, whose steps the check times against this build's
	bash scripts/install-cuda.sh --libcuda
	bash scripts/gpu-bundle.sh $(if $(BASE),--base $(BASE))
