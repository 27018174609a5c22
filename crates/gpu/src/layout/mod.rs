//! Layouts as linear maps over GF(2), built from the IR's [`trident_ir::Layout`] parameters.

pub mod build;
pub mod draw;
pub mod gf2;
pub mod linear;

pub use build::{distributed, shared_of, Table};
pub use draw::{draw_ir_layout, draw_layout, draw_layouts, draw_shared};
pub use linear::{ConversionKind, LinearLayout, SharedLinear};

#[cfg(test)]
mod tests;
