//! `trident layout`: draw which thread and register owns each element of a tensor
//! under a GPU-IR layout (or which shared-memory offset holds it).
//!
//! ```text
//! trident layout --shape 16x16 'blocked [size_per_thread = [1, 4], threads_per_warp = [8, 4], warps_per_cta = [2, 1], order = [1, 0]]'
//! trident layout --shape 16x8 'mma [version = 2, warps_per_cta = [1, 1], instr_shape = [16, 8]]'
//! ```
//! Layouts are written as in GPU-IR dumps (`#L0 = ...`); later layouts may refer to
//! earlier ones as `#L0`, `#L1`, ... (e.g. a dot operand of an mma parent): pass them in
//! order, the last one is drawn.

use clap::Args;
use trident_gpu::layout::build::{distributed, shared_of};
use trident_gpu::layout::draw::{draw_layout, draw_shared};
use trident_ir::{Layout, LayoutId};

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
    let shape: Vec<u32> = a
        .shape
        .split('x')
        .map(|d| d.trim().parse::<u32>().map_err(|_| format!("error: bad shape `{}`", a.shape)))
        .collect::<Result<_, _>>()?;
    // Parse through the IR parser: a function holding just the layout table.
    let defs: String = a.layouts.iter().enumerate().map(|(i, l)| format!("  #L{i} = {l}\n")).collect();
    let text = format!("kernel @layouts() {{\n{defs}  return\n}}\n");
    let m = trident_ir::parse::parse_module(&text)
        .map_err(|d| d.render(&[trident_ir::SourceFile { path: "<layout>".into(), text: text.clone() }]))?;
    let f = &m.funcs[0];
    let id = LayoutId::from_u32(a.layouts.len() as u32 - 1);
    let drawing = match &f.layouts[id] {
        Layout::Shared { .. } => draw_shared(&shared_of(&f.layouts, id, &shape).map_err(|e| format!("error: {e}"))?),
        _ => draw_layout(&distributed(&f.layouts, id, &shape).map_err(|e| format!("error: {e}"))?),
    };
    print!("{drawing}");
    Ok(())
}
