//! `trident layout`: draw which thread and register owns each element of a tensor
//! under a GPU-IR layout (or which shared-memory offset holds it); the drawing is
//! `trident_runtime::layout`'s.
//!
//! ```text
//! trident layout --shape 16x16 'blocked [size_per_thread = [1, 4], threads_per_warp = [8, 4], warps_per_cta = [2, 1], order = [1, 0]]'
//! trident layout --shape 16x8 'mma [version = 2, warps_per_cta = [1, 1], instr_shape = [16, 8]]'
//! ```
//! Layouts are written as in GPU-IR dumps (`#L0 = ...`); later layouts may refer to
//! earlier ones as `#L0`, `#L1`, ... (e.g. a dot operand of an mma parent): pass them in
//! order, the last one is drawn.

use clap::Args;

#[derive(Args, Debug)]
pub struct LayoutArgs {
    /// Tensor shape, e.g. 32x32.
    #[arg(long)]
    pub shape: String,
    /// Layout definitions in IR syntax; the last one is drawn.
    #[arg(required = true)]
    pub layouts: Vec<String>,
}

pub fn layout(a: LayoutArgs) -> Result<(), String> {
    let drawing = trident_runtime::layout::draw(&a.shape, &a.layouts).map_err(|e| e.text)?;
    print!("{drawing}");
    Ok(())
}
