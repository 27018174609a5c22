//! The `trident` command end to end: runs, saves, compiles, and the errors users see.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use trident_runtime::npy;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn trident(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trident")).args(args).current_dir(root()).output().expect("runs")
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("trident-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn check_vector_add(backend: &str) {
    let (x, y, out) =
        (tmp(&format!("x-{backend}.npy")), tmp(&format!("y-{backend}.npy")), tmp(&format!("o-{backend}.npy")));
    let seed =
        (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() % 1000).to_string();
    let o = trident(&[
        "run",
        "kernels/vector_add.py::add_kernel",
        "--grid",
        "3",
        "--backend",
        backend,
        "--seed",
        &seed,
        "x=randn:f32:2500",
        "y=randn:f32:2500",
        "out=empty:f32:2500",
        "n_elements=2500",
        "BLOCK=1024",
        "--save",
        &format!("x={}", x.display()),
        "--save",
        &format!("y={}", y.display()),
        "--save",
        &format!("out={}", out.display()),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (x, y, out) = (npy::read(&x).unwrap(), npy::read(&y).unwrap(), npy::read(&out).unwrap());
    assert_eq!(out.shape, vec![2500]);
    for i in 0..2500 {
        assert_eq!(out.get_f64(i), (x.get_f64(i) as f32 + y.get_f64(i) as f32) as f64, "element {i}");
    }
}

#[test]
fn run_saves_results_on_the_interpreter_and_the_emulator() {
    check_vector_add("interp");
    check_vector_add("emu");
}

#[test]
fn runs_ptx_directly() {
    let out = tmp("ptx-out.npy");
    let o = trident(&[
        "run",
        "crates/emu/tests/data/vadd.ptx",
        "--grid",
        "4",
        "--block",
        "128",
        "ones:f32:500",
        "ones:f32:500",
        "empty:f32:500",
        "500",
        "0",
        "0",
        "--save",
        &format!("2={}", out.display()),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let t = npy::read(&out).unwrap();
    assert!(t.to_f64_vec().iter().all(|&v| v == 2.0));
    let o = trident(&["run", "crates/emu/tests/data/vadd.ptx", "--grid", "4", "--block", "128", "ones:f32:10", "7"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("takes 6 parameters"), "{}", stderr(&o));
}

#[test]
fn launch_errors_name_the_argument() {
    let base = ["run", "kernels/vector_add.py", "--grid", "1", "x=randn:f32:8", "y=randn:f32:8", "out=zeros:f32:8"];
    let o = trident(&[&base[..], &["BLOCK=8"]].concat());
    assert!(!o.status.success());
    assert!(stderr(&o).contains("n_elements"), "{}", stderr(&o));
    let o = trident(&[&base[..], &["n_elements=8", "BLOCK=8", "bogus=1"]].concat());
    assert!(stderr(&o).contains("unknown argument `bogus`"), "{}", stderr(&o));
    let o = trident(&["run", "kernels/vector_add.py", "--grid", "0", "x=randn:f32:8"]);
    assert!(stderr(&o).contains("grid dimensions must be positive"), "{}", stderr(&o));
    let o = trident(&[&base[..], &["n_elements=8", "BLOCK=6"]].concat());
    assert!(!o.status.success());
    assert!(stderr(&o).contains("power of 2") && stderr(&o).contains("vector_add.py:"), "{}", stderr(&o));
}

#[test]
fn out_of_bounds_is_reported_with_the_source_line() {
    let out = tmp("oob.npy");
    let o = trident(&[
        "run",
        "kernels/vector_add.py",
        "--grid",
        "2",
        "x=randn:f32:1000",
        "y=randn:f32:1000",
        "out=zeros:f32:1000",
        "n_elements=2000",
        "BLOCK=1024",
        "--save",
        &format!("out={}", out.display()),
    ]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("vector_add.py:15") && e.contains("tl.load(x + offsets"), "{e}");
    assert!(!out.exists(), "nothing is saved from a failed launch");
}

#[test]
fn compile_emits_each_stage() {
    let base =
        ["compile", "kernels/vector_add.py", "--const", "BLOCK=256", "x=*f16", "y=*f16", "out=*f16", "n_elements=i32"];
    let o = trident(&[&base[..], &["--emit", "ttir"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("kernel @add_kernel") && text.contains("tensor<256xf16>"), "{text}");
    let o = trident(&[&base[..], &["--emit", "ttgir"]].concat());
    assert!(String::from_utf8_lossy(&o.stdout).contains("#L0 = blocked"));
    let o = trident(&[&base[..], &["--emit", "ptx", "--target", "sm_90"]].concat());
    let ptx = String::from_utf8_lossy(&o.stdout);
    assert!(ptx.contains(".target sm_90") && ptx.contains(".entry add_kernel"), "{ptx}");
}

#[test]
fn draws_layouts() {
    let o = trident(&["layout", "--shape", "16x8", "mma [version = 2, warps_per_cta = [1, 1], instr_shape = [16, 8]]"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    // The PTX ISA's m16n8 accumulator: row = groupID (lane / 4), cols 2 * (lane % 4) + {0, 1}.
    assert!(text.contains("[ T0:0,  T0:1,  T1:0,  T1:1,  T2:0,  T2:1,  T3:0,  T3:1]"), "{text}");
    let o = trident(&["layout", "--shape", "8x8", "bogus [x = 1]"]);
    assert!(!o.status.success());
}

#[test]
fn runtime_parameters_left_out_take_their_python_defaults() {
    let src = tmp("defaults.py");
    std::fs::write(
        &src,
        "import triton\nimport triton.language as tl\n\n@triton.jit\ndef scale_kernel(x, out, n, scale=0.5, BLOCK: tl.constexpr = 64):\n    i = tl.arange(0, BLOCK)\n    m = i < n\n    tl.store(out + i, tl.load(x + i, mask=m) * scale, mask=m)\n",
    )
    .unwrap();
    let out = tmp("defaults-out.npy");
    let o = trident(&[
        "run",
        src.to_str().unwrap(),
        "--grid",
        "1",
        "x=ones:f16:40",
        "out=zeros:f32:40",
        "n=40",
        "--save",
        &format!("out={}", out.display()),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // f16 * (fp32 runtime scalar) is fp32, as in Triton.
    assert!(npy::read(&out).unwrap().to_f64_vec().iter().all(|&v| v == 0.5));
}
