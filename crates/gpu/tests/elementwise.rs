//! Elementwise kernels written as IR text: PTX accepted by ptxas (sm_80, sm_90), and the
//! emulator's results equal the interpreter's.

mod common;
use common::*;
use trident_core::{DType, HostTensor};

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

/// A byte reinterpreted as the other signedness is extended again: `x >> y` on an `int8`
/// tensor that arrived as `uint8` (the front end's `int8 >> uint8`: convert to `u8`, bitcast
/// to `i8`, arithmetic shift) shifts in copies of the sign, not zeros. The GPU backend kept
/// the zero-extended register through the bitcast; test_core's `test_shift_op[int8-uint8->>]`
/// found it.
#[test]
fn a_reinterpreted_byte_shifts_by_its_new_signedness() {
    let block = 128;
    let src = format!(
        r#"
kernel @shr(%x: ptr<u8> {{divisibility = 16}}, %y: ptr<u8> {{divisibility = 16}}, %out: ptr<u8> {{divisibility = 16}}) {{
  %r = arange [start = 0, end = {block}] : tensor<{block}xi32>
  %xs = splat %x : tensor<{block}xptr<u8>>
  %xp = addptr %xs, %r : tensor<{block}xptr<u8>>
  %a = load %xp : tensor<{block}xu8>
  %ys = splat %y : tensor<{block}xptr<u8>>
  %yp = addptr %ys, %r : tensor<{block}xptr<u8>>
  %b = load %yp : tensor<{block}xu8>
  %ai = cast %a [kind = bitcast] : tensor<{block}xi8>
  %bi = cast %b [kind = bitcast] : tensor<{block}xi8>
  %s = shr %ai, %bi : tensor<{block}xi8>
  %su = cast %s [kind = bitcast] : tensor<{block}xu8>
  %os = splat %out : tensor<{block}xptr<u8>>
  %op = addptr %os, %r : tensor<{block}xptr<u8>>
  store %op, %su
  return
}}
"#
    );
    let m = parse(&src);
    let mut rng = Rng(seed());
    let x = random(&mut rng, DType::U8, &[block], 255.0);
    assert!(x.data.iter().any(|&b| b >= 128), "some negative bytes");
    let args = vec![
        Arg::Tensor(x),
        Arg::Tensor(random(&mut rng, DType::U8, &[block], 7.0)),
        Arg::Tensor(poisoned(DType::U8, &[block])),
    ];
    differential(&m, "shr", 4, [1, 1, 1], &args, None);
}

/// 64-bit integers past f16's range convert to infinity (to nearest), as the interpreter
/// (and IEEE) has it; the PTX emulator rounded every one of them to 65504 (test_core's
/// `test_bin_op[float16-int64]`).
#[test]
fn large_integers_convert_to_an_infinite_half() {
    let block = 64;
    for (it, dt) in [("i64", DType::I64), ("u64", DType::U64)] {
        let src = format!(
            r#"
kernel @conv(%x: ptr<{it}> {{divisibility = 16}}, %out: ptr<f16> {{divisibility = 16}}) {{
  %r = arange [start = 0, end = {block}] : tensor<{block}xi32>
  %xs = splat %x : tensor<{block}xptr<{it}>>
  %xp = addptr %xs, %r : tensor<{block}xptr<{it}>>
  %a = load %xp : tensor<{block}x{it}>
  %h = cast %a [kind = convert] : tensor<{block}xf16>
  %os = splat %out : tensor<{block}xptr<f16>>
  %op = addptr %os, %r : tensor<{block}xptr<f16>>
  store %op, %h
  return
}}
"#
        );
        let m = parse(&src);
        let mut rng = Rng(seed());
        let mut x = HostTensor::zeros(dt, &[block]);
        // Random 64-bit words, a few near the last midpoint (65520) and small ones.
        for (i, c) in x.data.chunks_mut(8).enumerate() {
            let v: u64 = match i % 4 {
                0 | 1 => rng.next_u64(),
                2 => 65_500 + rng.below(40),
                _ => rng.below(1000),
            };
            c.copy_from_slice(&v.to_le_bytes());
        }
        let args = vec![Arg::Tensor(x), Arg::Tensor(poisoned(DType::F16, &[block]))];
        differential(&m, "conv", 2, [1, 1, 1], &args, None);
    }
}
