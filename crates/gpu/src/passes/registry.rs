//! The GPU passes by name, for pipelines written as text: the `// RUN:` lines of the
//! text-format tests (`tests/filetests/*.tir`) and tools. The compile pipeline itself is
//! declared in [`crate::pipeline::GpuPipeline::passes`]; this only maps names to passes.
//! Pipelines may also name the profiling passes the compile pipeline uses
//! (`profile-strip`, `profile-instrument{loops,dots}`: `trident_profile::passes`) and the
//! tile passes of `trident-opt`.

use super::{
    AllocShared, AssignLayouts, Descriptors, InsertBarriers, Pingpong, Pipeline, RebasePointers, RemoveConverts,
    SharedOperands, SinkRanges,
};
use crate::options::GpuOptions;
use trident_opt::{Pass, PassManager};

/// Every GPU pass name, in pipeline order.
pub const PASS_NAMES: &[&str] = &[
    "gpu-assign-layouts",
    "gpu-remove-converts",
    "gpu-pipeline",
    "gpu-descriptors",
    "gpu-rebase-pointers",
    "gpu-sink-ranges",
    "gpu-shared-operands",
    "gpu-alloc-shared",
    "gpu-insert-barriers",
    "gpu-pingpong",
];

/// The GPU pass named `name`, compiling for `opts`.
pub fn create_pass(name: &str, opts: &GpuOptions) -> Option<Box<dyn Pass>> {
    Some(match name {
        "gpu-descriptors" => Box::new(Descriptors(opts.clone())),
        "gpu-assign-layouts" => Box::new(AssignLayouts(opts.clone())),
        "gpu-remove-converts" => Box::new(RemoveConverts),
        "gpu-pipeline" => Box::new(Pipeline(opts.clone())),
        "gpu-rebase-pointers" => Box::new(RebasePointers),
        "gpu-sink-ranges" => Box::new(SinkRanges),
        "gpu-shared-operands" => Box::new(SharedOperands(opts.clone())),
        "gpu-alloc-shared" => Box::new(AllocShared::new(opts.clone())),
        "gpu-insert-barriers" => Box::new(InsertBarriers),
        "gpu-pingpong" => Box::new(Pingpong(opts.clone())),
        _ => return None,
    })
}

/// Splits a pipeline at the commas between passes, not those inside a pass's `{...}` options.
fn split_pipeline(text: &str) -> Result<Vec<&str>, String> {
    let (mut out, mut depth, mut start) = (vec![], 0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        if depth < 0 {
            return Err(format!("unbalanced braces in the pipeline `{text}`"));
        }
    }
    out.push(&text[start..]);
    Ok(out.into_iter().map(str::trim).filter(|s| !s.is_empty()).collect())
}

/// Appends the passes of a comma-separated pipeline to `pm`: GPU passes by their names here,
/// the profiling passes by `trident_profile::passes`', tile passes (`inline`,
/// `canonicalize`, ...) by `trident-opt`'s.
pub fn add_pipeline(pm: &mut PassManager, pipeline: &str, opts: &GpuOptions) -> Result<(), String> {
    for name in split_pipeline(pipeline)? {
        if let Some(p) = trident_profile::passes::create_pass(name)? {
            pm.add(p);
            continue;
        }
        match create_pass(name, opts) {
            Some(p) => {
                pm.add(p);
            }
            None => {
                pm.add_pipeline(name).map_err(|_| {
                    format!(
                        "unknown pass `{name}` (GPU passes: {}; profiling passes: {}; tile passes: {})",
                        PASS_NAMES.join(", "),
                        trident_profile::passes::PASS_NAMES.join(", "),
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
        // Unprofiled: records are stripped first, then the GPU passes.
        let names = crate::GpuPipeline::new(&opts).pass_names();
        assert_eq!((names[0], &names[1..]), ("profile-strip", PASS_NAMES));
        // Profiled: scopes kept, the automatic regions added after sink-ranges.
        let profiled = GpuOptions { profile: Some(crate::ProfileOptions::default()), ..GpuOptions::default() };
        let names = crate::GpuPipeline::new(&profiled).pass_names();
        let mut want = PASS_NAMES.to_vec();
        want.insert(6, "profile-instrument");
        assert_eq!(names, want);
        let mut pm = PassManager::new();
        add_pipeline(&mut pm, "inline, gpu-assign-layouts ,profile-instrument{loops,dots}, gpu-insert-barriers", &opts)
            .unwrap();
        assert_eq!(pm.pass_names(), ["inline", "gpu-assign-layouts", "profile-instrument", "gpu-insert-barriers"]);
        assert!(add_pipeline(&mut pm, "profile-instrument{frames}", &opts).unwrap_err().contains("frames"));
        let err = add_pipeline(&mut pm, "gpu-frobnicate", &opts).unwrap_err();
        assert!(err.contains("unknown pass `gpu-frobnicate`") && err.contains("gpu-sink-ranges"), "{err}");
    }
}
