//! Profiled launches (`LaunchOptions::profile`): the kernel's outputs are those of an
//! unprofiled launch, the profile comes back decoded with the launch's grid and the
//! measured probe cost, the options are part of the cache key (and a profiled entry's meta
//! survives the disk cache), the interpreter refuses, and on CUDA (ignored without a GPU:
//! `cargo test -p trident-runtime --test launch_profile -- --ignored`) the same holds.

mod common;

use common::*;
use trident_runtime::args::{Arg, ArgValue, Backend};
use trident_runtime::cache::Outcome;
use trident_runtime::launch::{launch, LaunchOptions};
use trident_runtime::profile::{calibrate, Granularity, ProbeMode, ProfileOptions, Regions, Severity};

const SCOPED: &str = r#"import triton
import triton.language as tl
import triton.profiler.language as pl


@triton.jit
def scoped(x, y, n, ITERS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(ITERS):
        with pl.scope("load"):
            v = tl.load(x + offs, mask=mask, other=0.0)
        acc = acc * 0.5 + v * (i + 1)
    with pl.scope("store"):
        tl.store(y + offs, acc, mask=mask)
"#;

fn words(seed: u64) -> Vec<Arg> {
    args(&["x=randn:f32:1000", "y=empty:f32:1000", "n=1000", "ITERS=6", "BLOCK=256"], seed)
}

/// Sets every element of `y` to NaN, so a launch that does not write it is caught.
fn poison(a: &mut [Arg]) {
    for arg in a.iter_mut().filter(|a| a.name == "y") {
        if let ArgValue::Tensor(t) = &mut arg.value {
            t.data.iter_mut().for_each(|b| *b = 0xFF);
        }
    }
}

fn profiled(o: LaunchOptions, regions: &str, granularity: Granularity) -> LaunchOptions {
    let p = ProfileOptions { regions: Regions::parse(regions).unwrap(), granularity, ..ProfileOptions::default() };
    LaunchOptions { profile: Some(p), ..o }
}

/// Runs the scoped kernel plain and profiled; checks and returns the probe cost replay used.
fn outputs_and_profile_agree(backend: Backend) -> f64 {
    let dir = TempDir::new("profile");
    let s = session(dir.path());
    let prog = program("scoped.py", SCOPED);
    let kernel = prog.kernel(None).unwrap();
    let seed = seed();
    let mut plain = words(seed);
    poison(&mut plain);
    let out = launch(&prog, kernel, &mut plain, &opts(&s, backend, "cdiv(n, BLOCK)")).unwrap_or_else(|e| panic!("{e}"));
    assert!(out.profile.is_none());
    let mut prof = words(seed);
    poison(&mut prof);
    let o = profiled(opts(&s, backend, "cdiv(n, BLOCK)"), "scopes,kernel,loops", Granularity::Warp);
    let out = launch(&prog, kernel, &mut prof, &o).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(tensor(&prof, "y").data, tensor(&plain, "y").data, "profiling changed the output (seed {seed})");
    let p = out.profile.expect("a profiled launch returns its profile");
    assert_eq!(p.meta.grid, [4, 1, 1]);
    assert_eq!(p.meta.warps_per_cta, 4);
    assert_eq!(p.slots.len(), 16, "4 CTAs x 4 warps");
    let target = p.meta.target.clone();
    assert!(target.starts_with(if backend == Backend::Emu { "emu-sm_" } else { "cuda-sm_" }), "{target}");
    assert!(p.record_cost > 0.0 && p.record_cost == p.meta.record_cost_cycles);
    let bad: Vec<String> = p.issues_at_least(Severity::Warning).map(|i| i.to_string()).collect();
    assert!(bad.is_empty(), "{bad:#?}");
    let count = |name: &str| {
        let id = p.meta.regions.iter().find(|r| r.name == name).unwrap_or_else(|| panic!("{name}")).id;
        p.instances.iter().filter(|i| i.region == id).count()
    };
    assert_eq!(count("load"), 16 * 6);
    assert_eq!(count("store"), 16);
    assert_eq!(count("kernel"), 16);
    let table = trident_runtime::profile::table::render_table(&p);
    assert!(table.contains("load") && table.contains("scoped.py:12"), "{table}");
    p.record_cost
}

#[test]
fn emulator_profiles_leave_outputs_alone() {
    let cost = outputs_and_profile_agree(Backend::Emu);
    let target = trident_runtime::env::emu_target().unwrap();
    assert_eq!(cost, calibrate::record_cost(Backend::Emu, target, 4, Granularity::Warp).unwrap());
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn cuda_profiles_leave_outputs_alone() {
    // The probe cost is measured on the device: a sane number of cycles.
    let cost = outputs_and_profile_agree(Backend::Cuda);
    assert!(cost < 1000.0, "{cost}");
}

#[test]
fn markers_give_the_true_timeline_on_the_emulator() {
    let dir = TempDir::new("profile-markers");
    let s = session(dir.path());
    let prog = program("scoped.py", SCOPED);
    let kernel = prog.kernel(None).unwrap();
    let seed = seed();
    let run = |mode| {
        let mut a = words(seed);
        poison(&mut a);
        let mut o = profiled(opts(&s, Backend::Emu, "cdiv(n, BLOCK)"), "scopes,kernel,loops", Granularity::Warp);
        o.profile.as_mut().unwrap().mode = mode;
        let out = launch(&prog, kernel, &mut a, &o).unwrap_or_else(|e| panic!("{e}"));
        (tensor(&a, "y").data.clone(), out.profile.unwrap())
    };
    let (y_probed, probed) = run(ProbeMode::Probes);
    let (y_marked, truth) = run(ProbeMode::Markers);
    assert_eq!(y_marked, y_probed);
    assert_eq!(truth.record_cost, 0.0);
    assert!(!truth.has_errors(), "{:?}", truth.issues);
    assert_eq!(truth.slots.len(), probed.slots.len());
    let counts = |p: &trident_runtime::profile::Profile| {
        let mut c: Vec<(String, usize)> = p
            .meta
            .regions
            .iter()
            .map(|r| (r.name.clone(), p.instances.iter().filter(|i| i.region == r.id).count()))
            .collect();
        c.sort();
        c
    };
    assert_eq!(counts(&truth), counts(&probed));
    // Markers are read by the emulator only.
    let mut o = profiled(opts(&s, Backend::Cuda, "cdiv(n, BLOCK)"), "kernel", Granularity::Warp);
    o.profile.as_mut().unwrap().mode = ProbeMode::Markers;
    let e = launch(&prog, kernel, &mut words(seed), &o).unwrap_err();
    assert!(e.text.contains("emulator only"), "{e}");
}

#[test]
fn profiling_options_are_keyed_and_profiled_entries_come_back_from_disk() {
    let dir = TempDir::new("profile-cache");
    let prog = program("scoped.py", SCOPED);
    let kernel = prog.kernel(None).unwrap();
    let seed = seed();
    let run = |_: &std::sync::Arc<trident_runtime::session::Session>, o: LaunchOptions| {
        let mut a = words(seed);
        let out = launch(&prog, kernel, &mut a, &o).unwrap_or_else(|e| panic!("{e}"));
        (out.cache, out.profile.map(|p| (p.meta.regions.len(), p.meta.capacity)))
    };
    let s = session(dir.path());
    let base = || opts(&s, Backend::Emu, "cdiv(n, BLOCK)");
    assert_eq!(run(&s, base()), (Some(Outcome::Miss), None));
    let warp = profiled(base(), "scopes", Granularity::Warp);
    assert_eq!(run(&s, warp.clone()), (Some(Outcome::Miss), Some((2, 256))));
    assert_eq!(run(&s, warp.clone()), (Some(Outcome::Memo), Some((2, 256))));
    let mut small = warp.clone();
    small.profile.as_mut().unwrap().capacity = 32;
    assert_eq!(run(&s, small), (Some(Outcome::Miss), Some((2, 32))));
    assert_eq!(run(&s, profiled(base(), "kernel", Granularity::Cta)), (Some(Outcome::Miss), Some((1, 256))));
    // A new process: the profiled kernel and its meta come from disk.
    let s2 = session(dir.path());
    let warp2 = LaunchOptions { session: Some(s2.clone()), ..warp };
    assert_eq!(run(&s2, warp2), (Some(Outcome::Hit), Some((2, 256))));
    let listed = s.cache().unwrap().list();
    assert!(
        listed.iter().any(|e| e.summary.contains("profile=regions=scopes granularity=warp capacity=256")),
        "{listed:?}"
    );
    assert!(listed.iter().any(|e| e.summary.contains("profile_scopes=true")));
}

#[test]
fn the_interpreter_refuses_to_profile() {
    let dir = TempDir::new("profile-interp");
    let s = session(dir.path());
    let prog = program("scoped.py", SCOPED);
    let mut a = words(seed());
    let before = tensor(&a, "y").data.clone();
    let o = profiled(opts(&s, Backend::Interp, "cdiv(n, BLOCK)"), "kernel", Granularity::Warp);
    let e = launch(&prog, prog.kernel(None).unwrap(), &mut a, &o).unwrap_err();
    assert!(e.text.contains("profiling needs an emulator or a GPU"), "{e}");
    assert_eq!(tensor(&a, "y").data, before, "the arguments are left as they were");
    // Bad options are errors too, before anything is compiled.
    let mut bad = profiled(opts(&s, Backend::Emu, "cdiv(n, BLOCK)"), "kernel", Granularity::Warp);
    bad.profile.as_mut().unwrap().capacity = 48;
    let e = launch(&prog, prog.kernel(None).unwrap(), &mut a, &bad).unwrap_err();
    assert!(e.text.contains("power of two"), "{e}");
}

const COUNTED: &str = r#"import triton
import triton.language as tl


@triton.jit
def counted(x, y, count, n, ITERS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(ITERS):
        v = tl.load(x + offs, mask=mask, other=0.0)
        acc = acc * 0.5 + v * (i + 1)
    tl.store(y + offs, acc, mask=mask)
    tl.atomic_add(count, 1)
"#;

/// `ProbeCost::InKernel` and `ProbeCost::PerSite`: the extra launches run on copies (the
/// kernel's side effects happen once), outputs are those of a plain launch, and the
/// replayed loop iterations come closer to the markers' truth than with the calibration
/// kernel's cost.
#[test]
fn in_kernel_probe_cost_replays_closer_and_runs_the_kernel_once_on_the_arguments() {
    use trident_runtime::profile::ProbeCost;
    let dir = TempDir::new("profile-in-kernel");
    let s = session(dir.path());
    let prog = program("counted.py", COUNTED);
    let kernel = prog.kernel(None).unwrap();
    let seed = seed();
    let words =
        || args(&["x=randn:f32:1000", "y=empty:f32:1000", "count=zeros:i32:1", "n=1000", "ITERS=8", "BLOCK=256"], seed);
    let run = |mode, cost| {
        let mut a = words();
        poison(&mut a);
        let mut o = profiled(opts(&s, Backend::Emu, "cdiv(n, BLOCK)"), "kernel,loops,loads", Granularity::Warp);
        o.profile.as_mut().unwrap().mode = mode;
        o.profile_cost = cost;
        let out = launch(&prog, kernel, &mut a, &o).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        (a, out.profile.unwrap())
    };
    let mut plain = words();
    launch(&prog, kernel, &mut plain, &opts(&s, Backend::Emu, "cdiv(n, BLOCK)")).unwrap();
    let (a_in, in_kernel) = run(ProbeMode::Probes, ProbeCost::InKernel);
    let (a_site, per_site) = run(ProbeMode::Probes, ProbeCost::PerSite);
    let (_, calibrated) = run(ProbeMode::Probes, ProbeCost::Calibrated);
    let (_, truth) = run(ProbeMode::Markers, ProbeCost::Calibrated);
    assert_eq!(tensor(&a_in, "y").data, tensor(&plain, "y").data, "seed {seed}");
    assert_eq!(tensor(&a_in, "count").get_f64(0), 4.0, "one launch's worth of atomics (seed {seed})");
    assert_eq!(tensor(&a_site, "y").data, tensor(&plain, "y").data, "seed {seed}");
    assert_eq!(tensor(&a_site, "count").get_f64(0), 4.0, "one launch's worth of atomics (seed {seed})");
    assert!(per_site.site_costs.is_some());
    assert_eq!(
        per_site.slots.iter().map(|s| s.trace.total).sum::<u32>(),
        in_kernel.slots.iter().map(|s| s.trace.total).sum::<u32>()
    );
    assert!(in_kernel.record_cost < calibrated.record_cost, "{} vs {}", in_kernel.record_cost, calibrated.record_cost);
    let mean = |p: &trident_runtime::profile::Profile, name: &str| {
        let id = p.meta.regions.iter().find(|r| r.name.starts_with(name)).unwrap().id;
        let v: Vec<f64> = p.instances.iter().filter(|i| i.region == id && !i.open).map(|i| i.cycles()).collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    let t = mean(&truth, "loop@");
    let (e_in, e_cal) = ((mean(&in_kernel, "loop@") - t).abs(), (mean(&calibrated, "loop@") - t).abs());
    assert!(e_in <= e_cal && e_in / t < 0.02, "loop: truth {t}, in-kernel error {e_in}, calibrated error {e_cal}");
    let e_site = (mean(&per_site, "loop@") - t).abs();
    assert!(e_site <= e_cal && e_site / t < 0.02, "loop: truth {t}, per-site error {e_site}, calibrated error {e_cal}");
}
