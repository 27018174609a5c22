//! The autotuner itself: [`Autotuner::tune`] picks among a [`TuneSpec`]'s configs for one
//! key's values (see the module docs of [`crate::autotune`] for the steps).

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::{Deserialize, Serialize};

use super::bench::{self, Bench, BenchPolicy, Protect, Timing, TrialError};
use super::config::{TuneConfig, TuneValue};
use super::prune::Prune;
use super::store::{Record, TuneStore};

/// `@triton.heuristics` applied to each candidate: the constexprs it sets
/// (added to the config, replacing same-named values) given the config and
/// the key's values. The front end evaluates the Python lambdas
/// (`KernelInfo::eval_heuristics`); this hook is where the launcher plugs
/// that in, so the chosen config carries every constexpr it was measured with.
pub type Heuristics =
    dyn Fn(&TuneConfig, &[(String, String)]) -> Result<Vec<(String, TuneValue)>, String> + Send + Sync;

/// Everything `@triton.autotune` (and `@triton.heuristics`) says about a kernel.
#[derive(Default)]
pub struct TuneSpec {
    /// Kernel name (for messages and file names).
    pub kernel: String,
    /// The candidates, in the order written.
    pub configs: Vec<TuneConfig>,
    /// Names of the arguments whose values key the choice.
    pub key: Vec<String>,
    /// Arguments zeroed before each run.
    pub reset_to_zero: Vec<String>,
    /// Arguments restored to their values from before tuning after each run.
    pub restore_value: Vec<String>,
    /// `prune_configs_by` hooks.
    pub prune: Prune,
    /// `@triton.heuristics` hook.
    pub heuristics: Option<Box<Heuristics>>,
    /// How many runs per config (`warmup=`/`rep=` map to [`BenchPolicy::Budget`]).
    pub policy: BenchPolicy,
}

impl std::fmt::Debug for TuneSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TuneSpec")
            .field("kernel", &self.kernel)
            .field("configs", &self.configs)
            .field("key", &self.key)
            .field("reset_to_zero", &self.reset_to_zero)
            .field("restore_value", &self.restore_value)
            .field("prune", &self.prune)
            .field("heuristics", &self.heuristics.is_some())
            .field("policy", &self.policy)
            .finish()
    }
}

/// What happened to one candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum TrialOutcome {
    /// Measured.
    Timed(Timing),
    /// Could not be measured; why.
    Skipped(TrialError),
    /// Removed by a prune hook before measuring; why.
    Pruned(String),
}

/// One candidate and its outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrialResult {
    /// The config (with heuristic values added, for measured ones).
    pub config: TuneConfig,
    /// What happened.
    pub outcome: TrialOutcome,
}

/// Where a choice came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChoiceSource {
    /// Measured now.
    Benchmarked,
    /// Only one candidate was left after pruning: chosen without measuring.
    OnlyCandidate,
    /// Chosen earlier by this tuner in this process.
    Memo,
    /// Read from the [`TuneStore`].
    Disk,
}

/// The tuner's answer for one key.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    /// The config to launch with.
    pub config: TuneConfig,
    /// Where it came from.
    pub source: ChoiceSource,
    /// Every candidate's outcome when it was tuned.
    pub results: Vec<TrialResult>,
    /// Seconds the tuning took (when it was tuned).
    pub tuning_secs: f64,
    /// Why the choice could not be saved, if it could not (tuning still succeeded).
    pub save_error: Option<String>,
}

/// Why tuning failed.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    /// No configs to choose from (none given, or pruning removed all).
    #[error("autotuning {kernel}: no configs to choose from")]
    NoConfigs {
        /// Kernel name.
        kernel: String,
    },
    /// A prune hook failed.
    #[error("autotuning {kernel}: {message}")]
    Prune {
        /// Kernel name.
        kernel: String,
        /// The hook's error.
        message: String,
    },
    /// Every config was skipped.
    #[error("autotuning {kernel}: every config failed ({})", summarize(.results))]
    AllFailed {
        /// Kernel name.
        kernel: String,
        /// Each config's reason.
        results: Vec<TrialResult>,
    },
    /// The bench reported a fatal error.
    #[error("autotuning {kernel}: {}: {message}", fatal_context(.config))]
    Fatal {
        /// Kernel name.
        kernel: String,
        /// The config being measured (`None` outside a config: saving inputs).
        config: Option<TuneConfig>,
        /// The error.
        message: String,
    },
}

fn fatal_context(config: &Option<TuneConfig>) -> String {
    config.as_ref().map_or_else(|| "saving inputs".to_string(), |c| format!("config {c}"))
}

fn summarize(results: &[TrialResult]) -> String {
    let reasons: Vec<String> = results
        .iter()
        .filter_map(|r| match &r.outcome {
            TrialOutcome::Skipped(e) => Some(format!("[{}] {e}", r.config)),
            _ => None,
        })
        .collect();
    reasons.join("; ")
}

/// Autotunes one kernel. Create one per kernel and keep it for the process:
/// it remembers its choices per key.
pub struct Autotuner {
    spec: TuneSpec,
    identity: String,
    store: Option<TuneStore>,
    memo: Mutex<HashMap<Vec<(String, String)>, Choice>>,
    quiet: bool,
    print: bool,
}

impl std::fmt::Debug for Autotuner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Autotuner").field("spec", &self.spec).field("identity", &self.identity).finish()
    }
}

impl Autotuner {
    /// A tuner for `spec`. `identity` names what was compiled — anything whose
    /// change should invalidate saved choices: the hash of the kernel's
    /// sources and the target, e.g. `"sm_90a:<source hash>"` (the compiler
    /// version and the config list are added here). `store`: where choices
    /// persist (usually [`TuneStore::for_cache`]), `None` for nowhere.
    /// The choice is printed when `TRIDENT_PRINT_AUTOTUNING=1`.
    pub fn new(spec: TuneSpec, identity: impl Into<String>, store: Option<TuneStore>) -> Autotuner {
        let print = crate::env::print_autotuning();
        Autotuner { spec, identity: identity.into(), store, memo: Mutex::new(HashMap::new()), quiet: false, print }
    }

    /// Hides the progress bar.
    pub fn quiet(mut self, quiet: bool) -> Autotuner {
        self.quiet = quiet;
        self
    }

    /// Overrides `TRIDENT_PRINT_AUTOTUNING`.
    pub fn print_choice(mut self, print: bool) -> Autotuner {
        self.print = print;
        self
    }

    /// The spec.
    pub fn spec(&self) -> &TuneSpec {
        &self.spec
    }

    /// Forgets the in-process choices (the disk keeps its own).
    pub fn forget(&self) {
        if let Ok(mut m) = self.memo.lock() {
            m.clear();
        }
    }

    /// The line `TRIDENT_PRINT_AUTOTUNING=1` prints after a tuning:
    /// `Triton autotuning for function K finished after 1.23s; best config selected: BLOCK: 64, num_warps: 4, num_stages: 3`.
    pub fn choice_line(&self, choice: &Choice) -> String {
        format!(
            "Triton autotuning for function {} finished after {:.2}s; best config selected: {}",
            self.spec.kernel, choice.tuning_secs, choice.config
        )
    }

    /// The file a choice for `key` is saved in, if choices persist.
    pub fn record_path(&self, key: &[(String, String)]) -> Option<std::path::PathBuf> {
        self.store.as_ref().map(|s| s.path(&self.spec.kernel, &self.record_hash(key)))
    }

    fn record_hash(&self, key: &[(String, String)]) -> String {
        let mut h = blake3::Hasher::new();
        h.update(b"trident-autotune/1\0");
        let mut field = |s: &str| {
            h.update(&(s.len() as u64).to_le_bytes());
            h.update(s.as_bytes());
        };
        field(crate::cache::version());
        field(&self.identity);
        field(&self.spec.kernel);
        // The candidates are part of the identity: a choice among other configs does not carry over.
        field(&serde_json::to_string(&self.spec.configs).unwrap_or_default());
        for (name, value) in key {
            field(name);
            field(value);
        }
        h.finalize().to_hex()[..32].to_string()
    }

    /// The config to launch with for these key values: remembered, read from
    /// disk, or tuned now with `bench` (see the module docs).
    pub fn tune<B: Bench + ?Sized>(&self, key: &[(String, String)], bench: &mut B) -> Result<Choice, TuneError> {
        if let Some(c) = self.memo.lock().ok().and_then(|m| m.get(key).cloned()) {
            return Ok(Choice { source: ChoiceSource::Memo, ..c });
        }
        let path = self.record_path(key);
        if let (Some(store), Some(path)) = (&self.store, &path) {
            if let Some(r) = store.load(path) {
                // The file name hashes the identity, the candidates and the key;
                // the fields are checked too, against a renamed or edited file.
                // (The chosen config may differ from every written one: prune
                // hooks may return new configs and heuristics extend them.)
                if r.key == key && r.kernel == self.spec.kernel && r.identity == self.identity {
                    let choice = Choice {
                        config: r.best,
                        source: ChoiceSource::Disk,
                        results: r.results,
                        tuning_secs: r.tuning_secs,
                        save_error: None,
                    };
                    self.remember(key, &choice);
                    return Ok(choice);
                }
            }
        }
        let start = Instant::now();
        let mut choice = self.run_tuning(key, bench)?;
        choice.tuning_secs = start.elapsed().as_secs_f64();
        if choice.source == ChoiceSource::Benchmarked {
            if let (Some(store), Some(path)) = (&self.store, &path) {
                let rec = Record::new(
                    &self.spec.kernel,
                    &self.identity,
                    key,
                    &choice.config,
                    &choice.results,
                    choice.tuning_secs,
                );
                choice.save_error = store.save(path, &rec).err().map(|e| format!("{}: {e}", path.display()));
            }
            if self.print {
                eprintln!("{}", self.choice_line(&choice));
            }
        }
        self.remember(key, &choice);
        Ok(choice)
    }

    fn remember(&self, key: &[(String, String)], choice: &Choice) {
        if let Ok(mut m) = self.memo.lock() {
            m.insert(key.to_vec(), choice.clone());
        }
    }

    fn run_tuning<B: Bench + ?Sized>(&self, key: &[(String, String)], bench: &mut B) -> Result<Choice, TuneError> {
        let kernel = &self.spec.kernel;
        let (kept, pruned) = self
            .spec
            .prune
            .apply(&self.spec.configs, key)
            .map_err(|message| TuneError::Prune { kernel: kernel.clone(), message })?;
        let mut results: Vec<TrialResult> = pruned
            .into_iter()
            .map(|(config, why)| TrialResult { config, outcome: TrialOutcome::Pruned(why) })
            .collect();
        // Heuristics complete each candidate; one that they reject is skipped.
        let mut candidates = vec![];
        for mut c in kept {
            match &self.spec.heuristics {
                None => candidates.push(c),
                Some(h) => match h(&c, key) {
                    Ok(values) => {
                        for (n, v) in values {
                            c.set(n, v);
                        }
                        candidates.push(c);
                    }
                    Err(e) => results.push(TrialResult {
                        config: c,
                        outcome: TrialOutcome::Skipped(TrialError::Compile(format!("heuristics: {e}"))),
                    }),
                },
            }
        }
        match candidates.len() {
            0 if results.is_empty() || results.iter().all(|r| matches!(r.outcome, TrialOutcome::Pruned(_))) => {
                return Err(TuneError::NoConfigs { kernel: kernel.clone() })
            }
            0 => return Err(TuneError::AllFailed { kernel: kernel.clone(), results }),
            1 => {
                let config = candidates.pop().unwrap_or_default();
                return Ok(Choice {
                    config,
                    source: ChoiceSource::OnlyCandidate,
                    results,
                    tuning_secs: 0.0,
                    save_error: None,
                });
            }
            _ => {}
        }

        let protect = Protect { reset_to_zero: &self.spec.reset_to_zero, restore_value: &self.spec.restore_value };
        let fatal = |config: Option<&TuneConfig>, message: String| TuneError::Fatal {
            kernel: kernel.clone(),
            config: config.cloned(),
            message,
        };
        if !protect.restore_value.is_empty() {
            bench.save_inputs(protect.restore_value).map_err(|e| fatal(None, e.to_string()))?;
        }
        let bar = self.progress_bar(candidates.len());
        let mut best: Option<(f64, usize)> = None;
        for c in candidates {
            bar.set_message(c.to_string());
            let outcome = match bench::measure(bench, &c, &self.spec.policy, &protect) {
                Ok(t) => {
                    if best.is_none_or(|(b, _)| t.median_ms < b) {
                        best = Some((t.median_ms, results.len()));
                    }
                    TrialOutcome::Timed(t)
                }
                Err(TrialError::Fatal(m)) => {
                    bar.finish_and_clear();
                    bench.release_inputs();
                    return Err(fatal(Some(&c), m));
                }
                Err(e) => TrialOutcome::Skipped(e),
            };
            results.push(TrialResult { config: c, outcome });
            bar.inc(1);
        }
        bar.finish_and_clear();
        bench.release_inputs();
        match best {
            Some((_, i)) => Ok(Choice {
                config: results[i].config.clone(),
                source: ChoiceSource::Benchmarked,
                results,
                tuning_secs: 0.0,
                save_error: None,
            }),
            None => Err(TuneError::AllFailed { kernel: kernel.clone(), results }),
        }
    }

    fn progress_bar(&self, len: usize) -> ProgressBar {
        if self.quiet || !std::io::stderr().is_terminal() {
            return ProgressBar::hidden();
        }
        let bar = ProgressBar::with_draw_target(Some(len as u64), ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template("{prefix} [{bar:24}] {pos}/{len} {wide_msg}") {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(format!("autotuning {}", self.spec.kernel));
        bar
    }
}
