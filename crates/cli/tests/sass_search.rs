//! `trident sass search`: a short search on a bundled kernel writes a cubin that the
//! verifier accepts as a legal reordering of the one `trident compile --emit cubin` makes,
//! the moves and the curve; bad options are errors, never panics.

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
    let mut args = vec!["sass", "search"];
    args.extend(KERNEL);
    args.extend([
        "--algo", "anneal", "--budget", "20", "--seed", "2", "-o", &best, "--moves", &moves, "--curve", &curve,
    ]);
    let o = trident(&args);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    for want in ["original ", "estimated cycles", "uncalibrated", "evaluations", "0 failed", "curve "] {
        assert!(out.contains(want), "`{want}` missing from:\n{out}");
    }
    let json = std::fs::read_to_string(&moves).unwrap();
    assert!(json.contains("\"kernel\": \"softmax_kernel\"") && json.contains("\"moves\": ["), "{json}");
    let csv = std::fs::read_to_string(&curve).unwrap();
    assert!(csv.starts_with("seconds,evaluations,best_cycles,speedup\n") && csv.lines().count() >= 3, "{csv}");

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
        (&["--budget", "0"][..], "bad budget `0`"),
        (&["--budget", "soon"][..], "bad budget"),
        (&["--seed", "x"][..], "--seed"),
        (&["--algo"][..], "--algo needs a value"),
        (&["--backend", "cuda"][..], "not implemented yet"),
        (&["--backend", "interp"][..], "runs on the SASS emulator"),
        (&["--target", "sm_42"][..], "--target sm_42"),
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
