//! Trident's tile-IR optimiser: a pass manager and the passes that clean up what the
//! front end emits before GPU lowering.
//!
//! * [`PassManager`] runs passes in order, verifies after each (on by default), dumps
//!   the IR after each when asked (`print_ir_after_all` or `TRIDENT_DUMP_IR=1`), and
//!   times them.
//! * Passes: [`Inline`] (`inline`), [`Canonicalize`] (`canonicalize`, including
//!   constant folding), [`Cse`] (`cse`), [`Licm`] (`licm`) and [`Dce`] (`dce`);
//!   [`create_pass`] finds one by name and [`default_tile_pipeline`] strings them together.
//!
//! The passes only rely on the tile IR's own contract (`trident-ir`): op effects from
//! [`trident_ir::OpKind::effect`], region structure, and the typing rules the verifier checks.
//! See README.md for the filetest format used to test them.

pub mod canonicalize;
pub mod cse;
pub mod dce;
pub mod filetest;
pub mod fold;
pub mod inline;
pub mod licm;
pub mod pass;
pub mod registry;
pub mod split_loops;

pub use canonicalize::Canonicalize;
pub use cse::Cse;
pub use dce::Dce;
pub use inline::Inline;
pub use licm::Licm;
pub use pass::{Pass, PassManager, PassTiming};
pub use registry::{
    create_pass, default_tile_pipeline, tile_pipeline, DEFAULT_TILE_PIPELINE, PASS_NAMES, SPLIT_LOOPS_TILE_PIPELINE,
};
pub use split_loops::SplitLoops;
