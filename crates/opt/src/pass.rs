//! The pass manager: runs passes in order, optionally verifying and dumping the IR
//! after each, and records how long each took.

use std::time::{Duration, Instant};
use trident_ir::{print_module, verify_module, Diagnostic, Function, Module, PrintOptions};

/// A transformation of tile IR.
///
/// Implement [`Pass::run_on_function`] for passes that look at one function at a
/// time, or override [`Pass::run_on_module`] for passes that need the whole module
/// (the inliner). Both report whether they changed anything, and return a
/// diagnostic for problems in the input that the pass cannot handle.
pub trait Pass {
    /// The name used in pipelines, dumps and timings (`cse`, `inline`, ...).
    fn name(&self) -> &'static str;

    fn run_on_module(&self, m: &mut Module) -> Result<bool, Diagnostic> {
        let mut changed = false;
        for f in &mut m.funcs {
            changed |= self.run_on_function(f)?;
        }
        Ok(changed)
    }

    fn run_on_function(&self, _f: &mut Function) -> Result<bool, Diagnostic> {
        Ok(false)
    }
}

/// How long one pass run took and whether it changed the IR.
#[derive(Clone, Debug)]
pub struct PassTiming {
    pub name: &'static str,
    pub duration: Duration,
    pub changed: bool,
}

/// Runs a pipeline of passes over a module.
pub struct PassManager {
    passes: Vec<Box<dyn Pass>>,
    /// Dump the module after every pass (`// -----// IR Dump After <pass> //----- //`).
    /// Also turned on by the environment variable `TRIDENT_DUMP_IR=1`.
    pub print_ir_after_all: bool,
    /// Options for dumps (e.g. with locations).
    pub print_options: PrintOptions,
    /// Verify the input and the module after every pass; a failure names the pass that broke it.
    pub verify_each: bool,
    timings: Vec<PassTiming>,
    sink: Box<dyn FnMut(&str)>,
}

impl Default for PassManager {
    fn default() -> PassManager {
        PassManager::new()
    }
}

/// Whether an environment knob is on (`1`, `true`, `yes`).
fn env_on(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| matches!(v.trim(), "1" | "true" | "yes" | "on"))
}

impl PassManager {
    /// An empty pipeline that verifies after each pass and dumps when `TRIDENT_DUMP_IR=1`.
    pub fn new() -> PassManager {
        PassManager {
            passes: vec![],
            print_ir_after_all: env_on("TRIDENT_DUMP_IR"),
            print_options: PrintOptions::default(),
            verify_each: true,
            timings: vec![],
            sink: Box::new(|s| eprint!("{s}")),
        }
    }

    /// Appends a pass.
    pub fn add(&mut self, pass: Box<dyn Pass>) -> &mut PassManager {
        self.passes.push(pass);
        self
    }

    /// Appends the passes of a comma-separated pipeline (`"inline, canonicalize, cse"`).
    pub fn add_pipeline(&mut self, pipeline: &str) -> Result<&mut PassManager, String> {
        for name in pipeline.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let p = crate::registry::create_pass(name)
                .ok_or_else(|| format!("unknown pass `{name}` (known: {})", crate::registry::PASS_NAMES.join(", ")))?;
            self.passes.push(p);
        }
        Ok(self)
    }

    /// The names of the passes in order.
    pub fn pass_names(&self) -> Vec<&'static str> {
        self.passes.iter().map(|p| p.name()).collect()
    }

    /// Where dumps go (stderr by default); for tests and tools that capture them.
    pub fn set_dump_sink(&mut self, sink: impl FnMut(&str) + 'static) {
        self.sink = Box::new(sink);
    }

    /// Runs every pass in order. With `verify_each`, the input is verified first (passes
    /// assume valid IR) and the output of every pass after it; the pipeline stops at the
    /// first pass that fails or leaves invalid IR, and the diagnostics say which.
    pub fn run(&mut self, m: &mut Module) -> Result<(), Vec<Diagnostic>> {
        if self.verify_each {
            verify_module(m).map_err(|errs| {
                errs.into_iter().map(|d| d.note("the IR was invalid before the first pass")).collect::<Vec<_>>()
            })?;
        }
        for p in &self.passes {
            let start = Instant::now();
            let r = p.run_on_module(m);
            let duration = start.elapsed();
            let changed = match r {
                Ok(c) => c,
                Err(d) => return Err(vec![d.note(format!("in pass `{}`", p.name()))]),
            };
            self.timings.push(PassTiming { name: p.name(), duration, changed });
            if self.print_ir_after_all {
                let text = format!(
                    "// -----// IR Dump After {} //----- //\n{}\n",
                    p.name(),
                    print_module(m, &self.print_options)
                );
                (self.sink)(&text);
            }
            if self.verify_each {
                if let Err(errs) = verify_module(m) {
                    return Err(errs
                        .into_iter()
                        .map(|d| d.note(format!("the IR was invalid after pass `{}`", p.name())))
                        .collect());
                }
            }
        }
        Ok(())
    }

    /// Every pass run so far, in order (a pass run twice appears twice).
    pub fn timings(&self) -> &[PassTiming] {
        &self.timings
    }

    /// A table of pass times, for `--time-passes`.
    pub fn timing_report(&self) -> String {
        let total: Duration = self.timings.iter().map(|t| t.duration).sum();
        let mut out = format!("===-- pass timings (total {:.3} ms) --===\n", total.as_secs_f64() * 1e3);
        for t in &self.timings {
            let pct = if total.is_zero() { 0.0 } else { 100.0 * t.duration.as_secs_f64() / total.as_secs_f64() };
            out.push_str(&format!(
                "{:>10.3} ms {:>5.1}%  {}{}\n",
                t.duration.as_secs_f64() * 1e3,
                pct,
                t.name,
                if t.changed { "" } else { " (no change)" }
            ));
        }
        out
    }
}
