#!/usr/bin/env bash
# The SASS emulator's and the PTX emulator's estimates (sm_90a, H100 model) of the kernels and
# shapes of bench/RESULTS.md's fifth H100 run, one launch each, printed as a markdown table
# to set beside that run's measured times (bench/SASS_EMU.md). Usage:
# bench/sass-emu-vs-gpu/run.sh [KERNELS...]   (needs a release build and the tools: source
# .tools/env). Kernels: vadd softmax layernorm mm2048 mm4096 attn attn_causal.
set -u
T=${TRIDENT:-target/release/trident}
export TRIDENT_EMU_TARGET=sm_90a
declare -A K
n=$((1 << 26))
K[vadd]="kernels/vector_add.py::add_kernel x=randn:f32:$n y=randn:f32:$n out=empty:f32:$n n_elements=$n BLOCK=1024 --grid $((n / 1024)) --num-warps 4 --num-stages 3"
K[softmax]="kernels/softmax.py::softmax_kernel x=randn:f32:8192x8192 y=empty:f32:8192x8192 x_row_stride=8192 y_row_stride=8192 n_cols=8192 BLOCK=8192 --grid 8192 --num-warps 8 --num-stages 3"
K[layernorm]="kernels/layernorm.py::layernorm_fwd x=randn:f16:8192x4096 y=empty:f16:8192x4096 w=randn:f16:4096 b=randn:f16:4096 mean=empty:f32:8192 rstd=empty:f32:8192 stride=4096 N=4096 eps=1e-5 BLOCK_N=4096 --grid 8192 --num-warps 8 --num-stages 3"
mm() { echo "kernels/matmul.py::matmul_kernel a=randn:f16:$1x$1 b=randn:f16:$1x$1 c=empty:f16:$1x$1 M=$1 N=$1 K=$1 stride_am=$1 stride_ak=1 stride_bk=$1 stride_bn=1 stride_cm=$1 stride_cn=1 BLOCK_M=128 BLOCK_N=128 BLOCK_K=32 GROUP_M=8 --grid $(($1 * $1 / 16384)) --num-warps 8 --num-stages 3"; }
K[mm2048]=$(mm 2048)
K[mm4096]=$(mm 4096)
# shellcheck source=bench/attn_args.sh
. bench/attn_args.sh
attn() { attn_args 4 16 4096 "$1"; }
K[attn]=$(attn False)
K[attn_causal]=$(attn True)
echo "| kernel | SASS emulator µs | PTX emulator µs | SASS's bound | wall s (SASS, PTX) |"
echo "|---|---:|---:|---|---:|"
for k in "${@:-vadd softmax layernorm mm2048 mm4096 attn attn_causal}"; do
  for k1 in $k; do
    row="| $k1"
    walls=""
    bound=""
    for b in sass-emu emu; do
      s0=$(date +%s)
      # shellcheck disable=SC2086
      out=$($T bench ${K[$k1]} --backend $b --reps 1 --warmup 0 2>&1)
      us=$(echo "$out" | sed -n 's/.*median \([0-9.]*\) µs.*/\1/p')
      [ "$b" = sass-emu ] && bound=$(echo "$out" | sed -n 's/.*bound by \([^;]*\);.*/\1/p')
      walls="$walls $(( $(date +%s) - s0 ))"
      row="$row | ${us:-error}"
    done
    echo "$row | ${bound:-?} |$walls |"
  done
done
