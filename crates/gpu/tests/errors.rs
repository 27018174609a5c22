//! Configurations and kernels the backend rejects get diagnostics, not panics.

mod common;
use common::*;
use trident_gpu::{compile, emit_gpu_ir, emit_ptx, GpuErrorKind, GpuOptions, GpuPipeline};

const REDUCE: &str = r#"
kernel @rowsum(%x: ptr<f32> {divisibility = 16}, %y: ptr<f32> {divisibility = 16}) {
  %r = arange [start = 0, end = 64] : tensor<64xi32>
  %c = arange [start = 0, end = 64] : tensor<64xi32>
  %re = expand_dims %r [axis = 1] : tensor<64x1xi32>
  %ce = expand_dims %c [axis = 0] : tensor<1x64xi32>
  %rb = broadcast %re : tensor<64x64xi32>
  %cb = broadcast %ce : tensor<64x64xi32>
  %k = constant [value = 64] : tensor<64x64xi32>
  %ro = mul %rb, %k : tensor<64x64xi32>
  %o = add %ro, %cb : tensor<64x64xi32>
  %xs = splat %x : tensor<64x64xptr<f32>>
  %p = addptr %xs, %o : tensor<64x64xptr<f32>>
  %v = load %p : tensor<64x64xf32>
  %t = trans %v [perm = [1, 0]] : tensor<64x64xf32>
  %e = exp %t : tensor<64x64xf32>
  %s = reduce %e [axis = 0] {
  ^(%a: f32, %b: f32):
    %u = add %a, %b : f32
    yield %u
  } : tensor<64xf32>
  %ys = splat %y : tensor<64xptr<f32>>
  %q = addptr %ys, %c : tensor<64xptr<f32>>
  store %q, %s
  return
}
"#;

#[test]
fn shared_memory_over_the_limit_names_the_sizes() {
    let m = parse(REDUCE);
    let opts = GpuOptions { max_shared_bytes: Some(100), num_warps: 8, ..GpuOptions::default() };
    let err = emit_ptx(&m, "rowsum", &opts).expect_err("100 bytes cannot hold the exchange");
    let text = err.to_string() + &err.notes.join("\n");
    assert!(text.contains("bytes of shared memory") && text.contains("100 bytes"), "{text}");
    assert!(text.contains("largest scratch user"), "{text}");
    // With the real limit it compiles.
    let ok = emit_ptx(&m, "rowsum", &GpuOptions { num_warps: 8, ..GpuOptions::default() }).unwrap();
    assert!(ok.shared_bytes > 100);
    // The planner reports the kind itself: callers act on it without reading the text.
    let err = compile(&m, "rowsum", &opts).expect_err("does not fit");
    assert!(err.is_out_of_resources());
    assert_eq!(err.kind, GpuErrorKind::OutOfSharedMemory { needed: ok.shared_bytes as u64, limit: 100 });
    // Other failures are not out-of-resources.
    let err = compile(&m, "rowsum", &GpuOptions { num_warps: 3, ..GpuOptions::default() }).unwrap_err();
    assert_eq!(err.kind, GpuErrorKind::Other);
}

#[test]
fn emission_reads_the_plan_and_refuses_ir_without_one() {
    let m = parse(REDUCE);
    let opts = GpuOptions { num_warps: 8, ..GpuOptions::default() };
    let pipeline = GpuPipeline::new(&opts);
    let (mut gm, _) = pipeline.lower(&m, "rowsum").unwrap();
    let f = &gm.funcs[0];
    let total = f.attrs.int("smem_total").expect("the plan's total is recorded on the kernel");
    let users: Vec<_> = f.all_ops().into_iter().filter(|&op| f.ops[op].attrs.int("smem_offset").is_some()).collect();
    assert!(!users.is_empty(), "the transpose and the reduction use shared memory");
    assert_eq!(pipeline.emit(&gm, "rowsum").unwrap().shared_bytes as i64, total);
    // Without an offset on a user, emission stops (it does not plan on its own).
    let f = &mut gm.funcs[0];
    f.ops[users[0]].attrs.remove("smem_offset");
    let err = emit_gpu_ir(&gm, "rowsum", &opts).unwrap_err();
    assert!(err.message.contains("run the GPU pipeline"), "{err}");
    // Nor without the total.
    let f = &mut gm.funcs[0];
    f.attrs.remove("smem_total");
    let err = emit_gpu_ir(&gm, "rowsum", &opts).unwrap_err();
    assert!(err.message.contains("no shared-memory plan"), "{err}");
}

#[test]
fn bad_options_are_diagnostics() {
    let m = parse(REDUCE);
    let err = emit_ptx(&m, "rowsum", &GpuOptions { num_warps: 3, ..GpuOptions::default() }).unwrap_err();
    assert!(err.message.contains("num_warps"), "{err}");
    let err = emit_ptx(&m, "nope", &GpuOptions::default()).unwrap_err();
    assert!(err.message.contains("nope"), "{err}");
}
