//! Compilation options of the GPU backend.

use crate::machine::Target;

/// How to compile a kernel.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GpuOptions {
    pub target: Target,
    /// Warps per CTA (a power of two, 1..=32).
    pub num_warps: u32,
    /// Software-pipelining depth of loops feeding `dot` (1: no pipelining).
    pub num_stages: u32,
    /// Shared memory limit; `None` means the target's maximum.
    pub max_shared_bytes: Option<u32>,
    /// Emit `.file`/`.loc` line information.
    pub line_info: bool,
}

impl Default for GpuOptions {
    fn default() -> GpuOptions {
        GpuOptions { target: Target::Sm80, num_warps: 4, num_stages: 3, max_shared_bytes: None, line_info: true }
    }
}

impl GpuOptions {
    pub fn shared_limit(&self) -> u32 {
        self.max_shared_bytes.unwrap_or(self.target.max_shared_bytes())
    }
}
