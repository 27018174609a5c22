//! Passes by name, and the default pipeline.

use crate::pass::{Pass, PassManager};
use crate::{Canonicalize, Cse, Dce, Inline, Licm, SplitLoops};

/// Every registered pass name.
pub const PASS_NAMES: &[&str] = &["inline", "canonicalize", "cse", "licm", "split-loops", "dce"];

/// The default tile-IR pipeline. Inlining first exposes everything to the rest;
/// canonicalize folds constants and control flow; CSE merges what folding made equal;
/// LICM then hoists invariant (often just-merged) ops; a second canonicalize + CSE
/// round catches what hoisting lined up (ops now next to their twins outside the loop);
/// DCE finally removes dead ops and dead loop-carried values.
pub const DEFAULT_TILE_PIPELINE: &str = "inline, canonicalize, cse, licm, canonicalize, cse, dce";

/// [`DEFAULT_TILE_PIPELINE`] with `split-loops` after LICM (the iterations where a mask is
/// all-true run in a copy of the loop without it): opt-in (`TRIDENT_SPLIT_LOOPS=1` in the
/// runtime) until a GPU has measured it — the emulators disagree on it, and on sm_90a the
/// second loop body costs registers (`crates/opt/src/split_loops.rs`).
pub const SPLIT_LOOPS_TILE_PIPELINE: &str = "inline, canonicalize, cse, licm, split-loops, canonicalize, cse, dce";

/// A pass by its name.
pub fn create_pass(name: &str) -> Option<Box<dyn Pass>> {
    Some(match name {
        "inline" => Box::new(Inline),
        "canonicalize" => Box::new(Canonicalize),
        "cse" => Box::new(Cse),
        "licm" => Box::new(Licm),
        "split-loops" => Box::new(SplitLoops),
        "dce" => Box::new(Dce),
        _ => return None,
    })
}

/// A pass manager holding [`DEFAULT_TILE_PIPELINE`].
pub fn default_tile_pipeline() -> PassManager {
    tile_pipeline(false)
}

/// A pass manager holding [`DEFAULT_TILE_PIPELINE`], or [`SPLIT_LOOPS_TILE_PIPELINE`].
pub fn tile_pipeline(split_loops: bool) -> PassManager {
    let mut pm = PassManager::new();
    let text = if split_loops { SPLIT_LOOPS_TILE_PIPELINE } else { DEFAULT_TILE_PIPELINE };
    // Both pipelines name only registered passes.
    if let Err(e) = pm.add_pipeline(text) {
        unreachable!("{e}");
    }
    pm
}
