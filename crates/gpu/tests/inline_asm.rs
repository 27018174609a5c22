//! `inline_asm` (Triton's `tl.inline_asm_elementwise`) lowered to PTX: the author's text
//! between braces, placeholders replaced, `ptxas`-clean on sm_80, sm_90 and sm_90a, and run by
//! the PTX emulator against results computed here (the interpreter cannot run PTX, so these
//! tests are not differential): one result from two arguments, and four int8s packed in one
//! 32-bit register with groups filled up when a thread holds fewer than four elements.

mod common;
use common::*;
use trident_core::{DType, HostTensor};

const SRC: &str = r#"
import triton
import triton.language as tl


@triton.jit
def mad3(x, y, out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    z = tl.inline_asm_elementwise("mad.lo.s32 $0, $1, 3, $2;", "=r,r,r", [tl.load(x + offs), tl.load(y + offs)],
                                  dtype=tl.int32, is_pure=True, pack=1)
    tl.store(out + offs, z)


@triton.jit
def packed(x, out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    z = tl.inline_asm_elementwise("and.b32 $0, $1, 0x1F1F1F1F;\n shl.b32 $0, $0, 3;", "=r,r", [tl.load(x + offs)],
                                  dtype=tl.int8, is_pure=False, pack=4)
    tl.store(out + offs, z)
"#;

fn outputs(got: &[HostTensor], i: usize) -> Vec<f64> {
    got[i].to_f64_vec()
}

#[test]
fn one_result_from_two_arguments() {
    let mut rng = Rng(seed());
    let n = 256;
    let x = random(&mut rng, DType::I32, &[n], 1e6);
    let y = random(&mut rng, DType::I32, &[n], 1e6);
    let args = [
        ("x", A::T(x.clone())),
        ("y", A::T(y.clone())),
        ("out", A::T(poisoned(DType::I32, &[n]))),
        ("BLOCK", A::C(n as i64)),
    ];
    let (m, kernel, kargs) = front_text("asm.py", SRC, "mad3", &args);
    for k in compile_all(&m, &kernel, 4, 1) {
        assert!(k.ptx.contains("mad.lo.s32 %r"), "placeholders replaced:\n{}", k.ptx);
        assert!(k.ptx.contains("// begin inline asm"), "{}", k.ptx);
        let got = run_emu(&k, [1, 1, 1], &kargs);
        let (xs, ys, out) = (x.to_f64_vec(), y.to_f64_vec(), outputs(&got, 2));
        for i in 0..n {
            let want = (xs[i] as i32).wrapping_mul(3).wrapping_add(ys[i] as i32);
            assert_eq!(out[i] as i32, want, "element {i}");
        }
    }
}

#[test]
fn four_int8s_share_a_register_and_short_groups_are_filled_up() {
    let mut rng = Rng(seed());
    // 128 threads: 1024 elements are 8 a thread (two groups), 64 half a thread's group.
    for n in [1024usize, 64] {
        let x = random(&mut rng, DType::U8, &[n], 255.0);
        let args = [("x", A::T(x.clone())), ("out", A::T(poisoned(DType::I8, &[n]))), ("BLOCK", A::C(n as i64))];
        let (m, kernel, kargs) = front_text("asm.py", SRC, "packed", &args);
        for k in compile_all(&m, &kernel, 4, 1) {
            let got = run_emu(&k, [1, 1, 1], &kargs);
            let (xs, out) = (x.to_f64_vec(), outputs(&got, 1));
            for i in 0..n {
                let want = (((xs[i] as u32) & 0x1f) << 3) as u8 as i8;
                assert_eq!(out[i] as i8, want, "n {n}, element {i}");
            }
        }
    }
}
