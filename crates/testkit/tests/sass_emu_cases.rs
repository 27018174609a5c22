//! Every bundled kernel, at every catalog size, compiled by Trident, assembled by `ptxas`, and
//! run as SASS on the SASS emulator (`--backend sass-emu`), against its f64 reference — for
//! sm_80, sm_90 (Hopper with `mma.sync`) and sm_90a (warpgroup MMA: `HGMMA`). Inputs are fresh for each run (the
//! seed is printed on failure). The emulator's hazard checks run on every launch: `ptxas`'s
//! schedules must never trip them. Needs ptxas and nvdisasm (scripts/install-tools).

use trident_runtime::Backend;
use trident_testkit::{cases, run_case};

#[test]
fn every_case_matches_its_reference_on_the_sass_emulator() {
    let tools = ["TRIDENT_PTXAS", "TRIDENT_NVDISASM"];
    let found = |t: trident_gpu::tools::Tool| trident_gpu::tools::find(t).is_ok();
    if !(found(trident_gpu::tools::Tool::Ptxas) && found(trident_gpu::tools::Tool::Nvdisasm)) {
        return eprintln!("skipped: ptxas/nvdisasm not found ({} or scripts/install-tools)", tools.join(", "));
    }
    let seed: u64 = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    let all = cases();
    let mut failures = vec![];
    for target in ["sm_80", "sm_90", "sm_90a"] {
        // The only test in this binary: nothing else reads the variable meanwhile.
        std::env::set_var("TRIDENT_EMU_TARGET", target);
        for case in &all {
            if let Err(e) = run_case(case, Backend::SassEmu, seed) {
                failures.push(format!("--- {} on {target} (seed {seed})\n{e}", case.name));
            }
        }
    }
    std::env::remove_var("TRIDENT_EMU_TARGET");
    assert!(failures.is_empty(), "{} of {} runs failed:\n{}", failures.len(), 3 * all.len(), failures.join("\n"));
    eprintln!("{} cases x 3 targets agree with their references on the SASS emulator", all.len());
}
