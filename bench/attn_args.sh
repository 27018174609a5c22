# Sourced by bench scripts: `attn_args Z H S CAUSAL` prints `trident run`'s words for
# kernels/flash_attention.py's `attn_fwd` on Z×H×S×64 f16 tensors (contiguous q, k, v, o),
# 128×64 blocks, 8 warps, 2 stages — the configuration of bench/RESULTS.md's attention rows.
attn_args() {
  local z=$1 h=$2 n=$3 causal=$4 d=64 s="" t
  local shape="${z}x${h}x${n}x${d}"
  for t in q k v o; do
    local r="m"; [[ $t == k || $t == v ]] && r="n"
    s="$s stride_${t}z=$((h * n * d)) stride_${t}h=$((n * d)) stride_${t}${r}=$d stride_${t}d=1"
  done
  echo "kernels/flash_attention.py::attn_fwd q=randn:f16:$shape k=randn:f16:$shape v=randn:f16:$shape o=empty:f16:$shape sm_scale=0.125$s H=$h N_CTX=$n BLOCK_M=128 BLOCK_N=64 HEAD_DIM=$d IS_CAUSAL=$causal --grid $((n / 128)),$((z * h)) --num-warps 8 --num-stages 2"
}
