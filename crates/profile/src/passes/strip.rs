//! `profile-strip`: removes every `record` op, for a compilation with profiling off.
//!
//! Records compute nothing, so removing them never changes what a kernel does; a loop
//! or `if` kept alive only by a record is left for DCE to delete afterwards.

use trident_ir::{Diagnostic, Function, OpKind};
use trident_opt::Pass;

/// The strip pass (`profile-strip`).
pub struct Strip;

impl Pass for Strip {
    fn name(&self) -> &'static str {
        "profile-strip"
    }

    fn run_on_function(&self, f: &mut Function) -> Result<bool, Diagnostic> {
        let records: Vec<_> =
            f.all_ops().into_iter().filter(|&op| matches!(f.ops[op].kind, OpKind::Record { .. })).collect();
        f.erase_ops(&records);
        Ok(!records.is_empty())
    }
}
