//! `trident demo`: compile every bundled kernel, run each catalog case on the best
//! backend available, check it against its f64 reference and print a table.

use clap::Args;
use trident_runtime::launch::resolve_backend;
use trident_runtime::Backend;
use trident_testkit::{cases, run_case};

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Backend to run on (default: the best one found).
    #[arg(long, default_value = "auto")]
    pub backend: String,
    /// Only cases whose name contains this text.
    #[arg(long)]
    pub filter: Option<String>,
    /// Seed for the generated inputs.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

pub fn demo(a: DemoArgs) -> Result<(), String> {
    let backend = Backend::parse(&a.backend).ok_or_else(|| format!("error: unknown backend `{}`", a.backend))?;
    let chosen = resolve_backend(backend);
    println!("Trident demo: bundled kernels on the {chosen:?} backend, checked against f64 references\n");
    println!("{:<52} {:>11} {:>10} {:>11}  result", "case", "compile ms", "run µs", "max |err|");
    println!("{}", "-".repeat(98));
    let (mut passed, mut failed) = (0, 0);
    for case in cases().iter().filter(|c| a.filter.as_deref().is_none_or(|f| c.name.contains(f))) {
        match run_case(case, backend, a.seed) {
            Ok(r) => {
                passed += 1;
                println!(
                    "{:<52} {:>11.2} {:>10.2} {:>11.2e}  ok",
                    case.name,
                    r.compile_time.as_secs_f64() * 1e3,
                    r.run_time.as_secs_f64() * 1e6,
                    r.report.max_abs()
                );
            }
            Err(e) => {
                failed += 1;
                let first = e.lines().find(|l| !l.trim().is_empty()).unwrap_or("").to_string();
                println!("{:<52} {:>11} {:>10} {:>11}  FAILED: {first}", case.name, "-", "-", "-");
            }
        }
    }
    println!("{}", "-".repeat(98));
    println!("{passed} passed, {failed} failed");
    if failed > 0 {
        return Err(format!("error: {failed} case(s) failed"));
    }
    Ok(())
}
