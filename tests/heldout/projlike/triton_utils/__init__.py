"""Re-exports triton and tl only when Triton is installed (the way vLLM's triton_utils does)."""
from projlike.triton_utils.importing import HAS_TRITON

if HAS_TRITON:
    import triton
    import triton.language as tl
else:
    from projlike.triton_utils.importing import LanguageStandIn, TritonStandIn

    triton = TritonStandIn()
    tl = LanguageStandIn()
