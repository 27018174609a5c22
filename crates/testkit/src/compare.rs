//! Comparing a kernel's outputs with the reference.

use std::fmt;

use trident_core::{DType, HostTensor};
use trident_runtime::args::Arg;

use crate::case::{Case, Check, Elements, Tolerance};

/// How well one output matched.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputReport {
    /// The output argument's name.
    pub name: String,
    /// Largest `|got - want|` over elements where both are finite.
    pub max_abs: f64,
    /// Largest `|got - want| / |want|` over elements where both are finite and `want != 0`.
    pub max_rel: f64,
    /// Number of elements compared.
    pub elements: usize,
}

/// A passing comparison: one report per output.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// The case's name.
    pub case: String,
    /// One report per checked output, in the case's order.
    pub outputs: Vec<OutputReport>,
}

impl Report {
    /// The largest absolute error over all outputs.
    pub fn max_abs(&self) -> f64 {
        self.outputs.iter().map(|o| o.max_abs).fold(0.0, f64::max)
    }

    /// The largest relative error over all outputs.
    pub fn max_rel(&self) -> f64 {
        self.outputs.iter().map(|o| o.max_rel).fold(0.0, f64::max)
    }
}

/// A failing comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct Mismatch {
    /// The case's name.
    pub case: String,
    /// The output argument concerned (empty when the failure is not about one output).
    pub output: String,
    /// What is wrong.
    pub reason: MismatchReason,
}

/// Why a comparison failed.
#[derive(Clone, Debug, PartialEq)]
pub enum MismatchReason {
    /// The reference could not be computed.
    Reference(String),
    /// The output is missing from what the kernel run returned (or from the reference).
    Missing,
    /// The output has the wrong shape.
    Shape {
        /// The output's shape.
        got: Vec<usize>,
        /// The reference's shape.
        want: Vec<usize>,
    },
    /// The output has the wrong element type.
    DType {
        /// The output's dtype.
        got: DType,
        /// The dtype the argument was declared with.
        want: DType,
    },
    /// Some elements are off.
    Values(Box<ValueMismatch>),
    /// A dropout output has the wrong structure or statistics.
    Dropout(String),
}

/// Details of element-wise disagreement.
#[derive(Clone, Debug, PartialEq)]
pub struct ValueMismatch {
    /// Largest `|got - want|` over finite elements.
    pub max_abs: f64,
    /// Largest `|got - want| / |want|` over finite, non-zero `want`.
    pub max_rel: f64,
    /// How many elements are outside tolerance, of how many.
    pub bad: usize,
    /// Number of elements compared.
    pub elements: usize,
    /// The first bad element: its multi-index, and the values there.
    pub first_bad: Vec<usize>,
    /// The output's value at `first_bad`.
    pub got: f64,
    /// The reference's value at `first_bad`.
    pub want: f64,
    /// `None` for exact comparison.
    pub tolerance: Option<Tolerance>,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.case)?;
        if !self.output.is_empty() {
            write!(f, ", output `{}`", self.output)?;
        }
        match &self.reason {
            MismatchReason::Reference(m) => write!(f, ": reference failed: {m}"),
            MismatchReason::Missing => write!(f, ": missing"),
            MismatchReason::Shape { got, want } => write!(f, ": shape {got:?}, expected {want:?}"),
            MismatchReason::DType { got, want } => write!(f, ": dtype {got}, expected {want}"),
            MismatchReason::Dropout(m) => write!(f, ": {m}"),
            MismatchReason::Values(v) => {
                write!(
                    f,
                    ": {} of {} elements differ; first at {:?}: got {}, want {}; max abs err {:.3e}, max rel err {:.3e}",
                    v.bad, v.elements, v.first_bad, v.got, v.want, v.max_abs, v.max_rel
                )?;
                match v.tolerance {
                    Some(t) => write!(f, " (atol {:e}, rtol {:e})", t.atol, t.rtol),
                    None => write!(f, " (exact)"),
                }
            }
        }
    }
}

impl std::error::Error for Mismatch {}

/// Checks a kernel run: `inputs` are the arguments as they were before the
/// launch (the reference is computed from them), `outputs` the output tensors
/// after it (extra entries are ignored). Returns per-output error figures on
/// success, the first failing output otherwise.
pub fn check(case: &Case, inputs: &[Arg], outputs: &[(String, HostTensor)]) -> Result<Report, Mismatch> {
    let mismatch = |output: &str, reason| Mismatch { case: case.name.clone(), output: output.to_string(), reason };
    let expected = case.expected(inputs).map_err(|e| mismatch("", MismatchReason::Reference(e.0)))?;
    let mut reports = Vec::new();
    for oc in &case.outputs {
        let got = outputs.iter().find(|(n, _)| *n == oc.name).map(|(_, t)| t);
        let want = expected.iter().find(|(n, _)| *n == oc.name).map(|(_, t)| t);
        let (Some(got), Some(want)) = (got, want) else {
            return Err(mismatch(&oc.name, MismatchReason::Missing));
        };
        let declared = inputs.iter().find(|a| a.name == oc.name).and_then(|a| a.value.as_tensor());
        if let Some(d) = declared {
            if d.dtype != got.dtype {
                return Err(mismatch(&oc.name, MismatchReason::DType { got: got.dtype, want: d.dtype }));
            }
        }
        let report = match &oc.check {
            Check::Exact => compare_values(&oc.name, got, want, None),
            Check::Close(tol) => compare_values(&oc.name, got, want, Some(*tol)),
            Check::Dropout { input, p, tol } => {
                let x =
                    inputs.iter().find(|a| a.name == *input).and_then(|a| a.value.as_tensor()).ok_or_else(|| {
                        mismatch(&oc.name, MismatchReason::Reference(format!("no input tensor `{input}`")))
                    })?;
                if let Err(m) = check_dropout(got, want, x, *p, *tol) {
                    return Err(mismatch(&oc.name, MismatchReason::Dropout(m)));
                }
                match compare_values(&oc.name, got, want, Some(*tol)) {
                    Err(Mismatch { reason: MismatchReason::Values(v), .. }) => Err(mismatch(
                        &oc.name,
                        MismatchReason::Dropout(format!(
                            "keep rate and structure are right, but the mask differs from Triton's \
                             tl.rand (Philox) at {:?}: got {}, want {} ({} of {} elements differ)",
                            v.first_bad, v.got, v.want, v.bad, v.elements
                        )),
                    )),
                    other => other,
                }
            }
        };
        reports.push(report.map_err(|m| Mismatch { case: case.name.clone(), ..m })?);
    }
    Ok(Report { case: case.name.clone(), outputs: reports })
}

/// [`check`] with the outputs taken from the arguments as they are after the launch.
pub fn check_args(case: &Case, before: &[Arg], after: &[Arg]) -> Result<Report, Mismatch> {
    let outputs: Vec<(String, HostTensor)> = after
        .iter()
        // A host descriptor's output is the tensor it describes.
        .filter_map(|a| a.value.as_tensor().map(|t| (a.name.clone(), t.clone())))
        .collect();
    check(case, before, &outputs)
}

/// Element-wise comparison of `got` with `want` (exact when `tol` is `None`).
/// The returned mismatch has an empty case name, filled in by the caller.
pub fn compare_values(
    name: &str,
    got: &HostTensor,
    want: &HostTensor,
    tol: Option<Tolerance>,
) -> Result<OutputReport, Mismatch> {
    let fail = |reason| Mismatch { case: String::new(), output: name.to_string(), reason };
    if got.shape != want.shape {
        return Err(fail(MismatchReason::Shape { got: got.shape.clone(), want: want.shape.clone() }));
    }
    let n = got.numel();
    let (mut max_abs, mut max_rel, mut bad, mut first) = (0.0f64, 0.0f64, 0usize, None);
    for i in 0..n {
        let (g, w) = (got.get_f64(i), want.get_f64(i));
        let ok = if w.is_nan() || g.is_nan() {
            w.is_nan() && g.is_nan()
        } else if w.is_infinite() || g.is_infinite() {
            g == w
        } else {
            let d = (g - w).abs();
            max_abs = max_abs.max(d);
            if w != 0.0 {
                max_rel = max_rel.max(d / w.abs());
            }
            match tol {
                None => g == w,
                Some(t) => d <= t.atol + t.rtol * w.abs(),
            }
        };
        if !ok {
            bad += 1;
            first.get_or_insert((i, g, w));
        }
    }
    match first {
        None => Ok(OutputReport { name: name.to_string(), max_abs, max_rel, elements: n }),
        Some((i, g, w)) => Err(fail(MismatchReason::Values(Box::new(ValueMismatch {
            max_abs,
            max_rel,
            bad,
            elements: n,
            first_bad: unravel(i, &got.shape),
            got: g,
            want: w,
            tolerance: tol,
        })))),
    }
}

/// The multi-index of flat (row-major) index `i` in `shape`.
pub fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for k in (0..shape.len()).rev() {
        let d = shape[k].max(1);
        idx[k] = i % d;
        i /= d;
    }
    idx
}

/// Checks what must hold for any correct dropout, whatever its random numbers:
/// every element is 0 or `x / (1 - p)`, and the fraction kept is within six
/// standard deviations of `1 - p`. Elements where `x == 0` or `want` is NaN
/// (untouched) tell nothing and are skipped.
fn check_dropout(got: &HostTensor, want: &HostTensor, x: &HostTensor, p: f64, tol: Tolerance) -> Result<(), String> {
    if got.shape != want.shape || x.numel() < got.numel() {
        return Err(format!("shape {:?} does not match the reference {:?}", got.shape, want.shape));
    }
    let scale = 1.0 / (1.0 - p);
    let (mut kept, mut seen) = (0usize, 0usize);
    for i in 0..got.numel() {
        let (g, w) = (got.get_f64(i), want.get_f64(i));
        let xv = x.at(i).map_err(|e| e.0)?;
        if w.is_nan() || xv == 0.0 {
            continue;
        }
        seen += 1;
        let scaled = xv * scale;
        if g == 0.0 {
            continue;
        }
        if (g - scaled).abs() <= tol.atol + tol.rtol * scaled.abs() {
            kept += 1;
        } else {
            return Err(format!(
                "element {:?} is {g}: neither dropped (0) nor x/(1-p) = {scaled}",
                unravel(i, &got.shape)
            ));
        }
    }
    if seen >= 100 {
        let (n, q) = (seen as f64, 1.0 - p);
        let sigma = (n * q * p).sqrt().max(1.0);
        if (kept as f64 - n * q).abs() > 6.0 * sigma {
            return Err(format!("kept {kept} of {seen} elements; expected about {:.0} for p = {p}", n * q));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: &[f64]) -> HostTensor {
        HostTensor::from_f64(DType::F64, &[v.len()], v)
    }

    #[test]
    fn close_and_exact() {
        let r = compare_values(
            "y",
            &t(&[1.0, 2.0, f64::NAN]),
            &t(&[1.0, 2.001, f64::NAN]),
            Some(Tolerance::new(0.0, 1e-3)),
        )
        .unwrap();
        assert!((r.max_abs - 0.001).abs() < 1e-12);
        let e = compare_values("y", &t(&[1.0, 2.0]), &t(&[1.0, 2.001]), None).unwrap_err();
        let MismatchReason::Values(v) = &e.reason else { panic!() };
        assert_eq!((v.bad, v.first_bad.clone(), v.got), (1, vec![1], 2.0));
    }

    #[test]
    fn nan_where_a_value_is_expected_fails() {
        let e = compare_values("y", &t(&[f64::NAN]), &t(&[1.0]), Some(Tolerance::new(1.0, 1.0))).unwrap_err();
        assert!(matches!(e.reason, MismatchReason::Values(_)));
        let e = compare_values("y", &t(&[0.0]), &t(&[f64::NAN]), Some(Tolerance::new(1.0, 1.0))).unwrap_err();
        assert!(matches!(e.reason, MismatchReason::Values(_)));
        assert!(compare_values("y", &t(&[f64::INFINITY]), &t(&[f64::INFINITY]), None).is_ok());
    }

    #[test]
    fn first_bad_index_is_a_multi_index() {
        let got = HostTensor::from_f64(DType::F32, &[2, 3], &[0., 0., 0., 0., 9., 0.]);
        let want = HostTensor::from_f64(DType::F64, &[2, 3], &[0.; 6]);
        let e = compare_values("c", &got, &want, Some(Tolerance::new(1e-3, 0.0))).unwrap_err();
        let MismatchReason::Values(v) = &e.reason else { panic!() };
        assert_eq!(v.first_bad, vec![1, 1]);
        assert!(e.to_string().contains("[1, 1]"), "{e}");
        let shape = compare_values("c", &got, &t(&[0.0; 6]), None).unwrap_err();
        assert!(matches!(shape.reason, MismatchReason::Shape { .. }));
    }

    #[test]
    fn dropout_structure_and_rate() {
        let n = 1000;
        let x: Vec<f64> = (0..n).map(|i| 1.0 + i as f64 / 100.0).collect();
        let x = t(&x);
        let tol = Tolerance::new(1e-6, 1e-6);
        // Keep every other element at p = 0.5: right structure and rate.
        let good: Vec<f64> = (0..n).map(|i| if i % 2 == 0 { x.get_f64(i) * 2.0 } else { 0.0 }).collect();
        assert!(check_dropout(&t(&good), &t(&good), &x, 0.5, tol).is_ok());
        // Keeping everything is the wrong rate.
        let all: Vec<f64> = (0..n).map(|i| x.get_f64(i) * 2.0).collect();
        assert!(check_dropout(&t(&all), &t(&good), &x, 0.5, tol).unwrap_err().contains("kept 1000"));
        // Unscaled kept values are wrong structure.
        let unscaled: Vec<f64> = (0..n).map(|i| if i % 2 == 0 { x.get_f64(i) } else { 0.0 }).collect();
        assert!(check_dropout(&t(&unscaled), &t(&good), &x, 0.5, tol).unwrap_err().contains("neither"));
    }

    #[test]
    fn unravel_row_major() {
        assert_eq!(unravel(7, &[2, 3, 4]), vec![0, 1, 3]);
        assert_eq!(unravel(0, &[]), Vec::<usize>::new());
    }
}
