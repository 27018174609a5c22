//! Analyses of GPU lowering.

pub mod axis_info;
pub mod provenance;

pub use axis_info::{AxisAnalysis, AxisInfo};
pub use provenance::{Provenance, ProvenanceAnalysis};
