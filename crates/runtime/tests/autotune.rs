//! The autotuner with a fake timer: choice, skips, persistence, keys, pruning, input protection.

mod common;
use common::{seed, TempDir};
use std::collections::HashMap;
use std::fs;
use std::sync::atomic::{AtomicUsize, Ordering};

use trident_runtime::autotune::{
    Autotuner, Bench, BenchPolicy, ChoiceSource, TopK, TrialError, TrialOutcome, TuneConfig, TuneError, TuneSpec,
    TuneStore, TuneValue,
};
use trident_runtime::rng::SplitMix64;

fn block(c: &TuneConfig) -> i64 {
    match c.get("BLOCK") {
        Some(TuneValue::Int(b)) => *b,
        other => panic!("config without BLOCK: {other:?}"),
    }
}

fn configs(blocks: &[i64]) -> Vec<TuneConfig> {
    blocks.iter().map(|&b| TuneConfig::new(4, 3).with("BLOCK", b)).collect()
}

fn key(n: i64) -> Vec<(String, String)> {
    vec![("n".into(), n.to_string()), ("x.dtype".into(), "fp32".into())]
}

fn spec(blocks: &[i64]) -> TuneSpec {
    TuneSpec {
        kernel: "add".into(),
        configs: configs(blocks),
        key: vec!["n".into()],
        policy: BenchPolicy::Fixed { warmup: 1, reps: 5 },
        ..TuneSpec::default()
    }
}

/// A fake timer: each BLOCK has a list of run times handed out in turn;
/// configs can be made to fail; every call is logged.
#[derive(Default)]
struct Fake {
    times: HashMap<i64, Vec<f64>>,
    fail_prepare: HashMap<i64, TrialError>,
    fail_run: HashMap<i64, TrialError>,
    runs: HashMap<i64, usize>,
    log: Vec<String>,
}

impl Fake {
    fn with_times(times: &[(i64, f64)]) -> Fake {
        Fake { times: times.iter().map(|&(b, t)| (b, vec![t])).collect(), ..Fake::default() }
    }

    fn total_runs(&self) -> usize {
        self.runs.values().sum()
    }
}

impl Bench for Fake {
    fn prepare(&mut self, config: &TuneConfig) -> Result<(), TrialError> {
        self.log.push(format!("prepare {}", block(config)));
        self.fail_prepare.get(&block(config)).cloned().map_or(Ok(()), Err)
    }

    fn run(&mut self, config: &TuneConfig) -> Result<f64, TrialError> {
        let b = block(config);
        self.log.push(format!("run {b}"));
        if let Some(e) = self.fail_run.get(&b) {
            return Err(e.clone());
        }
        let n = self.runs.entry(b).or_default();
        let samples = &self.times[&b];
        let t = samples[*n % samples.len()];
        *n += 1;
        Ok(t)
    }

    fn save_inputs(&mut self, names: &[String]) -> Result<(), TrialError> {
        self.log.push(format!("save {}", names.join(",")));
        Ok(())
    }

    fn zero_inputs(&mut self, names: &[String]) -> Result<(), TrialError> {
        self.log.push(format!("zero {}", names.join(",")));
        Ok(())
    }

    fn restore_inputs(&mut self, names: &[String]) -> Result<(), TrialError> {
        self.log.push(format!("restore {}", names.join(",")));
        Ok(())
    }

    fn release_inputs(&mut self) {
        self.log.push("release".into());
    }
}

#[test]
fn picks_the_fastest_config() {
    let s = seed();
    let mut rng = SplitMix64::new(s);
    let blocks = [16, 32, 64, 128, 256, 512];
    // Random distinct times; the expected winner is their minimum.
    let times: Vec<(i64, f64)> = blocks.iter().map(|&b| (b, 0.01 + rng.next_f64() + b as f64 * 1e-9)).collect();
    let best = times.iter().min_by(|a, b| a.1.total_cmp(&b.1)).unwrap().0;
    let tuner = Autotuner::new(spec(&blocks), "sm_80:src", None).quiet(true).print_choice(false);
    let mut fake = Fake::with_times(&times);
    let choice = tuner.tune(&key(1024), &mut fake).unwrap();
    assert_eq!(block(&choice.config), best, "seed {s}: times {times:?}");
    assert_eq!(choice.source, ChoiceSource::Benchmarked);
    assert_eq!(choice.results.len(), blocks.len());
    for r in &choice.results {
        let TrialOutcome::Timed(t) = &r.outcome else { panic!("{r:?}") };
        assert_eq!(t.runs, 5);
        assert_eq!(t.median_ms, times.iter().find(|x| x.0 == block(&r.config)).unwrap().1);
    }
    // 1 warm-up + 5 measured runs per config.
    assert!(blocks.iter().all(|b| fake.runs[b] == 6), "{:?}", fake.runs);
    assert!(tuner.choice_line(&choice).starts_with("Triton autotuning for function add finished after "));
    assert!(tuner
        .choice_line(&choice)
        .ends_with(&format!("best config selected: BLOCK: {best}, num_warps: 4, num_stages: 3")));
}

#[test]
fn compares_medians_not_means_or_minimums() {
    let tuner = Autotuner::new(spec(&[1, 2]), "id", None).quiet(true);
    let mut fake = Fake::default();
    // Config 1: a lucky fastest run and a low mean, but a slow median.
    fake.times.insert(1, vec![0.1, 0.1, 9.0, 9.0, 9.0, 9.0]);
    fake.times.insert(2, vec![5.0, 5.0, 5.0, 5.0, 5.0, 5.0]);
    let mut f = Fake { times: fake.times.clone(), ..Fake::default() };
    // Warm-up takes the first sample; measured runs see [0.1, 9, 9, 9, 9] → median 9.
    let choice = tuner.tune(&key(1), &mut f).unwrap();
    assert_eq!(block(&choice.config), 2);
    let TrialOutcome::Timed(t1) = &choice.results[0].outcome else { panic!() };
    assert_eq!((t1.median_ms, t1.min_ms, t1.max_ms), (9.0, 0.1, 9.0));
}

#[test]
fn skips_failing_configs_and_records_why() {
    let tuner = Autotuner::new(spec(&[16, 32, 64, 128]), "id", None).quiet(true);
    let mut fake = Fake::with_times(&[(16, 0.5), (32, 0.25), (64, 3.0), (128, 0.125)]);
    fake.fail_prepare.insert(32, TrialError::Compile("static_assert failed".into()));
    fake.fail_prepare.insert(128, TrialError::OutOfResources("shared memory: 270336 > 232448".into()));
    fake.fail_run.insert(16, TrialError::Failed("illegal address".into()));
    let choice = tuner.tune(&key(4096), &mut fake).unwrap();
    assert_eq!(block(&choice.config), 64, "the only config that worked");
    let why: Vec<_> = choice.results.iter().map(|r| (block(&r.config), r.outcome.clone())).collect();
    assert!(matches!(&why[0], (16, TrialOutcome::Skipped(TrialError::Failed(m))) if m == "illegal address"));
    assert!(matches!(&why[1], (32, TrialOutcome::Skipped(TrialError::Compile(_)))));
    assert!(matches!(&why[2], (64, TrialOutcome::Timed(_))));
    assert!(matches!(&why[3], (128, TrialOutcome::Skipped(TrialError::OutOfResources(m))) if m.contains("shared")));
    assert!(!fake.log.contains(&"run 32".to_string()), "a config that failed to compile is not run");

    // All failing: an error listing every reason.
    let tuner = Autotuner::new(spec(&[16, 32]), "id", None).quiet(true);
    let mut fake = Fake::with_times(&[(16, 1.0), (32, 1.0)]);
    fake.fail_prepare.insert(16, TrialError::Compile("no".into()));
    fake.fail_prepare.insert(32, TrialError::OutOfResources("too big".into()));
    let err = tuner.tune(&key(1), &mut fake).unwrap_err();
    assert!(matches!(&err, TuneError::AllFailed { results, .. } if results.len() == 2));
    let msg = err.to_string();
    assert!(msg.contains("compile error: no") && msg.contains("out of resources: too big"), "{msg}");

    // Fatal stops tuning at once.
    let tuner = Autotuner::new(spec(&[16, 32, 64]), "id", None).quiet(true);
    let mut fake = Fake::with_times(&[(16, 1.0), (32, 1.0), (64, 1.0)]);
    fake.fail_run.insert(32, TrialError::Fatal("context lost".into()));
    let err = tuner.tune(&key(1), &mut fake).unwrap_err();
    assert!(matches!(&err, TuneError::Fatal { message, .. } if message == "context lost"), "{err}");
    assert!(!fake.log.contains(&"prepare 64".to_string()));
    assert_eq!(fake.log.last().map(String::as_str), Some("release"));
}

#[test]
fn reuses_the_persisted_choice_and_retunes_other_keys() {
    let dir = TempDir::new("persist");
    let store = || Some(TuneStore::new(dir.path()));
    let mut rng = SplitMix64::new(seed());
    let times: Vec<(i64, f64)> = [32, 64, 128].iter().map(|&b| (b, 0.01 + rng.next_f64())).collect();
    let first = {
        let tuner = Autotuner::new(spec(&[32, 64, 128]), "sm_80:src", store()).quiet(true);
        let mut fake = Fake::with_times(&times);
        let c = tuner.tune(&key(1024), &mut fake).unwrap();
        assert_eq!(c.source, ChoiceSource::Benchmarked);
        assert!(c.save_error.is_none());
        assert!(tuner.record_path(&key(1024)).unwrap().is_file());
        // Same tuner, same key: remembered in memory.
        let again = tuner.tune(&key(1024), &mut |_: &TuneConfig| -> Result<f64, TrialError> {
            panic!("must not benchmark a remembered key")
        });
        assert_eq!(again.unwrap().source, ChoiceSource::Memo);
        c
    };
    // A new tuner (a new process): read from disk, the closure never called.
    let calls = AtomicUsize::new(0);
    let tuner = Autotuner::new(spec(&[32, 64, 128]), "sm_80:src", store()).quiet(true);
    let mut counting = |_: &TuneConfig| -> Result<f64, TrialError> {
        calls.fetch_add(1, Ordering::Relaxed);
        Ok(1.0)
    };
    let reused = tuner.tune(&key(1024), &mut counting).unwrap();
    assert_eq!(calls.load(Ordering::Relaxed), 0);
    assert_eq!(reused.source, ChoiceSource::Disk);
    assert_eq!(reused.config, first.config);
    assert_eq!(reused.results, first.results);

    // Another key value tunes again, and gets its own file.
    let c = tuner.tune(&key(2048), &mut counting).unwrap();
    assert_eq!(c.source, ChoiceSource::Benchmarked);
    assert_eq!(calls.load(Ordering::Relaxed), 3 * 6);
    assert_ne!(tuner.record_path(&key(2048)), tuner.record_path(&key(1024)));
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);

    // A different identity (edited source) or config list does not reuse the choice.
    for t in [
        Autotuner::new(spec(&[32, 64, 128]), "sm_80:edited", store()),
        Autotuner::new(spec(&[32, 64, 128, 256]), "sm_80:src", store()),
    ] {
        let before = calls.load(Ordering::Relaxed);
        assert_eq!(t.quiet(true).tune(&key(1024), &mut counting).unwrap().source, ChoiceSource::Benchmarked);
        assert!(calls.load(Ordering::Relaxed) > before);
    }

    // A damaged record is ignored (retuned and rewritten).
    let path = tuner.record_path(&key(1024)).unwrap();
    fs::write(&path, b"{\"format\": 1, \"best\":").unwrap();
    let t = Autotuner::new(spec(&[32, 64, 128]), "sm_80:src", store()).quiet(true);
    assert_eq!(t.tune(&key(1024), &mut counting).unwrap().source, ChoiceSource::Benchmarked);
    let t = Autotuner::new(spec(&[32, 64, 128]), "sm_80:src", store()).quiet(true);
    assert_eq!(t.tune(&key(1024), &mut counting).unwrap().source, ChoiceSource::Disk);

    // No store: nothing persists.
    let t = Autotuner::new(spec(&[32, 64, 128]), "sm_80:src", None).quiet(true);
    assert!(t.record_path(&key(1024)).is_none());
    assert_eq!(t.tune(&key(1024), &mut counting).unwrap().source, ChoiceSource::Benchmarked);
}

#[test]
fn prune_hooks_are_applied() {
    let mut s = spec(&[16, 32, 64, 128, 256, 512]);
    // Early prune: drop blocks above 256 for this key.
    s.prune.early_config_prune = Some(Box::new(|cs, key| {
        assert_eq!(key[0], ("n".to_string(), "1024".to_string()));
        Ok(cs.iter().filter(|c| block(c) <= 256).cloned().collect())
    }));
    // Model: prefers blocks near 64; keep the best two.
    s.prune.perf_model = Some(Box::new(|c, _| Ok((block(c) as f64 - 64.0).abs())));
    s.prune.top_k = TopK::Count(2);
    let tuner = Autotuner::new(s, "id", None).quiet(true);
    let mut fake = Fake::with_times(&[(16, 1.0), (32, 2.0), (64, 3.0), (128, 0.5), (256, 0.1), (512, 0.01)]);
    let choice = tuner.tune(&key(1024), &mut fake).unwrap();
    // Measured: 64 (distance 0) and 32 (distance 32, ahead of 128 by written order).
    let measured: Vec<i64> = choice
        .results
        .iter()
        .filter(|r| matches!(r.outcome, TrialOutcome::Timed(_)))
        .map(|r| block(&r.config))
        .collect();
    assert_eq!(measured, vec![64, 32]);
    assert_eq!(block(&choice.config), 32);
    assert!(!fake.log.iter().any(|l| l == "prepare 512" || l == "prepare 256" || l == "prepare 16"));
    let pruned: Vec<(i64, String)> = choice
        .results
        .iter()
        .filter_map(|r| match &r.outcome {
            TrialOutcome::Pruned(why) => Some((block(&r.config), why.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(pruned.len(), 4);
    assert!(pruned.iter().any(|(b, why)| *b == 512 && why.contains("early_config_prune")));
    assert!(pruned.iter().any(|(b, why)| *b == 256 && why.contains("perf_model")));

    // A fractional top_k, and a single survivor is chosen without running anything.
    let mut s = spec(&[16, 32, 64, 128]);
    s.prune.perf_model = Some(Box::new(|c, _| Ok(block(c) as f64)));
    s.prune.top_k = TopK::Fraction(0.25);
    let tuner = Autotuner::new(s, "id", None).quiet(true);
    let mut fake = Fake::with_times(&[(16, 1.0)]);
    let choice = tuner.tune(&key(1), &mut fake).unwrap();
    assert_eq!((block(&choice.config), choice.source), (16, ChoiceSource::OnlyCandidate));
    assert!(fake.log.is_empty());

    // Hook errors are reported.
    let mut s = spec(&[16, 32]);
    s.prune.early_config_prune = Some(Box::new(|_, _| Err("NameError: foo".into())));
    let err = Autotuner::new(s, "id", None).quiet(true).tune(&key(1), &mut Fake::default()).unwrap_err();
    assert!(matches!(&err, TuneError::Prune { message, .. } if message.contains("NameError")), "{err}");

    // Pruning everything away leaves nothing to choose from.
    let mut s = spec(&[16, 32]);
    s.prune.early_config_prune = Some(Box::new(|_, _| Ok(vec![])));
    let err = Autotuner::new(s, "id", None).quiet(true).tune(&key(1), &mut Fake::default()).unwrap_err();
    assert!(matches!(err, TuneError::NoConfigs { .. }));
}

#[test]
fn inputs_are_zeroed_and_restored_around_every_run() {
    let mut s = spec(&[16, 32]);
    s.reset_to_zero = vec!["counter".into()];
    s.restore_value = vec!["x".into(), "out".into()];
    s.policy = BenchPolicy::Fixed { warmup: 1, reps: 2 };
    let tuner = Autotuner::new(s, "id", None).quiet(true);
    let mut fake = Fake::with_times(&[(16, 1.0), (32, 2.0)]);
    fake.fail_run.insert(32, TrialError::Failed("boom".into()));
    tuner.tune(&key(1), &mut fake).unwrap();
    let mut expected = vec!["save x,out".to_string(), "prepare 16".into()];
    for _ in 0..3 {
        expected.extend(["zero counter".into(), "run 16".into(), "restore x,out".into()]);
    }
    // A failed run still restores the inputs.
    expected.extend(["prepare 32".into(), "zero counter".into(), "run 32".into(), "restore x,out".into()]);
    expected.push("release".into());
    assert_eq!(fake.log, expected);
}

#[test]
fn time_budgets_set_the_run_counts() {
    let mut s = spec(&[16, 32]);
    s.policy = BenchPolicy::Budget { warmup_ms: 10.0, rep_ms: 20.0, max_runs: 1000 };
    let tuner = Autotuner::new(s, "id", None).quiet(true);
    let mut fake = Fake::with_times(&[(16, 1.0), (32, 0.5)]);
    let choice = tuner.tune(&key(1), &mut fake).unwrap();
    // 1 ms runs: 3 probes + 7 more warm-up (10 ms), then 20 measured (20 ms).
    assert_eq!(fake.runs[&16], 30);
    let TrialOutcome::Timed(t) = &choice.results[0].outcome else { panic!() };
    assert_eq!(t.runs, 20);
    // 0.5 ms runs: 3 + 17 warm-up, 40 measured.
    assert_eq!(fake.runs[&32], 60);
    // A run timed at zero does not loop forever: capped at max_runs.
    let mut s = spec(&[16, 32]);
    s.policy = BenchPolicy::Budget { warmup_ms: 25.0, rep_ms: 100.0, max_runs: 50 };
    let tuner = Autotuner::new(s, "id", None).quiet(true);
    let mut fake = Fake::with_times(&[(16, 0.0), (32, 0.0)]);
    tuner.tune(&key(1), &mut fake).unwrap();
    assert_eq!(fake.total_runs(), 2 * 100);
    // A timer that returns nonsense skips the config.
    let tuner = Autotuner::new(spec(&[16, 32]), "id", None).quiet(true);
    let mut fake = Fake::with_times(&[(16, f64::NAN), (32, 2.0)]);
    let choice = tuner.tune(&key(1), &mut fake).unwrap();
    assert_eq!(block(&choice.config), 32);
    assert!(matches!(&choice.results[0].outcome, TrialOutcome::Skipped(TrialError::Failed(m)) if m.contains("NaN")));
}

#[test]
fn heuristics_complete_each_candidate() {
    let mut s = spec(&[16, 32]);
    s.configs = s.configs.into_iter().map(|c| c.with("EVEN", false)).collect();
    s.heuristics = Some(Box::new(|c, key| {
        let n: i64 = key[0].1.parse().map_err(|_| "n is not an int".to_string())?;
        Ok(vec![("EVEN".into(), TuneValue::Bool(n % block(c) == 0)), ("HALF".into(), TuneValue::Int(block(c) / 2))])
    }));
    let dir = TempDir::new("heur");
    let tuner = Autotuner::new(s, "id", Some(TuneStore::new(dir.path()))).quiet(true);
    let mut fake = Fake::with_times(&[(16, 2.0), (32, 1.0)]);
    let choice = tuner.tune(&key(64), &mut fake).unwrap();
    assert_eq!(choice.config.get("EVEN"), Some(&TuneValue::Bool(true)));
    assert_eq!(choice.config.get("HALF"), Some(&TuneValue::Int(16)));
    assert_eq!(choice.config.constexprs.len(), 3, "replaced in place, not duplicated");
    assert_eq!(choice.config.to_string(), "BLOCK: 32, EVEN: True, HALF: 16, num_warps: 4, num_stages: 3");
    // The saved choice, extended by heuristics, is still recognised as one of the configs.
    let mut s2 = spec(&[16, 32]);
    s2.configs = s2.configs.into_iter().map(|c| c.with("EVEN", false)).collect();
    let t2 = Autotuner::new(s2, "id", Some(TuneStore::new(dir.path()))).quiet(true);
    let again = t2.tune(&key(64), &mut Fake::default()).unwrap();
    assert_eq!((again.source, again.config), (ChoiceSource::Disk, choice.config));
}

#[test]
fn config_display_and_values() {
    let c = TuneConfig { num_ctas: 2, maxnreg: Some(128), ..TuneConfig::new(8, 4) }
        .with("BLOCK_M", 128)
        .with("SCALE", 0.5)
        .with("ONE", 1.0)
        .with("MODE", "fast");
    assert_eq!(
        c.to_string(),
        "BLOCK_M: 128, SCALE: 0.5, ONE: 1.0, MODE: 'fast', num_warps: 8, num_stages: 4, num_ctas: 2, maxnreg: 128"
    );
    assert_eq!(TuneConfig::default(), TuneConfig::new(4, 3));
}
