//! `trident sass search`: a short search (moves and control-bit edits) on a bundled kernel
//! writes a cubin that the verifier accepts as a legal reordering of the one `trident compile
//! --emit cubin` makes,
//! the moves, the curve and its plot; bad options are errors, never panics; `--backend cuda`
//! without a driver is an error that says so, and with a GPU a short timed search (run where
//! a GPU is: skipped here otherwise).

use std::path::PathBuf;
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn trident(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trident")).args(args).current_dir(root()).output().expect("runs")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

const KERNEL: [&str; 8] = [
    "kernels/softmax.py::softmax_kernel",
    "x=randn:f32:4x128",
    "y=empty:f32:4x128",
    "x_row_stride=128",
    "y_row_stride=128",
    "n_cols=128",
    "BLOCK=128",
    "--grid=4",
];

#[test]
fn search_writes_a_verified_cubin_moves_and_curve() {
    if std::env::var_os("TRIDENT_PTXAS").is_none() || std::env::var_os("TRIDENT_NVDISASM").is_none() {
        return eprintln!("skipped: TRIDENT_PTXAS/TRIDENT_NVDISASM not set");
    }
    let dir = std::env::temp_dir().join(format!("trident-sass-search-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = |n: &str| dir.join(n).to_str().unwrap().to_string();
    let (best, moves, curve, orig) = (p("best.cubin"), p("moves.json"), p("curve.csv"), p("orig.cubin"));
    let plot = p("curve.png");
    let mut args = vec!["sass", "search"];
    args.extend(KERNEL);
    args.extend([
        "--algo",
        "anneal",
        "--actions",
        "all",
        "--budget",
        "20",
        "--seed",
        "2",
        "-o",
        &best,
        "--moves",
        &moves,
        "--curve",
        &curve,
        "--plot",
        &plot,
        "--plot-size",
        "500x300",
    ]);
    let o = trident(&args);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    for want in ["original ", "estimated cycles", "uncalibrated", "evaluations", "0 failed", "curve ", "over all"] {
        assert!(out.contains(want), "`{want}` missing from:\n{out}");
    }
    let json = std::fs::read_to_string(&moves).unwrap();
    assert!(json.contains("\"kernel\": \"softmax_kernel\"") && json.contains("\"moves\": ["), "{json}");
    assert!(json.contains("\"edit\": "), "{json}");
    let csv = std::fs::read_to_string(&curve).unwrap();
    assert!(csv.starts_with("seconds,evaluations,best_cycles,speedup\n") && csv.lines().count() >= 3, "{csv}");
    assert_eq!(png_size(&std::fs::read(&plot).unwrap()), (500, 300));
    assert!(out.contains("(500×300)"), "{out}");

    // The same kernel compiled by `trident compile`: the search's cubin is a legal, timing-clean
    // reordering of it.
    let mut c = vec!["compile", KERNEL[0], "--emit", "cubin", "--target", "sm_80", "-o", &orig];
    c.extend(&KERNEL[1..7]);
    let o = trident(&c);
    assert!(o.status.success(), "{}", text(&o));
    let o = trident(&["sass", "verify", &best, "--against", &orig]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("legal reordering of the original"), "{}", text(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A kernel that copies with TMA — a warp-specialized descriptor matmul on sm_90a: the
/// search's runs get the tensor maps the `sass-emu` backend builds (they were missing: every
/// run of the original failed on an unbuilt map), and a kept schedule's outputs are checked.
#[test]
fn search_runs_a_warp_specialized_tma_kernel() {
    if std::env::var_os("TRIDENT_PTXAS").is_none() || std::env::var_os("TRIDENT_NVDISASM").is_none() {
        return eprintln!("skipped: TRIDENT_PTXAS/TRIDENT_NVDISASM not set");
    }
    let best = std::env::temp_dir().join(format!("trident-sass-search-tma-{}.cubin", std::process::id()));
    let o = trident(&[
        "sass",
        "search",
        "kernels/matmul_descriptor.py::matmul_desc_kernel",
        "--target",
        "sm_90a",
        "--grid=2,2",
        "a=randn:f16:128x128",
        "b=randn:f16:128x128",
        "c=empty:f32:128x128",
        "M=128",
        "N=128",
        "K=128",
        "BLOCK_M=64",
        "BLOCK_N=64",
        "BLOCK_K=32",
        "WARP_SPECIALIZE=True",
        "--budget",
        "5",
        "-o",
        best.to_str().unwrap(),
    ]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("estimated cycles") && out.contains("0 failed"), "{out}");
    assert!(std::fs::metadata(&best).is_ok_and(|m| m.len() > 0), "{out}");
    let _ = std::fs::remove_file(&best);
}

/// A PNG's width and height from its header (the signature, then the IHDR chunk first), and
/// its last chunk IEND. The plot's own tests decode it whole.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    assert_eq!(&bytes[8..16], b"\0\0\0\x0dIHDR", "no IHDR first");
    assert_eq!(&bytes[bytes.len() - 8..bytes.len() - 4], b"IEND", "no IEND last");
    let be = |i: usize| u32::from_be_bytes(bytes[i..i + 4].try_into().unwrap());
    (be(16), be(20))
}

#[test]
fn bad_options_are_errors() {
    let with = |extra: &[&str]| {
        let mut a = vec!["sass", "search"];
        a.extend(KERNEL);
        a.extend(extra);
        trident(&a)
    };
    for (extra, want) in [
        (&["--algo", "genetic"][..], "unknown search `genetic`"),
        (&["--actions", "yield"][..], "unknown action family `yield`"),
        (&["--budget", "0"][..], "bad budget `0`"),
        (&["--budget", "soon"][..], "bad budget"),
        (&["--seed", "x"][..], "--seed"),
        (&["--algo"][..], "--algo needs a value"),
        (&["--backend", "interp"][..], "runs on the SASS emulator"),
        (&["--target", "sm_42"][..], "--target sm_42"),
        (&["--repeats", "10"][..], "only with --backend cuda"),
        (&["--backend", "cuda", "--repeats", "2"][..], "--repeats: `2`"),
        (&["--plot-size", "10x10"][..], "--plot-size 10x10"),
        (&["--plot-size", "big"][..], "--plot-size: `big`"),
    ] {
        let o = with(extra);
        let out = text(&o);
        assert!(!o.status.success(), "{extra:?} succeeded");
        assert!(out.contains(want), "{extra:?}: `{want}` not in:\n{out}");
        assert!(!out.contains("panicked"), "{extra:?}: {out}");
    }
    let o = trident(&["sass", "search", "kernels/softmax.py::softmax_kernel", "BLOCK=128"]);
    assert!(!o.status.success() && text(&o).contains("--grid"), "{}", text(&o));
}

#[test]
fn cuda_without_a_driver_is_an_error() {
    if trident_runtime::gpu::cuda_available() {
        return eprintln!("skipped: a CUDA device is here (cuda_search_times_candidates_on_the_gpu runs)");
    }
    let mut a = vec!["sass", "search"];
    a.extend(KERNEL);
    a.extend(["--backend", "cuda", "--budget", "5"]);
    let o = trident(&a);
    let out = text(&o);
    assert!(!o.status.success(), "{out}");
    assert!(out.contains("--backend cuda: no CUDA") && out.contains("--backend sass-emu"), "{out}");
    assert!(!out.contains("panicked"), "{out}");
}

/// On a GPU: a short search timed with CUDA events writes a cubin the verifier accepts, says
/// what the noise was, and checks kept schedules on the GPU too.
#[test]
fn cuda_search_times_candidates_on_the_gpu() {
    if !trident_runtime::gpu::cuda_available() {
        return eprintln!("skipped: no CUDA device");
    }
    if std::env::var_os("TRIDENT_PTXAS").is_none() || std::env::var_os("TRIDENT_NVDISASM").is_none() {
        return eprintln!("skipped: TRIDENT_PTXAS/TRIDENT_NVDISASM not set");
    }
    let dir = std::env::temp_dir().join(format!("trident-sass-search-cuda-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = |n: &str| dir.join(n).to_str().unwrap().to_string();
    let (best, curve, plot) = (p("best.cubin"), p("curve.csv"), p("curve.png"));
    // A kernel with memory instructions that move (matmul), small enough to time quickly.
    let mut args = vec![
        "sass",
        "search",
        "kernels/matmul.py::matmul_kernel",
        "a=randn:f16:128x128",
        "b=randn:f16:128x128",
        "c=empty:f16:128x128",
        "M=128",
        "N=128",
        "K=128",
        "stride_am=128",
        "stride_ak=1",
        "stride_bk=128",
        "stride_bn=1",
        "stride_cm=128",
        "stride_cn=1",
        "BLOCK_M=64",
        "BLOCK_N=64",
        "BLOCK_K=32",
        "GROUP_M=8",
        "--grid=4",
    ];
    args.extend([
        "--backend",
        "cuda",
        "--algo",
        "anneal",
        "--budget",
        "60",
        "--repeats",
        "10",
        "--seed",
        "1",
        "-o",
        &best,
        "--curve",
        &curve,
        "--plot",
        &plot,
    ]);
    let o = trident(&args);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    for want in ["reward        measured time on", "noise         a gain counts above", "ns", "0 failed"] {
        assert!(out.contains(want), "`{want}` missing from:\n{out}");
    }
    assert_eq!(png_size(&std::fs::read(&plot).unwrap()), (800, 480));
    let _ = std::fs::remove_dir_all(&dir);
}
