//! The GPU passes by name, for pipelines written as text: the `// RUN:` lines of the
//! text-format tests (`tests/filetests/*.tir`) and tools. The compile pipeline itself is
//! declared in [`crate::pipeline::GpuPipeline::passes`]; this only maps names to passes.

use super::{AllocShared, AssignLayouts, InsertBarriers, Pipeline, RemoveConverts, SinkRanges};
use crate::options::GpuOptions;
use trident_opt::{Pass, PassManager};

/// Every GPU pass name, in pipeline order.
pub const PASS_NAMES: &[&str] = &[
    "gpu-assign-layouts",
    "gpu-remove-converts",
    "gpu-pipeline",
    "gpu-sink-ranges",
    "gpu-alloc-shared",
    "gpu-insert-barriers",
];

/// The GPU pass named `name`, compiling for `opts`.
pub fn create_pass(name: &str, opts: &GpuOptions) -> Option<Box<dyn Pass>> {
    Some(match name {
        "gpu-assign-layouts" => Box::new(AssignLayouts(opts.clone())),
        "gpu-remove-converts" => Box::new(RemoveConverts),
        "gpu-pipeline" => Box::new(Pipeline(opts.clone())),
        "gpu-sink-ranges" => Box::new(SinkRanges),
        "gpu-alloc-shared" => Box::new(AllocShared::new(opts.clone())),
        "gpu-insert-barriers" => Box::new(InsertBarriers),
        _ => return None,
    })
}

/// Appends the passes of a comma-separated pipeline to `pm`: GPU passes by their names here,
/// tile passes (`inline`, `canonicalize`, ...) by `trident-opt`'s.
pub fn add_pipeline(pm: &mut PassManager, pipeline: &str, opts: &GpuOptions) -> Result<(), String> {
    for name in pipeline.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match create_pass(name, opts) {
            Some(p) => {
                pm.add(p);
            }
            None => {
                pm.add_pipeline(name).map_err(|_| {
                    format!(
                        "unknown pass `{name}` (GPU passes: {}; tile passes: {})",
                        PASS_NAMES.join(", "),
                        trident_opt::registry::PASS_NAMES.join(", ")
                    )
                })?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_makes_its_pass_and_the_pipeline_uses_them_in_order() {
        let opts = GpuOptions::default();
        for &n in PASS_NAMES {
            assert_eq!(create_pass(n, &opts).map(|p| p.name()), Some(n));
        }
        assert_eq!(crate::GpuPipeline::new(&opts).pass_names(), PASS_NAMES);
        let mut pm = PassManager::new();
        add_pipeline(&mut pm, "inline, gpu-assign-layouts ,gpu-insert-barriers", &opts).unwrap();
        assert_eq!(pm.pass_names(), ["inline", "gpu-assign-layouts", "gpu-insert-barriers"]);
        let err = add_pipeline(&mut pm, "gpu-frobnicate", &opts).unwrap_err();
        assert!(err.contains("unknown pass `gpu-frobnicate`") && err.contains("gpu-sink-ranges"), "{err}");
    }
}
