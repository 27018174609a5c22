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
