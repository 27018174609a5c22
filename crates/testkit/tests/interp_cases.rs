//! Every bundled kernel, at every catalog size, on the interpreter, against its f64 reference.
//! Inputs are fresh for each run (the seed is printed on failure).

use trident_runtime::Backend;
use trident_testkit::{cases, run_case};

#[test]
fn every_case_matches_its_reference_on_the_interpreter() {
    let seed: u64 = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    let mut failures = vec![];
    let all = cases();
    for case in &all {
        if let Err(e) = run_case(case, Backend::Interp, seed) {
            failures.push(format!("--- {} (seed {seed})\n{e}", case.name));
        }
    }
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), all.len(), failures.join("\n"));
}
