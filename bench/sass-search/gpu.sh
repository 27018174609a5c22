#!/usr/bin/env bash
# The schedule search with measured rewards (issue 12's GPU goal), as ONE device call: each
# kernel at a shape large enough that CUDA-event times are not all launch latency and small
# enough that each kept schedule's check on the SASS emulator (fresh inputs, same shape) takes
# seconds. Usage (device machine, from the repository root, with .gpu/ from scripts/gpu-prepare):
#   BUDGET=50s ALGO=anneal ACTIONS=all bench/sass-search/gpu.sh [KERNELS...]
# Writes OUT/search.log and OUT/search.tar.gz (every kernel's cubin, moves, curve, summary, and
# under failed/ each schedule the check rejected: TRIDENT_SEARCH_FAILED).
# BACKEND=sass-emu runs the same searches on the model (here, for the predicted side).
set -u
cd "$(dirname "$0")/../.."
T=${TRIDENT:-$PWD/.gpu/trident}
OUT=${OUT:-/tmp/sass-search-gpu}
BUDGET=${BUDGET:-50s}
ALGO=${ALGO:-anneal}
BACKEND=${BACKEND:-cuda}
ACTIONS=${ACTIONS:-all}
mkdir -p "$OUT/search"
# A later call into the same OUT adds to the archive an earlier one left.
[ -f "$OUT/search.tar.gz" ] && tar -xzf "$OUT/search.tar.gz" -C "$OUT"
if [ -z "${TRIDENT_PTXAS:-}" ]; then
  tb=$(python3 -c 'import os, triton; print(os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin"))' 2>/dev/null || true)
  for tool in ptxas nvdisasm cuobjdump; do
    var=TRIDENT_$(echo "$tool" | tr a-z A-Z)
    if [ -n "$tb" ] && [ -x "$tb/$tool" ]; then export "$var=$tb/$tool"; fi
  done
fi
declare -A K
rows="x=randn:f32:4096x1024 y=empty:f32:4096x1024"
K[softmax]="kernels/softmax.py::softmax_kernel $rows x_row_stride=1024 y_row_stride=1024 n_cols=1024 BLOCK=1024 --grid 4096 --num-warps 4"
K[layernorm]="kernels/layernorm.py::layernorm_fwd $rows w=randn:f32:1024 b=randn:f32:1024 mean=empty:f32:4096 rstd=empty:f32:4096 stride=1024 N=1024 eps=1e-5 BLOCK_N=1024 --grid 4096 --num-warps 4"
K[rmsnorm]="kernels/rmsnorm.py::rmsnorm_fwd $rows w=randn:f32:1024 rstd=empty:f32:4096 stride=1024 N=1024 eps=1e-6 BLOCK_N=1024 --grid 4096 --num-warps 4"
K[matmul]="kernels/matmul.py::matmul_kernel a=randn:f16:1024x1024 b=randn:f16:1024x1024 c=empty:f16:1024x1024 M=1024 N=1024 K=1024 stride_am=1024 stride_ak=1 stride_bk=1024 stride_bn=1 stride_cm=1024 stride_cn=1 BLOCK_M=128 BLOCK_N=128 BLOCK_K=32 GROUP_M=8 --grid 64 --num-warps 8 --num-stages 3"
# shellcheck source=bench/attn_args.sh
. bench/attn_args.sh
attn() { attn_args 1 8 1024 "$1"; }
K[attention]=$(attn False)
K[attention_causal]=$(attn True)
target=()
[ "$BACKEND" = sass-emu ] && target=(--target "${TARGET:-sm_90a}")
for k in ${@:-softmax layernorm rmsnorm matmul attention attention_causal}; do
  s0=$(date +%s)
  n=$k.$ACTIONS
  # shellcheck disable=SC2086
  TRIDENT_SEARCH_FAILED=$OUT/search/failed/$n $T sass search ${K[$k]} --backend "$BACKEND" "${target[@]}" \
    --algo "$ALGO" --actions "$ACTIONS" --budget "$BUDGET" --seed 1 -o "$OUT/search/$n.cubin" \
    --moves "$OUT/search/$n.json" --curve "$OUT/search/$n.csv" >"$OUT/search/$n.txt" 2>&1
  rc=$?
  echo "=== $n: exit $rc after $(($(date +%s) - s0))s" | tee -a "$OUT/search.log"
  grep -E '^(original|noise|best|moves|evaluations|checks|first failure|time)' "$OUT/search/$n.txt" \
    | tee -a "$OUT/search.log"
  [ $rc = 0 ] || tail -3 "$OUT/search/$n.txt" | tee -a "$OUT/search.log"
done
# One archive, not the files (the device tool brings back few files).
tar -czf "$OUT/search.tar.gz" -C "$OUT" search && rm -rf "$OUT/search"
