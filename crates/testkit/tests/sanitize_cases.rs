//! Sanitize mode changes nothing in bounds: every bundled kernel, at every catalog size, gives
//! bit-identical outputs on the emulator with and without `sanitize` (same inputs), and the
//! sanitized outputs match the f64 reference. Kernels with float atomics (split-K) are not
//! deterministic from run to run (the emulator runs CTAs on several cores, in any order):
//! those are held to the reference only.

use trident_runtime::launch::{launch, LaunchOptions};
use trident_runtime::{Backend, KernelProgram};
use trident_testkit::{cases, compare::check_args};

#[test]
fn every_case_is_bit_identical_sanitized_on_the_emulator() {
    let seed: u64 = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    let all = cases();
    let mut failures = vec![];
    for case in &all {
        let prog = KernelProgram::from_source(case.file, case.source).unwrap();
        let kernel = prog.kernel(Some(case.kernel)).unwrap();
        let before = case.materialize(seed).unwrap();
        let mut outs = vec![];
        for sanitize in [false, true] {
            let mut args = before.clone();
            let mut opts = LaunchOptions::new(case.grid);
            opts.backend = Backend::Emu;
            opts.num_warps = case.num_warps;
            opts.sanitize = sanitize;
            match launch(&prog, kernel, &mut args, &opts) {
                Ok(_) => outs.push(args),
                Err(e) => failures.push(format!("--- {} sanitize={sanitize} (seed {seed})\n{}", case.name, e.text)),
            }
        }
        let deterministic = !case.source.contains("tl.atomic");
        if let [plain, sanitized] = &outs[..] {
            if deterministic && plain != sanitized {
                failures.push(format!("--- {} (seed {seed}): sanitized outputs differ", case.name));
            } else if let Err(m) = check_args(case, &before, sanitized) {
                failures.push(format!("--- {} (seed {seed}): {m}", case.name));
            }
        }
    }
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), all.len(), failures.join("\n"));
}
