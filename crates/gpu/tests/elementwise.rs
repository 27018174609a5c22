//! Elementwise kernels written as IR text: PTX accepted by ptxas (sm_80, sm_90), and the
//! emulator's results equal the interpreter's.

mod common;
use common::*;
use trident_core::DType;

fn vector_add(block: u32, dt: &str) -> String {
    vector_add_n(block, dt, "")
}

/// `n_attr` is `{divisibility = 16}` for a launch specialised on `n % 16 == 0`.
fn vector_add_n(block: u32, dt: &str, n_attr: &str) -> String {
    format!(
        r#"
kernel @add_kernel(%x: ptr<{dt}> {{divisibility = 16}}, %y: ptr<{dt}> {{divisibility = 16}}, %out: ptr<{dt}> {{divisibility = 16}}, %n: i32 {n_attr}) {{
  %pid = program_id [axis = 0] : i32
  %bs = constant [value = {block}] : i32
  %start = mul %pid, %bs : i32
  %r = arange [start = 0, end = {block}] : tensor<{block}xi32>
  %s = splat %start : tensor<{block}xi32>
  %offs = add %s, %r : tensor<{block}xi32>
  %ns = splat %n : tensor<{block}xi32>
  %mask = cmp %offs, %ns [pred = lt] : tensor<{block}xi1>
  %xs = splat %x : tensor<{block}xptr<{dt}>>
  %xp = addptr %xs, %offs : tensor<{block}xptr<{dt}>>
  %a = load %xp, %mask : tensor<{block}x{dt}>
  %ys = splat %y : tensor<{block}xptr<{dt}>>
  %yp = addptr %ys, %offs : tensor<{block}xptr<{dt}>>
  %b = load %yp, %mask : tensor<{block}x{dt}>
  %c = add %a, %b : tensor<{block}x{dt}>
  %os = splat %out : tensor<{block}xptr<{dt}>>
  %op = addptr %os, %offs : tensor<{block}xptr<{dt}>>
  store %op, %c, %mask
  return
}}
"#
    )
}

#[test]
fn vector_add_matches_the_interpreter() {
    let mut rng = Rng(seed());
    for (dt, dtype) in [
        ("f32", DType::F32),
        ("f16", DType::F16),
        ("bf16", DType::BF16),
        ("i32", DType::I32),
        ("i8", DType::I8),
        ("u8", DType::U8),
        ("i64", DType::I64),
    ] {
        for &(block, warps) in &[(1024u32, 4u32), (256, 2), (128, 4), (64, 1)] {
            let m = parse(&vector_add(block, dt));
            for n in [1usize, 97, block as usize * 3 + 5] {
                let args = vec![
                    Arg::Tensor(random(&mut rng, dtype, &[n], 100.0)),
                    Arg::Tensor(random(&mut rng, dtype, &[n], 100.0)),
                    Arg::Tensor(poisoned(dtype, &[n])),
                    i32_arg(n as i32),
                ];
                let grid = [(n as u32).div_ceil(block), 1, 1];
                differential(&m, "add_kernel", warps, grid, &args, None);
            }
        }
    }
}

#[test]
fn vector_add_uses_128_bit_accesses() {
    let m = parse(&vector_add_n(1024, "f32", "{divisibility = 16}"));
    let k = compile(&m, "add_kernel", 4);
    assert!(k.ptx.contains("ld.global.v4.b32"), "{}", k.ptx);
    assert!(k.ptx.contains("st.global.v4.b32"), "{}", k.ptx);
    assert!(k.ptx.contains(".loc") || !k.ptx.contains(".file"));
}

#[test]
fn vector_add_with_aligned_sizes_matches_the_interpreter() {
    let mut rng = Rng(seed());
    let m = parse(&vector_add_n(512, "f32", "{divisibility = 16}"));
    for n in [16usize, 512, 2000] {
        let args = vec![
            Arg::Tensor(random(&mut rng, DType::F32, &[n], 100.0)),
            Arg::Tensor(random(&mut rng, DType::F32, &[n], 100.0)),
            Arg::Tensor(poisoned(DType::F32, &[n])),
            i32_arg(n as i32),
        ];
        differential(&m, "add_kernel", 4, [(n as u32).div_ceil(512), 1, 1], &args, None);
    }
}
