//! `prune_configs_by={'early_config_prune': f, 'perf_model': g, 'top_k': k}`:
//! cut the candidate list before anything is benchmarked.
//!
//! The hooks are host Python in the kernel file; the front end records their
//! text only, so the caller supplies them as closures (a native model, or an
//! evaluator of the Python). Both see the tuning key's values.

use super::config::TuneConfig;

/// `early_config_prune(configs, named_args)`: the configs worth trying.
pub type EarlyPrune = dyn Fn(&[TuneConfig], &[(String, String)]) -> Result<Vec<TuneConfig>, String> + Send + Sync;

/// `perf_model(named_args, config)`: an estimated run time (any unit, lower is better).
pub type PerfModel = dyn Fn(&TuneConfig, &[(String, String)]) -> Result<f64, String> + Send + Sync;

/// How many configs the performance model keeps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TopK {
    /// This many.
    Count(usize),
    /// This fraction of the candidates (Triton's float `top_k <= 1.0`), rounded down, at least 1.
    Fraction(f64),
}

impl Default for TopK {
    /// Triton's default: 10.
    fn default() -> TopK {
        TopK::Count(10)
    }
}

/// The configs to benchmark, and those pruned with why.
pub(crate) type Pruned = (Vec<TuneConfig>, Vec<(TuneConfig, String)>);

/// The pruning hooks of one autotuned kernel.
#[derive(Default)]
pub struct Prune {
    /// Runs first, on all configs.
    pub early_config_prune: Option<Box<EarlyPrune>>,
    /// Ranks what is left; only the best [`Prune::top_k`] are benchmarked.
    pub perf_model: Option<Box<PerfModel>>,
    /// How many the performance model keeps (ignored without one).
    pub top_k: TopK,
}

impl std::fmt::Debug for Prune {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prune")
            .field("early_config_prune", &self.early_config_prune.is_some())
            .field("perf_model", &self.perf_model.is_some())
            .field("top_k", &self.top_k)
            .finish()
    }
}

impl Prune {
    /// Applies the hooks: the configs to benchmark, and those pruned with why.
    pub(crate) fn apply(&self, configs: &[TuneConfig], key: &[(String, String)]) -> Result<Pruned, String> {
        let mut pruned = vec![];
        let mut kept = match &self.early_config_prune {
            Some(f) => {
                let kept = f(configs, key).map_err(|e| format!("early_config_prune: {e}"))?;
                for c in configs {
                    if !kept.contains(c) {
                        pruned.push((c.clone(), "removed by early_config_prune".to_string()));
                    }
                }
                kept
            }
            None => configs.to_vec(),
        };
        if let Some(model) = &self.perf_model {
            let k = match self.top_k {
                TopK::Count(k) => k,
                TopK::Fraction(f) => (kept.len() as f64 * f) as usize,
            }
            .max(1);
            if kept.len() > k {
                let mut est = Vec::with_capacity(kept.len());
                for c in kept {
                    let t = model(&c, key).map_err(|e| format!("perf_model: {e}"))?;
                    // NaN estimates rank last.
                    est.push((if t.is_nan() { f64::INFINITY } else { t }, c));
                }
                // Stable: equal estimates keep the written order.
                est.sort_by(|a, b| a.0.total_cmp(&b.0));
                kept = vec![];
                for (i, (t, c)) in est.into_iter().enumerate() {
                    if i < k {
                        kept.push(c);
                    } else {
                        pruned.push((c, format!("perf_model estimate {t} not in the top {k}")));
                    }
                }
            }
        }
        Ok((kept, pruned))
    }
}
