//! Trident's GPU backend: tile IR → GPU IR (layouts on every tensor) → PTX.
//!
//! * [`layout`]: linear layouts, the single definition of how a tensor is spread over
//!   registers, lanes and warps (or laid out in shared memory).

pub mod layout;

pub use layout::{draw_layout, LinearLayout};
