#!/usr/bin/env bash
# gpu-check.sh is the one-call check of the CUDA device: run it on a GPU
# machine from an unpacked bin/gpu-bundle.tar.xz (make gpu-bundle), or here
# against the emulated device with --small after scripts/gpu-build.sh
# --emulated (make cuda-emu-test does). It needs bin/gpu/ and data/mnist,
# no Go and no network. Steps, each under a time limit, each writing its
# output to $GPU_CHECK_OUT (default gpu-check-out):
#
#   1. device facts (nvidia-smi, the device gmcn opens, CPU)
#   2. the cudaops equivalence tests (every GPU kernel against the CPU's)
#   3. the ops and gmnode suites with every op on the CUDA device
#   4. the kernel benchmarks (CUDA-event times)
#   5. training-step benchmarks on cuda and on the CPU: demo, paper,
#      paper-fused and the ModelNet10 model on generated shapes; on cuda
#      also the paper steps' time split among their kernels, a CPU profile
#      of the paper-fused step (the host's own work), and, if the
#      bundle holds another commit's train binary (make gpu-bundle
#      BASE=rev), the paper steps of that commit and of this build on
#      cuda, alternated
#   6. the demo preset trained on cuda, evaluated on the 10,000 test images
#
# and a summary table at the end (also summary.md). --small shrinks steps 4
# to 6 to what the emulator does in about a minute. The exit status is 1 if
# any step failed.
set -uo pipefail
cd "$(dirname "$0")/.."

small=0
case "${1:-}" in
--small) small=1 ;;
"") ;;
*)
	echo "gpu-check: unknown argument $1 (want --small or nothing)" >&2
	exit 2
	;;
esac
out=${GPU_CHECK_OUT:-gpu-check-out}
mkdir -p "$out"
out=$(cd "$out" && pwd)
bin=$PWD/bin/gpu
for f in cudaops.test ops.test gmnode.test train.test gmcn; do
	if [ ! -x "$bin/$f" ]; then
		echo "gpu-check: $bin/$f missing: run scripts/gpu-build.sh (or unpack make gpu-bundle's archive)" >&2
		exit 2
	fi
done
if [ ! -f data/mnist/t10k-images-idx3-ubyte.gz ]; then
	echo "gpu-check: data/mnist missing: run scripts/prepare-data.sh data" >&2
	exit 2
fi
export GMCN_DATA=$PWD/data
# libcuda.so.1 of the GPU machines' driver.
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/nvidia/lib64

rows=()
failed=0
# step NAME LIMIT LOG DIR CMD...: runs CMD in DIR under a time limit,
# output to LOG; sets $status and $secs.
step() {
	local name=$1 limit=$2 log=$3 dir=$4
	shift 4
	echo "== $name"
	local t0=$SECONDS
	(cd "$dir" && timeout "$limit" "$@") >"$out/$log" 2>&1
	local rc=$?
	secs=$((SECONDS - t0))
	if [ $rc -eq 0 ]; then
		status=ok
	elif [ $rc -eq 124 ]; then
		status="TIMEOUT ($limit)"
		failed=1
	else
		status="FAILED (exit $rc, see $log)"
		failed=1
	fi
	echo "   $status in ${secs}s"
}
row() { rows+=("| $1 | $2 | $3 s | $4 |"); }
passes() { grep -c -- '--- PASS' "$out/$1"; }
fails() { grep -c -- '--- FAIL' "$out/$1"; }

# 1. Facts.
{
	echo "date: $(date -u +%FT%TZ)"
	echo "host: $(uname -srm), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
	if command -v nvidia-smi >/dev/null; then
		nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader
	else
		echo "nvidia-smi: not present"
	fi
	"$bin/gmcn" version
} >"$out/facts.txt" 2>&1
device=$(cd cudaops && GMCN_CUDAEMU_SCHEDULE=forward timeout 120 "$bin/cudaops.test" -test.run '^TestIntegrate$' 2>&1 | sed -n 's/^gmcn: running GM ops on CUDA device 0: //p')
echo "device: ${device:-none opened}" | tee -a "$out/facts.txt"
cat "$out/facts.txt"

# 2. Equivalence tests.
step "cudaops equivalence tests" 600 cudaops.txt cudaops "$bin/cudaops.test" -test.count=1 -test.v
row "cudaops equivalence tests" "$status" "$secs" "$(passes cudaops.txt) passed, $(fails cudaops.txt) failed"

# 3. The suites with every op on the CUDA device.
for p in ops gmnode; do
	step "$p suite on cuda" 600 $p.txt $p env GMCN_TEST_DEVICE=cuda "$bin/$p.test" -test.count=1 -test.v
	row "$p suite on cuda" "$status" "$secs" "$(passes $p.txt) passed, $(fails $p.txt) failed"
done

# 4. Kernel benchmarks: the median CUDA-event time of each kernel.
if [ $small -eq 1 ]; then
	kbench=(-test.bench 'ReLUFit|Conv$|ConvFit$' -test.benchtime 1x)
else
	kbench=(-test.bench . -test.benchtime 20x)
fi
step "kernel benchmarks" 300 kernels.txt cudaops "$bin/cudaops.test" -test.run '^$' "${kbench[@]}"
row "kernel benchmarks" "$status" "$secs" "$(grep -c '^Benchmark' "$out/kernels.txt") benchmarks (kernels.txt)"

# 5. Training steps, cuda and cpu.
# One step of each model on the CPU (the ModelNet10 one takes about 35 s on
# 16 cores), three on the GPU.
for d in cuda cpu; do
	if [ $small -eq 1 ]; then
		tbench=(-test.bench 'TrainStep/demo' -test.benchtime 1x)
	elif [ $d = cpu ]; then
		tbench=(-test.bench 'TrainStep' -test.benchtime 1x)
	else
		tbench=(-test.bench 'TrainStep' -test.benchtime 3x)
	fi
	step "training steps on $d" 600 "steps-$d.txt" train env GMCN_TEST_DEVICE=$d "$bin/train.test" -test.run '^$' "${tbench[@]}"
	# On cuda each step also reports the host's own work (host-µs/step).
	figs=$(awk '/^BenchmarkTrainStep/ { sub(/^BenchmarkTrainStep\//, "", $1); sub(/-[0-9]+$/, "", $1); f = ""; h = ""
		for (i = 2; i <= NF; i++) { if ($(i+1) == "samples/s") f = $i; if ($(i+1) == "host-µs/step") h = sprintf(" (host %.1f ms/step)", $i / 1000) }
		printf "%s%s %s samples/s%s", sep, $1, f, h; sep = ", " }' "$out/steps-$d.txt")
	row "training steps on $d" "$status" "$secs" "${figs:-none}"
done

# 5b. Where the GPU steps' time goes: each kernel's CUDA-event time per
# step, the copies, the rest (the host). Not in --small: a step of batch 32
# takes the emulator minutes.
if [ $small -eq 0 ]; then
	step "kernel time per step on cuda" 300 step-kernels.txt train env GMCN_TEST_DEVICE=cuda "$bin/train.test" -test.run '^$' -test.bench 'StepKernels' -test.benchtime 5x -test.v
	split=$(awk '/^BenchmarkStepKernels\/[A-Za-z_0-9]+$/ { name = $1; sub(/^BenchmarkStepKernels\//, "", name) } /per step: wall/ { printf "%s%s: wall %.1f ms = kernels %.1f + copies %.1f + the rest %.1f", sep, name, $5 / 1000, $8 / 1000, $10 / 1000, $13 / 1000; sep = "; " }' "$out/step-kernels.txt")
	row "kernel time per step on cuda" "$status" "$secs" "${split:-none} (step-kernels.txt)"
fi

# 5b'. A CPU profile of the paper-fused B32 step on cuda, for the host's own
# work, which BenchmarkTrainStep reports as host-µs/step: read it where Go
# is, with go tool pprof bin/gpu/train.test <out>/paper-fused-b32-cuda.prof.
if [ $small -eq 0 ]; then
	step "CPU profile of paper_fused_B32 on cuda" 300 profile.txt train env GMCN_TEST_DEVICE=cuda "$bin/train.test" -test.run '^$' -test.bench 'TrainStep/paper_fused_B32$' -test.benchtime 30x -test.cpuprofile "$out/paper-fused-b32-cuda.prof"
	row "CPU profile of paper_fused_B32 on cuda" "$status" "$secs" "paper-fused-b32-cuda.prof (go tool pprof bin/gpu/train.test)"
fi

# 5c. This build against another commit's train binary (bin/gpu/train-base.test
# from make gpu-bundle BASE=rev): the same steps on cuda, the two binaries
# alternated, three rounds (--small: the demo, one round).
if [ -x "$bin/train-base.test" ]; then
	base=$(cat "$bin/base.txt" 2>/dev/null || echo "the base")
	if [ $small -eq 1 ]; then
		abbench=(-test.bench 'TrainStep/demo' -test.benchtime 1x)
		rounds=1
	else
		abbench=(-test.bench 'TrainStep/(paper_B32|paper_fused_B32|paper_fused_exact_B8|paper_fused_exact_B32)$' -test.benchtime 10x)
		rounds=3
	fi
	# shellcheck disable=SC2016 # expanded by the inner bash
	ab='rounds=$1 bin=$2
	shift 2
	for r in $(seq "$rounds"); do
		for b in train-base train; do
			echo "== round $r: $b"
			GMCN_TEST_DEVICE=cuda "$bin/$b.test" -test.run "^\$" "$@" || exit 1
		done
	done'
	step "training steps on cuda, $base against this build" 600 steps-ab.txt train bash -c "$ab" ab "$rounds" "$bin" "${abbench[@]}"
	figs=$(awk -v base="$base" '/^== round/ { who = ($4 == "train-base") ? base : "this" }
		/^BenchmarkTrainStep/ { n = $1; sub(/^BenchmarkTrainStep\//, "", n); sub(/-[0-9]+$/, "", n)
			for (i = 2; i <= NF; i++) if ($(i+1) == "samples/s") v[n, who] = v[n, who] (v[n, who] == "" ? "" : " / ") $i
			if (!(n in seen)) { seen[n] = 1; order[++k] = n } }
		END { for (j = 1; j <= k; j++) { n = order[j]; printf "%s%s: %s %s, this %s", sep, n, base, v[n, base], v[n, "this"]; sep = "; " } }' "$out/steps-ab.txt")
	row "training steps on cuda, $base against this build (samples/s)" "$status" "$secs" "${figs:-none}"
fi

# 6. The demo preset trained on cuda.
if [ $small -eq 1 ]; then
	demo=(--train-limit 100 --test-limit 100 --epochs 1)
else
	demo=()
fi
step "demo trained on cuda" 600 demo.txt . "$bin/gmcn" train --preset demo --device cuda "${demo[@]}" --out "$out/demo" --cache "$out/cache" --overwrite
acc=$(tail -n 1 "$out/demo/metrics.csv" 2>/dev/null | awk -F, '{ printf "%.2f %% test accuracy after epoch %s (%s samples/s)", 100 * $5, $1, $7 }')
row "demo trained on cuda ${demo[*]}" "$status" "$secs" "${acc:-no metrics}"

{
	echo
	echo "GPU check on: ${device:-no device opened}"
	echo
	echo "| step | result | time | figures |"
	echo "|---|---|---|---|"
	printf '%s\n' "${rows[@]}"
} | tee "$out/summary.md"
exit $failed
