//! `trident layout`: a drawing of which thread and register owns each element of a
//! tensor under a GPU-IR layout (or which shared-memory offset holds it).
//!
//! Layouts are written as in GPU-IR dumps (`#L0 = ...`); later layouts may refer to
//! earlier ones as `#L0`, `#L1`, ... (e.g. a dot operand of an mma parent): pass them in
//! order, the last one is drawn. They are parsed by the IR parser, as a function holding
//! just the layout table, so the syntax is exactly the dumps'.

use trident_gpu::layout::build::{distributed, shared_of};
use trident_gpu::layout::draw::{draw_layout, draw_shared};
use trident_ir::{Layout, LayoutId, SourceFile};

use crate::error::RunError;

/// Draws the last of `layouts` (IR syntax) on a tensor of `shape` (`32x32`).
pub fn draw(shape: &str, layouts: &[String]) -> Result<String, RunError> {
    let dims: Vec<u32> = shape
        .split('x')
        .map(|d| d.trim().parse::<u32>().map_err(|_| RunError::msg(format!("bad shape `{shape}`"))))
        .collect::<Result<_, _>>()?;
    if layouts.is_empty() {
        return Err(RunError::msg("no layout given"));
    }
    let defs: String = layouts.iter().enumerate().map(|(i, l)| format!("  #L{i} = {l}\n")).collect();
    let text = format!("kernel @layouts() {{\n{defs}  return\n}}\n");
    let m = trident_ir::parse::parse_module(&text)
        .map_err(|d| RunError::other(d.render(&[SourceFile { path: "<layout>".into(), text: text.clone() }])))?;
    let f = m.funcs.first().ok_or_else(|| RunError::msg("internal: the layout table did not parse as a function"))?;
    let id = LayoutId::from_u32(layouts.len() as u32 - 1);
    let err = |e: String| RunError::msg(e);
    Ok(match &f.layouts[id] {
        Layout::Shared { .. } => draw_shared(&shared_of(&f.layouts, id, &dims).map_err(err)?),
        _ => draw_layout(&distributed(&f.layouts, id, &dims).map_err(err)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_the_last_layout_and_names_bad_input() {
        let mma = "mma [version = 2, warps_per_cta = [1, 1], instr_shape = [16, 8]]".to_string();
        let text = draw("16x8", std::slice::from_ref(&mma)).unwrap();
        // The PTX ISA's m16n8 accumulator: row = groupID (lane / 4), cols 2 * (lane % 4) + {0, 1}.
        assert!(text.contains("[ T0:0,  T0:1,  T1:0,  T1:1,  T2:0,  T2:1,  T3:0,  T3:1]"), "{text}");
        assert!(draw("16xq", std::slice::from_ref(&mma)).unwrap_err().text.contains("bad shape `16xq`"));
        assert!(draw("8x8", &["bogus [x = 1]".to_string()]).is_err());
        assert!(draw("8x8", &[]).is_err());
    }
}
