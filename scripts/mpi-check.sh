#!/usr/bin/env bash
# mpi-check.sh trains the demo model for two epochs on 400 MNIST images
# twice, on 2 MPI ranks (bin/gmcn-mpi under mpirun) and in one process that
# accumulates the same two shards per step (bin/gmcn --accumulate 2), and
# fails unless the step logs and the metrics (but for timings) are
# identical: the command-line counterpart of train's equivalence test.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
args=(train --preset demo --train-limit 400 --test-limit 200 --epochs 2)
mpirun --allow-run-as-root --oversubscribe -np 2 -x GOMAXPROCS=1 \
	bin/gmcn-mpi "${args[@]}" --out "$work/mpi" 2>"$work/mpi.log" || { cat "$work/mpi.log"; exit 1; }
bin/gmcn "${args[@]}" --accumulate 2 --out "$work/acc" 2>"$work/acc.log" || { cat "$work/acc.log"; exit 1; }
cmp "$work/mpi/steps.csv" "$work/acc/steps.csv"
# metrics.csv columns 1-6: epoch, losses, accuracies, learning rate.
diff <(cut -d, -f1-6 "$work/mpi/metrics.csv") <(cut -d, -f1-6 "$work/acc/metrics.csv")
echo "mpi-check: 2 ranks and --accumulate 2 agree: $(wc -l <"$work/mpi/steps.csv") step-log lines, metrics:"
cut -d, -f1-6 "$work/mpi/metrics.csv"
