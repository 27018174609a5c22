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

/// `--sanitize` (and `TRIDENT_SANITIZE=1`) on the emulator: the interpreter's error for the
/// same out-of-bounds load, and nothing saved from the failed launch.
#[test]
fn sanitize_on_the_emulator_reports_as_the_interpreter_and_saves_nothing() {
    let words = |backend: &'static str, save: &str| -> Vec<String> {
        [
            "run",
            "kernels/vector_add.py",
            "--grid",
            "2",
            "--backend",
            backend,
            "x=randn:f32:1000",
            "y=randn:f32:1000",
            "out=zeros:f32:1000",
            "n_elements=2000",
            "BLOCK=1024",
            "--save",
            save,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let first_lines = |o: &Output| stderr(o).lines().take(5).collect::<Vec<_>>().join("\n");
    let out = tmp("sanitize-oob.npy");
    let save = format!("out={}", out.display());
    let cache = fresh_cache("sanitize-cache");
    let env = [("TRIDENT_CACHE_DIR", cache.as_str())];
    let w = words("interp", &save);
    let interp = trident_env(&w.iter().map(|s| s.as_str()).collect::<Vec<_>>(), &env);
    let mut w = words("emu", &save);
    w.push("--sanitize".into());
    let flag = trident_env(&w.iter().map(|s| s.as_str()).collect::<Vec<_>>(), &env);
    let w = words("emu", &save);
    let var = trident_env(&w.iter().map(|s| s.as_str()).collect::<Vec<_>>(), &[env[0], ("TRIDENT_SANITIZE", "1")]);
    for o in [&interp, &flag, &var] {
        assert!(!o.status.success(), "{}", stderr(o));
    }
    let want = "out-of-bounds load: index 1000 of buffer `x` (1000 elements of f32), program (0, 0, 0), element [1000]";
    assert!(first_lines(&interp).contains(want), "{}", stderr(&interp));
    assert_eq!(first_lines(&flag), first_lines(&interp), "--sanitize");
    assert_eq!(first_lines(&var), first_lines(&interp), "TRIDENT_SANITIZE=1");
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
    if std::env::var_os("TRIDENT_PTXAS").is_some() && std::env::var_os("TRIDENT_NVDISASM").is_some() {
        // SASS: the annotated listing (control bits, attributes), not raw nvdisasm text.
        let o = trident(&[&base[..], &["--emit", "sass"]].concat());
        assert!(o.status.success(), "{}", stderr(&o));
        let sass = String::from_utf8_lossy(&o.stdout);
        assert!(sass.contains("// kernel add_kernel (sm_80)") && sass.contains(":S0"), "{sass}");
        assert!(sass.contains("EIATTR_EXIT_INSTR_OFFSETS"), "{sass}");
    }
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

const ACT_KERNEL: &str = r#"import triton
import triton.language as tl


@triton.jit
def act(x_ptr, y_ptr, b_ptr, n, ACT: tl.constexpr, OUT_DTYPE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    if b_ptr is not None:
        x += tl.load(b_ptr + offs, mask=m, other=0.0)
    if ACT == "relu":
        x = tl.maximum(x, 0.0)
    elif ACT == "square":
        x = x * x
    tl.store(y_ptr + offs, x.to(OUT_DTYPE), mask=m)
"#;

/// Strings, dtypes and `None` on the command line: the compile-time values real kernels
/// take (an activation's name, an output dtype, an absent bias pointer).
#[test]
fn strings_dtypes_and_none_are_compile_time_values() {
    let src = tmp("act.py");
    std::fs::write(&src, ACT_KERNEL).unwrap();
    for backend in ["interp", "emu"] {
        for (act, dtype, bias) in
            [("'relu'", "f16", false), ("\"square\"", "tl.float32", true), ("'none'", "bf16", false)]
        {
            let (x, b, y) = (tmp("act-x.npy"), tmp("act-b.npy"), tmp("act-y.npy"));
            let b_arg = if bias { "b_ptr=randn:f32:300".to_string() } else { "b_ptr=None".to_string() };
            let mut words = vec![
                "run".to_string(),
                src.to_str().unwrap().to_string(),
                "--grid".into(),
                "3".into(),
                "--backend".into(),
                backend.into(),
                "x_ptr=randn:f32:300".into(),
                format!("y_ptr=empty:{}:300", dtype.trim_start_matches("tl.").replace("float32", "f32")),
                b_arg,
                "n=300".into(),
                format!("ACT={act}"),
                format!("OUT_DTYPE={dtype}"),
                "BLOCK=128".into(),
                "--save".into(),
                format!("x_ptr={}", x.display()),
                "--save".into(),
                format!("y_ptr={}", y.display()),
            ];
            if bias {
                words.extend(["--save".into(), format!("b_ptr={}", b.display())]);
            }
            let words: Vec<&str> = words.iter().map(String::as_str).collect();
            let o = trident(&words);
            assert!(o.status.success(), "{backend} {act} {dtype}: {}", stderr(&o));
            let x = npy::read(&x).unwrap().to_f64_vec();
            let b = if bias { npy::read(&b).unwrap().to_f64_vec() } else { vec![0.0; 300] };
            let y = npy::read(&y).unwrap();
            for i in 0..300 {
                let v = (x[i] as f32 + b[i] as f32) as f64;
                let want = match act {
                    "'relu'" => v.max(0.0),
                    "\"square\"" => ((v as f32) * (v as f32)) as f64,
                    _ => v,
                };
                // Rounded to the output dtype, as a store of that dtype does.
                let round = |d| trident_runtime::HostTensor::from_f64(d, &[1], &[want]).get_f64(0);
                let want = match dtype {
                    "f16" => round(trident_runtime::DType::F16),
                    "bf16" => round(trident_runtime::DType::BF16),
                    _ => want,
                };
                assert_eq!(y.get_f64(i), want, "{backend} {act} {dtype} element {i}");
            }
        }
    }
    // A string for a runtime parameter, and a malformed string, are named errors.
    for (n, act, want) in
        [("n='eight'", "ACT='relu'", "`n` is not a tl.constexpr parameter"), ("n=8", "ACT='relu", "is not a string")]
    {
        let src = src.to_str().unwrap();
        let o = trident(&[
            "run",
            src,
            "--grid",
            "1",
            "x_ptr=randn:f32:8",
            "y_ptr=empty:f32:8",
            "b_ptr=None",
            n,
            act,
            "OUT_DTYPE=f32",
            "BLOCK=8",
        ]);
        assert!(!o.status.success());
        assert!(stderr(&o).contains(want), "{}", stderr(&o));
    }
}

/// Whether ptxas and nvdisasm are set up (scripts/install-tools, .tools/env); says so when not.
fn sass_tools() -> bool {
    let set = std::env::var_os("TRIDENT_PTXAS").is_some() && std::env::var_os("TRIDENT_NVDISASM").is_some();
    if !set {
        eprintln!("skipped: TRIDENT_PTXAS/TRIDENT_NVDISASM not set");
    }
    set
}

/// Runs `args` with `env`, which must succeed, and reads the file `out` it saved.
fn run_saved(args: &[&str], env: &[(&str, &str)], out: &Path, what: &str) -> Vec<u8> {
    let o = trident_env(args, env);
    assert!(o.status.success(), "{what}: {}", stderr(&o));
    std::fs::read(out).unwrap()
}

fn trident_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_trident"));
    c.args(args).current_dir(root());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("runs")
}

/// A cache directory of its own, empty.
fn fresh_cache(name: &str) -> String {
    let d = tmp(name);
    let _ = std::fs::remove_dir_all(&d);
    d.display().to_string()
}

/// Regression: `trident compile --emit ptx` took warps and stages from the cached tile-IR
/// entry (whose key holds neither), so a second compile with another `--num-stages` or
/// `--num-warps` and the same cache silently reused the first one's values.
#[test]
fn compile_lowers_with_the_requested_warps_and_stages_whatever_the_cache_holds() {
    let words = [
        "compile",
        "kernels/matmul.py::matmul_kernel",
        "--emit",
        "ptx",
        "a=randn:f16:64x80",
        "b=randn:f16:80x48",
        "c=empty:f32:64x48",
        "M=64",
        "N=48",
        "K=80",
        "stride_am=80",
        "stride_ak=1",
        "stride_bk=48",
        "stride_bn=1",
        "stride_cm=48",
        "stride_cn=1",
        "BLOCK_M=32",
        "BLOCK_N=16",
        "BLOCK_K=32",
        "GROUP_M=2",
    ];
    let ptx = |extra: &[&str], cache: &str| {
        let o = trident_env(&[&words[..], extra].concat(), &[("TRIDENT_CACHE_DIR", cache)]);
        assert!(o.status.success(), "{}", stderr(&o));
        String::from_utf8(o.stdout).unwrap()
    };
    let variants: [&[&str]; 3] = [&["--num-stages", "1"], &["--num-stages", "4"], &["--num-warps", "8"]];
    let alone: Vec<String> =
        variants.iter().enumerate().map(|(i, v)| ptx(v, &fresh_cache(&format!("alone-{i}")))).collect();
    assert_ne!(alone[0], alone[1], "the stage count changes this kernel's PTX");
    assert_ne!(alone[0], alone[2], "the warp count changes this kernel's PTX");
    for order in [[0, 1, 2], [2, 1, 0]] {
        let shared = fresh_cache(&format!("shared-{}", order[0]));
        for i in order {
            assert_eq!(ptx(variants[i], &shared), alone[i], "{:?} after others in one cache", variants[i]);
        }
    }
}

const F32_DOT: &str = "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef mm(a, c, N: tl.constexpr):\n    r = tl.arange(0, N)\n    x = tl.load(a + r[:, None] * N + r[None, :])\n    tl.store(c + r[:, None] * N + r[None, :], tl.dot(x, x))\n";

/// `TRITON_F32_DEFAULT` (Triton's variable) sets the precision of fp32 dots that do not say,
/// for `trident compile` and `trident run`, and keys the cache: one cache serves both values.
#[test]
fn triton_f32_default_sets_the_dot_precision_and_keys_the_cache() {
    let src = tmp("f32dot.py");
    std::fs::write(&src, F32_DOT).unwrap();
    let src = src.to_str().unwrap();
    let cache = fresh_cache("f32-cache");
    let ttir = |value: Option<&str>| {
        let mut env = vec![("TRIDENT_CACHE_DIR", cache.as_str())];
        env.extend(value.map(|v| ("TRITON_F32_DEFAULT", v)));
        let o = trident_env(&["compile", src, "a=*f32", "c=*f32", "N=16"], &env);
        assert!(o.status.success(), "{}", stderr(&o));
        String::from_utf8(o.stdout).unwrap()
    };
    for value in [Some("ieee"), None, Some("ieee")] {
        let text = ttir(value);
        assert_eq!(text.contains("precision = ieee"), value.is_some(), "{value:?}: {text}");
    }
    // Run on the interpreter, which rounds tf32 inputs as the tensor cores do: only ieee
    // gives an fp32-exact product.
    let run_error = |value: Option<&str>| {
        let (a, c) = (tmp("f32dot-a.npy"), tmp("f32dot-c.npy"));
        let mut env = vec![("TRIDENT_CACHE_DIR", cache.as_str())];
        env.extend(value.map(|v| ("TRITON_F32_DEFAULT", v)));
        let (sa, sc) = (format!("a={}", a.display()), format!("c={}", c.display()));
        let words =
            ["run", src, "--grid", "1", "--backend", "interp", "a=randn:f32:16x16", "c=empty:f32:16x16", "N=16"];
        let o = trident_env(&[&words[..], &["--save", &sa, "--save", &sc]].concat(), &env);
        assert!(o.status.success(), "{}", stderr(&o));
        let (a, c) = (npy::read(&a).unwrap().to_f64_vec(), npy::read(&c).unwrap().to_f64_vec());
        let mut worst = 0.0f64;
        for i in 0..16 {
            for j in 0..16 {
                let want: f64 = (0..16).map(|k| a[i * 16 + k] * a[k * 16 + j]).sum();
                worst = worst.max((c[i * 16 + j] - want).abs());
            }
        }
        worst
    };
    assert!(run_error(Some("ieee")) < 1e-4);
    assert!(run_error(None) > 1e-4, "tf32 rounds the inputs to 10 mantissa bits");
}

/// `run`'s options are parsed by the runtime's one parser, wherever they are written;
/// `--help` lists them from the same table.
#[test]
fn run_options_come_anywhere_and_help_lists_them() {
    let base = ["run", "--debug", "kernels/vector_add.py", "--grid", "1", "x=randn:f32:8", "y=randn:f32:8"];
    let o = trident(&[&base[..], &["out=zeros:f32:8", "n_elements=8", "BLOCK=8", "--print-ir-after-all"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("kernel @add_kernel"), "the IR was printed after the passes");
    let o = trident(&["run", "--help"]);
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && help.contains("--num-warps N") && help.contains("--block"), "{help}");
    let o = trident(&["bench", "--help"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("--flush-l2"));
    let o = trident(&["run", "kernels/vector_add.py", "--grid", "1", "--reps", "3"]);
    assert!(stderr(&o).contains("argument `--reps`: unknown option"), "{}", stderr(&o));
}

/// `--save` is all or nothing: a second save that cannot be written leaves the first path as
/// it was (issue 14), and no temporary file behind.
#[test]
fn saves_are_all_or_nothing() {
    let dir = std::env::temp_dir().join(format!("trident-saves-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let first = dir.join("out.npy");
    std::fs::write(&first, b"before").unwrap();
    let out = trident(&[
        "run",
        "kernels/vector_add.py::add_kernel",
        "--grid",
        "1",
        "x=randn:f32:8",
        "y=randn:f32:8",
        "out=zeros:f32:8",
        "n_elements=8",
        "BLOCK=8",
        &format!("--save=out={}", first.display()),
        "--save=x=/nonexistent-trident-dir/x.npy",
    ]);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success() && err.contains("nothing was saved"), "{err}");
    assert_eq!(std::fs::read(&first).unwrap(), b"before", "the first save left alone");
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left.len(), 1, "no temporary files: {left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `trident sass dump` lists a cubin's instructions with decoded control bits and the EXIT
/// attribute; `trident sass roundtrip` writes it back byte for byte.
#[test]
fn sass_dump_and_roundtrip() {
    let Ok(ptxas) = std::env::var("TRIDENT_PTXAS") else { return eprintln!("skipped: TRIDENT_PTXAS not set") };
    let dir = std::env::temp_dir().join(format!("trident-sass-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cubin = dir.join("vadd.cubin");
    let st = std::process::Command::new(ptxas)
        .args(["-arch=sm_80", "-o"])
        .arg(&cubin)
        .arg(root().join("crates/emu/tests/data/vadd.ptx"))
        .status()
        .unwrap();
    assert!(st.success());
    let out = trident(&["sass", "dump", cubin.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("(sm_80)") && text.contains("EXIT ;  // EIATTR_EXIT_INSTR_OFFSETS"), "{text}");
    assert!(text.contains("LDG.E") && text.contains(":S0"), "{text}");
    let again = dir.join("again.cubin");
    let out = trident(&["sass", "roundtrip", cubin.to_str().unwrap(), "-o", again.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read(&cubin).unwrap(), std::fs::read(&again).unwrap());
    let out = trident(&["sass", "dump", cubin.to_str().unwrap(), "--kernel", "nope"]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("no kernel `nope`"));
    let c = cubin.to_str().unwrap();
    let out = trident(&["sass", "dump", c, "--deps"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("// after "), "dependence edges listed");
    let out = trident(&["sass", "verify", c]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("timing-clean"));
    // A move: the first legal one down by one; the result verifies against the original.
    let moved = dir.join("moved.cubin");
    let m = moved.to_str().unwrap();
    let mut done = None;
    for i in 0..40 {
        let out = trident(&["sass", "move", c, "--kernel", "vadd", "--index", &i.to_string(), "--by", "1", "-o", m]);
        if out.status.success() {
            done = Some(i);
            break;
        }
        let e = stderr(&out);
        assert!(e.contains("cannot move") && !moved.exists(), "a refusal says why and writes nothing: {e}");
    }
    assert!(done.is_some(), "some instruction of vadd can move down by one");
    let out = trident(&["sass", "verify", m, "--against", c]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("legal reordering"));
    // Moving it back up restores the original instruction order.
    let back = dir.join("back.cubin");
    let i = done.unwrap() + 1;
    let out = trident(&[
        "sass",
        "move",
        m,
        "--kernel",
        "vadd",
        "--index",
        &i.to_string(),
        "--by",
        "-1",
        "-o",
        back.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = trident(&["sass", "move", c, "--kernel", "vadd", "--index", "0", "--by", "-1", "-o", m]);
    assert!(!out.status.success() && stderr(&out).contains("would leave its block"), "{}", stderr(&out));
    // Random legal moves, verified: the same seed gives the same cubin.
    let (s1, s2) = (dir.join("s1.cubin"), dir.join("s2.cubin"));
    for s in [&s1, &s2] {
        let out = trident(&["sass", "shuffle", c, "--moves", "8", "--seed", "3", "-o", s.to_str().unwrap()]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(String::from_utf8_lossy(&out.stdout).contains("legal moves"));
    }
    assert_eq!(std::fs::read(&s1).unwrap(), std::fs::read(&s2).unwrap());
    let out = trident(&["sass", "verify", s1.to_str().unwrap(), "--against", c]);
    assert!(out.status.success(), "{}", stderr(&out));
    // A cubin of another kernel is not a reordering of this one.
    let other = dir.join("other.cubin");
    let st = std::process::Command::new(std::env::var("TRIDENT_PTXAS").unwrap())
        .args(["-arch=sm_80", "-o"])
        .arg(&other)
        .arg(root().join("crates/emu/tests/data/softmax.ptx"))
        .status()
        .unwrap();
    assert!(st.success());
    let out = trident(&["sass", "verify", c, "--against", other.to_str().unwrap()]);
    assert!(!out.status.success(), "verify --against a different kernel fails");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--backend sass-emu`: the same PTX run on the PTX emulator and, through ptxas, on the SASS
/// emulator gives the same bytes; so does a Python kernel.
#[test]
fn sass_emu_backend_agrees_with_the_emulator() {
    if !sass_tools() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("trident-sass-emu-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ptx = root().join("crates/emu/tests/data/vadd.ptx");
    let mut saved = vec![];
    for backend in ["emu", "sass-emu"] {
        let out = dir.join(format!("{backend}.npy"));
        let o = trident(&[
            "run",
            ptx.to_str().unwrap(),
            "--grid",
            "4",
            "--block",
            "128",
            "--seed",
            "7",
            "--backend",
            backend,
            "--save",
            &format!("2={}", out.display()),
            "randn:f32:1000",
            "randn:f32:1000",
            "empty:f32:1000",
            "1000",
            "0",
            "0",
        ]);
        assert!(o.status.success(), "{backend}: {}", stderr(&o));
        saved.push(std::fs::read(&out).unwrap());
    }
    assert_eq!(saved[0], saved[1], "vadd.ptx: the SASS emulator and the PTX emulator agree");
    // The same code as a cubin (`trident run FILE.cubin`, the SASS emulator by default).
    let cubin = dir.join("vadd.cubin");
    let ptxas = std::env::var("TRIDENT_PTXAS").unwrap();
    let st = Command::new(ptxas).args(["-arch=sm_80", ptx.to_str().unwrap(), "-o", cubin.to_str().unwrap()]).status();
    assert!(st.unwrap().success());
    let out = dir.join("cubin.npy");
    let o = trident(&[
        "run",
        &format!("{}::vadd", cubin.display()),
        "--grid",
        "4",
        "--block",
        "128",
        "--seed",
        "7",
        "--save",
        &format!("2={}", out.display()),
        "randn:f32:1000",
        "randn:f32:1000",
        "empty:f32:1000",
        "1000",
        "0",
        "0",
    ]);
    assert!(o.status.success(), "cubin: {}", stderr(&o));
    let printed = String::from_utf8_lossy(&o.stdout).to_string() + &stderr(&o);
    assert!(printed.contains("SASS emulator"), "{printed}");
    assert_eq!(std::fs::read(&out).unwrap(), saved[0], "vadd.cubin: the PTX emulator's bytes");
    let o = trident(&["run", cubin.to_str().unwrap(), "--grid", "1", "--block", "32", "--backend", "emu", "1"]);
    assert!(!o.status.success() && stderr(&o).contains("machine code"), "{}", stderr(&o));
    let o = trident(&["run", cubin.to_str().unwrap(), "--grid", "1", "--block", "32", "1", "2"]);
    assert!(!o.status.success() && stderr(&o).contains("takes 6 parameters"), "{}", stderr(&o));
    let mut saved = vec![];
    for backend in ["emu", "sass-emu"] {
        let out = dir.join(format!("py-{backend}.npy"));
        let o = trident(&[
            "run",
            "kernels/vector_add.py",
            "--grid",
            "4",
            "--seed",
            "3",
            "--backend",
            backend,
            "--save",
            &format!("out={}", out.display()),
            "x=randn:f32:1000",
            "y=randn:f32:1000",
            "out=empty:f32:1000",
            "n_elements=1000",
            "BLOCK=256",
        ]);
        assert!(o.status.success(), "{backend}: {}", stderr(&o));
        saved.push(std::fs::read(&out).unwrap());
    }
    assert_eq!(saved[0], saved[1], "vector_add.py: the same on sass-emu");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--backend sass-emu` says how its estimate came about. A 2^21-element f32 vector add
/// (2048 CTAs of 4 warps) moves 25.2 MB that no CTA reads twice: on the H100 model (3 TB/s)
/// that takes at least 8.4 µs, far more than its CTAs' latency, so DRAM bounds it; a single
/// CTA of it is bound by the SMs.
#[test]
fn sass_emu_says_what_bounds_its_estimate() {
    if !sass_tools() {
        return;
    }
    let run = |n: usize| {
        let n = n.to_string();
        let o = trident_env(
            &[
                "run",
                "kernels/vector_add.py",
                "--grid",
                &(n.parse::<usize>().unwrap() / 1024).max(1).to_string(),
                "--backend",
                "sass-emu",
                &format!("x=randn:f32:{n}"),
                &format!("y=randn:f32:{n}"),
                &format!("out=empty:f32:{n}"),
                &format!("n_elements={n}"),
                "BLOCK=1024",
            ],
            &[("TRIDENT_EMU_TARGET", "sm_90a")],
        );
        assert!(o.status.success(), "{}", stderr(&o));
        stderr(&o)
    };
    let big = run(1 << 21);
    let line = big.lines().find(|l| l.contains("estimate:")).unwrap_or_else(|| panic!("no estimate line: {big}"));
    assert!(line.contains("bound by DRAM bandwidth") && line.contains("25.2 MB distinct"), "{line}");
    let us: f64 = line.split(", ").nth(1).and_then(|t| t.strip_suffix(" µs at 1.83 GHz")).unwrap().parse().unwrap();
    assert!((8.3..8.5).contains(&us), "25.2 MB at 3 TB/s: {us} µs");
    let small = run(1024);
    assert!(small.contains("bound by the SMs; 1 wave"), "{small}");
}

/// TMA on the SASS emulator: a tensor-descriptor load (`desc.load`, lowered on sm_90a to
/// `cp.async.bulk.tensor` on an mbarrier with the tensor map a kernel parameter; `UTMALDG`,
/// `SYNCS.*` in the SASS) with ragged boxes at the tensor's edges gives, on `--backend
/// sass-emu`, the PTX emulator's bytes and the interpreter's.
#[test]
fn sass_emu_runs_a_tma_descriptor_copy() {
    if !sass_tools() {
        return;
    }
    let src = tmp("tma_desc.py");
    let dir = src.parent().unwrap().to_path_buf();
    std::fs::write(
        &src,
        r#"import triton
import triton.language as tl

@triton.jit
def copy_tile(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    desc = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN])
    t = desc.load([pid_m * BM, pid_n * BN])
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(y_ptr + offs_m[:, None] * N + offs_n[None, :], t * 2, mask=mask)
"#,
    )
    .unwrap();
    let target = format!("{}::copy_tile", src.display());
    let mut saved = vec![];
    for backend in ["sass-emu", "emu", "interp"] {
        let out = dir.join(format!("tma-{backend}.npy"));
        let o = Command::new(env!("CARGO_BIN_EXE_trident"))
            .current_dir(root())
            .env("TRIDENT_EMU_TARGET", "sm_90a")
            .args(["run", &target, "--backend", backend, "--grid", "2,2", "--seed", "3"])
            .args(["x_ptr=randn:f16:100x72", "y_ptr=zeros:f16:100x72", "M=100", "N=72", "BM=64", "BN=64"])
            .arg("--save")
            .arg(format!("y_ptr={}", out.display()))
            .output()
            .expect("runs");
        assert!(o.status.success(), "{backend}: {}", stderr(&o));
        saved.push(std::fs::read(&out).unwrap());
    }
    assert_eq!(saved[0], saved[1], "the descriptor copy: SASS emulator and PTX emulator");
    assert_eq!(saved[1], saved[2], "the descriptor copy: PTX emulator and interpreter");
    let o = Command::new(env!("CARGO_BIN_EXE_trident"))
        .current_dir(root())
        .args(["compile", &target, "--emit", "sass", "--target", "sm_90a"])
        .args(["x_ptr=*fp16", "y_ptr=*fp16", "M=i32", "N=i32", "BM=64", "BN=64"])
        .output()
        .expect("runs");
    let listing = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && listing.contains("UTMALDG.2D"), "{}{listing}", stderr(&o));
    for f in ["tma_desc.py", "tma-sass-emu.npy", "tma-emu.npy", "tma-interp.npy"] {
        let _ = std::fs::remove_file(dir.join(f));
    }
}

/// Local memory on the SASS emulator: a ragged f16 matmul with 128×128×64 tiles on 4 warps
/// spills (`STL`/`LDL`, ptxas's stack) on sm_80 and sm_90a; as SASS it gives the PTX
/// emulator's bytes.
#[test]
fn sass_emu_runs_a_kernel_that_spills() {
    if !sass_tools() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("trident-sass-spill-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let words = [
        "kernels/matmul.py::matmul_kernel",
        "a=randn:f16:130x100",
        "b=randn:f16:100x70",
        "c=empty:f16:130x70",
        "M=130",
        "N=70",
        "K=100",
        "stride_am=100",
        "stride_ak=1",
        "stride_bk=70",
        "stride_bn=1",
        "stride_cm=70",
        "stride_cn=1",
        "BLOCK_M=128",
        "BLOCK_N=128",
        "BLOCK_K=64",
        "GROUP_M=1",
        "--num-warps",
        "4",
    ];
    for arch in ["sm_80", "sm_90a"] {
        let mut args = vec!["compile"];
        args.extend(words);
        args.extend(["--target", arch, "--emit", "sass"]);
        let o = trident(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(String::from_utf8_lossy(&o.stdout).contains("STL"), "{arch}: the kernel no longer spills");
        let mut saved = vec![];
        for backend in ["emu", "sass-emu"] {
            let out = dir.join(format!("{arch}-{backend}.npy"));
            let save = format!("c={}", out.display());
            let mut args = vec!["run", "--grid", "2,1", "--seed", "5", "--backend", backend, "--save", &save];
            args.extend(words);
            saved.push(run_saved(&args, &[("TRIDENT_EMU_TARGET", arch)], &out, &format!("{arch} {backend}")));
        }
        assert_eq!(saved[0], saved[1], "{arch}: the spilling matmul agrees on sass-emu");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `tl.minimum(tl.minimum(a, -b), c)` on int32 for sm_90/sm_90a: `ptxas` 13.0 drops the
/// negation when it fuses the two minima into `VIMNMX3` unless Trident spells it `~b + 1`
/// (bench/SASS_EMU.md). As SASS on the SASS emulator it must give the interpreter's values.
#[test]
fn negated_operand_of_fused_integer_minima_survives_ptxas_on_sm90() {
    if !sass_tools() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("trident-negmin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kernel = dir.join("negmin.py");
    std::fs::write(
        &kernel,
        "import triton\nimport triton.language as tl\n\n@triton.jit\ndef negmin(a_ptr, b_ptr, c_ptr, out_ptr, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n    a = tl.load(a_ptr + offs)\n    b = tl.load(b_ptr + offs)\n    c = tl.load(c_ptr + offs)\n    tl.store(out_ptr + offs, tl.minimum(tl.minimum(a, -b), c))\n",
    )
    .unwrap();
    // Values of both signs and sizes, so that min(a, b) and min(a, -b) differ often.
    let mut seed = 0x2545_f491_4f6c_dd1du64 ^ std::process::id() as u64;
    let mut inputs = vec![];
    for name in ["a", "b", "c"] {
        let v: Vec<f64> = (0..64)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                (seed % 2001) as f64 - 1000.0
            })
            .collect();
        let t = trident_runtime::HostTensor::from_f64(trident_runtime::DType::I32, &[64], &v);
        let path = dir.join(format!("{name}.npy"));
        npy::write(&path, &t).unwrap();
        inputs.push(path);
    }
    let spec = format!("{}::negmin", kernel.display());
    for arch in ["sm_90a", "sm_90"] {
        let mut saved = vec![];
        for backend in ["interp", "sass-emu"] {
            let out = dir.join(format!("{arch}-{backend}.npy"));
            let (a, b, c) = (
                format!("a_ptr=@{}", inputs[0].display()),
                format!("b_ptr=@{}", inputs[1].display()),
                format!("c_ptr=@{}", inputs[2].display()),
            );
            let save = format!("out_ptr={}", out.display());
            let args = [
                "run",
                &spec,
                "--grid",
                "1",
                "--backend",
                backend,
                &a,
                &b,
                &c,
                "out_ptr=zeros:i32:64",
                "BLOCK=64",
                "--save",
                &save,
            ];
            saved.push(run_saved(&args, &[("TRIDENT_EMU_TARGET", arch)], &out, &format!("{arch} {backend}")));
        }
        assert_eq!(saved[0], saved[1], "{arch}: min(min(a, -b), c) as SASS differs from the interpreter");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--backend sass-emu` keeps the cubin and its `nvdisasm` listing in the compile cache: a
/// second run from a warm cache needs neither tool (both pointed at nothing) and gives the
/// same bytes.
#[test]
fn sass_emu_runs_from_a_warm_cache_without_the_tools() {
    if !sass_tools() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("trident-sass-cache-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cache = dir.join("cache");
    let cache = cache.to_str().unwrap();
    let run = |out: &Path, tools: &[(&str, &str)]| {
        let save = format!("out={}", out.display());
        let args = [
            "run",
            "kernels/vector_add.py",
            "--grid",
            "4",
            "--backend",
            "sass-emu",
            "--seed",
            "3",
            "--save",
            &save,
            "x=randn:f32:1000",
            "y=randn:f32:1000",
            "out=empty:f32:1000",
            "n_elements=1000",
            "BLOCK=256",
        ];
        let mut env = vec![("TRIDENT_CACHE_DIR", cache)];
        env.extend_from_slice(tools);
        trident_env(&args, &env)
    };
    let (cold, warm) = (dir.join("cold.npy"), dir.join("warm.npy"));
    let o = run(&cold, &[]);
    assert!(o.status.success(), "cold: {}", stderr(&o));
    let nothing = dir.join("no-such-tool");
    let nothing = nothing.to_str().unwrap();
    let o = run(&warm, &[("TRIDENT_PTXAS", nothing), ("TRIDENT_NVDISASM", nothing)]);
    assert!(o.status.success(), "warm, without ptxas and nvdisasm: {}", stderr(&o));
    assert_eq!(std::fs::read(&cold).unwrap(), std::fs::read(&warm).unwrap());
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--sass-search BUDGET` (issue 12's compile option): the first launch searches the kernel's
/// schedule on the SASS emulator and keeps it in the cache directory's `schedules/`; the
/// output is the unsearched kernel's; the kept cubin is timing-clean and a legal reordering
/// of the compiled one; a second launch (`TRIDENT_SASS_SEARCH`) reuses it with neither
/// `ptxas` nor `nvdisasm` at hand.
#[test]
fn sass_search_option_runs_and_keeps_the_searched_schedule() {
    if !sass_tools() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("trident-sass-search-opt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cache = dir.join("cache");
    let cache_s = cache.to_str().unwrap().to_string();
    let words = [
        "kernels/softmax.py::softmax_kernel",
        "x=randn:f32:8x256",
        "y=empty:f32:8x256",
        "x_row_stride=256",
        "y_row_stride=256",
        "n_cols=256",
        "BLOCK=256",
        "--grid",
        "8",
        "--backend",
        "sass-emu",
    ];
    let run = |out: &Path, extra: &[&str], env: &[(&str, &str)]| {
        let save = format!("y={}", out.display());
        let mut args: Vec<&str> = vec!["run"];
        args.extend(words);
        args.extend(["--save", &save]);
        args.extend(extra);
        let mut e = vec![("TRIDENT_CACHE_DIR", cache_s.as_str())];
        e.extend_from_slice(env);
        trident_env(&args, &e)
    };
    let (plain, searched, again) = (dir.join("plain.npy"), dir.join("searched.npy"), dir.join("again.npy"));
    let o = run(&plain, &[], &[]);
    assert!(o.status.success(), "plain: {}", stderr(&o));
    let o = run(&searched, &["--sass-search", "30"], &[]);
    assert!(o.status.success(), "searched: {}", stderr(&o));
    assert_eq!(std::fs::read(&plain).unwrap(), std::fs::read(&searched).unwrap());
    let kept: Vec<PathBuf> = std::fs::read_dir(cache.join("schedules"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "cubin"))
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    let o = trident(&["sass", "verify", kept[0].to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let nothing = dir.join("no-such-tool");
    let nothing = nothing.to_str().unwrap();
    let env = [("TRIDENT_SASS_SEARCH", "30"), ("TRIDENT_PTXAS", nothing), ("TRIDENT_NVDISASM", nothing)];
    let o = run(&again, &[], &env);
    assert!(o.status.success(), "reused: {}", stderr(&o));
    assert_eq!(std::fs::read(&plain).unwrap(), std::fs::read(&again).unwrap());
    let o = run(&again, &["--sass-search", "soon"], &[]);
    assert!(!o.status.success() && stderr(&o).contains("sass-search"), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn host_descriptors_by_value_and_by_type() {
    // By value: the tensor is made, saved through the descriptor's name, and the sizes are
    // specialized (40 is not a multiple of 16, 64 is).
    let out = tmp("desc_out.npy");
    let o = trident(&[
        "run",
        "kernels/matmul_host_desc.py::matmul_host_desc_kernel",
        "--grid",
        "2,1",
        "a_desc=desc[32x16]:ones:f16:40x32",
        "b_desc=desc[16x64]:ones:f16:32x64",
        "c_desc=desc[32x64]:empty:f16:40x64",
        "BLOCK_M=32",
        "BLOCK_N=64",
        "BLOCK_K=16",
        "--save",
        &format!("c_desc={}", out.display()),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let bytes = std::fs::read(&out).unwrap();
    // Every element is K = 32 (f16 0x5000), all 40 x 64 of them.
    let data = &bytes[bytes.len() - 40 * 64 * 2..];
    assert!(data.chunks(2).all(|c| c == [0x00, 0x50]), "not all 32.0");
    let ir = trident(&[
        "compile",
        "kernels/matmul_host_desc.py::matmul_host_desc_kernel",
        "--emit",
        "ttir",
        "a_desc=desc[32x16]:ones:f16:40x32",
        "b_desc=desc[16x64]:ones:f16:32x64",
        "c_desc=desc[32x64,nan]:*f16",
        "BLOCK_M=32",
        "BLOCK_N=64",
        "BLOCK_K=16",
    ]);
    assert!(ir.status.success(), "{}", stderr(&ir));
    let text = String::from_utf8_lossy(&ir.stdout);
    let head = text.lines().find(|l| l.contains("kernel @")).unwrap();
    // The value form specializes sizes that are multiples of 16; the type form none.
    assert!(
        head.contains("%a_desc_shape0: i32,") && head.contains("%a_desc_shape1: i32 {divisibility = 16}"),
        "{head}"
    );
    assert!(head.contains("%c_desc_shape0: i32,") && head.contains("%c_desc_shape1: i32,"), "{head}");
    assert!(head.contains("%c_desc_stride0: i64 {divisibility = 8}"), "{head}");
    // A descriptor breaking a rule names its argument.
    let bad = trident(&[
        "run",
        "kernels/matmul_host_desc.py::matmul_host_desc_kernel",
        "--grid",
        "1",
        "a_desc=desc[32x16]:ones:f16:40x30",
        "b_desc=desc[16x64]:ones:f16:32x64",
        "c_desc=desc[32x64]:empty:f16:40x64",
        "BLOCK_M=32",
        "BLOCK_N=64",
        "BLOCK_K=16",
    ]);
    assert!(!bad.status.success());
    assert!(stderr(&bad).contains("`a_desc`") && stderr(&bad).contains("16 bytes"), "{}", stderr(&bad));
}
