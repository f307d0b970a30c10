#!/usr/bin/env bash
# interrupt-check.sh trains a small model for 10,000 optimiser steps on real
# MNIST twice: once straight through, and once stopped by SIGINT, resumed,
# stopped by SIGTERM, resumed again to the end. It fails unless every stop
# exited 130 and both runs end with the same step log and the same
# metrics.csv (but for the timing columns), with no NaN anywhere.
#
#   scripts/interrupt-check.sh [SECONDS]   (SECONDS before each signal; default 40)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${GMCN:-bin/gmcn}
wait_s=${1:-40}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# 4,000 images in batches of 4 for 10 epochs: 10,000 steps.
args=(train --layers "1/8 -> 4/4 -> 10" --train-limit 4000 --test-limit 1000 --batch 4 --epochs 10
	--cache "$work/cache" --checkpoint-every 0)
"$bin" "${args[@]}" --out "$work/ref" 2>"$work/ref.log" || { tail -5 "$work/ref.log"; exit 1; }

stop() { # stop SIGNAL LOG CMD...: run CMD, send SIGNAL after wait_s, require 130
	local sig=$1 log=$2
	shift 2
	"$@" 2>"$log" &
	local pid=$!
	sleep "$wait_s"
	kill -"$sig" "$pid"
	local rc=0
	wait "$pid" || rc=$?
	if [ "$rc" -ne 130 ]; then
		echo "interrupt-check: $sig gave exit status $rc, want 130" >&2
		tail -5 "$log" >&2
		exit 1
	fi
	grep -h "stopping now\|interrupted" "$log" | tail -2
}
stop INT "$work/run1.log" "$bin" "${args[@]}" --out "$work/run"
stop TERM "$work/run2.log" "$bin" train --out "$work/run" --resume
"$bin" train --out "$work/run" --resume 2>"$work/run3.log" || { tail -5 "$work/run3.log"; exit 1; }

steps=$(($(wc -l <"$work/ref/steps.csv") - 1))
if grep -qi nan "$work/ref/metrics.csv" "$work/run/metrics.csv" "$work/ref/steps.csv" "$work/run/steps.csv"; then
	echo "interrupt-check: NaN in the outputs" >&2
	exit 1
fi
cmp "$work/ref/steps.csv" "$work/run/steps.csv"
# metrics.csv columns 1-6: epoch, losses, accuracies, learning rate.
diff <(cut -d, -f1-6 "$work/ref/metrics.csv") <(cut -d, -f1-6 "$work/run/metrics.csv")
echo "interrupt-check: $steps steps; stopped by SIGINT and SIGTERM and resumed twice, the run equals the uninterrupted one:"
cut -d, -f1-6 "$work/run/metrics.csv"
