//! Text drawings of layouts: which thread and register holds each element
//! (`T{thread}:{register}`, copies joined by `|`), or which offset of shared memory
//! stores it. Rank-3 tensors print one table per index of dim 0.

use super::linear::{unflatten, LinearLayout, SharedLinear};
use std::fmt::Write;

/// Draws a distributed layout as a table of `T{tid}:{reg}` cells (tid = 32*warp + lane).
pub fn draw_layout(l: &LinearLayout) -> String {
    let numel = l.numel() as usize;
    let mut cells: Vec<Vec<String>> = vec![Vec::new(); numel];
    for w in 0..l.num_warps() as u64 {
        for lane in 0..l.num_lanes() as u64 {
            for r in 0..l.num_regs() as u64 {
                let c = l.apply(r, lane, w) as usize;
                if let Some(cell) = cells.get_mut(c) {
                    cell.push(format!("T{}:{}", w * 32 + lane, r));
                }
            }
        }
    }
    let text: Vec<String> = cells.into_iter().map(|c| c.join("|")).collect();
    let mut out = format!(
        "layout of tensor<{}> ({} regs x {} lanes x {} warps)\n",
        dims(&l.shape),
        l.num_regs(),
        l.num_lanes(),
        l.num_warps()
    );
    out.push_str(&table(&l.shape, &text));
    out
}

/// Draws a shared-memory layout: each cell is the element offset of that coordinate.
pub fn draw_shared(s: &SharedLinear) -> String {
    let numel: usize = s.shape.iter().map(|&d| d as usize).product();
    let mut text = vec![String::new(); numel];
    for off in 0..numel as u64 {
        let c = s.coord_at(off) as usize;
        if let Some(t) = text.get_mut(c) {
            *t = off.to_string();
        }
    }
    let mut out = format!("shared layout of tensor<{}> (cell = element offset)\n", dims(&s.shape));
    out.push_str(&table(&s.shape, &text));
    out
}

fn dims(shape: &[u32]) -> String {
    shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("x")
}

/// Lays out cell texts (row-major over `shape`) as aligned rows.
fn table(shape: &[u32], text: &[String]) -> String {
    let width = text.iter().map(|t| t.len()).max().unwrap_or(1);
    let (batches, rows, cols) = match shape.len() {
        0 => (1, 1, 1),
        1 => (1, 1, shape[0] as usize),
        2 => (1, shape[0] as usize, shape[1] as usize),
        _ => {
            let cols = shape[shape.len() - 1] as usize;
            let rows = shape[shape.len() - 2] as usize;
            (text.len() / (rows * cols).max(1), rows, cols)
        }
    };
    let mut out = String::new();
    for b in 0..batches {
        if batches > 1 {
            let idx = unflatten(shape, (b * rows * cols) as u64);
            let _ = writeln!(
                out,
                "[{}]:",
                idx[..idx.len() - 2].iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ")
            );
        }
        for r in 0..rows {
            let row: Vec<String> =
                (0..cols).map(|c| format!("{:>width$}", text[b * rows * cols + r * cols + c], width = width)).collect();
            let _ = writeln!(out, "[{}]", row.join(", "));
        }
    }
    out
}

/// Draws layout `id` of a function's layout table on `shape`: the distributed map for
/// blocked/slice/mma/dot-operand layouts, the offsets for shared layouts.
pub fn draw_ir_layout(table: &super::Table, id: trident_ir::LayoutId, shape: &[u32]) -> Result<String, String> {
    match table.get(id) {
        Some(trident_ir::Layout::Shared { .. }) => Ok(draw_shared(&super::shared_of(table, id, shape)?)),
        Some(_) => Ok(draw_layout(&super::distributed(table, id, shape)?)),
        None => Err(format!("unknown layout {id}")),
    }
}

/// Draws a layout given by its parameters (and the parents it refers to, in order: a
/// `slice` or `dot_operand` refers to earlier entries as `#L<index>`).
pub fn draw_layouts(layouts: &[trident_ir::Layout], shape: &[u32]) -> Result<String, String> {
    let mut table = super::Table::new();
    for l in layouts {
        table.push(l.clone());
    }
    let last = table.keys().next_back().ok_or("no layout given")?;
    draw_ir_layout(&table, last, shape)
}

#[cfg(test)]
mod tests {
    use super::*;
    use trident_ir::Layout;

    #[test]
    fn draws_from_ir_parameters() {
        let mma = Layout::Mma {
            version: 2,
            warps_per_cta: [1, 1].into_iter().collect(),
            instr_shape: [16, 8].into_iter().collect(),
        };
        let a = Layout::DotOperand { op_idx: 0, parent: trident_ir::LayoutId::from_u32(0), k_width: 2 };
        let text = draw_layouts(&[mma, a], &[16, 16]).unwrap();
        // Lane 0 holds A[0][0], A[0][1] in registers 0 and 1 (PTX ISA m16n8k16 fragment a0, a1).
        assert!(text.lines().nth(1).unwrap().replace(' ', "").starts_with("[T0:0,T0:1,T1:0"), "{text}");
        assert!(draw_layouts(&[], &[4]).is_err());
    }
}
