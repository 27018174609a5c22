//! The lowering of `record` ops on the PTX emulator: profiled kernels compute exactly what
//! the unprofiled ones compute (fresh random inputs, outputs poisoned before each run, on
//! the interpreter and the emulator), their buffers decode into balanced, ordered regions
//! whose counts are the executions, a ring that wraps reports what it dropped, traces are
//! valid and the same from run to run, every probe is the same instructions, and markers
//! are the unprofiled kernel plus comments. `ptxas` accepts every profiled kernel for
//! sm_80, sm_90 and sm_90a without warnings.

mod common;
#[path = "../../profile/tests/common/trace_check.rs"]
mod trace_check;

use common::*;
use std::collections::BTreeMap;
use trident_core::{DType, HostTensor};
use trident_gpu::{GpuArtifacts, GpuOptions, ProbeMode, ProfileOptions, Target};
use trident_ir::Module;
use trident_profile::format::Granularity;
use trident_profile::passes::Regions;
use trident_profile::{Profile, Severity};

fn regions(words: &str) -> Regions {
    Regions::parse(words).unwrap()
}

fn profile_opts(words: &str, granularity: Granularity, capacity: u32) -> ProfileOptions {
    ProfileOptions { regions: regions(words), granularity, capacity, mode: ProbeMode::Probes }
}

/// Compiles `kernel` with `profile` (or without) for `target`; checks the PTX with ptxas.
fn compile_for(m: &Module, kernel: &str, target: Target, warps: u32, profile: Option<ProfileOptions>) -> GpuArtifacts {
    let opts = GpuOptions { target, num_warps: warps, profile, ..GpuOptions::default() };
    let art = trident_gpu::compile(m, kernel, &opts)
        .unwrap_or_else(|e| panic!("compiling `{kernel}` for {target}: {}", e.diagnostic.render(&m.files)));
    ptxas_ok(&art.ptx.ptx, target.arch());
    art
}

/// Runs a profiled kernel on the emulator with a zeroed profile buffer as the hidden last
/// argument; returns its tensor arguments after the run and the decoded profile (raw
/// clocks: no replay, so that orders can be checked exactly).
fn run_profiled(art: &GpuArtifacts, grid: [u32; 3], args: &[Arg]) -> (Vec<HostTensor>, Profile, Vec<u8>) {
    let mut meta = art.profile.clone().expect("a profiled kernel has a meta");
    meta.grid = grid;
    meta.globaltimer_resolution_ns = 1;
    assert!(art.ptx.profile_buffer);
    let bytes = meta.layout().unwrap().buffer_bytes();
    let mut all = args.to_vec();
    all.push(Arg::Tensor(HostTensor::zeros(DType::U8, &[bytes])));
    let mut outs = run_emu(&art.ptx, grid, &all);
    let buffer = outs.pop().expect("the profile buffer").data;
    let profile = Profile::from_buffer_with_cost(&buffer, &meta, 0.0).unwrap();
    (outs, profile, buffer)
}

/// The arguments with every tensor replaced by a poisoned one where `poison[i]`.
fn with_poison(args: &[Arg], outputs: &[usize]) -> Vec<Arg> {
    let mut tensor = 0;
    args.iter()
        .map(|a| match a {
            Arg::Tensor(t) => {
                let i = tensor;
                tensor += 1;
                if outputs.contains(&i) {
                    Arg::Tensor(poisoned(t.dtype, &t.shape))
                } else {
                    a.clone()
                }
            }
            _ => a.clone(),
        })
        .collect()
}

/// Instances per (slot, region name).
fn counts(p: &Profile) -> BTreeMap<(usize, String), usize> {
    let mut out = BTreeMap::new();
    for i in p.instances.iter().filter(|i| !i.open) {
        let name = p.meta.region(i.region).unwrap().name.clone();
        *out.entry((i.slot, name)).or_insert(0) += 1;
    }
    out
}

fn no_warnings(p: &Profile, what: &str) {
    let bad: Vec<String> = p.issues_at_least(Severity::Warning).map(|i| i.to_string()).collect();
    assert!(bad.is_empty(), "{what}: {bad:#?}");
}

/// Every region instance of a group lies inside its parent (one level up), and instances
/// of one group never overlap unless nested.
fn properly_nested(p: &Profile) {
    for (s, _) in p.slots.iter().enumerate() {
        let mine: Vec<_> = p.instances.iter().filter(|i| i.slot == s).collect();
        for a in &mine {
            assert!(a.start <= a.end, "{a:?}");
            if a.depth > 0 {
                assert!(
                    mine.iter().any(|b| b.depth + 1 == a.depth && b.start <= a.start && a.end <= b.end),
                    "no parent for {a:?}"
                );
            }
        }
    }
}

#[test]
fn matmul_probes_keep_outputs_and_count_iterations() {
    let mut rng = Rng(seed());
    let (m_, n_, k_) = (64usize, 128usize, 160usize);
    let args = matmul_args(&mut rng, (m_, n_, k_), (64, 64, 32), DType::F16, (false, false));
    let (m, kernel, rt) = front("matmul.py", "matmul_kernel", &args);
    let grid = [(m_ / 64 * n_ / 64) as u32, 1, 1];
    let trips = k_ / 32;
    let want = run_interp(&m, &kernel, grid, &rt);
    for target in [Target::Sm80, Target::Sm90a] {
        let plain = compile_for(&m, &kernel, target, 4, None);
        // sm_90 (mma.sync on Hopper) is checked by ptxas only: the emulator runs sm_80's code.
        compile_for(&m, &kernel, Target::Sm90, 4, Some(profile_opts("kernel,loops,dots,loads", Granularity::Warp, 64)));
        let prof =
            compile_for(&m, &kernel, target, 4, Some(profile_opts("kernel,loops,dots,loads", Granularity::Warp, 64)));
        let base = run_emu(&plain.ptx, grid, &with_poison(&rt, &[2]));
        let (got, p, _) = run_profiled(&prof, grid, &with_poison(&rt, &[2]));
        assert_eq!(got.len(), base.len());
        for (g, b) in got.iter().zip(&base) {
            assert_eq!(g.data, b.data, "{target}: profiling changed an output");
        }
        assert_same(&got, &want, None, &format!("matmul {target} profiled"));
        no_warnings(&p, &format!("matmul {target}"));
        // Doubled probes (the per-site cost's second launch): the same outputs, every record
        // twice in a row, and the steps between records measurable against the single launch.
        let doubled = ProfileOptions {
            mode: ProbeMode::Doubled,
            ..profile_opts("kernel,loops,dots,loads", Granularity::Warp, 64)
        };
        let twice = compile_for(&m, &kernel, target, 4, Some(doubled));
        let (got2, p2, _) = run_profiled(&twice, grid, &with_poison(&rt, &[2]));
        for (g, b) in got2.iter().zip(&base) {
            assert_eq!(g.data, b.data, "{target}: doubled probes changed an output");
        }
        no_warnings(&p2, &format!("matmul {target} doubled"));
        for (one, two) in p.slots.iter().zip(&p2.slots) {
            let (one, two) = (&one.trace, &two.trace);
            assert_eq!(two.total, 2 * one.total, "{target}");
            for (e, pair) in one.events.iter().zip(two.events.chunks(2)) {
                assert_eq!((e.region, e.is_end), (pair[0].region, pair[0].is_end), "{target}");
                assert_eq!((e.region, e.is_end), (pair[1].region, pair[1].is_end), "{target}");
            }
        }
        let costs = trident_profile::SiteCosts::measure(&p.traces(), &p2.traces()).unwrap();
        assert!(costs.steps.len() >= p.meta.regions.len() * 2, "{target}: {costs:?}");
        assert!(costs.steps.values().all(|c| c.is_finite()) && costs.fallback > 0.0, "{target}: {costs:?}");
        properly_nested(&p);
        assert_eq!(p.slots.len(), grid[0] as usize * 4);
        let c = counts(&p);
        let names: Vec<String> = p.meta.regions.iter().map(|r| r.name.clone()).collect();
        let loop_name = names.iter().find(|n| n.starts_with("loop@matmul.py")).expect("a loop region").clone();
        let dot_name = names.iter().find(|n| n.starts_with("dot@matmul.py")).expect("a dot region").clone();
        for s in 0..p.slots.len() {
            assert_eq!(c.get(&(s, "kernel".to_string())), Some(&1), "{target} slot {s}");
            assert_eq!(
                c.get(&(s, loop_name.clone())),
                Some(&trips),
                "{target} slot {s}: one loop region per iteration"
            );
            assert_eq!(c.get(&(s, dot_name.clone())), Some(&trips), "{target} slot {s}");
            // The pipelined loads: one wait per iteration, named after the loop's line.
            let waits: usize =
                c.iter().filter(|((slot, n), _)| *slot == s && n.starts_with("load@")).map(|(_, &k)| k).sum();
            assert_eq!(waits, trips, "{target} slot {s}: one load region (the wait) per iteration");
        }
        if target == Target::Sm90a {
            // Warpgroup MMAs are asynchronous. The probes force no wait: the dot region ends
            // after the issue (`wgmma.commit_group`), and so does the loop region — the MMA
            // accumulates in place and runs on into the next iteration, whose barrier waits
            // for it (the kernel makes no wait before its `yield`).
            let lines: Vec<&str> =
                prof.ptx.ptx.lines().map(str::trim).filter(|l| l.ends_with(';') && !l.starts_with("//")).collect();
            let end_probe = |name: &str| {
                let tag = p.meta.regions.iter().find(|r| r.name == name).unwrap().id | 1 << 31;
                let at =
                    lines.iter().position(|l| l.starts_with("mov.b32") && l.ends_with(&format!(", {tag};"))).unwrap();
                lines[at - 5]
            };
            assert!(end_probe(&dot_name).starts_with("wgmma.commit_group"), "{}", end_probe(&dot_name));
            assert!(!end_probe(&loop_name).starts_with("wgmma.wait_group"), "{}", end_probe(&loop_name));
            assert_eq!(
                prof.ptx.ptx.matches("wgmma.wait_group").count(),
                plain.ptx.ptx.matches("wgmma.wait_group").count()
            );
        }
    }
}

#[test]
fn softmax_probes_at_every_granularity() {
    let mut rng = Rng(seed());
    let (rows, cols) = (6usize, 1000usize);
    let args = [
        ("x", A::T(random(&mut rng, DType::F32, &[rows, cols], 4.0))),
        ("y", A::T(poisoned(DType::F32, &[rows, cols]))),
        ("x_row_stride", A::I(cols as i64)),
        ("y_row_stride", A::I(cols as i64)),
        ("n_cols", A::I(cols as i64)),
        ("BLOCK", A::C(1024)),
    ];
    let (m, kernel, rt) = front("softmax.py", "softmax_kernel", &args);
    let grid = [rows as u32, 1, 1];
    let want = run_interp(&m, &kernel, grid, &rt);
    let plain = compile_for(&m, &kernel, Target::Sm80, 8, None);
    let base = run_emu(&plain.ptx, grid, &with_poison(&rt, &[1]));
    assert_same(&base, &want, Some((2e-5, 1e-6)), "softmax");
    for (g, groups) in [(Granularity::Warp, 8), (Granularity::Warpgroup, 2), (Granularity::Cta, 1)] {
        let prof = compile_for(&m, &kernel, Target::Sm80, 8, Some(profile_opts("kernel,loads", g, 8)));
        for t in [Target::Sm90, Target::Sm90a] {
            compile_for(&m, &kernel, t, 8, Some(profile_opts("kernel,loads", g, 8)));
        }
        let (got, p, _) = run_profiled(&prof, grid, &with_poison(&rt, &[1]));
        for (a, b) in got.iter().zip(&base) {
            assert_eq!(a.data, b.data, "{g}: profiling changed an output");
        }
        no_warnings(&p, &format!("softmax {g}"));
        properly_nested(&p);
        assert_eq!(p.slots.len(), rows * groups, "{g}");
        assert!(p.slots.iter().all(|s| s.trace.total == 4), "{g}: kernel and one load, start and end");
        let c = counts(&p);
        assert_eq!(c.len(), rows * groups * 2, "{g}: {c:?}");
        assert!(c.values().all(|&n| n == 1), "{g}: {c:?}");
    }
}

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
        pl.enter_scope("math")
        acc = acc * 0.5 + v * (i + 1)
        pl.exit_scope("math")
    with pl.scope("store"):
        tl.store(y + offs, acc, mask=mask)
"#;

fn scoped_module(profile_scopes: bool, rng: &mut Rng, n: usize, iters: i64) -> (Module, String, Vec<Arg>) {
    let args = [
        ("x", A::T(random(rng, DType::F32, &[n], 2.0))),
        ("y", A::T(poisoned(DType::F32, &[n]))),
        ("n", A::I(n as i64)),
        ("ITERS", A::C(iters)),
        ("BLOCK", A::C(256)),
    ];
    let opts = trident_front::CompileOptions { profile_scopes, ..Default::default() };
    front_text_opts("scoped.py", SCOPED, "scoped", &args, &opts)
}

#[test]
fn scopes_from_source_are_balanced_ordered_and_counted() {
    let seed = seed();
    let (n, iters) = (700usize, 5i64);
    let (plain_m, kernel, rt) = scoped_module(false, &mut Rng(seed), n, iters);
    let (scoped_m, _, rt2) = scoped_module(true, &mut Rng(seed), n, iters);
    let grid = [(n as u32).div_ceil(256), 1, 1];
    // The interpreter ignores records: the same answers with and without them.
    let want = run_interp(&plain_m, &kernel, grid, &rt);
    let with_records = run_interp(&scoped_m, &kernel, grid, &rt2);
    for (a, b) in with_records.iter().zip(&want) {
        assert_eq!(a.data, b.data, "records changed the interpreter's answer");
    }
    let plain = compile_for(&plain_m, &kernel, Target::Sm80, 2, None);
    let base = run_emu(&plain.ptx, grid, &with_poison(&rt, &[1]));
    assert_same(&base, &want, None, "scoped kernel");
    let prof =
        compile_for(&scoped_m, &kernel, Target::Sm80, 2, Some(profile_opts("scopes,loops", Granularity::Warp, 64)));
    let (got, p, _) = run_profiled(&prof, grid, &with_poison(&rt, &[1]));
    for (a, b) in got.iter().zip(&base) {
        assert_eq!(a.data, b.data, "profiling changed an output");
    }
    eprintln!("{}", trident_profile::table::render_table(&p));
    no_warnings(&p, "scoped");
    properly_nested(&p);
    let c = counts(&p);
    for s in 0..p.slots.len() {
        for (name, want) in [("load", iters as usize), ("math", iters as usize), ("store", 1)] {
            assert_eq!(c.get(&(s, name.to_string())), Some(&want), "slot {s} region {name}");
        }
        // In program order within each iteration: load, then math; the store after the loop.
        let id = |name: &str| p.meta.regions.iter().find(|r| r.name == name).unwrap().id;
        let mine: Vec<_> = p.instances.iter().filter(|i| i.slot == s).collect();
        let starts = |r: u32| mine.iter().filter(|i| i.region == r).map(|i| (i.start, i.end)).collect::<Vec<_>>();
        let (loads, maths, store) = (starts(id("load")), starts(id("math")), starts(id("store")));
        for k in 0..iters as usize {
            assert!(loads[k].1 <= maths[k].0, "slot {s} iteration {k}: load ends before math starts");
            if k + 1 < iters as usize {
                assert!(maths[k].1 <= loads[k + 1].0);
            }
        }
        assert!(maths.last().unwrap().1 <= store[0].0);
    }
}

#[test]
fn a_ring_that_wraps_reports_its_dropped_records() {
    let seed = seed();
    let (n, iters) = (256usize, 12i64);
    let (m, kernel, rt) = scoped_module(true, &mut Rng(seed), n, iters);
    let prof = compile_for(&m, &kernel, Target::Sm80, 1, Some(profile_opts("scopes", Granularity::Warp, 8)));
    let (_, p, _) = run_profiled(&prof, [1, 1, 1], &rt);
    // 12 iterations x 2 scopes x 2 records + the store's 2: 50 records, 8 kept.
    let total = (iters as u32) * 4 + 2;
    assert_eq!(p.slots[0].trace.total, total);
    assert_eq!(p.dropped_records(), (total - 8) as u64);
    assert!(!p.has_errors(), "{:?}", p.issues);
    let text: Vec<String> = p.issues.iter().map(|i| i.to_string()).collect();
    assert!(text.iter().any(|t| t.contains(&format!("{}", total - 8)) && t.contains("dropped")), "{text:#?}");
    // What was kept is the newest records: the last iterations and the store.
    let c = counts(&p);
    assert_eq!(c.get(&(0, "store".to_string())), Some(&1));
    let table = trident_profile::table::render_table(&p);
    assert!(table.contains("dropped"), "{table}");
    // A ring of one record (slots only 8-byte aligned): the last record, the store's end.
    let prof = compile_for(&m, &kernel, Target::Sm80, 1, Some(profile_opts("scopes", Granularity::Warp, 1)));
    let (_, p, buffer) = run_profiled(&prof, [1, 1, 1], &rt);
    assert_eq!((p.slots[0].trace.total, p.dropped_records()), (total, (total - 1) as u64));
    let store = p.meta.regions.iter().find(|r| r.name == "store").unwrap().id;
    assert_eq!(&buffer[64..68], &(store | 1 << 31).to_le_bytes());
    assert!(!p.has_errors(), "{:?}", p.issues);
}

#[test]
fn traces_are_valid_and_the_same_from_run_to_run() {
    let mut rng = Rng(seed());
    let args = matmul_args(&mut rng, (64, 64, 96), (32, 32, 32), DType::F16, (false, true));
    let (m, kernel, rt) = front("matmul.py", "matmul_kernel", &args);
    let prof =
        compile_for(&m, &kernel, Target::Sm80, 4, Some(profile_opts("kernel,loops,dots", Granularity::Warpgroup, 64)));
    let grid = [4, 1, 1];
    let (_, p1, b1) = run_profiled(&prof, grid, &rt);
    let (_, p2, b2) = run_profiled(&prof, grid, &rt);
    assert_eq!(b1, b2, "the emulator's buffers differ between two runs");
    let (t1, t2) = (trident_profile::trace::chrome_trace_json(&p1), trident_profile::trace::chrome_trace_json(&p2));
    assert_eq!(t1, t2, "traces differ between two runs");
    let v: serde_json::Value = serde_json::from_str(&t1).unwrap();
    assert_eq!(trace_check::violations(&v), Vec::<String>::new());
    assert!(t1.contains("matmul.py"), "slices carry their source lines");
}

/// The opcodes (predicate and operands dropped) of `ptx`'s instruction lines.
fn opcodes(ptx: &str) -> Vec<String> {
    ptx.lines()
        .map(str::trim)
        .filter(|l| l.ends_with(';'))
        .map(|l| {
            let l = if l.starts_with('@') { l.split_once(' ').map_or(l, |(_, r)| r) } else { l };
            l.split_whitespace().next().unwrap_or("").to_string()
        })
        .collect()
}

#[test]
fn every_probe_is_the_same_instructions_and_the_buffer_is_a_hidden_parameter() {
    let seed = seed();
    let (m, kernel, _) = scoped_module(true, &mut Rng(seed), 256, 3);
    for target in [Target::Sm80, Target::Sm90, Target::Sm90a] {
        let prof =
            compile_for(&m, &kernel, target, 4, Some(profile_opts("scopes,kernel,loops", Granularity::Warp, 16)));
        let ops = opcodes(&prof.ptx.ptx);
        // Clock reads: `%clock64` at entry and exit, `%clock` in every probe.
        let clock_lines: Vec<(usize, bool)> = prof
            .ptx
            .ptx
            .lines()
            .map(str::trim)
            .filter(|l| l.ends_with(';'))
            .enumerate()
            .filter(|(_, l)| l.contains("%clock"))
            .map(|(i, l)| (i, l.contains("%clock64")))
            .collect();
        // Records: scopes load, math (2 each per iteration in the loop body), store; loop; kernel.
        let records = prof.gpu_ir.funcs[0]
            .all_ops()
            .into_iter()
            .filter(|&o| matches!(prof.gpu_ir.funcs[0].ops[o].kind, trident_ir::OpKind::Record { .. }))
            .count();
        assert_eq!(clock_lines.len(), records + 2, "{target}: one clock read per record, at entry and at exit");
        let (first, last) = (clock_lines[0], clock_lines[clock_lines.len() - 1]);
        assert!(first.1 && last.1, "{target}: the group's start and end read %clock64");
        let probe = ["mov.u32", "and.b32", "add.u32", "mad.lo.u32", "mov.b32", "st.shared.v2.u32"];
        for &(c, wide) in &clock_lines[1..clock_lines.len() - 1] {
            assert!(!wide, "{target}: a probe reads the 32-bit %clock");
            assert_eq!(&ops[c..c + probe.len()], &probe, "{target}: probe at instruction {c}");
        }
        // Doubled probes: the same six instructions twice per record, nothing else changes.
        let doubled =
            ProfileOptions { mode: ProbeMode::Doubled, ..profile_opts("scopes,kernel,loops", Granularity::Warp, 16) };
        let twice = compile_for(&m, &kernel, target, 4, Some(doubled));
        let twice_ops = opcodes(&twice.ptx.ptx);
        assert_eq!(twice_ops.len(), ops.len() + records * probe.len(), "{target}: doubled");
        let probes = twice.ptx.ptx.lines().filter(|l| l.contains("%clock") && !l.contains("%clock64")).count();
        assert_eq!(probes, 2 * records, "{target}: two probes per record");
        assert_eq!(twice.profile.as_ref().unwrap().regions, prof.profile.as_ref().unwrap().regions);
        let hidden = format!(".param .u64 {}_param_{}", prof.ptx.entry, prof.ptx.params.len());
        assert!(prof.ptx.ptx.contains(&hidden), "{target}: {hidden}");
        assert!(prof.ptx.ptx.contains("%globaltimer") && prof.ptx.ptx.contains("%smid"));
    }
}

#[test]
fn markers_are_the_unprofiled_kernel_plus_comments() {
    let mut rng = Rng(seed());
    let args = matmul_args(&mut rng, (64, 64, 96), (64, 64, 32), DType::F16, (false, false));
    let (m, kernel, rt) = front("matmul.py", "matmul_kernel", &args);
    for target in [Target::Sm80, Target::Sm90, Target::Sm90a] {
        let plain = compile_for(&m, &kernel, target, 4, None);
        let markers = ProfileOptions {
            mode: ProbeMode::Markers,
            ..profile_opts("kernel,loops,dots,loads", Granularity::Warp, 64)
        };
        let marked = compile_for(&m, &kernel, target, 4, Some(markers));
        assert!(!marked.ptx.profile_buffer);
        assert_eq!(marked.ptx.shared_bytes, plain.ptx.shared_bytes, "{target}: markers need no ring");
        let (kept, marks): (Vec<&str>, Vec<&str>) =
            marked.ptx.ptx.lines().partition(|l| !l.trim_start().starts_with("//@trident.mark"));
        assert_eq!(kept.join("\n") + "\n", plain.ptx.ptx, "{target}: markers changed the kernel");
        let meta = marked.profile.as_ref().unwrap();
        assert_eq!(meta.record_cost_cycles, 0.0);
        let tags: Vec<u32> = marks.iter().map(|l| l.trim()["//@trident.mark ".len()..].parse().unwrap()).collect();
        assert!(tags.iter().all(|t| meta.region(t & 0x7FFF_FFFF).is_some()), "{target}: {tags:?}");
        assert_eq!(tags.iter().filter(|t| *t & (1 << 31) != 0).count() * 2, tags.len(), "{target}: balanced");
        if target != Target::Sm90 {
            // The emulator runs it as the plain kernel.
            let got = run_emu(&marked.ptx, [1, 1, 1], &with_poison(&rt, &[2]));
            let base = run_emu(&plain.ptx, [1, 1, 1], &with_poison(&rt, &[2]));
            assert_eq!(
                got.iter().map(|t| &t.data).collect::<Vec<_>>(),
                base.iter().map(|t| &t.data).collect::<Vec<_>>()
            );
        }
    }
}

#[test]
fn bad_profiling_options_are_diagnostics() {
    let seed = seed();
    let (m, kernel, _) = scoped_module(true, &mut Rng(seed), 256, 3);
    let compile = |p: ProfileOptions, max_shared_bytes: Option<u32>| {
        let opts = GpuOptions { profile: Some(p), max_shared_bytes, num_warps: 8, ..GpuOptions::default() };
        trident_gpu::compile(&m, &kernel, &opts).map(|_| ()).unwrap_err()
    };
    let e = compile(profile_opts("scopes", Granularity::Warp, 12), None);
    assert!(e.diagnostic.message.contains("power of two"), "{}", e.diagnostic.message);
    let e = compile(ProfileOptions { regions: Regions::default(), ..ProfileOptions::default() }, None);
    assert!(e.diagnostic.message.contains("no regions"), "{}", e.diagnostic.message);
    // 8 warps x 4096 records x 8 bytes = 256 KiB: more than any GPU has.
    let e = compile(profile_opts("scopes", Granularity::Warp, 4096), None);
    assert!(e.is_out_of_resources());
    let text = e.diagnostic.render(&m.files);
    assert!(text.contains("262144 bytes are the profile rings (8 warps x 4096 records x 8 bytes)"), "{text}");
    // Records reaching emission without profiling options are refused, not miscompiled.
    let opts = GpuOptions::default();
    let p = trident_gpu::GpuPipeline::new(&GpuOptions { profile: Some(ProfileOptions::default()), ..opts.clone() });
    let (gm, _) = p.lower(&m, &kernel).unwrap();
    let e = trident_gpu::emit_gpu_ir(&gm, &kernel, &opts).unwrap_err();
    assert!(e.message.contains("needs profiling options"), "{}", e.message);
}
