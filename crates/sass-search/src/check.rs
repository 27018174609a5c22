//! Never a wrong kernel: a schedule is kept only when the cubin written for it, read back
//! by the disassembler, passes the verifier against the original (timing; a legal
//! reordering) and computes what the original computes — both launched on the same fresh
//! random inputs, every buffer compared bit for bit afterwards — and then whatever the
//! reward checks itself (`Reward::check`: a GPU timer compares the GPU's outputs).

use trident_core::HostTensor;
use trident_emu::KernelArg;
use trident_sass::verify::{reordering, timing};
use trident_sass::Cubin;
use trident_sass_emu::{launch, Program};

use crate::env::{kernel_text, Env, State};
use crate::rng::Rng;

/// `args` with every floating-point buffer refilled with random values in [-4, 4) (seeded),
/// so outputs start as garbage too; integer buffers (which may hold indices or sizes) and
/// scalars are kept, so the launch stays in bounds exactly as the given one does.
pub fn fresh_inputs(args: &[KernelArg], seed: u64) -> Vec<KernelArg> {
    let mut rng = Rng::new(seed);
    args.iter()
        .map(|a| match a {
            KernelArg::Buffer(t) if t.dtype.is_float() => {
                let n: usize = t.data.len() / t.dtype.size_bytes().max(1);
                let v: Vec<f64> = (0..n).map(|_| rng.uniform() * 8.0 - 4.0).collect();
                let mut fresh = HostTensor::from_f64(t.dtype, &[n], &v);
                fresh.shape = t.shape.clone();
                KernelArg::Buffer(fresh)
            }
            other => other.clone(),
        })
        .collect()
}

/// The first difference between two launches' buffers, if any.
pub fn first_difference(want: &[KernelArg], got: &[KernelArg]) -> Option<String> {
    for (i, (a, b)) in want.iter().zip(got).enumerate() {
        if let (KernelArg::Buffer(a), KernelArg::Buffer(b)) = (a, b) {
            if a.data != b.data {
                let w = a.dtype.size_bytes().max(1);
                let at = a.data.iter().zip(&b.data).position(|(x, y)| x != y).unwrap_or(0) / w;
                return Some(format!(
                    "argument {i} element {at}: original {:02x?}, candidate {:02x?}",
                    &a.data[at * w..(at * w + w).min(a.data.len())],
                    &b.data[at * w..(at * w + w).min(b.data.len())]
                ));
            }
        }
    }
    None
}

impl Env {
    /// Checks `s` as it would be written: its bytes parsed and disassembled again, the
    /// verifier against the original, then the original and `s` on the same fresh inputs
    /// (`seed`) on the SASS emulator, then the reward's own check (`Reward::check`). Counted
    /// in [`Env::stats`]; an error says what failed.
    pub fn check(&mut self, s: &State, seed: u64) -> Result<(), String> {
        self.stats.checks += 1;
        let r = self.check_uncounted(s, seed).and_then(|()| self.reward_check(s));
        if let Err(why) = &r {
            self.stats.check_failures += 1;
            self.stats.first_check_failure.get_or_insert_with(|| why.clone());
            // For a post-mortem: `TRIDENT_SEARCH_FAILED=DIR` keeps each failing cubin.
            if let (Ok(dir), Ok(bytes)) = (std::env::var("TRIDENT_SEARCH_FAILED"), s.cubin.write()) {
                let path = std::path::Path::new(&dir).join(format!("failed-{}.cubin", self.stats.check_failures));
                let _ = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(path, bytes));
            }
        }
        r
    }

    fn check_uncounted(&self, s: &State, seed: u64) -> Result<(), String> {
        let bytes = s.cubin.write().map_err(|e| format!("writing the cubin: {e}"))?;
        let again = Cubin::parse(&bytes).map_err(|e| format!("the written cubin: {e}"))?;
        let text = kernel_text(&self.disasm, &bytes, &again, self.kernel)?;
        let k = &again.kernels[self.kernel];
        let orig = &self.original;
        let mut v = timing(self.sm, &k.instrs, &text);
        v.extend(reordering((&orig.cubin.kernels[self.kernel].instrs, &orig.text), (&k.instrs, &text)));
        if let Some(x) = v.first() {
            return Err(format!("the verifier: {}", x.describe(&text)));
        }
        for (j, (a, b)) in again.kernels.iter().zip(&orig.cubin.kernels).enumerate() {
            if j != self.kernel && a.instrs != b.instrs {
                return Err(format!("kernel `{}` changed, but only `{}` was searched", a.name, self.name));
            }
        }
        let inputs = fresh_inputs(&self.problem.args, seed);
        let mut want = inputs.clone();
        launch(&self.original_program, &self.problem.config, &mut want)
            .map_err(|e| format!("the original on fresh inputs: {e}"))?;
        let p = Program::new(&again, &self.name, &text).map_err(|e| format!("the SASS emulator: {e}"))?;
        let mut got = inputs;
        launch(&p, &self.problem.config, &mut got).map_err(|e| format!("the candidate on fresh inputs: {e}"))?;
        match first_difference(&want, &got) {
            Some(d) => Err(format!("outputs differ: {d}")),
            None => Ok(()),
        }
    }
}
