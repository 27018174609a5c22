//! Sanitize mode (issue 14): every out-of-bounds kernel of the interpreter's test suite —
//! and a few more that exercise atomics, 2-D blocks, loops, pipelined copies and pointers
//! of unknown provenance — fails on the emulator with `sanitize` with the very error the
//! interpreter gives (line, caret, access, parameter, element index, program, element),
//! and leaves the caller's arrays as they were.

mod common;

use common::*;
use trident_runtime::args::Backend;
use trident_runtime::launch::launch;
use trident_runtime::KernelProgram;

struct Case {
    /// Where the interpreter's suite has it (or `extra`).
    from: &'static str,
    path: &'static str,
    src: &'static str,
    args: &'static [&'static str],
    grid: &'static str,
    /// Text the error must contain (on both backends).
    expect: &'static str,
}

fn vector_add() -> &'static str {
    // The bundled kernel, as `front_e2e.rs` and `cli.rs` run it.
    Box::leak(
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../kernels/vector_add.py"))
            .unwrap()
            .into_boxed_str(),
    )
}

const OOB_STORE: &str = r#"import triton
import triton.language as tl


@triton.jit
def k(x, out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + offs, mask=offs < n)
    tl.store(out + offs - 1, v, mask=offs < n)
"#;

const SHIFTED_COPY: &str = r#"import triton
import triton.language as tl


@triton.jit
def shifted_copy(x, out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + offs + n)
    tl.store(out + offs, v)
"#;

/// `memory.rs`'s `add_kernel(.., masked = false)`.
const ADD_UNMASKED: &str = r#"import triton
import triton.language as tl


@triton.jit
def add(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    a = tl.load(x_ptr + offs)
    b = tl.load(y_ptr + offs)
    tl.store(z_ptr + offs, a + b)
"#;

/// `front_e2e.rs`'s spin lock: every program but 0 stores past the end while holding it.
const SPIN_LOCK: &str = "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef k(lock, out):\n    pid = tl.program_id(0)\n    while tl.atomic_cas(lock, 0, 1) == 1:\n        pass\n    tl.store(out + pid * 1000, 1.0)\n    tl.atomic_xchg(lock, 0)\n";

const ATOMIC: &str = r#"import triton
import triton.language as tl


@triton.jit
def count(counts, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(counts + offs, 1)
"#;

const TWO_D: &str = r#"import triton
import triton.language as tl


@triton.jit
def copy2d(x, out, stride, R: tl.constexpr, C: tl.constexpr):
    r = tl.arange(0, R)[:, None]
    c = tl.arange(0, C)[None, :]
    v = tl.load(x + r * stride + c)
    tl.store(out + r * C + c, v)
"#;

/// The store of iteration 1 runs before the load of iteration 2: the store is reported
/// although the load comes first in the text.
const LOOP: &str = r#"import triton
import triton.language as tl


@triton.jit
def loop(x, out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    for i in range(4):
        v = tl.load(x + i * BLOCK + offs)
        tl.store(out + i * 2 * BLOCK + offs, v)
"#;

/// A pipelined matmul whose K runs past A (cp.async copies on sm_80).
const MATMUL: &str = r#"import triton
import triton.language as tl


@triton.jit
def mm(a, b, c, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a + rm[:, None] * K + rk[None, :]
    b_ptrs = b + rk[:, None] * BN + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc += tl.dot(tl.load(a_ptrs), tl.load(b_ptrs))
        a_ptrs += BK
        b_ptrs += BK * BN
    tl.store(c + rm[:, None] * BN + rn[None, :], acc)
"#;

/// A pointer chosen between two parameters: checked against both buffers, reported
/// against the nearest.
const SELECT: &str = r#"import triton
import triton.language as tl


@triton.jit
def pick(x, y, out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    p = tl.where(offs < 4, x + offs, y + offs + 8)
    tl.store(out + offs, tl.load(p))
"#;

fn cases() -> Vec<Case> {
    vec![
        Case {
            from: "runtime/tests/launch_errors.rs",
            path: "oob.py",
            src: OOB_STORE,
            args: &["x=randn:f32:8", "out=zeros:f32:8", "n=8", "BLOCK=8"],
            grid: "1",
            expect: "out-of-bounds store: index -1 of buffer `out` (8 elements of f32), program (0, 0, 0), element [0]",
        },
        Case {
            from: "runtime/tests/launch_cache.rs",
            path: "kernels/oob.py",
            src: SHIFTED_COPY,
            args: &["x=randn:f32:64", "out=zeros:f32:64", "n=8", "BLOCK=64"],
            grid: "1",
            expect: "out-of-bounds load: index 64 of buffer `x` (64 elements of f32), program (0, 0, 0), element [56]",
        },
        Case {
            from: "interp/tests/front_e2e.rs (out_of_bounds_points_at_the_kernel_line)",
            path: "kernels/vector_add.py",
            src: "",
            args: &["x=zeros:f32:900", "y=zeros:f32:1000", "out=zeros:f32:1000", "n_elements=1000", "BLOCK=128"],
            grid: "8",
            expect: "index 900 of buffer `x` (900 elements of f32), program (7, 0, 0), element [4]",
        },
        Case {
            from: "cli/tests/cli.rs (out_of_bounds_is_reported_with_the_source_line)",
            path: "kernels/vector_add.py",
            src: "",
            args: &["x=randn:f32:1000", "y=randn:f32:1000", "out=zeros:f32:1000", "n_elements=2000", "BLOCK=1024"],
            grid: "2",
            expect: "out-of-bounds load: index 1000 of buffer `x` (1000 elements of f32), program (0, 0, 0), element [1000]",
        },
        Case {
            from: "interp/tests/memory.rs (out_of_bounds_store_names_line_buffer_index...)",
            path: "k.py",
            src: ADD_UNMASKED,
            args: &["x_ptr=randn:f32:1000", "y_ptr=zeros:f32:1024", "z_ptr=zeros:f32:1000", "n=1000", "BLOCK=128"],
            grid: "8",
            expect: "out-of-bounds load: index 1000 of buffer `x_ptr` (1000 elements of f32), program (7, 0, 0), element [104]",
        },
        Case {
            from: "interp/tests/memory.rs (errors_are_deterministic_lowest_program_wins)",
            path: "k.py",
            src: ADD_UNMASKED,
            args: &["x_ptr=zeros:f32:4096", "y_ptr=zeros:f32:4096", "z_ptr=zeros:f32:10", "n=0", "BLOCK=64"],
            grid: "64",
            expect: "index 10 of buffer `z_ptr` (10 elements of f32), program (0, 0, 0), element [10]",
        },
        Case {
            from: "interp/tests/front_e2e.rs (a_fault_under_a_spin_lock_ends_the_launch)",
            path: "lock.py",
            src: SPIN_LOCK,
            args: &["lock=zeros:i32:1", "out=zeros:f32:8"],
            grid: "16",
            // Every program but 0 stores out of bounds, and which one takes the lock first is
            // a race on the interpreter (it runs programs in parallel and reports the first
            // fault in time): the index and program vary, the error and its line do not.
            expect: "out-of-bounds store: index ",
        },
        Case {
            from: "extra: atomics",
            path: "count.py",
            src: ATOMIC,
            args: &["counts=zeros:i32:40", "BLOCK=32"],
            grid: "2",
            expect: "out-of-bounds atomic: index 40 of buffer `counts` (40 elements of i32), program (1, 0, 0), element [8]",
        },
        Case {
            from: "extra: a 2-D block",
            path: "copy2d.py",
            src: TWO_D,
            args: &["x=randn:f32:90", "out=zeros:f32:128", "stride=12", "R=8", "C=16"],
            grid: "1",
            expect: "out-of-bounds load: index 90 of buffer `x` (90 elements of f32), program (0, 0, 0), element [7, 6]",
        },
        Case {
            from: "extra: dynamic order in a loop",
            path: "loop.py",
            src: LOOP,
            args: &["x=randn:f32:64", "out=zeros:f32:64", "BLOCK=32"],
            grid: "1",
            expect: "out-of-bounds store: index 64 of buffer `out` (64 elements of f32), program (0, 0, 0), element [0]",
        },
        Case {
            from: "extra: pipelined loads of a matmul",
            path: "mm.py",
            src: MATMUL,
            args: &["a=randn:f16:1000", "b=randn:f16:4096", "c=zeros:f32:1024", "K=128", "BM=32", "BN=32", "BK=32"],
            grid: "1",
            expect: "out-of-bounds load: index 1024 of buffer `a` (1000 elements of f16), program (0, 0, 0), element [8, 0]",
        },
        Case {
            from: "extra: a pointer selected between two parameters",
            path: "pick.py",
            src: SELECT,
            args: &["x=randn:f32:16", "y=randn:f32:16", "out=zeros:f32:16", "BLOCK=16"],
            grid: "1",
            expect: "out-of-bounds load: index 16 of buffer `y` (16 elements of f32), program (0, 0, 0), element [8]",
        },
    ]
}

/// The error's text up to its notes (the sanitizer adds one counting the violations).
fn main_part(text: &str) -> String {
    let lines: Vec<&str> = text.lines().take_while(|l| !l.trim_start().starts_with("= ")).collect();
    let mut s = lines.join("\n");
    while s.ends_with('│') || s.ends_with(' ') || s.ends_with('\n') {
        s.pop();
    }
    s
}

#[test]
fn every_out_of_bounds_case_fails_alike_on_the_interpreter_and_the_sanitized_emulator() {
    let dir = TempDir::new("sanitize");
    let s = session(dir.path());
    let seed = seed();
    for c in cases() {
        let src = if c.src.is_empty() { vector_add() } else { c.src };
        let prog = KernelProgram::from_source(c.path, src).unwrap_or_else(|e| panic!("{}: {e}", c.from));
        let kernel = prog.kernel(None).unwrap();
        let mut texts = vec![];
        for (backend, sanitize) in [(Backend::Interp, false), (Backend::Emu, true)] {
            let mut a = args(c.args, seed);
            let before = a.clone();
            let mut o = opts(&s, backend, c.grid);
            o.sanitize = sanitize;
            o.timeout = Some(std::time::Duration::from_secs(120));
            let e = match launch(&prog, kernel, &mut a, &o) {
                Ok(_) => panic!("{} on {backend:?}: the launch succeeded", c.from),
                Err(e) => e.text,
            };
            assert!(e.contains(c.expect), "{} on {backend:?} (seed {seed}):\n{e}", c.from);
            assert!(e.contains(&format!("{}:", c.path)) && e.contains('^'), "{}: no source line:\n{e}", c.from);
            assert_eq!(a, before, "{} on {backend:?}: a failed launch leaves the arguments alone", c.from);
            texts.push(main_part(&e));
        }
        if c.src == SPIN_LOCK {
            // The racy case (above): the same error at the same line, any program.
            let shape = |t: &str| {
                let first = t.lines().next().unwrap_or("").split(": index").next().unwrap_or("").to_string();
                (first, t.lines().skip(1).collect::<Vec<_>>().join("\n"))
            };
            assert_eq!(
                shape(&texts[0]),
                shape(&texts[1]),
                "{}: the interpreter and the sanitized emulator disagree",
                c.from
            );
        } else {
            assert_eq!(texts[0], texts[1], "{}: the interpreter and the sanitized emulator disagree", c.from);
        }
    }
}

#[test]
fn the_sanitized_emulator_reports_from_its_record_not_its_own_fault() {
    // Without sanitize the emulator's own bounds check faults at the PTX instruction (its
    // message names the CTA and thread); with it, the access never happens.
    let dir = TempDir::new("sanitize-own");
    let s = session(dir.path());
    let prog = KernelProgram::from_source("oob.py", OOB_STORE).unwrap();
    let kernel = prog.kernel(None).unwrap();
    let run = |sanitize: bool| {
        let mut a = args(&["x=randn:f32:8", "out=zeros:f32:8", "n=8", "BLOCK=8"], 1);
        let mut o = opts(&s, Backend::Emu, "1");
        o.sanitize = sanitize;
        launch(&prog, kernel, &mut a, &o).unwrap_err().text
    };
    let (plain, sanitized) = (run(false), run(true));
    assert!(plain.contains("CTA (0,0,0)") && plain.contains("PTX line"), "{plain}");
    assert!(!sanitized.contains("PTX line") && sanitized.contains("program (0, 0, 0)"), "{sanitized}");
}

#[test]
fn in_bounds_kernels_compute_the_same_sanitized() {
    let dir = TempDir::new("sanitize-clean");
    let s = session(dir.path());
    let seed = seed();
    for (path, src, list, grid) in [
        (
            "vadd.py",
            VADD,
            &["x=randn:f32:1000", "y=randn:f32:1000", "out=zeros:f32:1000", "n=1000", "BLOCK=128"][..],
            "8",
        ),
        (
            "mm.py",
            MATMUL,
            &["a=randn:f16:4096", "b=randn:f16:4096", "c=zeros:f32:1024", "K=128", "BM=32", "BN=32", "BK=32"][..],
            "1",
        ),
    ] {
        let prog = KernelProgram::from_source(path, src).unwrap();
        let kernel = prog.kernel(None).unwrap();
        let mut outs = vec![];
        for sanitize in [false, true] {
            let mut a = args(list, seed);
            let mut o = opts(&s, Backend::Emu, grid);
            o.sanitize = sanitize;
            launch(&prog, kernel, &mut a, &o).unwrap_or_else(|e| panic!("{path} sanitize={sanitize}: {e}"));
            outs.push(a);
        }
        assert_eq!(outs[0], outs[1], "{path}: sanitize changed the results (seed {seed})");
    }
}
