//! Analyses of GPU lowering.

pub mod axis_info;

pub use axis_info::{AxisAnalysis, AxisInfo};
