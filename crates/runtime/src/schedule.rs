//! Launches with a searched SASS schedule (issue 12's compile option): `--sass-search BUDGET`,
//! `TRIDENT_SASS_SEARCH=BUDGET`, [`crate::LaunchOptions::sass_search`].
//!
//! The first launch of a kernel searches its cubin's schedule on the SASS emulator's cycle
//! estimate (trident-sass-search's default algorithm, seed 0, the given budget — seconds like
//! `30s` or a number of evaluations), with this launch's arguments as the reward's inputs, and
//! keeps the best schedule in the compile cache's directory under `schedules/`, named by the
//! original cubin's hash (the cubin is a function of the specialization, config and target,
//! so the search runs once per kernel, specialization and target; a later, longer budget does
//! not search again — delete the file for that). Every kept schedule has passed the search's
//! check (the verifier against the original, and equal outputs on fresh random inputs); a
//! stored one is checked again by the verifier's order rule before it is used, and a damaged
//! or foreign file is searched over. The searched cubin then runs on the SASS emulator or a
//! CUDA device like the original.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use trident_sass::Cubin;

use crate::args::ArgValue;
use crate::compiled::{Assembled, GpuCode};
use crate::error::RunError;

/// Searched code per original cubin hash, for this process (a CUDA module stays loaded).
static SEARCHED: OnceLock<Mutex<HashMap<String, Arc<GpuCode>>>> = OnceLock::new();

/// `code` with its searched schedule: found in the store, else searched now and stored.
pub(crate) fn searched(
    code: &GpuCode,
    values: &[ArgValue],
    grid: [u32; 3],
    budget: &str,
) -> Result<Arc<GpuCode>, RunError> {
    let budget = trident_sass_search::Budget::parse(budget)
        .map_err(|e| RunError::argument(format!("--sass-search / TRIDENT_SASS_SEARCH: {e}")))?;
    let original = crate::sass_run::cubin_of(code)?;
    // Greedy: the most found per minute on the emulator's model (bench/SASS.md).
    let algo = trident_sass_search::Algo::Greedy;
    let key = format!("{}-{}", blake3::hash(&original).to_hex(), algo.name().replace(':', "_"));
    let memo = SEARCHED.get_or_init(Default::default);
    if let Some(c) = memo.lock().map_err(|_| RunError::msg("internal: schedule memo poisoned"))?.get(&key) {
        return Ok(c.clone());
    }
    let dir = store_dir()?;
    // The original's listing, when the compile kept one (the SASS emulator's target).
    let original_listing = code.cubin.as_ref().and(code.sass_json.as_deref());
    let (bytes, listing) = match stored(&dir, &key, &original, original_listing) {
        Some(found) => found,
        None => {
            let (bytes, listing) = search(code, &original, values, grid, budget, algo)?;
            store(&dir, &key, &bytes, &listing)?;
            (bytes, listing)
        }
    };
    let asm =
        Assembled { cubin: Some(bytes), sass_json: Some(listing), registers: code.registers, spills: code.spills };
    let c = Arc::new(GpuCode::new(
        code.ptx.clone(),
        code.ttgir.clone(),
        code.num_warps,
        code.num_stages,
        asm,
        code.profile.clone(),
    ));
    memo.lock().map_err(|_| RunError::msg("internal: schedule memo poisoned"))?.insert(key, c.clone());
    Ok(c)
}

fn store_dir() -> Result<PathBuf, RunError> {
    let root = crate::cache::default_dir().map_err(|e| RunError::msg(format!("error: schedule store: {e}")))?;
    Ok(root.join("schedules"))
}

/// The stored schedule `key`, if it is there, whole, and a legal reordering of `original`.
fn stored(dir: &Path, key: &str, original: &[u8], original_listing: Option<&str>) -> Option<(Vec<u8>, String)> {
    let bytes = crate::cache::regular::read(&dir.join(format!("{key}.cubin"))).ok()?;
    let listing = String::from_utf8(crate::cache::regular::read(&dir.join(format!("{key}.sass.json"))).ok()?).ok()?;
    let (old, new) = (Cubin::parse(original).ok()?, Cubin::parse(&bytes).ok()?);
    let old_texts = match original_listing {
        Some(json) => crate::sass::kernel_texts_of(json, &old).ok()?,
        None => crate::sass::kernel_texts(original, &old).ok()?,
    };
    let new_texts = crate::sass::kernel_texts_of(&listing, &new).ok()?;
    if old.kernels.len() != new.kernels.len() {
        return None;
    }
    for (k, (a, b)) in old.kernels.iter().zip(&new.kernels).enumerate() {
        let bad = trident_sass::verify::reordering((&a.instrs, &old_texts[k]), (&b.instrs, &new_texts[k]));
        if a.name != b.name || !bad.is_empty() {
            return None;
        }
    }
    Some((bytes, listing))
}

/// Searches `original`'s schedule; the best cubin and its `nvdisasm -json` listing.
fn search(
    code: &GpuCode,
    original: &[u8],
    values: &[ArgValue],
    grid: [u32; 3],
    budget: trident_sass_search::Budget,
    algo: trident_sass_search::Algo,
) -> Result<(Vec<u8>, String), RunError> {
    let problem = crate::sass_search::problem(code, original.to_vec(), values, grid)?;
    let err = |e: trident_sass_search::SearchError| RunError::msg(format!("error: schedule search: {}", e.0));
    let mut env = trident_sass_search::Env::new(problem, crate::sass_search::disassembler()?).map_err(err)?;
    let opts = trident_sass_search::Options { algo, budget, seed: 0 };
    let outcome = trident_sass_search::search(&mut env, &opts, &mut |_| {}).map_err(err)?;
    let listing = trident_gpu::tools::nvdisasm(&outcome.bytes, &["-json", "-c"])
        .map_err(|e| RunError::other(format!("error: a schedule search needs nvdisasm: {e}")))?;
    Ok((outcome.bytes, listing))
}

/// Writes the schedule `key` (each file through a temporary name, so a reader never sees
/// half of one).
fn store(dir: &Path, key: &str, bytes: &[u8], listing: &str) -> Result<(), RunError> {
    let io = |e: std::io::Error| RunError::msg(format!("error: schedule store {}: {e}", dir.display()));
    std::fs::create_dir_all(dir).map_err(io)?;
    for (name, data) in [(format!("{key}.sass.json"), listing.as_bytes()), (format!("{key}.cubin"), bytes)] {
        let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        std::fs::write(&tmp, data).map_err(io)?;
        std::fs::rename(&tmp, dir.join(&name)).map_err(io)?;
    }
    Ok(())
}
