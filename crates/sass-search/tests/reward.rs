//! The reward plumbing with a fake timer (no GPU): a timer whose times are a known function
//! of the schedule plus seeded noise. Checks that the environment reports exactly what the
//! timer returned (medians, the noise rounds, the confirming measurements, the end's
//! interleaved rounds), that the search finds the known best, and that it never keeps a
//! move whose true gain is within the noise — while the same function without noise does
//! keep such moves (so the test can see the difference).
//!
//! The function: Triton's matmul (sm_80) through ptxas; one memory instruction, the target,
//! costs `K` per slot away from a goal a few slots above its place (reached by legal moves,
//! so the best is known: the target at the goal); another, the decoy, costs `EPS` per slot
//! down its block (a real gain far below the noise).

mod common;

use std::cell::RefCell;
use std::rc::Rc;

use trident_sass_search::reward::{median, NOISE_ROUNDS};
use trident_sass_search::{
    is_memory, search, Action, Algo, Budget, Candidate, Env, Measurement, Move, Options, Reward, State,
};

const BASE: f64 = 100_000.0;
const K: f64 = 2_000.0;
const EPS: f64 = 40.0;
const SIGMA: f64 = 200.0;
const SAMPLES: usize = 15;

/// SplitMix64, for the timer's noise.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn uniform(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// About normal (Irwin–Hall of 12 uniforms), mean 0, standard deviation 1.
    fn normal(&mut self) -> f64 {
        (0..12).map(|_| self.uniform()).sum::<f64>() - 6.0
    }
}

/// Where the instruction first at `at` is after `moves` (each an adjacent swap).
fn position(at: usize, moves: &[Move]) -> usize {
    let mut p = at;
    for m in moves {
        if m.from == p {
            p = m.to;
        } else if m.to == p {
            p = m.from;
        }
    }
    p
}

/// What the timer did, shared with the test.
#[derive(Default)]
struct Log {
    /// Every call: the schedule's true time and the samples returned.
    calls: Vec<(f64, Vec<f64>)>,
    /// The true time of every schedule the environment asked the reward to check (each one
    /// about to be kept as the best), in order.
    kept: Vec<f64>,
}

struct FakeTimer {
    target: usize,
    goal: usize,
    decoy: usize,
    noisy: bool,
    rng: Rng,
    log: Rc<RefCell<Log>>,
}

impl FakeTimer {
    fn truth(&self, s: &State) -> f64 {
        let t = position(self.target, &s.moves) as f64;
        let d = position(self.decoy, &s.moves) as f64;
        BASE + K * (t - self.goal as f64).abs() + EPS * d
    }
}

impl Reward for FakeTimer {
    fn describe(&self) -> String {
        "a fake timer".into()
    }

    fn unit(&self) -> &'static str {
        "ns"
    }

    fn exact(&self) -> bool {
        !self.noisy
    }

    fn score(&mut self, c: &Candidate) -> Result<Measurement, String> {
        let t = self.truth(c.state);
        let samples: Vec<f64> = if self.noisy {
            (0..SAMPLES)
                .map(|_| {
                    // One sample in twenty-five an outlier (a slow launch), as on a real GPU.
                    let slow = if self.rng.uniform() < 0.04 { 20.0 * SIGMA } else { 0.0 };
                    t + SIGMA * self.rng.normal() + slow
                })
                .collect()
        } else {
            vec![t]
        };
        self.log.borrow_mut().calls.push((t, samples.clone()));
        Measurement::of_samples(&samples)
    }

    fn check(&mut self, c: &Candidate) -> Result<(), String> {
        let t = self.truth(c.state);
        self.log.borrow_mut().kept.push(t);
        Ok(())
    }
}

/// The matmul problem, the target and decoy, and the goal: the target walked up from its
/// place by legal moves (up to three slots).
fn setup() -> (trident_sass_search::Problem, usize, usize, usize) {
    let problem = common::problem("matmul", "sm_80");
    let mut env = Env::new(problem.clone(), common::disassembler()).unwrap();
    let orig = env.original().clone();
    let ups: Vec<usize> = env.actions(&orig).iter().filter(|a| a.up()).map(|a| a.at()).collect();
    // The target: the first memory instruction that walks up three slots; else the one that
    // walks furthest.
    let mut best: Option<(usize, usize)> = None;
    for &at in &ups {
        let mut s = orig.clone();
        let mut p = at;
        while at - p < 3 {
            let Ok(next) = env.apply(&s, Action::Move { at: p, up: true }) else { break };
            s = next;
            p -= 1;
        }
        if best.is_none_or(|(a, g)| at - p > a - g) {
            best = Some((at, p));
        }
        if at - p == 3 {
            break;
        }
    }
    let (target, goal) = best.expect("matmul has a memory instruction that moves up");
    assert!(target > goal, "the target moves");
    // The decoy: a memory instruction that can move up, far from the target.
    let decoy = *ups.iter().find(|&&d| d.abs_diff(target) > 8).expect("a second movable memory instruction");
    assert!(is_memory(&orig.text[decoy]));
    (problem, target, goal, decoy)
}

fn run(
    noisy: bool,
    algo: Algo,
    evals: usize,
    seed: u64,
) -> (Env, trident_sass_search::Outcome, Rc<RefCell<Log>>, FakeTimer) {
    let (problem, target, goal, decoy) = setup();
    let log = Rc::new(RefCell::new(Log::default()));
    let timer = FakeTimer { target, goal, decoy, noisy, rng: Rng(seed), log: log.clone() };
    // A twin of the timer (same function) to compute true times in the test.
    let twin = FakeTimer { target, goal, decoy, noisy, rng: Rng(0), log: Rc::new(RefCell::new(Log::default())) };
    let mut env = Env::with_reward(problem, common::disassembler(), Box::new(timer)).unwrap();
    let opts = Options { algo, budget: Budget::Evaluations(evals), seed };
    let out = search(&mut env, &opts, &mut |_| {}).unwrap();
    (env, out, log, twin)
}

fn med(samples: &[f64]) -> u64 {
    median(samples).unwrap().round() as u64
}

#[test]
fn plumbing_reports_what_the_timer_returned() {
    if !common::tools() {
        return;
    }
    let (problem, target, goal, decoy) = setup();
    let log = Rc::new(RefCell::new(Log::default()));
    let timer = FakeTimer { target, goal, decoy, noisy: true, rng: Rng(11), log: log.clone() };
    let mut env = Env::with_reward(problem, common::disassembler(), Box::new(timer)).unwrap();
    assert_eq!(env.reward(), ("a fake timer".to_string(), "ns"));
    assert!(!env.exact());

    // The noise: the original measured NOISE_ROUNDS times; its score the median of those.
    {
        let l = log.borrow();
        assert_eq!(l.calls.len(), NOISE_ROUNDS);
        let medians: Vec<u64> = l.calls.iter().map(|(_, s)| med(s)).collect();
        assert_eq!(env.noise.rounds, medians);
        let (lo, hi) = (medians.iter().min().unwrap(), medians.iter().max().unwrap());
        assert_eq!(env.noise.range, hi - lo);
        let errors: Vec<f64> = l.calls.iter().map(|(_, s)| Measurement::of_samples(s).unwrap().error).collect();
        let e = errors.iter().cloned().fold(0.0, f64::max);
        assert_eq!(env.noise.threshold, (hi - lo).max((3.0 * 2f64.sqrt() * e).ceil() as u64));
        assert_eq!(env.original_cycles, med(&medians.iter().map(|&m| m as f64).collect::<Vec<_>>()));
        // Within a few standard errors of the truth (a sanity check of the timer, not the rule).
        assert!((env.original_cycles as f64 - l.calls[0].0).abs() < 6.0 * SIGMA, "{}", env.original_cycles);
        assert_eq!(env.stats.remeasures, NOISE_ROUNDS);
        assert_eq!(env.stats.evaluations, 0);
        assert!(env.noise.threshold > EPS as u64, "the decoy's gain must be within the noise for this test");
        assert!(K as u64 > 2 * env.noise.threshold, "the target's gain must be well beyond it");
    }

    // A move scored: the median of exactly what the timer returned for it; cached after.
    let orig = env.original().clone();
    let a = Action::Move { at: target, up: true };
    let child = env.apply(&orig, a).unwrap();
    let v = env.evaluate(&child).unwrap();
    let (truth, samples) = log.borrow().calls.last().cloned().unwrap();
    assert_eq!(v, med(&samples));
    assert_eq!(truth, BASE + K * (target - 1 - goal) as f64 + EPS * decoy as f64);
    assert_eq!(env.stats.evaluations, 1);
    assert_eq!(env.evaluate(&child).unwrap(), v, "a repeated state comes from the cache");
    assert_eq!((log.borrow().calls.len(), env.stats.cache_hits), (NOISE_ROUNDS + 1, 1));
    // A re-measurement is a fresh call, and when asked replaces the cached score.
    let again = env.remeasure(&child, true).unwrap();
    assert_eq!(again, med(&log.borrow().calls.last().unwrap().1));
    assert_eq!(env.evaluate(&child).unwrap(), again);
    assert_eq!(env.stats.remeasures, NOISE_ROUNDS + 1);

    // A whole search: every score it kept is a median the timer returned for that schedule.
    let opts = Options { algo: Algo::Greedy, budget: Budget::Evaluations(300), seed: 4 };
    let before = log.borrow().calls.len();
    let out = search(&mut env, &opts, &mut |_| {}).unwrap();
    let l = log.borrow();
    let returned: Vec<u64> = l.calls.iter().map(|(_, s)| med(s)).collect();
    for p in &out.curve {
        assert!(returned.contains(&p.best_cycles), "curve point {} is no median the timer returned", p.best_cycles);
    }
    assert_eq!(out.curve.last().unwrap().best_cycles, out.best_cycles);
    // One timer call per evaluation and per re-measurement, nothing else.
    assert_eq!(l.calls.len() - before, out.stats.evaluations + out.stats.remeasures);
    // Each kept schedule was confirmed first (it and the best measured again), and the end
    // measured both NOISE_ROUNDS times more.
    assert!(out.stats.checks > 0);
    assert!(out.stats.remeasures >= 2 * out.stats.checks + 2 * NOISE_ROUNDS, "{:?}", out.stats);
    // The end: original and best measured again in turn; the outcome holds those medians.
    let r = out.remeasured.as_ref().expect("the best is not the original");
    assert_eq!(r.original.len(), NOISE_ROUNDS);
    let tail = &returned[returned.len() - 2 * NOISE_ROUNDS..];
    for i in 0..NOISE_ROUNDS {
        assert_eq!((r.original[i], r.best[i]), (tail[2 * i], tail[2 * i + 1]));
    }
    assert!(r.speedup() > 1.0, "{r:?}");
}

#[test]
fn noisy_search_finds_the_known_best_and_keeps_no_gain_within_the_noise() {
    if !common::tools() {
        return;
    }
    for (algo, evals, seed) in [(Algo::Greedy, 600, 1), (Algo::GreedyFirst, 600, 3), (Algo::Anneal, 250, 4)] {
        let (env, out, log, twin) = run(true, algo, evals, seed);
        let what = format!("{} seed {seed}", algo.name());
        let l = log.borrow();
        let t0 = twin.truth(env.original());
        let mut prev = t0;
        for &t in &l.kept {
            if algo == Algo::Anneal {
                // Annealing keeps a schedule many moves from the last best: it must be truly faster.
                assert!(t < prev, "{what}: kept a schedule truly {} slower", t - prev);
            } else {
                // Hill climbing keeps one move at a time: each a target step (true gain K ± EPS),
                // never a step that gains only the decoy's EPS (within the noise).
                assert!(prev - t >= K - EPS, "{what}: kept a step of true gain {}", prev - t);
            }
            prev = t;
        }
        assert_eq!(l.kept.len(), out.stats.checks, "{what}");
        assert_eq!(out.stats.check_failures, 0, "{what}");
        assert_eq!(twin.truth(&out.best), *l.kept.last().unwrap_or(&t0), "{what}");
        if algo != Algo::Anneal {
            // The known best: the target at its goal.
            assert_eq!(position(twin.target, &out.best.moves), twin.goal, "{what}: {:?}", out.best.moves);
            assert_eq!(out.stopped, "local optimum (no legal move improves)", "{what}");
        }
        // The same seed gives the same search (annealing: the most random of the three).
        if algo == Algo::Anneal {
            let (_, again, _, _) = run(true, algo, evals, seed);
            assert_eq!(again.best.moves, out.best.moves, "{what}");
            assert_eq!(again.bytes, out.bytes, "{what}");
        }
    }
}

#[test]
fn without_noise_the_same_function_keeps_the_small_gains() {
    if !common::tools() {
        return;
    }
    // The control: an exact timer of the same function keeps the decoy's moves (true gain EPS),
    // which the noisy search above never does.
    let (env, out, log, twin) = run(false, Algo::Greedy, 600, 1);
    assert!(env.noise.threshold == 0 && env.exact());
    let l = log.borrow();
    let mut prev = twin.truth(env.original());
    let mut small = 0;
    for &t in &l.kept {
        if prev - t < K / 2.0 {
            small += 1;
        }
        prev = t;
    }
    assert!(small > 0, "no move of gain EPS was kept without noise: {:?}", l.kept);
    assert_eq!(position(twin.target, &out.best.moves), twin.goal);
    assert!(out.remeasured.is_none(), "an exact reward is not measured again");
}

/// A timer whose device is lost at its `after`-th score (a candidate faulted: CUDA's errors
/// after an illegal address are sticky); every later call fails.
struct LosingTimer {
    calls: usize,
    after: usize,
}

impl Reward for LosingTimer {
    fn describe(&self) -> String {
        "a timer that loses its device".into()
    }

    fn unit(&self) -> &'static str {
        "ns"
    }

    fn exact(&self) -> bool {
        false
    }

    fn score(&mut self, c: &Candidate) -> Result<Measurement, String> {
        self.calls += 1;
        if self.calls >= self.after {
            return Err("CUDA_ERROR_ILLEGAL_ADDRESS".into());
        }
        // Every schedule the same but for noise: nothing to gain.
        let t = 10_000.0 + (c.state.moves.len() % 3) as f64;
        Measurement::of_samples(&[t, t + 1.0, t - 1.0])
    }

    fn lost(&self) -> Option<String> {
        (self.calls >= self.after).then(|| "the device faulted".to_string())
    }
}

/// A search whose reward is lost stops at once, says why, and returns the original (nothing
/// else was checked), instead of spending its budget on launches that can only fail.
#[test]
fn a_lost_device_stops_the_search() {
    if !common::tools() {
        return;
    }
    let (problem, ..) = setup();
    let timer = LosingTimer { calls: 0, after: NOISE_ROUNDS + 6 };
    let mut env = Env::with_reward(problem, common::disassembler(), Box::new(timer)).unwrap();
    for algo in [Algo::Greedy, Algo::Anneal] {
        let opts = Options { algo, budget: Budget::Evaluations(500), seed: 3 };
        let out = search(&mut env, &opts, &mut |_| {}).unwrap();
        assert!(out.stopped.contains("the device faulted"), "{algo:?}: {}", out.stopped);
        assert!(out.stats.evaluations < 20, "{algo:?}: {} evaluations after the loss", out.stats.evaluations);
        assert!(out.best.moves.is_empty(), "{algo:?}: kept {} moves", out.best.moves.len());
        assert!(out.remeasured.is_none());
    }
}
