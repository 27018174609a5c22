//! Our own held-out kernels (tests/heldout/*.py at the repository root) against the outputs
//! Triton's interpreter gave for them (tests/heldout/data/*.txt, written by
//! scripts/heldout_gen.py). Each kernel covers constructs that real-world kernels written by
//! other people needed; tests/heldout/README.md says which.

mod common;
use common::*;
use std::path::PathBuf;
use trident_core::{DType, HostTensor};
use trident_front::{parse_file, ConstValue};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/heldout")
}

fn parse_tensor(dtype: &str, shape: &str, lines: &mut std::str::Lines) -> HostTensor {
    let d = DType::parse(dtype).unwrap_or_else(|| panic!("dtype {dtype}"));
    let shape: Vec<usize> = shape.split('x').map(|s| s.parse().expect("dim")).collect();
    let mut t = HostTensor::zeros(d, &shape);
    let w = d.size_bytes();
    for i in 0..t.numel() {
        let bits = u64::from_str_radix(lines.next().expect("value").trim(), 16).expect("hex");
        t.data[i * w..(i + 1) * w].copy_from_slice(&bits.to_le_bytes()[..w]);
    }
    t
}

/// A scalar argument: a constexpr if the parameter is one, else a runtime value.
fn scalar(text: &str, constexpr: bool) -> A {
    let c = match text {
        "True" | "true" => ConstValue::Bool(true),
        "False" | "false" => ConstValue::Bool(false),
        _ => match text.parse::<i64>() {
            Ok(i) => ConstValue::Int(i as i128),
            Err(_) => ConstValue::Float(text.parse().unwrap_or_else(|_| panic!("scalar {text}"))),
        },
    };
    match (constexpr, c) {
        (true, c) => A::C(c),
        (false, ConstValue::Bool(b)) => A::B(b),
        (false, ConstValue::Int(i)) => A::I(i as i64),
        (false, ConstValue::Float(f)) => A::F(f),
        (false, other) => panic!("scalar {other:?}"),
    }
}

fn check(file: &str, case: &str) {
    let path = root().join(file).display().to_string();
    let src = std::fs::read_to_string(&path).unwrap();
    let data = std::fs::read_to_string(root().join("data").join(format!("{case}.txt"))).unwrap();
    let parsed = parse_file(&path, &src).expect("parse");
    let mut lines = data.lines();
    let mut kernel = String::new();
    let mut grid = [1u32; 3];
    let mut args: Vec<(String, A)> = vec![];
    let mut outs = vec![];
    while let Some(l) = lines.next() {
        let f: Vec<&str> = l.split_whitespace().collect();
        match f[0] {
            "kernel" => kernel = f[1].to_string(),
            "grid" => grid = [f[1].parse().unwrap(), f[2].parse().unwrap(), f[3].parse().unwrap()],
            "in" => {
                let t = parse_tensor(f[2], f[3], &mut lines);
                args.push((f[1].to_string(), A::T(t)));
            }
            "scalar" => {
                let k = parsed.kernel(&kernel).expect("kernel");
                let constexpr = k.param(f[1]).is_some_and(|p| p.is_constexpr);
                args.push((f[1].to_string(), scalar(f[2], constexpr)));
            }
            "out" => {
                let t = parse_tensor(f[2], f[3], &mut lines);
                outs.push((f[1].to_string(), t, f[4].parse::<f64>().unwrap(), f[5].parse::<f64>().unwrap()));
            }
            other => panic!("{case}: bad line `{other}`"),
        }
    }
    let refs: Vec<(&str, A)> = args.iter().map(|(k, a)| (k.as_str(), a.clone())).collect();
    let got = run_full_at(&path, &src, &kernel, &refs, grid).0;
    for (name, want, rtol, atol) in &outs {
        let g = &got[name];
        assert_eq!(g.numel(), want.numel(), "{case}: {name}: element count");
        for i in 0..want.numel() {
            let (x, w) = (g.get_f64(i), want.get_f64(i));
            let ok = if *rtol == 0.0 && *atol == 0.0 {
                g.get_bits(i) == want.get_bits(i) || (x.is_nan() && w.is_nan())
            } else {
                (x - w).abs() <= atol + rtol * w.abs() || (x.is_nan() && w.is_nan()) || x == w
            };
            assert!(ok, "{case}: {name}[{i}]: Trident {x}, Triton {w}");
        }
    }
}

macro_rules! heldout {
    ($($name:ident: $file:literal, $case:literal;)*) => {
        $(#[test] fn $name() { check($file, $case); })*
    };
}

heldout! {
    blockptr_rowsums: "block_pointers.py", "blockptr-rowsums";
    blockptr_rowsums_transposed: "block_pointers.py", "blockptr-rowsums-t";
    blockptr_nan_padding: "block_pointers.py", "blockptr-nan";
    blockptr_through_helper: "block_pointers.py", "blockptr-helper";
    descriptor_copy: "block_pointers.py", "descriptor-copy";
    descriptor_copy_nan: "block_pointers.py", "descriptor-copy-nan";
    module_level_if: "module_level.py", "module-level-if";
    project_imports: "projlike/ops/kernels.py", "project-imports";
    helpers_rowmax_f16: "constexpr_helpers.py", "helpers-rowmax-f16";
    helpers_rowmax_i16: "constexpr_helpers.py", "helpers-rowmax-i16";
    helpers_item: "constexpr_helpers.py", "helpers-item";
    host_code_configs: "host_code.py", "host-code-configs";
    merge_tuple_partly_changed: "branch_merges.py", "merge-tuple-partly";
    merge_block_ptr_chosen_at_run_time: "branch_merges.py", "merge-block-ptr";
    gather_both_axes: "gather_histogram.py", "gather-both-axes";
    histogram_masked: "gather_histogram.py", "histogram-masked";
    project_reexported_tl: "projlike/ops/reexported.py", "project-reexported-tl";
}

/// The autotune configs of host_code.py come from host code Trident evaluates: platform queries
/// (answered as an sm_90 CUDA device) and a filter written as a plain function.
#[test]
fn host_code_autotune_configs_evaluate() {
    let path = root().join("host_code.py").display().to_string();
    let src = std::fs::read_to_string(&path).unwrap();
    let file = parse_file(&path, &src).expect("parse");
    let at = file.kernel("row_scale").unwrap().autotune.as_ref().expect("autotune");
    let configs = at.configs.as_ref().unwrap_or_else(|d| panic!("configs: {}", d.message));
    // 3 ROWS x 3 COLS x 2 warps x 2 stages = 36, minus the (64, 128) ones with 4 warps.
    assert_eq!(configs.len(), 34);
    assert!(configs
        .iter()
        .all(|c| c.num_warps == 8 || c.kwargs.iter().map(|(_, v)| v.as_int().unwrap()).product::<i128>() <= 64 * 64));
}

/// Autotune configs returned by a plain function of another file of the project.
#[test]
fn configs_from_a_function_of_another_file() {
    let path = root().join("projlike/ops/kernels.py").display().to_string();
    let src = std::fs::read_to_string(&path).unwrap();
    let file = parse_file(&path, &src).expect("parse");
    let at = file.kernel("scaled_copy").unwrap().autotune.as_ref().expect("autotune");
    let configs = at.configs.as_ref().unwrap_or_else(|d| panic!("configs: {}", d.message));
    let got: Vec<(i128, u32)> = configs.iter().map(|c| (c.kwargs[0].1.as_int().unwrap(), c.num_warps)).collect();
    assert_eq!(got, vec![(32, 2), (32, 4), (64, 2), (64, 4), (128, 2)]);
    assert!(configs.iter().all(|c| c.kwargs[0].0 == "BLOCK_N"));
}
