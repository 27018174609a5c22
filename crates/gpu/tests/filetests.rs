//! Text-format tests of the GPU passes: runs every `tests/filetests/*.tir`: parse the input
//! (tile IR for `gpu-assign-layouts`, GPU IR with `#L` layouts for the later passes), run
//! the passes named on the `// RUN:` line (GPU pass names from
//! `trident_gpu::passes::registry`, tile pass names from `trident-opt`) with the options of
//! the `// OPTIONS:` line (`num_warps=4 num_stages=3 target=sm_90a max_shared_bytes=N`;
//! defaults otherwise), and compare the printed result with the `// EXPECTED:` section (or
//! check the error against `// EXPECTED-ERROR:`). `BLESS=1` rewrites the expected sections
//! with what the passes produce; `FILETEST=name` runs the files whose name contains it.
//! The harness is `trident_opt::filetest`, shared with the tile and profile passes.

use std::path::Path;
use trident_gpu::passes::registry;
use trident_gpu::GpuOptions;
use trident_opt::filetest::{run_dir, run_file, FileTest, Runner};
use trident_opt::PassManager;

/// GPU and tile passes by name, with the `// OPTIONS:` line's `GpuOptions`.
struct GpuPasses;

impl Runner for GpuPasses {
    fn passes(&self, test: &FileTest) -> Result<PassManager, String> {
        let opts = GpuOptions::parse_words(test.directive("OPTIONS").unwrap_or(""))?;
        let mut pm = PassManager::new();
        registry::add_pipeline(&mut pm, &test.pipeline, &opts)?;
        Ok(pm)
    }
}

#[test]
fn filetests() {
    run_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/filetests"), &GpuPasses);
}

#[test]
fn runner_reports_mismatches_and_blesses() {
    let dir = std::env::temp_dir().join(format!("trident-gpu-filetest-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.tir");
    let input = "// RUN: gpu-assign-layouts\n// OPTIONS: num_warps=2\nkernel @k(%p: ptr<f32>) {\n  %0 = arange [start = 0, end = 64] : tensor<64xi32>\n  %1 = splat %p : tensor<64xptr<f32>>\n  %2 = addptr %1, %0 : tensor<64xptr<f32>>\n  %3 = load %2 : tensor<64xf32>\n  store %2, %3\n  return\n}\n";
    std::fs::write(&path, format!("{input}// EXPECTED:\nkernel @k(%p: ptr<f32>) {{\n  return\n}}\n")).unwrap();
    let err = run_file(&path, false, &GpuPasses).unwrap_err();
    assert!(err.contains("+   #L0 = blocked"), "{err}");
    run_file(&path, true, &GpuPasses).unwrap();
    let blessed = std::fs::read_to_string(&path).unwrap();
    assert!(blessed.starts_with(input), "{blessed}");
    // The options reached the pass: two warps.
    assert!(blessed.contains("warps_per_cta = [2]"), "{blessed}");
    run_file(&path, false, &GpuPasses).unwrap();
    // A bad option is the file's failure, not a panic.
    std::fs::write(&path, input.replace("num_warps=2", "num_warps=two")).unwrap();
    assert!(run_file(&path, false, &GpuPasses).unwrap_err().contains("needs a number"));
    std::fs::remove_dir_all(&dir).ok();
}
