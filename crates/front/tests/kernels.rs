//! The project's kernels (kernels/*.py) compiled and run on the interpreter against host references.

mod common;
use common::*;
use trident_core::{DType, HostTensor};

fn kernel_src(name: &str) -> String {
    let path = format!("{}/../../kernels/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn vector_add() {
    let src = kernel_src("vector_add.py");
    let mut rng = Rng::new(1);
    let n = 1000;
    let x = rng.tensor(DType::F32, &[n]);
    let y = rng.tensor(DType::F32, &[n]);
    let out = run(
        &src,
        "add_kernel",
        &[
            ("x", A::T(x.clone())),
            ("y", A::T(y.clone())),
            ("out", A::T(poison(DType::F32, &[n]))),
            ("n_elements", A::I(n as i64)),
            ("BLOCK", cint(256)),
        ],
        [4, 1, 1],
    );
    let want: Vec<f64> = (0..n).map(|i| (x.get_f64(i) as f32 + y.get_f64(i) as f32) as f64).collect();
    assert_close(&out["out"], &want, 0.0, 0.0);
}

#[test]
fn softmax_rows() {
    let src = kernel_src("softmax.py");
    let mut rng = Rng::new(2);
    let (rows, cols) = (5, 100);
    let x = rng.tensor(DType::F32, &[rows, cols]);
    let out = run(
        &src,
        "softmax_kernel",
        &[
            ("x", A::T(x.clone())),
            ("y", A::T(poison(DType::F32, &[rows, cols]))),
            ("x_row_stride", A::I(cols as i64)),
            ("y_row_stride", A::I(cols as i64)),
            ("n_cols", A::I(cols as i64)),
            ("BLOCK", cint(128)),
        ],
        [rows as u32, 1, 1],
    );
    let mut want = vec![];
    for r in 0..rows {
        let row: Vec<f64> = (0..cols).map(|c| x.get_f64(r * cols + c)).collect();
        let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = row.iter().map(|v| (v - m).exp()).sum();
        want.extend(row.iter().map(|v| (v - m).exp() / s));
    }
    assert_close(&out["y"], &want, 1e-5, 1e-6);
}

fn matmul_ref(a: &HostTensor, b: &HostTensor, m: usize, n: usize, k: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut s = 0.0;
            for p in 0..k {
                s += a.get_f64(i * k + p) * b.get_f64(p * n + j);
            }
            c[i * n + j] = s;
        }
    }
    c
}

#[test]
fn matmul_with_helper_and_edges() {
    let src = kernel_src("matmul.py");
    let mut rng = Rng::new(3);
    let (m, n, k) = (70, 50, 40);
    let a = rng.tensor(DType::F16, &[m, k]);
    let b = rng.tensor(DType::F16, &[k, n]);
    let args = |c: HostTensor| {
        vec![
            ("a", A::T(a.clone())),
            ("b", A::T(b.clone())),
            ("c", A::T(c)),
            ("M", A::I(m as i64)),
            ("N", A::I(n as i64)),
            ("K", A::I(k as i64)),
            ("stride_am", A::I(k as i64)),
            ("stride_ak", A::I(1)),
            ("stride_bk", A::I(n as i64)),
            ("stride_bn", A::I(1)),
            ("stride_cm", A::I(n as i64)),
            ("stride_cn", A::I(1)),
            ("BLOCK_M", cint(32)),
            ("BLOCK_N", cint(32)),
            ("BLOCK_K", cint(16)),
            ("GROUP_M", cint(2)),
        ]
    };
    let out = run(&src, "matmul_kernel", &args(poison(DType::F32, &[m, n])), [(3 * 2) as u32, 1, 1]);
    let want = matmul_ref(&a, &b, m, n, k);
    assert_close(&out["c"], &want, 1e-3, 1e-3);
}

#[test]
fn cumsum_rows() {
    let src = kernel_src("cumsum.py");
    let mut rng = Rng::new(4);
    let (m, n) = (6, 37);
    let x = rng.tensor(DType::I32, &[m, n]);
    let out = run(
        &src,
        "cumsum_kernel",
        &[
            ("x", A::T(x.clone())),
            ("y", A::T(poison(DType::I32, &[m, n]))),
            ("M", A::I(m as i64)),
            ("N", A::I(n as i64)),
            ("stride_xm", A::I(n as i64)),
            ("stride_ym", A::I(n as i64)),
            ("BLOCK_M", cint(4)),
            ("BLOCK_N", cint(64)),
        ],
        [2, 1, 1],
    );
    let mut want = vec![];
    for r in 0..m {
        let mut s = 0.0;
        for c in 0..n {
            s += x.get_f64(r * n + c);
            want.push(s);
        }
    }
    assert_close(&out["y"], &want, 0.0, 0.0);
}

#[test]
fn flash_attention_causal_matches_reference() {
    let src = kernel_src("flash_attention.py");
    let mut rng = Rng::new(5);
    let (z, h, nctx, d) = (1, 2, 40, 16);
    let shape = [z, h, nctx, d];
    let q = rng.tensor(DType::F16, &shape);
    let k = rng.tensor(DType::F16, &shape);
    let v = rng.tensor(DType::F16, &shape);
    let sm = 0.25;
    let (s3, s2, s1) = ((h * nctx * d) as i64, (nctx * d) as i64, d as i64);
    let mut args = vec![
        ("q", A::T(q.clone())),
        ("k", A::T(k.clone())),
        ("v", A::T(v.clone())),
        ("o", A::T(poison(DType::F16, &shape))),
        ("sm_scale", A::F(sm)),
    ];
    for p in ["q", "k", "v", "o"] {
        let names: [&'static str; 4] = match p {
            "q" => ["stride_qz", "stride_qh", "stride_qm", "stride_qd"],
            "k" => ["stride_kz", "stride_kh", "stride_kn", "stride_kd"],
            "v" => ["stride_vz", "stride_vh", "stride_vn", "stride_vd"],
            _ => ["stride_oz", "stride_oh", "stride_om", "stride_od"],
        };
        for (nm, s) in names.into_iter().zip([s3, s2, s1, 1]) {
            args.push((nm, A::I(s)));
        }
    }
    args.extend([
        ("H", A::I(h as i64)),
        ("N_CTX", A::I(nctx as i64)),
        ("BLOCK_M", cint(16)),
        ("BLOCK_N", cint(16)),
        ("HEAD_DIM", cint(d as i64)),
        ("IS_CAUSAL", A::C(trident_front::ConstValue::Bool(true))),
    ]);
    let out = run(&src, "attn_fwd", &args, [3, (z * h) as u32, 1]);
    let mut want = vec![];
    for bh in 0..z * h {
        let base = bh * nctx * d;
        for i in 0..nctx {
            let scores: Vec<f64> = (0..=i)
                .map(|j| (0..d).map(|c| q.get_f64(base + i * d + c) * k.get_f64(base + j * d + c)).sum::<f64>() * sm)
                .collect();
            let m = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = scores.iter().map(|s| (s - m).exp()).collect();
            let tot: f64 = e.iter().sum();
            for c in 0..d {
                want.push((0..=i).map(|j| e[j] * v.get_f64(base + j * d + c)).sum::<f64>() / tot);
            }
        }
    }
    assert_close(&out["o"], &want, 2e-2, 2e-2);
}
