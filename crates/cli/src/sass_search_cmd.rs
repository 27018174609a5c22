//! `trident sass search`: parses the search's options, hands the rest of the line to the
//! runtime's `trident run` parser, then prints what trident-sass-search found and writes
//! the files asked for. The setup is `trident_runtime::sass_search`'s, the search the
//! crate's.
//!
//! ```text
//! trident sass search FILE.py::KERNEL ARGS... --grid G [--backend sass-emu|cuda] [--target sm_80|sm_90a]
//!     [--algo greedy|greedy-first|anneal|beam[:W]|ppo] [--actions moves|control|all] [--budget 60s|2m|N]
//!     [--seed S] [--repeats N]
//!     [-o OUT.cubin] [--moves OUT.json] [--curve OUT.csv] [--plot OUT.png] [--plot-size WxH]
//! ```

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use trident_runtime::args::Backend;
use trident_runtime::plot::{curve_png, CurvePlot};
use trident_runtime::sass_search::{self, search, CudaTimer};
use trident_runtime::RunCommand;

/// The search's own options, taken out of the line before the run parser sees it.
struct SearchOptions {
    algo: search::Algo,
    actions: search::Family,
    budget: search::Budget,
    seed: u64,
    target: Option<String>,
    repeats: Option<usize>,
    output: Option<String>,
    moves: Option<String>,
    curve: Option<String>,
    plot: Option<String>,
    plot_size: (u32, u32),
}

const USAGE: &str = "usage: trident sass search FILE.py::KERNEL ARGS... --grid G [--backend sass-emu|cuda] \
[--target sm_80|sm_90|sm_90a] [--algo greedy|greedy-first|anneal|beam[:W]|ppo] [--actions moves|control|all] \
[--budget 60s|2m|N] [--seed S] \
[--repeats N] [-o OUT.cubin] [--moves OUT.json] [--curve OUT.csv] [--plot OUT.png] [--plot-size WxH]";

fn parse_size(v: &str) -> Option<(u32, u32)> {
    let (w, h) = v.split_once(['x', 'X'])?;
    Some((w.parse().ok()?, h.parse().ok()?))
}

fn split_options(words: &[String]) -> Result<(SearchOptions, Vec<String>), String> {
    let mut o = SearchOptions {
        algo: search::Algo::Greedy,
        actions: search::DEFAULT_FAMILY,
        budget: search::Budget::Time(Duration::from_secs(60)),
        seed: 1,
        target: None,
        repeats: None,
        output: None,
        moves: None,
        curve: None,
        plot: None,
        plot_size: (800, 480),
    };
    let mut rest = vec![];
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        let (flag, inline) = match w.split_once('=') {
            Some((f, v)) if f.starts_with('-') => (f, Some(v.to_string())),
            _ => (w.as_str(), None),
        };
        let known = [
            "--algo",
            "--actions",
            "--budget",
            "--seed",
            "--target",
            "--repeats",
            "-o",
            "--output",
            "--moves",
            "--curve",
            "--plot",
            "--plot-size",
        ];
        if !known.contains(&flag) {
            rest.push(w.clone());
            i += 1;
            continue;
        }
        let value = match inline {
            Some(v) => v,
            None => {
                i += 1;
                words.get(i).cloned().ok_or_else(|| format!("error: {flag} needs a value\n{USAGE}"))?
            }
        };
        i += 1;
        match flag {
            "--algo" => o.algo = search::Algo::parse(&value).map_err(|e| format!("error: --algo: {e}"))?,
            "--actions" => o.actions = search::Family::parse(&value).map_err(|e| format!("error: --actions: {e}"))?,
            "--budget" => o.budget = search::Budget::parse(&value).map_err(|e| format!("error: --budget: {e}"))?,
            "--seed" => {
                o.seed = value.parse().map_err(|_| format!("error: --seed: `{value}` is not a whole number"))?
            }
            "--target" => o.target = Some(value),
            "--repeats" => match value.parse::<usize>() {
                Ok(n) if n >= 3 => o.repeats = Some(n),
                _ => return Err(format!("error: --repeats: `{value}` is not a whole number ≥ 3")),
            },
            "-o" | "--output" => o.output = Some(value),
            "--moves" => o.moves = Some(value),
            "--plot" => o.plot = Some(value),
            "--plot-size" => {
                o.plot_size = parse_size(&value)
                    .ok_or_else(|| format!("error: --plot-size: `{value}` is not WIDTHxHEIGHT (800x480)"))?
            }
            _ => o.curve = Some(value),
        }
    }
    Ok((o, rest))
}

pub fn search(words: &[String]) -> Result<(), String> {
    let (o, rest) = split_options(words)?;
    let cmd = RunCommand::parse(&rest).map_err(|e| format!("error: {e}\n{USAGE}"))?;
    let cuda = cmd.backend == Backend::Cuda;
    if o.repeats.is_some() && !cuda {
        return Err("error: --repeats: only with --backend cuda (the SASS emulator's estimate is exact)".into());
    }
    let (w, h) = o.plot_size;
    let (min_w, min_h) = trident_runtime::plot::MIN_SIZE;
    if w < min_w || h < min_h || w > 8192 || h > 8192 {
        return Err(format!("error: --plot-size {w}x{h}: from {min_w}x{min_h} to 8192x8192"));
    }
    let setup = sass_search::setup(&cmd, o.target.as_deref()).map_err(|e| e.text)?;
    let disasm = sass_search::disassembler().map_err(|e| e.text)?;
    let kernel = setup.problem.kernel.clone();
    let mut env = if cuda {
        let timer = CudaTimer::new(&setup, o.repeats.unwrap_or(CudaTimer::REPEATS)).map_err(|e| e.text)?;
        let unstable = timer.unstable();
        if !unstable.is_empty() {
            eprintln!(
                "note: arguments {unstable:?} differ between two GPU runs of the original: the GPU check does not \
                 compare them (the SASS emulator's check does)"
            );
        }
        search::Env::with_reward(setup.problem.clone(), disasm, Box::new(timer))
    } else {
        search::Env::new(setup.problem.clone(), disasm)
    }
    .map_err(|e| format!("error: {e}"))?;
    env.family = o.actions;
    let (reward, unit) = env.reward();
    let actions = env.actions(env.original());
    let edits = actions.iter().filter(|a| matches!(a, search::Action::Edit { .. })).count();
    eprintln!(
        "searching {kernel} ({}, grid {:?}, {} threads): {} instructions, {} memory, {} legal moves and {edits} \
         control-bit edits at the start (--actions {}); {} on {reward}",
        setup.arch,
        setup.grid,
        setup.threads,
        env.original().text.len(),
        env.original().text.iter().filter(|t| search::is_memory(t)).count(),
        actions.len() - edits,
        o.actions.name(),
        o.algo.name()
    );

    let bar = if std::io::stderr().is_terminal() {
        let bar = ProgressBar::with_draw_target(Some(1000), ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template("{prefix} [{bar:30}] {elapsed_precise} {wide_msg}") {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(format!("search {}", o.algo.name()));
        bar
    } else {
        ProgressBar::hidden()
    };
    let opts = search::Options { algo: o.algo, budget: o.budget, seed: o.seed };
    let mut report = |p: &search::Progress| {
        bar.set_position((p.fraction * 1000.0) as u64);
        bar.set_message(format!(
            "{} evaluations, best {} {unit} ({:.3}×)",
            p.evaluations,
            p.best_cycles,
            p.original_cycles as f64 / p.best_cycles.max(1) as f64
        ));
    };
    let out = search::search(&mut env, &opts, &mut report).map_err(|e| format!("error: {e}"))?;
    bar.finish_and_clear();

    let s = &out.stats;
    println!(
        "kernel        {kernel} ({}), {} search over {}, seed {}",
        setup.arch,
        out.algo.name(),
        o.actions.name(),
        out.seed
    );
    if env.exact() {
        println!("original      {} estimated cycles", out.original_cycles);
        println!(
            "best          {} estimated cycles: {:.4}× (SASS emulator model, uncalibrated)",
            out.best_cycles,
            out.speedup()
        );
    } else {
        let n = &env.noise;
        println!("reward        {reward}");
        println!(
            "original      {} {unit} (median of {} measurements: {:?})",
            out.original_cycles,
            n.rounds.len(),
            n.rounds
        );
        println!(
            "noise         a gain counts above {} {unit} (the range of those, {} {unit}, or 3 standard errors of a \
             difference, {:.0} {unit}), confirmed by a second measurement next to the best",
            n.threshold,
            n.range,
            3.0 * std::f64::consts::SQRT_2 * n.error
        );
        println!("best          {} {unit}: {:.4}× (as measured when kept)", out.best_cycles, out.speedup());
        if let Some(r) = &out.remeasured {
            println!(
                "re-measured   original {:?}, best {:?} {unit} ({} interleaved rounds): {:.4}×",
                r.original,
                r.best,
                r.original.len(),
                r.speedup()
            );
        }
    }
    let best_edits = out.best.moves.iter().filter(|m| m.edit.is_some()).count();
    println!(
        "moves         {} (of the best schedule: {} moves, {best_edits} control-bit edits)",
        out.best.moves.len(),
        out.best.moves.len() - best_edits
    );
    if env.exact() {
        println!(
            "evaluations   {} emulator runs, {} cache hits, {} steps made ({} of them edits), {} refused, {} rejected \
             by the verifier, {} stopped by the emulator",
            s.evaluations, s.cache_hits, s.moves, s.edits, s.refused, s.verifier_rejected, s.emulator_errors
        );
        println!(
            "checks        {} kept schedules checked (verifier + equal outputs on fresh inputs), {} failed",
            s.checks, s.check_failures
        );
    } else {
        println!(
            "evaluations   {} schedules timed, {} cache hits, {} measured again ({} gains not confirmed), {} steps \
             made ({} of them edits), {} refused, {} rejected by the verifier, {} failed to run",
            s.evaluations,
            s.cache_hits,
            s.remeasures,
            s.unconfirmed,
            s.moves,
            s.edits,
            s.refused,
            s.verifier_rejected,
            s.emulator_errors
        );
        println!(
            "checks        {} kept schedules checked (verifier + equal outputs on fresh inputs on the SASS emulator, \
             equal outputs on the GPU), {} failed",
            s.checks, s.check_failures
        );
    }
    if let Some(why) = &s.first_check_failure {
        println!("first failure {why}");
    }
    println!("time          {:.1} s ({})", out.elapsed.as_secs_f64(), out.stopped);
    let curve: Vec<String> = out.curve.iter().map(|p| format!("{:.1}s:{}", p.seconds, p.best_cycles)).collect();
    println!("curve         {}", curve.join(" → "));

    let write =
        |path: &str, bytes: &[u8]| std::fs::write(path, bytes).map_err(|e| format!("error: cannot write {path}: {e}"));
    if let Some(p) = &o.output {
        write(p, &out.bytes)?;
        println!("wrote {p}");
    }
    if let Some(p) = &o.moves {
        write(p, out.moves_json(&kernel).as_bytes())?;
        println!("wrote {p}");
    }
    if let Some(p) = &o.curve {
        write(p, out.curve_csv().as_bytes())?;
        println!("wrote {p}");
    }
    if let Some(p) = &o.plot {
        let points: Vec<(f64, u64)> = out.curve.iter().map(|c| (c.seconds, c.best_cycles)).collect();
        let title = format!("{kernel} ({}): {} search, seed {}", setup.arch, out.algo.name(), out.seed);
        let unit = if env.exact() { "estimated cycles".to_string() } else { format!("{unit} (measured)") };
        let plot = CurvePlot { title: &title, unit: &unit, original: out.original_cycles, points: &points };
        write(p, &curve_png(&plot, w, h).map_err(|e| format!("error: --plot: {e}"))?)?;
        println!("wrote {p} ({w}×{h})");
    }
    Ok(())
}
