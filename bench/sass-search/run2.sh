#!/usr/bin/env bash
# The issue-12 comparison (bench/SASS.md, "PPO against the baselines"): greedy, anneal (with
# the incremental mask) and PPO on each kernel × target with the same wall budget and seed.
# Usage: bench/sass-search/run2.sh BIG_BUDGET SMALL_BUDGET OUTDIR (the small budget is for
# softmax and layer norm, whose few legal moves are exhausted in seconds).
set -u
BIG=${1:-45s}
SMALL=${2:-20s}
OUT=${3:-bench/sass-search/out2}
mkdir -p "$OUT"
for k in ${KERNELS:-matmul attention softmax layernorm}; do
  case $k in softmax|layernorm) b=$SMALL ;; *) b=$BIG ;; esac
  KERNELS=$k ALGOS="${ALGOS:-greedy anneal ppo}" bash "$(dirname "$0")/run.sh" "$b" "$OUT"
done
