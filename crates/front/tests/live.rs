//! Live functions (`trident_front::live`): kernels described by Python (source, position, resolved
//! globals) compile exactly like the same kernels parsed from their files, and bad descriptions
//! give diagnostics that name what is wrong.

mod common;

use common::{arg_info, A};
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

fn load_fixture(name: &str) -> LiveFunction {
    let path = root().join("crates/front/tests/data/live").join(name);
    let json = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    LiveFunction::from_json(&json).unwrap_or_else(|e| panic!("{name}: {e}"))
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
    let cases: Vec<(&str, &str, Vec<(&str, A)>)> = vec![
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
