//! The catalog is consistent with the kernel sources, its references run, and
//! `check` accepts the reference (rounded to the output dtype) and rejects corruptions.

use std::collections::HashSet;

use trident_core::{DType, HostTensor};
use trident_runtime::args::ArgValue;
use trident_testkit::{cases, check, Case, Check, MismatchReason, TensorList};

/// The parameter names of `def NAME(...)` in a Python source (annotations and defaults dropped).
fn kernel_params(source: &str, kernel: &str) -> Option<Vec<String>> {
    let start = source.find(&format!("def {kernel}("))? + kernel.len() + 5;
    let end = start + source[start..].find("):")?;
    Some(
        source[start..end]
            .split(',')
            .map(|p| p.split([':', '=']).next().unwrap_or("").trim().to_string())
            .filter(|p| !p.is_empty())
            .collect(),
    )
}

/// The expected outputs rounded to each output's dtype, as a perfect kernel would store them.
fn rounded_expected(case: &Case, inputs: &[trident_runtime::Arg]) -> TensorList {
    let want = case.expected(inputs).unwrap();
    want.into_iter()
        .map(|(name, t)| {
            let dt = inputs.iter().find(|a| a.name == name).unwrap().value.as_tensor().unwrap().dtype;
            (name, HostTensor::from_f64(dt, &t.shape, &t.to_f64_vec()))
        })
        .collect()
}

#[test]
fn cases_match_kernel_signatures() {
    let all = cases();
    assert!(all.len() >= 40, "only {} cases", all.len());
    let mut names = HashSet::new();
    for case in &all {
        assert!(names.insert(case.name.clone()), "duplicate case name {}", case.name);
        let params = kernel_params(case.source, case.kernel)
            .unwrap_or_else(|| panic!("{}: no `def {}(` in {}", case.name, case.kernel, case.file));
        let given: Vec<String> = case.arg_specs().unwrap().into_iter().map(|s| s.name).collect();
        assert_eq!(given, params, "{}: arguments differ from the kernel's parameters", case.name);
        for o in &case.outputs {
            assert!(given.contains(&o.name), "{}: output {} is not an argument", case.name, o.name);
        }
        assert!(case.grid.programs() >= 1);
        assert!(case.kernel_path().exists(), "{}", case.kernel_path().display());
    }
}

#[test]
fn every_kernel_file_and_public_kernel_has_cases() {
    let all = cases();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kernels");
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let fname = path.file_name().unwrap().to_string_lossy().to_string();
        if path.extension().is_none_or(|e| e != "py") || fname == "check_with_oracle.py" {
            continue;
        }
        files += 1;
        let source = std::fs::read_to_string(&path).unwrap();
        // Every public @triton.jit function (helpers start with `_`) must be launched by some case.
        let mut lines = source.lines().peekable();
        while let Some(line) = lines.next() {
            if line.starts_with("@triton.jit") {
                let def = lines.peek().copied().unwrap_or("");
                let kernel = def.trim_start_matches("def ").split('(').next().unwrap_or("");
                if !kernel.starts_with('_') {
                    assert!(
                        all.iter().any(|c| c.file.ends_with(&fname) && c.kernel == kernel),
                        "no case launches {fname}::{kernel}"
                    );
                }
            }
        }
    }
    assert_eq!(files, 15);
}

#[test]
fn generation_is_deterministic_per_seed() {
    let case = &cases()[1];
    let a = case.materialize(0).unwrap();
    assert_eq!(a, case.materialize(0).unwrap());
    assert_ne!(a, case.materialize(1).unwrap());
}

#[test]
fn references_write_every_output() {
    for case in cases() {
        let inputs = case.materialize(0).unwrap();
        let want = case.expected(&inputs).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        for o in &case.outputs {
            let initial = inputs.iter().find(|a| a.name == o.name).unwrap().value.as_tensor().unwrap();
            let (_, w) = want.iter().find(|(n, _)| *n == o.name).expect("reference returns every output");
            assert_eq!(w.shape, initial.shape, "{} {}", case.name, o.name);
            let written = (0..w.numel()).filter(|&i| w.get_f64(i).to_bits() != initial.get_f64(i).to_bits()).count();
            assert!(written > 0, "{}: reference leaves {} untouched", case.name, o.name);
            let finite = (0..w.numel()).filter(|&i| w.get_f64(i).is_finite()).count();
            assert!(finite > 0, "{}: {} has no finite values", case.name, o.name);
        }
    }
}

#[test]
fn check_accepts_the_reference_rounded_to_the_output_dtype() {
    for case in cases() {
        let inputs = case.materialize(3).unwrap();
        let outputs = rounded_expected(&case, &inputs);
        let report = check(&case, &inputs, &outputs).unwrap_or_else(|m| panic!("{m}"));
        assert_eq!(report.outputs.len(), case.outputs.len());
    }
}

#[test]
fn check_rejects_a_corrupted_element_and_names_it() {
    for case in cases() {
        let inputs = case.materialize(0).unwrap();
        let mut outputs = rounded_expected(&case, &inputs);
        let name = outputs[0].0.clone();
        let t = &mut outputs[0].1;
        // Corrupt the last finite non-zero element (dropout zeros are skipped: 0 is a legal value there).
        let Some(i) = (0..t.numel()).rev().find(|&i| t.get_f64(i).is_finite() && t.get_f64(i) != 0.0) else {
            continue;
        };
        let v = t.get_f64(i);
        let bad = if t.dtype.is_int() {
            if v > 0.0 {
                v - 1.0
            } else {
                v + 1.0
            }
        } else {
            v * 1.5 + 1.0
        };
        t.set_f64(i, bad);
        let shape = t.shape.clone();
        let err = check(&case, &inputs, &outputs).expect_err(&case.name);
        assert_eq!(err.output, name, "{}", case.name);
        match &err.reason {
            MismatchReason::Values(v) => assert_eq!(v.first_bad, trident_testkit::compare::unravel(i, &shape)),
            MismatchReason::Dropout(m) => assert!(!m.is_empty()),
            r => panic!("{}: unexpected {r:?}", case.name),
        }
    }
}

#[test]
fn check_rejects_stores_outside_the_written_region() {
    let case = cases().into_iter().find(|c| c.name == "softmax/f32/6x40-stride48").unwrap();
    let inputs = case.materialize(0).unwrap();
    let mut outputs = rounded_expected(&case, &inputs);
    outputs[0].1.set_f64(45, 0.0); // row 0, column 45: padding the kernel must not touch
    let err = check(&case, &inputs, &outputs).unwrap_err();
    let MismatchReason::Values(v) = &err.reason else { panic!("{err}") };
    assert_eq!(v.first_bad, vec![0, 45]);
}

#[test]
fn check_reports_missing_outputs_and_wrong_dtypes() {
    let case = cases().into_iter().find(|c| c.name.starts_with("vector_add/f16")).unwrap();
    let inputs = case.materialize(0).unwrap();
    assert!(matches!(check(&case, &inputs, &[]).unwrap_err().reason, MismatchReason::Missing));
    let ArgValue::Tensor(out) = &inputs[2].value else { panic!() };
    let wrong = HostTensor::zeros(DType::F32, &out.shape);
    let err = check(&case, &inputs, &[("out".into(), wrong)]).unwrap_err();
    assert!(matches!(err.reason, MismatchReason::DType { got: DType::F32, want: DType::F16 }), "{err}");
}

#[test]
fn dropout_with_another_generator_is_caught_as_a_mask_mismatch() {
    let case = cases().into_iter().find(|c| c.name.starts_with("dropout/f32/1000")).unwrap();
    let Check::Dropout { p, .. } = case.outputs[0].check else { panic!() };
    let inputs = case.materialize(0).unwrap();
    let x = inputs[0].value.as_tensor().unwrap();
    // A plausible dropout with the right rate and scaling but its own random numbers.
    let mut out = HostTensor::zeros(DType::F32, &x.shape);
    let mut state = 12345u64;
    for i in 0..x.numel() {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let r = (state >> 40) as f64 / (1u64 << 24) as f64;
        if r > p {
            out.set_f64(i, x.get_f64(i) / (1.0 - p as f32 as f64));
        }
    }
    let err = check(&case, &inputs, &[("out".into(), out)]).unwrap_err();
    let MismatchReason::Dropout(m) = &err.reason else { panic!("{err}") };
    assert!(m.contains("Philox"), "{m}");
}
