//! Runs every `tests/filetests/*.tir` through the shared harness (`trident_opt::filetest`):
//! parse the input, run the passes named on the `// RUN:` line (this crate's and
//! `trident-opt`'s, see `passes::add_pipeline`), and compare the printed result with the
//! `// EXPECTED:` section (or the error with `// EXPECTED-ERROR:`). `BLESS=1` rewrites the
//! expected sections; `FILETEST=part` runs only the files whose name contains `part`.
//!
//! The module's source file is the `.tir` file itself, so region names read
//! `loop@NAME.tir:LINE` with the line of the op in the test. `// PRINT: locs` prints
//! locations; `// PRINT: regions` appends `regions_of` for each function as comments.

use std::path::Path;
use trident_ir::Module;
use trident_opt::filetest::{run_dir, FileTest, Runner};
use trident_opt::PassManager;
use trident_profile::passes::add_pipeline;
use trident_profile::regions_of;

/// The profile passes (and the tile passes) by name; `// PRINT: regions` adds the regions.
struct ProfilePasses;

impl Runner for ProfilePasses {
    fn passes(&self, test: &FileTest) -> Result<PassManager, String> {
        let mut pm = PassManager::new();
        add_pipeline(&mut pm, &test.pipeline)?;
        Ok(pm)
    }

    fn extra_output(&self, m: &Module, test: &FileTest) -> Result<String, String> {
        let mut out = String::new();
        if !test.prints("regions") {
            return Ok(out);
        }
        for f in &m.funcs {
            let t = regions_of(f, &m.files).map_err(|d| d.render(&m.files))?;
            out.push_str(&format!("// regions of @{}:\n", f.name));
            for r in &t.regions {
                let at = r.loc.as_ref().map_or("?".to_string(), |l| l.to_string());
                out.push_str(&format!("//   {} {} {:?} at {at}\n", r.id, r.kind.as_str(), r.name));
            }
            for op in f.all_ops() {
                if matches!(f.ops[op].kind, trident_ir::OpKind::Record { .. }) && t.id_of(op).is_none() {
                    return Err(format!("record {op} has no region id"));
                }
            }
        }
        Ok(out)
    }
}

#[test]
fn filetests() {
    run_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/filetests"), &ProfilePasses);
}
