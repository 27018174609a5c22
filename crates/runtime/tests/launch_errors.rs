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
