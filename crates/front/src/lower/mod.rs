//! Lowering of a `@triton.jit` function to tile IR.

use crate::{ArgInfo, CompileOptions, Compiled, KernelFile};
use trident_ir::Diagnostic;

pub(crate) fn compile(
    _file: &KernelFile,
    _kernel: &str,
    _args: &[(String, ArgInfo)],
    _opts: &CompileOptions,
) -> Result<Compiled, Box<Diagnostic>> {
    Err(Box::new(Diagnostic::error("not yet")))
}
