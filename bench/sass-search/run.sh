#!/usr/bin/env bash
# The schedule-search baselines on the SASS emulator's model (bench/SASS.md, "Schedule
# search"): each kernel × target × algorithm × action family with the same wall-time budget
# and seed. Usage: bench/sass-search/run.sh [BUDGET] [OUTDIR]   (needs a release build and the
# tools: source .tools/env or set TRIDENT_PTXAS/TRIDENT_NVDISASM). KERNELS, TARGETS, ALGOS and
# ACTIONS (moves control all; default: moves only, the runs before the edits) narrow it.
set -u
BUDGET=${1:-60s}
OUT=${2:-bench/sass-search/out}
T=${TRIDENT:-target/release/trident}
mkdir -p "$OUT"
declare -A K
K[softmax]="kernels/softmax.py::softmax_kernel x=randn:f32:16x512 y=empty:f32:16x512 x_row_stride=512 y_row_stride=512 n_cols=512 BLOCK=512 --grid 16"
K[layernorm]="kernels/layernorm.py::layernorm_fwd x=randn:f32:16x512 y=empty:f32:16x512 w=randn:f32:512 b=randn:f32:512 mean=empty:f32:16 rstd=empty:f32:16 stride=512 N=512 eps=1e-5 BLOCK_N=512 --grid 16"
K[matmul]="kernels/matmul.py::matmul_kernel a=randn:f16:128x128 b=randn:f16:128x128 c=empty:f16:128x128 M=128 N=128 K=128 stride_am=128 stride_ak=1 stride_bk=128 stride_bn=1 stride_cm=128 stride_cn=1 BLOCK_M=64 BLOCK_N=64 BLOCK_K=32 GROUP_M=8 --grid 4"
K[attention]="kernels/flash_attention.py::attn_fwd q=randn:f16:2x128x64 k=randn:f16:2x128x64 v=randn:f16:2x128x64 o=empty:f16:2x128x64 sm_scale=0.125 stride_qz=16384 stride_qh=8192 stride_qm=64 stride_qd=1 stride_kz=16384 stride_kh=8192 stride_kn=64 stride_kd=1 stride_vz=16384 stride_vh=8192 stride_vn=64 stride_vd=1 stride_oz=16384 stride_oh=8192 stride_om=64 stride_od=1 H=2 N_CTX=128 BLOCK_M=64 BLOCK_N=64 HEAD_DIM=64 IS_CAUSAL=False --grid 2,2"
K[attention_causal]="kernels/flash_attention.py::attn_fwd q=randn:f16:2x128x64 k=randn:f16:2x128x64 v=randn:f16:2x128x64 o=empty:f16:2x128x64 sm_scale=0.125 stride_qz=16384 stride_qh=8192 stride_qm=64 stride_qd=1 stride_kz=16384 stride_kh=8192 stride_kn=64 stride_kd=1 stride_vz=16384 stride_vh=8192 stride_vn=64 stride_vd=1 stride_oz=16384 stride_oh=8192 stride_om=64 stride_od=1 H=2 N_CTX=128 BLOCK_M=64 BLOCK_N=64 HEAD_DIM=64 IS_CAUSAL=True --grid 2,2"
K[rmsnorm]="kernels/rmsnorm.py::rmsnorm_fwd x=randn:f32:16x512 y=empty:f32:16x512 w=randn:f32:512 rstd=empty:f32:16 stride=512 N=512 eps=1e-6 BLOCK_N=512 --grid 16"
for k in ${KERNELS:-softmax layernorm rmsnorm matmul attention attention_causal}; do
  for t in ${TARGETS:-sm_80 sm_90a}; do
    for a in ${ALGOS:-greedy anneal beam}; do
      for f in ${ACTIONS:-moves}; do
        name="$k.$t.$a"
        [ "$f" = moves ] || name="$name.$f"
        # shellcheck disable=SC2086
        $T sass search ${K[$k]} --target "$t" --algo "$a" --actions "$f" --budget "$BUDGET" --seed 1 \
          -o "$OUT/$name.cubin" --moves "$OUT/$name.json" --curve "$OUT/$name.csv" >"$OUT/$name.txt" 2>&1
        echo "$name: exit $? $(grep -E '^best' "$OUT/$name.txt")"
      done
    done
  done
done
