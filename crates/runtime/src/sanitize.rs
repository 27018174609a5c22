//! Sanitize mode on the GPU-code backends (`LaunchOptions::sanitize`, `--sanitize`,
//! `TRIDENT_SANITIZE=1`): the hidden arguments a sanitized kernel takes, and the violation
//! record it leaves, told as the interpreter tells an out-of-bounds access.
//!
//! The kernel (see `trident_gpu::ptx::sanitize`) checks every global load, store and atomic
//! against its buffer's extent, suppresses the access when it is outside and records the
//! first violation (lowest program, first access it executes, lowest element). The launch
//! then fails with the interpreter's message — `out-of-bounds store: index -1 of buffer
//! `out` (8 elements of f32), program (0, 0, 0), element [0]` at the access's source line
//! and caret — and, as after any failed launch, the caller's arrays are left as they were
//! (nothing is copied back). Device memory was never written out of bounds; the in-bounds
//! writes of the failed launch are discarded with it.

use trident_core::HostTensor;
use trident_gpu::ptx::sanitize::{SanitizeInfo, RECORD_BYTES};
use trident_ir::{Diagnostic, SourceFile};

use crate::args::ArgValue;
use crate::error::RunError;

/// The extents (bytes) of the pointer parameters, in the order the kernel takes them:
/// a tensor's byte length, 0 for a missing (null) pointer.
pub(crate) fn extents(info: &SanitizeInfo, args: &[ArgValue]) -> Vec<u64> {
    info.pointer_params
        .iter()
        .map(|&i| match args.get(i as usize) {
            Some(v) => v.array().map_or(0, |(_, bytes)| bytes as u64),
            None => 0,
        })
        .collect()
}

/// A zero-filled violation record for one launch.
pub(crate) fn new_record() -> HostTensor {
    HostTensor::zeros(trident_core::DType::U8, &[RECORD_BYTES])
}

/// The launch's error when the record holds a violation. `names`: the parameters' names in
/// IR order; `files`: the kernel module's source files (the sites' locations index them).
pub(crate) fn check(
    info: &SanitizeInfo,
    record: &[u8],
    args: &[ArgValue],
    names: &[String],
    files: &[SourceFile],
    grid: [u32; 3],
) -> Result<(), RunError> {
    let Some(v) = SanitizeInfo::decode(record) else { return Ok(()) };
    let (gx, gy) = (grid[0].max(1) as u64, grid[1].max(1) as u64);
    let pid = [v.program % gx, (v.program / gx) % gy, v.program / (gx * gy)];
    let program = format!("program ({}, {}, {})", pid[0], pid[1], pid[2]);
    let more = match v.count {
        0 | 1 => String::new(),
        n => format!("sanitize: {n} vector accesses of this launch were out of bounds; the first is reported"),
    };
    let (Some(site), Some(param)) = (v.site.and_then(|s| info.sites.get(s as usize)), v.param) else {
        // Two violating threads' writes interleaved (a GPU race): the key alone is certain.
        let mut d = Diagnostic::error(format!(
            "out-of-bounds access (sanitize), {program}: the access's details were overwritten by another \
             violating thread"
        ));
        if !more.is_empty() {
            d = d.note(more);
        }
        return Err(RunError::other(d.render(files)));
    };
    let name = names.get(param as usize).map_or("?", String::as_str);
    let access = site.access.name();
    let dt = site.dtype;
    let array = args.get(param as usize).and_then(ArgValue::array);
    let mut msg = match (array, v.offset) {
        (Some((adt, bytes)), Some(off)) => {
            let index = off.div_euclid(dt.size_bytes().max(1) as i64);
            let of = if adt == dt { String::new() } else { format!(" (as {dt})") };
            format!(
                "out-of-bounds {access}: index {index}{of} of buffer `{name}` ({} elements of {adt})",
                bytes / adt.size_bytes().max(1),
            )
        }
        (Some((adt, bytes)), None) => format!(
            "out-of-bounds {access} of buffer `{name}` ({} elements of {adt}; the index was overwritten by another \
             violating thread)",
            bytes / adt.size_bytes().max(1),
        ),
        _ => format!("{access} through an invalid pointer (`{name}` is not a buffer)"),
    };
    msg.push_str(&format!(", {program}"));
    if let (Some(e), false) = (v.element, site.shape.is_empty()) {
        let idx = unravel(e, &site.shape);
        msg.push_str(&format!(", element [{}]", idx.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ")));
    }
    let mut d = Diagnostic::error(msg);
    if !site.loc.is_unknown() {
        d = d.at(site.loc, span_len(files, site.loc));
    }
    if !more.is_empty() {
        d = d.note(more);
    }
    Err(RunError::other(d.render(files)))
}

fn unravel(mut flat: u64, shape: &[u32]) -> Vec<u64> {
    let mut idx = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        let n = shape[d].max(1) as u64;
        idx[d] = flat % n;
        flat /= n;
    }
    idx
}

/// Length of the token at `loc` (identifier characters and dots), for the caret — as the
/// interpreter measures it.
fn span_len(files: &[SourceFile], loc: trident_ir::Loc) -> u32 {
    let Some(file) = files.get(loc.file as usize) else { return 1 };
    let Some(line) = file.text.lines().nth(loc.line.saturating_sub(1) as usize) else { return 1 };
    let rest = line.get(loc.col.saturating_sub(1) as usize..).unwrap_or("");
    rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '.').count().max(1) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unravels_row_major() {
        assert_eq!(unravel(104, &[128]), vec![104]);
        assert_eq!(unravel(70, &[4, 32]), vec![2, 6]);
        assert_eq!(unravel(0, &[]), Vec::<u64>::new());
    }
}
