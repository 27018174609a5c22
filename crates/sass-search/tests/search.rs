//! Short searches on real kernels (Triton's vadd, softmax and matmul through ptxas for
//! sm_80 and sm_90a): every kept schedule — the best, and every point of the curve — is
//! re-checked here independently of `Env::check`: the written cubin read back by
//! `nvdisasm`, the verifier against the original, and the SASS emulator's outputs equal
//! to the original's on fresh inputs.

mod common;

use trident_sass_search::{search, Algo, Budget, Env, Options, Outcome};

fn run(which: &str, arch: &str, algo: Algo, evals: usize, seed: u64) -> (Env, Outcome) {
    let mut e = Env::new(common::problem(which, arch), common::disassembler()).unwrap();
    let opts = Options { algo, budget: Budget::Evaluations(evals), seed };
    let mut calls = 0;
    let out = search(&mut e, &opts, &mut |_| calls += 1).unwrap();
    assert!(calls > 0, "progress was reported");
    (e, out)
}

fn sane(which: &str, arch: &str, e: &Env, out: &Outcome, evals: usize) {
    let what = format!("{which} {arch} {}", out.algo.name());
    assert_eq!(out.original_cycles, e.original_cycles);
    assert!(out.best_cycles <= out.original_cycles, "{what}");
    assert!(out.stats.evaluations <= evals, "{what}: {} evaluations over a budget of {evals}", out.stats.evaluations);
    assert_eq!(out.stats.check_failures, 0, "{what}: a kept candidate failed the check");
    assert_eq!(out.stats.verifier_rejected, 0, "{what}: a repaired move failed the verifier");
    // The curve starts at the original, never gets worse, ends at the best.
    assert_eq!(out.curve.first().unwrap().best_cycles, out.original_cycles);
    assert_eq!(out.curve.last().unwrap().best_cycles, out.best_cycles);
    assert!(out.curve.windows(2).all(|w| w[1].best_cycles <= w[0].best_cycles && w[1].seconds >= w[0].seconds));
    // Every improvement was checked (one check each, all passed).
    let improvements = out.curve.windows(2).filter(|w| w[1].best_cycles < w[0].best_cycles).count();
    assert_eq!(out.stats.checks, improvements, "{what}");
    assert!(out.curve_csv().lines().count() == out.curve.len() + 1);
    assert!(out.moves_json(&e.name).contains(&format!("\"best_cycles\": {}", out.best_cycles)));
    // The best's moves are adjacent steps.
    assert!(out.best.moves.iter().all(|m| m.from.abs_diff(m.to) == 1 || m.edit.is_some() && m.from == m.to));
}

#[test]
fn every_kept_schedule_verifies_and_computes_the_same() {
    if !common::tools() {
        return;
    }
    let mut improved = 0;
    let cases = [
        ("softmax", "sm_80", Algo::Greedy),
        ("softmax", "sm_90a", Algo::Anneal),
        ("vadd", "sm_90a", Algo::GreedyFirst),
        ("matmul", "sm_80", Algo::Beam { width: 2 }),
    ];
    for (which, arch, algo) in cases {
        let evals = 24;
        let (e, out) = run(which, arch, algo, evals, 3);
        sane(which, arch, &e, &out, evals);
        common::recheck(&e, &out.bytes, 11);
        common::recheck(&e, &out.bytes, 12);
        improved += (out.best_cycles < out.original_cycles) as usize;
        eprintln!(
            "{which} {arch} {}: {} → {} cycles in {} evaluations, {} moves",
            out.algo.name(),
            out.original_cycles,
            out.best_cycles,
            out.stats.evaluations,
            out.best.moves.len()
        );
    }
    // The searches find something (the kernels have slack the emulator's model sees).
    assert!(improved >= 2, "only {improved} of 4 searches improved on ptxas");
}

#[test]
fn the_same_seed_gives_the_same_search() {
    if !common::tools() {
        return;
    }
    let (_, a) = run("softmax", "sm_80", Algo::Anneal, 15, 5);
    let (_, b) = run("softmax", "sm_80", Algo::Anneal, 15, 5);
    assert_eq!(a.best.moves, b.best.moves);
    assert_eq!(a.best_cycles, b.best_cycles);
    assert_eq!(a.bytes, b.bytes);
}

/// A short PPO run on matmul (sm_80): the best schedule's moves replay as legal actions
/// (each one offered by `legal_range` in the state it was made in), every kept schedule
/// passed the check and the best re-checks independently, and the same seed gives the same
/// run (an evaluation budget: a time budget would cut it by the clock).
#[test]
fn ppo_takes_legal_actions_keeps_checked_schedules_and_replays_from_a_seed() {
    if !common::tools() {
        return;
    }
    let evals = 40;
    let (mut e, a) = run("matmul", "sm_80", Algo::Ppo, evals, 3);
    sane("matmul", "sm_80", &e, &a, evals);
    common::recheck(&e, &a.bytes, 21);
    let k = e.kernel;
    let mut s = e.original().clone();
    for m in &a.best.moves {
        let act = m.action();
        assert!(e.actions_by_legal_range(&s).contains(&act), "PPO's move {m:?} is not a legal action");
        s = e.apply(&s, act).unwrap();
    }
    assert_eq!(s.cubin.kernels[k].instrs, a.best.cubin.kernels[k].instrs, "the moves replay to the best");
    let (_, b) = run("matmul", "sm_80", Algo::Ppo, evals, 3);
    assert_eq!(a.best.moves, b.best.moves);
    assert_eq!(a.best_cycles, b.best_cycles);
    assert_eq!(a.bytes, b.bytes);
    let evals_at = |o: &Outcome| o.curve.iter().map(|p| (p.evaluations, p.best_cycles)).collect::<Vec<_>>();
    assert_eq!(evals_at(&a), evals_at(&b));
    eprintln!(
        "matmul sm_80 ppo: {} → {} cycles in {} evaluations, {} moves",
        a.original_cycles,
        a.best_cycles,
        a.stats.evaluations,
        a.best.moves.len()
    );
}
