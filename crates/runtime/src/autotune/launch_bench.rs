//! The launch path's [`Bench`]: measures a config by compiling it through the compile
//! cache (the same [`crate::compile::compile`] every launch uses) and running it on
//! copies of the launch's arguments, on the launch's backend and clock.

use std::sync::Arc;

use super::select::{Candidate, Ctx};
use super::{Bench, TrialError, TuneConfig};
use crate::args::{Arg, ArgValue, Backend};
use crate::compiled::{CodeTarget, CompiledKernel};
use crate::gpu::CudaRunner;

/// Measures configs by compiling them through the cache and running them on
/// copies of the launch's arguments.
pub(crate) struct LaunchBench<'a> {
    ctx: &'a Ctx<'a>,
    candidates: &'a [Candidate],
    /// Copies of the launch's arguments: `reset_to_zero` zeroes these, runs copy them.
    args: Vec<Arg>,
    current: Option<Ready>,
    runs: u64,
}

/// The config being measured, compiled (and on CUDA, its arguments on the device).
enum Ready {
    Host(Arc<CompiledKernel>),
    /// Boxed: a runner (buffers, launch, the L2 flush buffer) is much larger than an `Arc`.
    Cuda(Arc<CompiledKernel>, Box<CudaRunner>),
}

impl<'a> LaunchBench<'a> {
    pub fn new(ctx: &'a Ctx<'a>, candidates: &'a [Candidate]) -> LaunchBench<'a> {
        LaunchBench { ctx, candidates, args: ctx.args.to_vec(), current: None, runs: 0 }
    }

    /// Kernel runs so far.
    pub fn runs(&self) -> u64 {
        self.runs
    }

    /// Positions of the named arguments among the runtime arguments (the CUDA runner
    /// holds them in IR parameter order).
    fn ir_positions(ck: &CompiledKernel, names: &[String]) -> Vec<usize> {
        let runtime = ck.runtime_params();
        // A descriptor named in `reset_to_zero`/`restore_value` stands for its tensor.
        let named = |n: &str| names.iter().any(|m| m == n || n.strip_suffix(".base") == Some(m.as_str()));
        runtime.iter().enumerate().filter(|(_, n)| named(n)).map(|(pos, _)| pos).collect()
    }
}

impl Bench for LaunchBench<'_> {
    fn prepare(&mut self, config: &TuneConfig) -> Result<(), TrialError> {
        self.current = None;
        let c = self
            .candidates
            .iter()
            .find(|c| c.tune == *config)
            .ok_or_else(|| TrialError::Fatal(format!("config {config} is not one of the kernel's")))?;
        let req = self.ctx.request(&c.constexprs(), c.tune.num_warps, c.tune.num_stages);
        let (ck, _) = crate::compile::compile(self.ctx.session, &req).map_err(|e| {
            let text = e.error.text.trim_end().to_string();
            if e.is_out_of_resources() {
                TrialError::OutOfResources(text)
            } else {
                TrialError::Compile(text)
            }
        })?;
        self.current = Some(match self.ctx.target {
            CodeTarget::Cuda(_) => {
                let code = ck.gpu.as_ref().ok_or_else(|| TrialError::Fatal("internal: no GPU code".into()))?;
                let values = crate::run::runtime_values(&ck, &self.args).map_err(|e| TrialError::Failed(e.text))?;
                let grid =
                    crate::run::grid_of(&ck, &self.args, self.ctx.opts).map_err(|e| TrialError::Failed(e.text))?;
                let runner = CudaRunner::new(code, &values, grid).map_err(|e| TrialError::Failed(e.text))?;
                // Checked against the device's limits before any launch: a config that
                // asks for more than the device has is skipped as out of resources.
                if let Some(why) = runner.shortage() {
                    return Err(TrialError::OutOfResources(why));
                }
                Ready::Cuda(ck, Box::new(runner))
            }
            _ => Ready::Host(ck),
        });
        Ok(())
    }

    fn run(&mut self, _config: &TuneConfig) -> Result<f64, TrialError> {
        let backend = match self.ctx.target {
            CodeTarget::Tile => Backend::Interp,
            // Configs for the SASS emulator are tuned on the PTX emulator's model (its
            // estimate knows no bandwidth yet).
            CodeTarget::Emu(_) | CodeTarget::SassEmu(_) => Backend::Emu,
            CodeTarget::Cuda(_) => Backend::Cuda,
        };
        let t = match &self.current {
            None => return Err(TrialError::Failed("not prepared".into())),
            Some(Ready::Cuda(_, runner)) => {
                let s = runner.time(0, 1, false).map_err(|e| TrialError::Failed(e.text))?;
                s.last().copied().unwrap_or_default()
            }
            Some(Ready::Host(ck)) => {
                let raw = crate::run::run_raw(ck, &self.args, self.ctx.opts, backend, 0, 1)
                    .map_err(|e| TrialError::Failed(e.text.trim_end().to_string()))?;
                raw.samples.last().copied().unwrap_or_default()
            }
        };
        self.runs += 1;
        Ok(t.as_secs_f64() * 1e3)
    }

    fn zero_inputs(&mut self, names: &[String]) -> Result<(), TrialError> {
        if let Some(Ready::Cuda(ck, runner)) = &self.current {
            for i in Self::ir_positions(ck, names) {
                runner.zero(i).map_err(|e| TrialError::Fatal(e.text))?;
            }
            return Ok(());
        }
        for a in self.args.iter_mut().filter(|a| names.contains(&a.name)) {
            match &mut a.value {
                ArgValue::Tensor(t) => t.data.fill(0),
                ArgValue::Descriptor(d) => {
                    if let ArgValue::Tensor(t) = &mut d.base {
                        t.data.fill(0);
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn restore_inputs(&mut self, names: &[String]) -> Result<(), TrialError> {
        // Host backends run on copies, so there is nothing to restore; device buffers are uploaded again.
        if let Some(Ready::Cuda(ck, runner)) = &self.current {
            for i in Self::ir_positions(ck, names) {
                runner.restore(i).map_err(|e| TrialError::Fatal(e.text))?;
            }
        }
        Ok(())
    }
}
