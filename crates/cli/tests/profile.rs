//! `trident profile` end to end on the emulator: the table, the trace (checked against the
//! trace-event format by the profile crate's checker), the CSV, `--save`d outputs equal to
//! an unprofiled run's, dropped records reported, identical traces run to run, and the
//! errors users see for bad options.

#[path = "../../profile/tests/common/trace_check.rs"]
mod trace_check;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use trident_runtime::npy;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("trident-cli-profile-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `trident` with a compile cache of the test's own.
fn trident(args: &[&str]) -> Output {
    let cache = dir().join("cache");
    Command::new(env!("CARGO_BIN_EXE_trident"))
        .args(args)
        .current_dir(root())
        .env("TRIDENT_CACHE_DIR", &cache)
        .env_remove("TRIDENT_EMU_TARGET")
        .output()
        .expect("runs")
}

fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

const SOFTMAX: &[&str] = &[
    "kernels/softmax.py::softmax_kernel",
    "--grid",
    "6",
    "x=randn:f32:6x1000",
    "y=empty:f32:6x1000",
    "x_row_stride=1000",
    "y_row_stride=1000",
    "n_cols=1000",
    "BLOCK=1024",
    "--seed",
    "11",
];

fn matmul(extra: &[&str]) -> Vec<String> {
    let words = [
        "kernels/matmul.py::matmul_kernel",
        "--grid",
        "4",
        "--num-warps",
        "4",
        "a=randn:f16:64x128",
        "b=randn:f16:128x64",
        "c=empty:f16:64x64",
        "M=64",
        "N=64",
        "K=128",
        "stride_am=128",
        "stride_ak=1",
        "stride_bk=64",
        "stride_bn=1",
        "stride_cm=64",
        "stride_cn=1",
        "BLOCK_M=32",
        "BLOCK_N=32",
        "BLOCK_K=32",
        "GROUP_M=2",
    ];
    words.iter().chain(extra).map(|s| s.to_string()).collect()
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn softmax_profile_prints_the_table_writes_trace_and_csv_and_saves_what_run_saves() {
    let d = dir();
    let (trace, csv, y_prof, y_run) = (d.join("sm.json"), d.join("sm.csv"), d.join("y-prof.npy"), d.join("y-run.npy"));
    let mut words = vec!["profile", "--backend", "emu", "--regions", "kernel,loads"];
    words.extend_from_slice(SOFTMAX);
    let (t, c, s) =
        (format!("--trace={}", trace.display()), format!("--csv={}", csv.display()), format!("y={}", y_prof.display()));
    words.extend_from_slice(&[&t, &c, "--save", &s]);
    let o = trident(&words);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("kernel softmax_kernel on emu-sm_80: 6 CTAs x 4 warps (24 of 24 slots decoded)"), "{out}");
    assert!(
        out.lines().any(|l| l.starts_with("kernel ") && l.contains("softmax.py:14") && l.contains(" 24 ")),
        "{out}"
    );
    assert!(out.contains("load@softmax.py:18"), "{out}");
    assert!(out.contains("records dropped by ring wrap: 0; issues: 0 errors"), "{out}");
    let trace: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    assert_eq!(trace_check::violations(&trace), Vec::<String>::new());
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert!(csv.starts_with("region_id,region,kind,source,count"), "{csv}");
    assert_eq!(csv.lines().count(), 3, "{csv}");
    // The same launch unprofiled writes the same y.
    assert_unprofiled_softmax_writes("emu", &y_prof, &y_run);
}

/// Runs `SOFTMAX` unprofiled on `backend`, saving y at `y_run`: the same bytes as `y_prof`.
fn assert_unprofiled_softmax_writes(backend: &str, y_prof: &std::path::Path, y_run: &std::path::Path) {
    let mut words = vec!["run", "--backend", backend];
    words.extend_from_slice(SOFTMAX);
    let s = format!("y={}", y_run.display());
    words.extend_from_slice(&["--save", &s]);
    let o = trident(&words);
    assert!(o.status.success(), "{}", text(&o).1);
    assert_eq!(npy::read(y_prof).unwrap().data, npy::read(y_run).unwrap().data, "{backend}");
}

#[test]
fn matmul_profile_counts_loop_iterations_and_is_the_same_run_to_run() {
    let d = dir();
    let traces = [d.join("mm1.json"), d.join("mm2.json")];
    for t in &traces {
        let trace = format!("--trace={}", t.display());
        let words =
            matmul(&["--backend", "emu", "--regions", "kernel,loops,dots,loads", "--granularity", "warp", &trace]);
        let o = trident(&[&["profile"], &strs(&words)[..]].concat());
        let (out, err) = text(&o);
        assert!(o.status.success(), "{err}");
        // 4 CTAs x 4 warps x 4 iterations of the K loop.
        let row = |prefix: &str| {
            let source = |l: &str| l.split_whitespace().nth(1).is_some_and(|s| s.starts_with("matmul.py:"));
            out.lines().find(|l| l.starts_with(prefix) && source(l)).unwrap_or_else(|| panic!("{prefix}: {out}"))
        };
        let count = |l: &str| l.split_whitespace().nth(2).unwrap().to_string();
        assert_eq!(count(row("loop@matmul.py")), "64", "{out}");
        assert_eq!(count(row("dot@matmul.py")), "64", "{out}");
        assert_eq!(count(row("kernel")), "16", "{out}");
        assert!(out.contains("issues: 0 errors, 0 warnings"), "{out}");
    }
    let (a, b) = (std::fs::read(&traces[0]).unwrap(), std::fs::read(&traces[1]).unwrap());
    assert_eq!(a, b, "two emulator runs gave different traces");
}

#[test]
fn markers_show_the_unprobed_timeline() {
    let mut words = vec!["profile", "--backend", "emu", "--regions", "kernel,loads", "--markers"];
    words.extend_from_slice(SOFTMAX);
    let o = trident(&words);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("replay cost 0 cycles/record"), "{out}");
    assert!(out.lines().any(|l| l.starts_with("load@softmax.py:18") && l.contains(" 24 ")), "{out}");
    // Markers are the emulator's.
    let mut words = vec!["profile", "--backend", "cuda", "--markers"];
    words.extend_from_slice(SOFTMAX);
    let o = trident(&words);
    assert!(!o.status.success() && text(&o).1.contains("emulator only"), "{}", text(&o).1);
}

#[test]
fn a_small_ring_reports_dropped_records() {
    let words = matmul(&["--backend", "emu", "--regions", "loops", "--buffer-records", "4"]);
    let o = trident(&[&["profile"], &strs(&words)[..]].concat());
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    // Each warp made 8 records (4 iterations x start and end) into a ring of 4.
    assert!(out.contains("records dropped by ring wrap: 64"), "{out}");
    assert!(out.contains("dropped"), "{out}");
}

/// The SASS emulator profiles too (the probes as `ptxas` compiled them, `%clock64` and
/// `%globaltimer` its warps' modelled clocks): every slot decoded without errors, the kernel
/// and load regions found, and the outputs the unprofiled launch's. Needs the tools
/// (`TRIDENT_PTXAS`/`TRIDENT_NVDISASM`, as the CLI's other SASS tests).
#[test]
fn the_sass_emulator_profiles_and_keeps_the_outputs() {
    if std::env::var_os("TRIDENT_PTXAS").is_none() || std::env::var_os("TRIDENT_NVDISASM").is_none() {
        eprintln!("skipped: TRIDENT_PTXAS/TRIDENT_NVDISASM not set");
        return;
    }
    let d = dir();
    let (y_prof, y_run) = (d.join("y-sass-prof.npy"), d.join("y-sass-run.npy"));
    let mut words = vec!["profile", "--backend", "sass-emu", "--regions", "kernel,loads"];
    words.extend_from_slice(SOFTMAX);
    let s = format!("y={}", y_prof.display());
    words.extend_from_slice(&["--save", &s]);
    let o = trident(&words);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        out.contains("kernel softmax_kernel on sass-emu-sm_80: 6 CTAs x 4 warps (24 of 24 slots decoded)"),
        "{out}"
    );
    assert!(out.contains("load@softmax.py:18") && out.contains("issues: 0 errors"), "{out}");
    let kernel = out.lines().find(|l| l.starts_with("kernel ") && l.contains("softmax.py:14")).unwrap();
    let mean: f64 = kernel.split_whitespace().nth(4).unwrap().parse().unwrap();
    assert!(mean > 100.0, "a row's softmax takes its loads' latency at least: {kernel}");
    assert_unprofiled_softmax_writes("sass-emu", &y_prof, &y_run);
}

#[test]
fn bad_profiling_options_are_clear_errors() {
    let cases: &[(&[&str], &str)] = &[
        (&["--regions", "frames"], "unknown region kind `frames`"),
        (&["--buffer-records", "100"], "must be a power of two from 1 to 65536 records, got 100"),
        (&["--granularity", "thread"], "unknown granularity `thread`"),
        (&["--backend", "interp"], "profiling runs on emu, sass-emu or cuda"),
        (
            &["--backend", "emu", "--buffer-records", "65536"],
            "bytes are the profile rings (4 warps x 65536 records x 8 bytes)",
        ),
    ];
    for (extra, want) in cases {
        let words = matmul(extra);
        let o = trident(&[&["profile"], &strs(&words)[..]].concat());
        let (_, err) = text(&o);
        assert!(!o.status.success(), "{extra:?} should fail");
        assert!(err.contains(want), "{extra:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // `run` does not know the profiling options.
    let words = matmul(&["--regions", "kernel"]);
    let o = trident(&[&["run"], &strs(&words)[..]].concat());
    assert!(text(&o).1.contains("`--regions`: unknown option"), "{}", text(&o).1);
}

/// A warp-specialized kernel is profiled as it runs unprofiled, split between its consumer
/// warps and its producer warp (sm_90a): the producer gets a group of its own, and its
/// regions are named apart; the trace has a track for it; its outputs are the unprofiled
/// launch's; the zero-cost markers' timeline (the truth) has the same regions and groups.
#[test]
fn a_warp_specialized_kernel_is_profiled_per_role() {
    let d = dir();
    let run = |cmd: &str, ws: &str, extra: &[&str]| {
        let cache = d.join("cache-ws");
        let mut args = vec![
            cmd,
            "kernels/matmul_persistent.py::matmul_persistent_kernel",
            "--backend",
            "emu",
            "--grid",
            "2",
            "a=randn:f16:128x64",
            "b=randn:f16:128x64",
            "c=empty:f16:128x128",
            "M=128",
            "N=128",
            "K=64",
            "BLOCK_M=64",
            "BLOCK_N=64",
            "BLOCK_K=32",
            "GROUP_M=2",
            "NUM_SMS=2",
            "--seed",
            "5",
        ];
        let w = format!("WARP_SPECIALIZE={ws}");
        args.push(&w);
        args.extend_from_slice(extra);
        let o = Command::new(env!("CARGO_BIN_EXE_trident"))
            .args(&args)
            .current_dir(root())
            .env("TRIDENT_CACHE_DIR", &cache)
            .env("TRIDENT_EMU_TARGET", "sm_90a")
            .output()
            .expect("runs");
        let (out, err) = text(&o);
        assert!(o.status.success(), "{out}{err}");
        format!("{out}{err}")
    };
    let (trace, c_prof, c_run) = (d.join("ws.json"), d.join("c-ws-prof.npy"), d.join("c-ws-run.npy"));
    let (t, sp, sr) =
        (format!("--trace={}", trace.display()), format!("c={}", c_prof.display()), format!("c={}", c_run.display()));
    let regions = ["--regions", "kernel,loops,loads"];
    let said = run("profile", "True", &[&regions[..], &[&t, "--save", &sp]].concat());
    assert!(said.contains("2 CTAs x 4 warps + 1 producer warp (10 of 10 slots decoded)"), "{said}");
    for region in [
        "loop@matmul_persistent.py:22 (producer)",
        "load@matmul_persistent.py:29 (producer)",
        "load@matmul_persistent.py:29 ",
    ] {
        assert!(said.contains(region), "{region}: {said}");
    }
    assert!(said.contains("issues: 0 errors, 0 warnings"), "{said}");
    let trace: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    assert_eq!(trace_check::violations(&trace), Vec::<String>::new());
    let tracks: Vec<&str> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tracks.iter().filter(|t| **t == "warp 4 (producer)").count(), 2, "{tracks:?}");
    run("run", "True", &["--save", &sr]);
    assert_eq!(npy::read(&c_prof).unwrap().data, npy::read(&c_run).unwrap().data);
    // The truth: the same groups and regions, at no probe cost.
    let truth = run("profile", "True", &[&regions[..], &["--markers"]].concat());
    assert!(truth.contains("2 CTAs x 4 warps + 1 producer warp (10 of 10 slots decoded)"), "{truth}");
    assert!(truth.contains("load@matmul_persistent.py:29 (producer)"), "{truth}");
    // Unspecialized, one role.
    let plain = run("profile", "False", &regions);
    assert!(plain.contains("2 CTAs x 4 warps (8 of 8 slots decoded)"), "{plain}");
    assert!(!plain.contains("producer"), "{plain}");
}

/// Mean cycles of each region of `trident profile`'s table (its fifth column).
fn table_means(out: &str) -> std::collections::BTreeMap<String, f64> {
    out.lines()
        .filter(|l| l.starts_with("chain_") || l.starts_with("kernel "))
        .filter_map(|l| {
            let cells: Vec<&str> = l.split_whitespace().collect();
            Some((cells[0].to_string(), cells.get(4)?.parse().ok()?))
        })
        .collect()
}

#[test]
fn regions_of_known_length_are_replayed_to_their_length() {
    // bench/profile/fma_chain.py: three scopes of 32, 128 and 512 dependent multiply-adds and
    // nothing else; the emulator times each step the same, so the replayed lengths must be in
    // the ratio 1 : 4 : 16 and equal to the zero-cost markers' (the GPU session checks the
    // same scopes against the FFMA latency, where there are no markers).
    let words = |extra: &[&'static str]| {
        let mut w = vec![
            "profile",
            "bench/profile/fma_chain.py::fma_chain",
            "--backend",
            "emu",
            "--grid",
            "8",
            "--num-warps",
            "1",
            "--regions",
            "scopes,kernel",
            "x=randn:f32:256",
            "y=empty:f32:256",
            "CHAIN=32",
            "BLOCK=32",
        ];
        w.extend_from_slice(extra);
        w
    };
    let probed = trident(&words(&[]));
    let marked = trident(&words(&["--markers"]));
    let (out, err) = text(&probed);
    assert!(probed.status.success(), "{err}");
    assert!(marked.status.success(), "{}", text(&marked).1);
    let (got, truth) = (table_means(&out), table_means(&text(&marked).0));
    let per_step = truth["chain_1x"] / 32.0;
    for (name, steps) in [("chain_1x", 32.0), ("chain_4x", 128.0), ("chain_16x", 512.0)] {
        let (g, t) = (got[name], truth[name]);
        assert!((g - t).abs() <= 0.02 * t, "{name}: replayed {g}, true {t}\n{out}");
        assert!((t / steps - per_step).abs() <= 0.02 * per_step, "{name}: {t} cycles for {steps} steps\n{out}");
    }
}
