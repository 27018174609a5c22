//! Live functions (`trident_front::live`): kernels described by Python (source, position, resolved
//! globals) compile exactly like the same kernels parsed from their files, and bad descriptions
//! give diagnostics that name what is wrong.

mod common;

use common::{arg_info, run_compiled, A};
use trident_core::{DType, HostTensor};
use trident_front::live::{describe_file, LiveError, LiveFunction};
use trident_front::{compile, parse_file, parse_live, ArgInfo, CompileOptions, ConstValue, KernelFile};
use trident_ir::print::{print_module, PrintOptions};

fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.py` file under `dir` (recursively), sorted.
fn py_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            py_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "py") {
            out.push(p);
        }
    }
}

/// Through JSON, as Python hands it over.
fn live_of(file: &KernelFile, kernel: &str) -> KernelFile {
    let desc = describe_file(file, kernel).unwrap_or_else(|| panic!("no kernel {kernel}"));
    let json = desc.to_json();
    let back = LiveFunction::from_json(&json).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back, desc, "the description survives JSON");
    parse_live(&back).unwrap_or_else(|e| panic!("{kernel}: {e}"))
}

/// A fixture of `tests/data/live` (written by `gen_fixtures.py`: Python's `describe` of `src/`).
fn fixture_json(name: &str) -> String {
    let path = root().join("crates/front/tests/data/live").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn fixture(name: &str) -> LiveFunction {
    LiveFunction::from_json(&fixture_json(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// `fixture` with its JSON edited as a `serde_json::Value` first.
fn edited(name: &str, edit: impl FnOnce(&mut serde_json::Value)) -> Result<KernelFile, LiveError> {
    let mut v: serde_json::Value = serde_json::from_str(&fixture_json(name)).unwrap();
    edit(&mut v);
    parse_live(&LiveFunction::from_json(&v.to_string())?)
}

/// Compiles a live kernel file's kernel; the rendered diagnostics on failure.
fn compile_live(file: &KernelFile, args: &[(&str, A)]) -> Result<trident_front::Compiled, String> {
    let name = file.live_kernel().expect("live kernel").name.clone();
    compile(file, &name, &infos(args), &CompileOptions { debug: true, ..Default::default() })
        .map_err(|ds| ds.iter().map(|d| d.render(&file.source_files())).collect())
}

fn tensor(d: DType, values: &[f64]) -> A {
    A::T(HostTensor::from_f64(d, &[values.len()], values))
}

fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut r = common::Rng::new(seed);
    (0..n).map(|_| r.uniform() * 2.0).collect()
}

fn close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * w.abs().max(1.0), "[{i}] {g} vs {w}");
    }
}

fn infos(args: &[(&str, A)]) -> Vec<(String, ArgInfo)> {
    args.iter().map(|(k, a)| (k.to_string(), arg_info(a))).collect()
}

/// The tile IR with locations and the file list: what must be byte-identical.
fn ir(file: &KernelFile, kernel: &str, args: &[(&str, A)]) -> Result<String, String> {
    match compile(file, kernel, &infos(args), &CompileOptions::default()) {
        Ok(c) => Ok(print_module(&c.module, &PrintOptions::with_locs())),
        Err(ds) => Err(ds.iter().map(|d| d.render(&file.source_files())).collect()),
    }
}

fn ptr(d: DType) -> A {
    A::T(HostTensor::zeros(d, &[16]))
}

#[test]
fn every_kernel_of_the_bundled_and_held_out_files_describes_into_the_same_model() {
    let mut files = vec![];
    py_files(&root().join("kernels"), &mut files);
    py_files(&root().join("tests/heldout"), &mut files);
    let mut checked = 0;
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let shown = path.display().to_string();
        let Ok(file) = parse_file(&shown, &text) else { continue };
        for k in file.kernels() {
            let live = live_of(&file, &k.name);
            let lk = live.live_kernel().expect("a live kernel");
            assert_eq!(lk.name, k.name);
            // Parameters: names, locations, annotations, pinned types, defaults, specialization.
            assert_eq!(lk.params, k.params, "{shown}::{}", k.name);
            assert_eq!((lk.debug, lk.noinline), (k.debug, k.noinline), "{shown}::{}", k.name);
            // Decorators in the source are Python's business: no autotune, no heuristics.
            assert!(lk.autotune.is_none() && lk.heuristics.is_empty());
            assert_eq!(live.source_file(), file.source_file(), "diagnostics render against the real file");
            checked += 1;
        }
    }
    assert!(checked > 30, "only {checked} kernels checked");
}

#[test]
fn bundled_kernels_compile_to_identical_tile_ir() {
    let load = |name: &str| {
        let path = format!("kernels/{name}");
        let text = std::fs::read_to_string(root().join(&path)).unwrap();
        parse_file(&path, &text).unwrap()
    };
    let c = |v: i64| A::C(ConstValue::int(v));
    type Case = (&'static str, &'static str, Vec<(&'static str, A)>);
    let cases: Vec<Case> = vec![
        (
            "vector_add.py",
            "add_kernel",
            vec![
                ("x", ptr(DType::F32)),
                ("y", ptr(DType::F32)),
                ("out", ptr(DType::F32)),
                ("n_elements", A::I(1000)),
                ("BLOCK", c(256)),
            ],
        ),
        (
            "matmul.py",
            "matmul_kernel",
            vec![
                ("a", ptr(DType::F16)),
                ("b", ptr(DType::F16)),
                ("c", ptr(DType::F16)),
                ("M", A::I(37)),
                ("N", A::I(29)),
                ("K", A::I(45)),
                ("stride_am", A::I(45)),
                ("stride_ak", A::I(1)),
                ("stride_bk", A::I(29)),
                ("stride_bn", A::I(1)),
                ("stride_cm", A::I(29)),
                ("stride_cn", A::I(1)),
                ("BLOCK_M", c(16)),
                ("BLOCK_N", c(16)),
                ("BLOCK_K", c(16)),
                ("GROUP_M", c(2)),
            ],
        ),
    ];
    for (name, kernel, args) in cases {
        let file = load(name);
        let want = ir(&file, kernel, &args).unwrap();
        let got = ir(&live_of(&file, kernel), kernel, &args).unwrap();
        assert_eq!(got, want, "{name}::{kernel}");
    }
}

#[test]
fn liger_rms_norm_fails_from_its_file_and_runs_from_python_s_description() {
    // From the file, the module-level `if compare_version(...)` leaves `rsqrt` bound two ways.
    let path = root().join("crates/front/tests/data/live/src/rms_norm.py");
    let text = std::fs::read_to_string(&path).unwrap();
    let file = parse_file(&path.display().to_string(), &text).unwrap();
    let (rows, cols, block) = (3usize, 50usize, 64i64);
    let x = values(rows * cols, 1);
    let w = values(cols, 2);
    let (eps, offset) = (1e-6, 1.0);
    let args = |x: &[f64], w: &[f64]| {
        vec![
            ("Y_ptr", tensor(DType::F32, &vec![0.0; rows * cols])),
            ("Y_row_stride", A::I(cols as i64)),
            ("X_ptr", tensor(DType::F32, x)),
            ("X_row_stride", A::I(cols as i64)),
            ("W_ptr", tensor(DType::F32, w)),
            ("W_row_stride", A::I(0)),
            ("RSTD_ptr", tensor(DType::F32, &vec![0.0; rows])),
            ("RSTD_row_stride", A::I(1)),
            ("n_cols", A::I(cols as i64)),
            ("eps", A::F(eps)),
            ("offset", A::F(offset)),
            ("casting_mode", A::C(ConstValue::int(0))),
            ("BLOCK_SIZE", A::C(ConstValue::int(block))),
        ]
    };
    let err = ir(&file, "_rms_norm_forward_kernel", &args(&x, &w)).unwrap_err();
    assert!(err.contains("`rsqrt` is bound differently by the branches"), "{err}");

    // Live, Python ran the `if`: `rsqrt` is just a builtin.
    let live = parse_live(&fixture("rms_norm.json")).unwrap();
    let c = compile_live(&live, &args(&x, &w)).unwrap();
    let (out, _) = run_compiled(&c, &args(&x, &w), [rows as u32, 1, 1]);
    let mut want = vec![];
    let mut rstds = vec![];
    for r in 0..rows {
        let row = &x[r * cols..(r + 1) * cols];
        let ms = row.iter().map(|v| (*v as f32 as f64).powi(2)).sum::<f64>() / cols as f64;
        let rstd = 1.0 / (ms + eps).sqrt();
        rstds.push(rstd);
        want.extend(row.iter().zip(&w).map(|(v, wv)| v * rstd * (offset + wv)));
    }
    close(&out["Y_ptr"].to_f64_vec(), &want, 1e-5);
    close(&out["RSTD_ptr"].to_f64_vec(), &rstds, 1e-5);
}

#[test]
fn helpers_from_other_modules_compile_from_their_own_sources() {
    // combine: t3(x) + hm.quadruple(x) + hm.FACTOR + double(x), where quadruple (helper_mod.py)
    // calls back into kernel_mod.py's `double`.
    let live = parse_live(&fixture("helpers.json")).unwrap();
    let files: Vec<String> = live.source_files().iter().map(|f| f.path.clone()).collect();
    assert!(files[0].ends_with("src/kernel_mod.py") && files[2].ends_with("src/helper_mod.py"), "{files:?}");
    let n = 70;
    let x = values(n, 3);
    let args = vec![
        ("x_ptr", tensor(DType::F32, &x)),
        ("y_ptr", tensor(DType::F32, &vec![0.0; n])),
        ("n", A::I(n as i64)),
        ("BLOCK", A::C(ConstValue::int(32))),
    ];
    let c = compile_live(&live, &args).unwrap();
    let text = print_module(&c.module, &PrintOptions::with_locs());
    // Each helper is an IR function located in its own file (helper_mod.py is file 2).
    assert!(
        text.contains("func @triple") && text.contains("func @quadruple") && text.contains("func @double"),
        "{text}"
    );
    assert!(text.contains("loc(2:11:"), "triple's body is at helper_mod.py:11\n{text}");
    let (out, _) = run_compiled(&c, &args, [3, 1, 1]);
    let want: Vec<f64> = x.iter().map(|v| 9.0 * v + 3.0).collect();
    close(&out["y_ptr"].to_f64_vec(), &want, 1e-6);
}

#[test]
fn kernels_made_at_run_time_compile_closures_exec_and_patched_source() {
    let n = 100;
    let x = values(n, 4);
    let run = |name: &str, args: Vec<(&str, A)>, grid: u32| {
        let live = parse_live(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let c = compile_live(&live, &args).unwrap_or_else(|e| panic!("{name}: {e}"));
        (run_compiled(&c, &args, [grid, 1, 1]).0, print_module(&c.module, &PrintOptions::with_locs()))
    };
    // A closure over `block` = 64 and `scale` = 2.5; its source is indented (inside make_scaler).
    let (out, text) = run(
        "closure.json",
        vec![("x_ptr", tensor(DType::F32, &x)), ("y_ptr", tensor(DType::F32, &vec![0.0; n])), ("n", A::I(n as i64))],
        2,
    );
    close(&out["y_ptr"].to_f64_vec(), &x.iter().map(|v| v * 2.5).collect::<Vec<_>>(), 1e-6);
    // Locations are the real file's: the store is at factories.py:13, column 9.
    assert!(text.contains("loc(13:9)"), "{text}");
    // exec'd from a string registered with linecache, WIDTH = 32.
    let (out, _) = run(
        "generated.json",
        vec![("y_ptr", tensor(DType::F32, &vec![0.0; n])), ("n", A::I(n as i64)), ("value", A::F(1.5))],
        4,
    );
    assert_eq!(out["y_ptr"].to_f64_vec(), vec![1.5; n]);
    // Text-patched after definition: `x + 1.0` became `x + 100.0`.
    let (out, _) = run(
        "patched.json",
        vec![
            ("x_ptr", tensor(DType::F32, &x)),
            ("y_ptr", tensor(DType::F32, &vec![0.0; n])),
            ("n", A::I(n as i64)),
            ("BLOCK", A::C(ConstValue::int(128))),
        ],
        1,
    );
    close(&out["y_ptr"].to_f64_vec(), &x.iter().map(|v| v + 100.0).collect::<Vec<_>>(), 1e-6);
}

fn closure_args() -> Vec<(&'static str, A)> {
    vec![("x_ptr", ptr(DType::F32)), ("y_ptr", ptr(DType::F32)), ("n", A::I(100))]
}

#[test]
fn an_unusable_global_is_a_diagnostic_at_its_use_in_the_real_file() {
    // Opaque (Python had some object there): error at the use, with the file's line and caret.
    let live =
        edited("closure.json", |v| v["globals"]["scale"] = serde_json::json!({"kind": "opaque", "value": "<Tensor>"}))
            .unwrap();
    let err = compile_live(&live, &closure_args()).unwrap_err();
    assert!(err.contains("global `scale` (the Python value `<Tensor>`) cannot be used inside a kernel"), "{err}");
    assert!(err.contains("factories.py:13:36"), "{err}");
    assert!(err.contains("tl.store(y_ptr + offs, x * scale, mask=offs < n)"), "{err}");
    // Unknown kinds and malformed values make only that name unusable, and say why.
    let live =
        edited("closure.json", |v| v["globals"]["scale"] = serde_json::json!({"kind": "frobnicate", "value": 1}))
            .unwrap();
    let err = compile_live(&live, &closure_args()).unwrap_err();
    assert!(err.contains("global `scale` (its description is malformed: unknown variant `frobnicate`"), "{err}");
    let live =
        edited("closure.json", |v| v["globals"]["block"] = serde_json::json!({"kind": "int", "value": "12x"})).unwrap();
    let err = compile_live(&live, &closure_args()).unwrap_err();
    assert!(err.contains("global `block` (its description is malformed: `12x` is not a decimal int)"), "{err}");
    let live = edited("closure.json", |v| {
        v["globals"]["block"] = serde_json::json!({"kind": "int", "value": "1267650600228229401496703205376000000000"})
    })
    .unwrap();
    let err = compile_live(&live, &closure_args()).unwrap_err();
    assert!(
        err.contains("global `block` (the int 1267650600228229401496703205376000000000, which does not fit"),
        "{err}"
    );
    let live =
        edited("closure.json", |v| v["globals"]["block"] = serde_json::json!({"kind": "jit", "ref": "7"})).unwrap();
    let err = compile_live(&live, &closure_args()).unwrap_err();
    assert!(
        err.contains("global `block` (a reference to jitted function `7`, which the description does not hold)"),
        "{err}"
    );
    // An unused bad global is no error.
    let live = edited("closure.json", |v| v["globals"]["unused"] = serde_json::json!({"kind": "?"})).unwrap();
    compile_live(&live, &closure_args()).unwrap();
}

#[test]
fn malformed_descriptions_are_errors_naming_the_function() {
    let err = LiveFunction::from_json("{\"name\": ").unwrap_err().render();
    assert!(err.contains("malformed live-function description (not JSON)"), "{err}");
    let err = LiveFunction::from_json("{\"name\": \"k\", \"path\": \"k.py\"}").unwrap_err().render();
    assert!(err.contains("malformed description of live function `k`: missing field `source`"), "{err}");
    let err = LiveFunction::from_json("[1, 2]").unwrap_err().render();
    assert!(err.contains("malformed live-function description"), "{err}");
    let err = edited("closure.json", |v| v["first_line"] = serde_json::json!(0)).unwrap_err().render();
    assert!(err.contains("places its source at line 0, which is out of range"), "{err}");
    let err = edited("closure.json", |v| v["first_line"] = serde_json::json!(4_000_000_000u64)).unwrap_err().render();
    assert!(err.contains("out of range"), "{err}");
    let err = edited("closure.json", |v| v["source"] = serde_json::json!("  \n")).unwrap_err().render();
    assert!(err.contains("the description of `scaler` has no source text"), "{err}");
    let err = edited("closure.json", |v| v["source"] = serde_json::json!("x = 1\n")).unwrap_err().render();
    assert!(err.contains("the source of `scaler` holds no function definition"), "{err}");
    // A nested helper without its source makes only that global unusable.
    let live = edited("helpers.json", |v| {
        v["globals"]["t3"]["value"].as_object_mut().unwrap().remove("source");
    })
    .unwrap();
    let args =
        [("x_ptr", ptr(DType::F32)), ("y_ptr", ptr(DType::F32)), ("n", A::I(7)), ("BLOCK", A::C(ConstValue::int(8)))];
    let err = compile_live(&live, &args).unwrap_err();
    assert!(err.contains("global `t3` (its description is malformed: missing field `source`)"), "{err}");
}

#[test]
fn syntax_errors_point_at_the_real_line_of_the_real_file() {
    // The closure's source with an error on its fourth line (factories.py:12).
    let err = edited("closure.json", |v| {
        let s = v["source"].as_str().unwrap().replace("x = tl.load(", "x = tl.load((");
        v["source"] = serde_json::json!(s);
    })
    .unwrap_err()
    .render();
    assert!(err.contains("syntax error"), "{err}");
    assert!(err.contains("factories.py:12:40"), "{err}");
    // The file text no longer matches the source: the source's own lines are shown.
    assert!(err.contains("tl.load(("), "{err}");
}

#[test]
fn jit_options_and_defaults_from_python_replace_the_source_s() {
    let k = |opts: serde_json::Value, defaults: serde_json::Value| {
        let f = edited("patched.json", |v| {
            v["options"] = opts;
            v["defaults"] = defaults;
        })
        .unwrap();
        f.live_kernel().unwrap().clone()
    };
    let info = k(serde_json::json!({"do_not_specialize": [2, "x_ptr"], "debug": true}), serde_json::json!({}));
    assert_eq!(info.do_not_specialize, ["n", "x_ptr"]);
    assert!(info.param("n").unwrap().do_not_specialize && !info.param("y_ptr").unwrap().do_not_specialize);
    assert_eq!(info.debug, Some(true));
    let info = k(
        serde_json::json!({}),
        serde_json::json!({"BLOCK": {"kind": "constexpr", "value": {"kind": "int", "value": "64"}}}),
    );
    let p = info.param("BLOCK").unwrap();
    assert!(p.has_default && p.default == Some(ConstValue::int(64)));
}
