"""Regions of known length, for checking the profiler's error where no ground truth is
recorded (a GPU): each scope is a chain of dependent fp32 FMAs, `CHAIN` long, so its true
length is CHAIN times the FMA's dependent-issue latency (4 cycles on Ampere and Hopper), and
nothing else runs in it (one warp per program, no memory access inside a scope). The three
chains differ only in length, so a replay that is right gives lengths in the ratio 1 : 4 : 16
and a constant cycles-per-FMA. The loads and stores around them keep the chains from being
computed at compile time; eight FMAs before the first scope take the load's latency (the first
chain then waits at most one FMA latency for the last of them).

The PTX has `mul.f32` and `add.f32` without rounding modifiers, which `ptxas` contracts into
FFMAs (as Triton's, with `enable_fp_fusion`): on the GPU and the SASS emulator a chain of N
steps is N dependent FFMAs; the PTX emulator times each step as two dependent instructions.
"""
import triton
import triton.language as tl
import triton.profiler.language as pl


@triton.jit
def fma_chain(x, y, CHAIN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x + offs)
    # Outside any scope: the first chain must not wait for the load.
    for _ in tl.static_range(8):
        v = v * 0.9990234375 + 0.0625
    with pl.scope("chain_1x"):
        for _ in tl.static_range(CHAIN):
            v = v * 0.9990234375 + 0.0625
    with pl.scope("chain_4x"):
        for _ in tl.static_range(4 * CHAIN):
            v = v * 0.9990234375 + 0.0625
    with pl.scope("chain_16x"):
        for _ in tl.static_range(16 * CHAIN):
            v = v * 0.9990234375 + 0.0625
    tl.store(y + offs, v)
