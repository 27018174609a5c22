//! The search baselines over [`Env`]: greedy hill climbing (best- or first-improvement),
//! simulated annealing and beam search, each under a budget of evaluations or wall time
//! and a seed, each returning the best schedule found, its moves and a learning curve.
//!
//! A schedule becomes the best only after [`Env::check`] passes on it (the verifier on the
//! written cubin, equal outputs on fresh inputs); one that fails is forbidden and the
//! search goes on without it. With a measured reward a gain counts only beyond the noise
//! ([`crate::reward`]'s rule: [`crate::Noise::improves`], then a confirming second
//! measurement of the candidate and the best side by side).

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use crate::env::{Env, State, Stats};
use crate::rng::Rng;
use crate::SearchError;

/// Which search.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algo {
    /// Best-improvement hill climbing: score every legal move, take the best while it
    /// improves; stops at a local optimum.
    Greedy,
    /// First-improvement hill climbing: moves in random order, take the first that improves.
    GreedyFirst,
    /// Simulated annealing: random legal moves, worse ones accepted with probability
    /// exp(-Δ/T), T falling geometrically over the budget.
    Anneal,
    /// Beam search: every legal move of the `width` best schedules, keep the `width` best
    /// new children, repeat.
    Beam { width: usize },
    /// PPO: a small policy network over per-action features, trained on episodes of moves
    /// from the original schedule ([`crate::ppo`]).
    Ppo,
}

impl Algo {
    /// `greedy`, `greedy-first`, `anneal`, `beam` (width 4) or `beam:W`.
    pub fn parse(s: &str) -> Result<Algo, String> {
        Ok(match s {
            "greedy" => Algo::Greedy,
            "greedy-first" => Algo::GreedyFirst,
            "anneal" => Algo::Anneal,
            "beam" => Algo::Beam { width: 4 },
            "ppo" => Algo::Ppo,
            _ => match s.strip_prefix("beam:").map(str::parse::<usize>) {
                Some(Ok(w)) if w > 0 => Algo::Beam { width: w },
                _ => {
                    return Err(format!(
                        "unknown search `{s}` (greedy, greedy-first, anneal, beam, beam:WIDTH with WIDTH ≥ 1, ppo)"
                    ))
                }
            },
        })
    }

    pub fn name(self) -> String {
        match self {
            Algo::Greedy => "greedy".into(),
            Algo::GreedyFirst => "greedy-first".into(),
            Algo::Anneal => "anneal".into(),
            Algo::Beam { width } => format!("beam:{width}"),
            Algo::Ppo => "ppo".into(),
        }
    }
}

/// When a search stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Budget {
    /// This many schedules scored by the reward (cache hits are free).
    Evaluations(usize),
    /// This much wall time.
    Time(Duration),
}

impl Budget {
    /// `500` (evaluations), `90s`, `2m`, `1.5m`, `250ms`.
    pub fn parse(s: &str) -> Result<Budget, String> {
        let bad = || format!("bad budget `{s}`: a number of evaluations (500) or a time (90s, 2m, 250ms)");
        let s = s.trim();
        if let Ok(n) = s.parse::<usize>() {
            return if n == 0 { Err(bad()) } else { Ok(Budget::Evaluations(n)) };
        }
        let (num, scale) = if let Some(x) = s.strip_suffix("ms") {
            (x, 1e-3)
        } else if let Some(x) = s.strip_suffix('s') {
            (x, 1.0)
        } else if let Some(x) = s.strip_suffix('m') {
            (x, 60.0)
        } else if let Some(x) = s.strip_suffix('h') {
            (x, 3600.0)
        } else {
            return Err(bad());
        };
        match num.parse::<f64>() {
            Ok(v) if v.is_finite() && v > 0.0 && v * scale < 1e7 => {
                Ok(Budget::Time(Duration::from_secs_f64(v * scale)))
            }
            _ => Err(bad()),
        }
    }
}

/// How to search.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    pub algo: Algo,
    pub budget: Budget,
    pub seed: u64,
}

/// One point of the learning curve: when the best so far changed (and the start and end).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CurvePoint {
    pub seconds: f64,
    pub evaluations: usize,
    pub best_cycles: u64,
}

/// Where a running search is (for a progress bar).
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// Of the budget, 0 to 1.
    pub fraction: f64,
    pub evaluations: usize,
    pub elapsed: Duration,
    pub original_cycles: u64,
    pub best_cycles: u64,
}

/// A measured reward's last word: the original and the best measured again, in turn,
/// [`crate::reward::NOISE_ROUNDS`] times each (each value a median of the timer's samples).
#[derive(Clone, Debug, PartialEq)]
pub struct Remeasured {
    pub original: Vec<u64>,
    pub best: Vec<u64>,
}

impl Remeasured {
    /// The median of the original's rounds over the median of the best's.
    pub fn speedup(&self) -> f64 {
        let m = |v: &[u64]| crate::reward::median(&v.iter().map(|&x| x as f64).collect::<Vec<_>>()).unwrap_or(0.0);
        m(&self.original) / m(&self.best).max(1.0)
    }
}

/// What a search found.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub algo: Algo,
    pub seed: u64,
    pub original_cycles: u64,
    pub best_cycles: u64,
    /// The best schedule (checked), with its moves from the original.
    pub best: State,
    /// Its cubin.
    pub bytes: Vec<u8>,
    pub curve: Vec<CurvePoint>,
    /// The environment's counts over this search.
    pub stats: Stats,
    pub elapsed: Duration,
    /// Why it stopped (`budget spent`, `local optimum`, ...).
    pub stopped: String,
    /// Measured rewards, when the best is not the original: both measured again at the end,
    /// interleaved (the speed-up to report; the scores above were measured minutes apart).
    pub remeasured: Option<Remeasured>,
}

impl Outcome {
    /// Original score over best score (cycles, or time for a measured reward).
    pub fn speedup(&self) -> f64 {
        self.original_cycles as f64 / self.best_cycles.max(1) as f64
    }

    /// The learning curve as CSV: `seconds,evaluations,best_cycles,speedup`.
    pub fn curve_csv(&self) -> String {
        let mut s = String::from("seconds,evaluations,best_cycles,speedup\n");
        for p in &self.curve {
            let _ = writeln!(
                s,
                "{:.3},{},{},{:.5}",
                p.seconds,
                p.evaluations,
                p.best_cycles,
                self.original_cycles as f64 / p.best_cycles.max(1) as f64
            );
        }
        s
    }

    /// The best schedule's steps as JSON: each `{from, to, instruction, repairs, edit}` in
    /// order (positions are instruction indices, byte offset / 16, at the time of the step;
    /// `edit`: null for a move, else the control-bit edit, `from == to`).
    pub fn moves_json(&self, kernel: &str) -> String {
        let moves: Vec<String> = self
            .best
            .moves
            .iter()
            .map(|m| {
                let edit = m.edit.map_or("null".to_string(), |e| json_string(&e.name()));
                format!(
                    "    {{\"from\": {}, \"to\": {}, \"instruction\": {}, \"repairs\": {}, \"edit\": {edit}}}",
                    m.from,
                    m.to,
                    json_string(&m.line),
                    m.repairs
                )
            })
            .collect();
        format!(
            "{{\n  \"kernel\": {},\n  \"algo\": {},\n  \"seed\": {},\n  \"original_cycles\": {},\n  \"best_cycles\": {},\n  \"moves\": [\n{}\n  ]\n}}\n",
            json_string(kernel),
            json_string(&self.algo.name()),
            self.seed,
            self.original_cycles,
            self.best_cycles,
            moves.join(",\n")
        )
    }
}

fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// What [`Run::offer`] made of a schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Offer {
    /// It is the best so far (now, or already was).
    Kept,
    /// Usable, but not better than the best beyond the noise (or the confirming measurement
    /// did not bear the gain out).
    NotBetter,
    /// It failed the check: forbidden, treat it as unscored.
    Forbidden,
}

/// The search's bookkeeping: budget, best so far (checked), curve, progress.
pub(crate) struct Run<'a> {
    pub(crate) env: &'a mut Env,
    pub(crate) opts: Options,
    start: Instant,
    evals0: usize,
    /// Scores asked for (cache hits included): an evaluation budget also bounds these, so a
    /// search going round among cached states still ends.
    asked: usize,
    best: State,
    pub(crate) best_cycles: u64,
    curve: Vec<CurvePoint>,
    rng: Rng,
    checks: u64,
    progress: &'a mut dyn FnMut(&Progress),
}

impl Run<'_> {
    fn evaluations(&self) -> usize {
        self.env.stats.evaluations - self.evals0
    }

    fn fraction(&self) -> f64 {
        match self.opts.budget {
            Budget::Evaluations(n) => (self.evaluations() as f64 / n as f64).max(self.asked as f64 / (50.0 * n as f64)),
            Budget::Time(t) => self.start.elapsed().as_secs_f64() / t.as_secs_f64(),
        }
        .min(1.0)
    }

    /// The budget is spent — or the reward was lost (a device fault): nothing more to ask.
    pub(crate) fn spent(&self) -> bool {
        self.fraction() >= 1.0 || self.env.lost().is_some()
    }

    fn tell(&mut self) {
        let p = Progress {
            fraction: self.fraction(),
            evaluations: self.evaluations(),
            elapsed: self.start.elapsed(),
            original_cycles: self.env.original_cycles,
            best_cycles: self.best_cycles,
        };
        (self.progress)(&p);
    }

    /// Whether a score `new` is better than `old` beyond the reward's noise (exact: `new < old`).
    pub(crate) fn improves(&self, new: u64, old: u64) -> bool {
        self.env.noise.improves(new, old)
    }

    /// The score of `s`, or `None` when it has none (the emulator stopped it, or it failed
    /// a check before).
    pub(crate) fn score(&mut self, s: &State) -> Option<u64> {
        self.asked += 1;
        let r = self.env.evaluate(s).ok();
        self.tell();
        r
    }

    /// Offers `s` (scored `cycles`) as the new best: kept only if better beyond the noise
    /// and checked. A measured reward first measures `s` and the best again, side by side:
    /// the gain must hold on those too, and `s`'s second measurement becomes its score (the
    /// first was the luckiest of many draws, the second is not). [`Offer::Forbidden`] when it
    /// failed the check (or could not be measured again).
    pub(crate) fn offer(&mut self, s: &State, cycles: u64) -> Offer {
        if !self.improves(cycles, self.best_cycles) {
            let same = cycles == self.best_cycles && self.env.key(s) == self.env.key(&self.best);
            return if same { Offer::Kept } else { Offer::NotBetter };
        }
        let mut cycles = cycles;
        if !self.env.exact() {
            let again = match self.env.remeasure(s, true) {
                Ok(v) => v,
                Err(why) => {
                    self.env.forbid(s, why);
                    return Offer::Forbidden;
                }
            };
            let best = self.best.clone();
            let Ok(best_again) = self.env.remeasure(&best, false) else { return Offer::NotBetter };
            if !self.improves(again, best_again) {
                self.env.stats.unconfirmed += 1;
                return Offer::NotBetter;
            }
            cycles = again;
        }
        self.checks += 1;
        let seed = self.opts.seed.wrapping_mul(0x1000_0000_01b3).wrapping_add(self.checks);
        match self.env.check(s, seed) {
            Ok(()) => {
                self.best = s.clone();
                self.best_cycles = cycles;
                self.point();
                Offer::Kept
            }
            Err(why) => {
                self.env.forbid(s, why);
                Offer::Forbidden
            }
        }
    }

    fn point(&mut self) {
        let p = CurvePoint {
            seconds: self.start.elapsed().as_secs_f64(),
            evaluations: self.evaluations(),
            best_cycles: self.best_cycles,
        };
        self.curve.push(p);
    }
}

/// Runs the search `opts` asks for on `env`, calling `progress` as it goes.
pub fn search(env: &mut Env, opts: &Options, progress: &mut dyn FnMut(&Progress)) -> Result<Outcome, SearchError> {
    let stats0 = env.stats.clone();
    let best = env.original().clone();
    let best_cycles = env.original_cycles;
    let mut run = Run {
        evals0: env.stats.evaluations,
        env,
        opts: *opts,
        start: Instant::now(),
        asked: 0,
        best,
        best_cycles,
        curve: vec![],
        rng: Rng::new(opts.seed),
        checks: 0,
        progress,
    };
    run.point();
    let stopped = match opts.algo {
        Algo::Greedy => greedy(&mut run, false),
        Algo::GreedyFirst => greedy(&mut run, true),
        Algo::Anneal => anneal(&mut run),
        Algo::Beam { width } => beam(&mut run, width),
        Algo::Ppo => crate::ppo::ppo(&mut run),
    };
    let stopped = match run.env.lost() {
        Some(why) => format!("stopped early: {why}"),
        None => stopped,
    };
    let remeasured = if run.env.exact() || run.best.moves.is_empty() || run.env.lost().is_some() {
        None
    } else {
        let (original, best) = (run.env.original().clone(), run.best.clone());
        let mut r = Remeasured { original: vec![], best: vec![] };
        for _ in 0..crate::reward::NOISE_ROUNDS {
            match (run.env.remeasure(&original, false), run.env.remeasure(&best, false)) {
                (Ok(o), Ok(b)) => {
                    r.original.push(o);
                    r.best.push(b);
                }
                _ => break,
            }
        }
        (!r.best.is_empty()).then_some(r)
    };
    run.point();
    run.tell();
    let bytes = run.best.cubin.write().map_err(|e| SearchError(format!("writing the best cubin: {e}")))?;
    let s = &run.env.stats;
    let stats = Stats {
        evaluations: s.evaluations - stats0.evaluations,
        cache_hits: s.cache_hits - stats0.cache_hits,
        moves: s.moves - stats0.moves,
        edits: s.edits - stats0.edits,
        refused: s.refused - stats0.refused,
        verifier_rejected: s.verifier_rejected - stats0.verifier_rejected,
        emulator_errors: s.emulator_errors - stats0.emulator_errors,
        checks: s.checks - stats0.checks,
        check_failures: s.check_failures - stats0.check_failures,
        first_check_failure: if s.check_failures > stats0.check_failures {
            s.first_check_failure.clone()
        } else {
            None
        },
        remeasures: s.remeasures - stats0.remeasures,
        unconfirmed: s.unconfirmed - stats0.unconfirmed,
    };
    Ok(Outcome {
        algo: opts.algo,
        seed: opts.seed,
        original_cycles: run.env.original_cycles,
        best_cycles: run.best_cycles,
        best: run.best,
        bytes,
        curve: run.curve,
        stats,
        elapsed: run.start.elapsed(),
        stopped,
        remeasured,
    })
}

pub(crate) const SPENT: &str = "budget spent";

/// Hill climbing from the original; `first`: first improvement in random order, else the
/// best of all moves. Stops at a local optimum (no move improves) or when the budget is spent.
fn greedy(run: &mut Run, first: bool) -> String {
    let mut cur = run.env.original().clone();
    let mut cur_c = run.env.original_cycles;
    loop {
        let mut actions = run.env.actions(&cur);
        if first {
            // Fisher–Yates with the search's generator: the seed decides the order.
            for i in (1..actions.len()).rev() {
                let j = run.rng.below(i + 1);
                actions.swap(i, j);
            }
        }
        let mut children: Vec<(u64, State)> = vec![];
        let mut kept = None;
        for a in actions {
            if run.spent() {
                break;
            }
            let Ok(child) = run.env.apply(&cur, a) else { continue };
            let Some(c) = run.score(&child) else { continue };
            if first && run.improves(c, cur_c) {
                if run.offer(&child, c) == Offer::Kept {
                    kept = Some(child);
                    break;
                }
                continue;
            }
            children.push((c, child));
        }
        // First improvement: the child just kept; best improvement: the best child that
        // improves and passes the check.
        let mut moved = false;
        if let Some(child) = kept {
            cur = child;
            cur_c = run.best_cycles;
            moved = true;
        } else {
            children.sort_by_key(|(c, _)| *c);
            for (c, child) in children {
                if !run.improves(c, cur_c) {
                    break;
                }
                if run.offer(&child, c) == Offer::Kept {
                    cur = child;
                    cur_c = run.best_cycles;
                    moved = true;
                    break;
                }
            }
        }
        if run.spent() {
            return SPENT.into();
        }
        if !moved {
            return "local optimum (no legal move improves)".into();
        }
    }
}

/// Simulated annealing from the original. T starts at 0.2% of the original's cycles (a
/// move changes the estimate by a few to some tens of cycles on the kernels measured) and
/// falls geometrically to a hundredth of that over the budget.
fn anneal(run: &mut Run) -> String {
    let mut cur = run.env.original().clone();
    let mut cur_c = run.env.original_cycles;
    let t0 = (run.env.original_cycles as f64 * 0.002).max(1.0);
    let mut stuck = 0usize;
    while !run.spent() {
        let actions = run.env.actions(&cur);
        if actions.is_empty() {
            return "no legal move".into();
        }
        let a = actions[run.rng.below(actions.len())];
        let Ok(child) = run.env.apply(&cur, a) else {
            stuck += 1;
            if stuck > 10_000 {
                return "every move refused".into();
            }
            continue;
        };
        stuck = 0;
        let Some(c) = run.score(&child) else { continue };
        if run.improves(c, run.best_cycles) && run.offer(&child, c) == Offer::Forbidden {
            continue;
        }
        let t = t0 * 0.01f64.powf(run.fraction());
        let accept = c <= cur_c || run.rng.uniform() < (-((c - cur_c) as f64) / t).exp();
        if accept {
            cur = child;
            cur_c = c;
        }
    }
    SPENT.into()
}

/// Beam search from the original: each round, every legal move of every schedule in the
/// beam; the `width` best children not seen before form the next beam.
fn beam(run: &mut Run, width: usize) -> String {
    let mut beam = vec![run.env.original().clone()];
    let mut seen = std::collections::HashSet::new();
    seen.insert(words(run, &beam[0]));
    loop {
        let mut children: Vec<(u64, State)> = vec![];
        for s in &beam {
            for a in run.env.actions(s) {
                if run.spent() {
                    break;
                }
                let Ok(child) = run.env.apply(s, a) else { continue };
                if !seen.insert(words(run, &child)) {
                    continue;
                }
                if let Some(c) = run.score(&child) {
                    children.push((c, child));
                }
            }
        }
        if children.is_empty() {
            return if run.spent() { SPENT.into() } else { "no new schedule to explore".into() };
        }
        children.sort_by_key(|(c, _)| *c);
        // The round's best that passes the check becomes the best so far (when better).
        let mut next = vec![];
        for (c, child) in children {
            if next.len() == width {
                break;
            }
            if next.is_empty() && run.offer(&child, c) == Offer::Forbidden {
                continue;
            }
            next.push(child);
        }
        if run.spent() {
            return SPENT.into();
        }
        beam = next;
    }
}

fn words(run: &Run, s: &State) -> Vec<(u64, u64)> {
    s.cubin.kernels[run.env.kernel].instrs.iter().map(|i| (i.lo, i.hi)).collect()
}
