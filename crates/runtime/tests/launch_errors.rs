//! Emulator faults told in the kernel's terms (issue 14, item 5): the kernel's file, line and
//! caret, the parameter's name and the element index — as the interpreter tells them — and the
//! caller's arrays untouched.

mod common;

use common::*;
use trident_runtime::args::Backend;
use trident_runtime::launch::launch;
use trident_runtime::KernelProgram;

const OOB: &str = r#"import triton
import triton.language as tl


@triton.jit
def k(x, out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + offs, mask=offs < n)
    tl.store(out + offs - 1, v, mask=offs < n)
"#;

#[test]
fn an_out_of_bounds_store_on_the_emulator_names_the_line_the_parameter_and_the_index() {
    let dir = TempDir::new("emu-errors");
    let path = dir.path().join("oob.py");
    std::fs::write(&path, OOB).unwrap();
    let prog = KernelProgram::load(&path).unwrap();
    let kernel = prog.kernel(Some("k")).unwrap();
    let s = session(dir.path());
    for backend in [Backend::Interp, Backend::Emu] {
        let mut a = args(&["x=randn:f32:8", "out=zeros:f32:8", "n=8", "BLOCK=8"], seed());
        let e = launch(&prog, kernel, &mut a, &opts(&s, backend, "1")).unwrap_err().text;
        assert!(e.contains("out-of-bounds store: index -1 of buffer `out` (8 elements of f32)"), "{backend:?}: {e}");
        assert!(e.contains("oob.py:9:5") && e.contains("tl.store(out + offs - 1") && e.contains("^^^^^^^^"), "{e}");
        assert!(values(&a, "out").iter().all(|&v| v == 0.0), "out untouched on error");
    }
}

#[test]
fn more_than_32_warps_is_refused_by_the_command_line() {
    let e = trident_runtime::RunCommand::parse(&["k.py::k", "--grid", "1", "--num-warps", "64"]).unwrap_err();
    assert_eq!(e.arg, "--num-warps");
    assert!(e.to_string().contains("power of two from 1 to 32"), "{e}");
}

#[test]
fn an_emulator_fault_is_not_a_compile_error() {
    let dir = TempDir::new("emu-errors-kind");
    let path = dir.path().join("oob.py");
    std::fs::write(&path, OOB).unwrap();
    let prog = KernelProgram::load(&path).unwrap();
    let s = session(dir.path());
    let mut a = args(&["x=randn:f32:8", "out=zeros:f32:8", "n=8", "BLOCK=8"], seed());
    let e = launch(&prog, prog.kernel(Some("k")).unwrap(), &mut a, &opts(&s, Backend::Emu, "1")).unwrap_err();
    assert_eq!(e.kind, trident_runtime::ErrorKind::Other, "{e}");
}

const LONG: &str = r#"import triton
import triton.language as tl


@triton.jit
def k(out, n):
    i = 0
    while i < n:
        i += 1
    tl.store(out, i)
"#;

/// `LaunchOptions::timeout` (`--timeout`, `TRIDENT_TIMEOUT`) stops a launch that runs too
/// long on the interpreter and on the emulator with an error, outputs untouched (issue 14,
/// item 1: huge grids and endless loops ran for ever).
#[test]
fn a_launch_past_its_time_limit_stops_with_an_error() {
    for backend in [Backend::Interp, Backend::Emu] {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let dir = TempDir::new("timeout");
            let s = session(dir.path());
            let prog = program("long.py", LONG);
            let mut a = args(&["out=zeros:i64:1", "n=1099511627776"], 0);
            let mut o = opts(&s, backend, "1");
            o.timeout = Some(std::time::Duration::from_millis(300));
            let r = launch(&prog, prog.kernel(None).unwrap(), &mut a, &o).map(|_| ()).map_err(|e| e.text);
            let _ = tx.send((r, values(&a, "out")));
        });
        let (r, out) = rx.recv_timeout(std::time::Duration::from_secs(120)).expect("the time limit stops the launch");
        let e = r.expect_err("2^40 iterations do not finish in 0.3 s");
        assert!(e.contains("stopped at the time limit"), "{backend:?}: {e}");
        assert_eq!(out, vec![0.0], "nothing written back");
    }
}
