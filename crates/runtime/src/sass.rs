//! `trident sass`: cubins as the schedule prong sees them (trident-sass), with the tools
//! found as the GPU crate finds them.
//!
//! * [`dump`] / [`listing`]: every kernel (or one): offset, decoded control bits,
//!   `nvdisasm`'s text of the instruction, the `.nv.info` attributes that point at it, and
//!   with `deps` the dependences that hold it after earlier instructions of its block.
//! * [`roundtrip`]: parse and write back; the output must equal the input byte for byte.
//! * [`verify`]: the timing rules, and with an original, that a rewrite is a legal
//!   reordering of it.
//! * [`move_instr`]: one legal move with its repairs, checked by the verifier before it is
//!   written.

use std::fmt::Write as _;
use std::path::Path;

use crate::error::RunError;
use trident_sass::deps::{blocks, dependences, Why};
use trident_sass::disasm::{parse_json, section_text, Text};
use trident_sass::nvinfo::INSTR_OFFSET_ATTRS;
use trident_sass::verify::{reordering, timing};
use trident_sass::Cubin;

fn read(path: &Path) -> Result<(Vec<u8>, Cubin), RunError> {
    let bytes = std::fs::read(path).map_err(|e| RunError::msg(format!("cannot read {}: {e}", path.display())))?;
    let cubin = Cubin::parse(&bytes).map_err(|e| RunError::msg(format!("{}: {e}", path.display())))?;
    Ok((bytes, cubin))
}

/// `nvdisasm`'s text of each kernel of `cubin` (whose bytes are `bytes`), in kernel order.
pub(crate) fn kernel_texts(bytes: &[u8], cubin: &Cubin) -> Result<Vec<Vec<Text>>, RunError> {
    let json = trident_gpu::tools::nvdisasm(bytes, &["-json", "-c"])
        .map_err(|e| RunError::msg(format!("error: {e} (run scripts/install-tools, or set TRIDENT_NVDISASM)")))?;
    kernel_texts_of(&json, cubin)
}

/// [`kernel_texts`] from `nvdisasm -json`'s output `json` already at hand.
pub(crate) fn kernel_texts_of(json: &str, cubin: &Cubin) -> Result<Vec<Vec<Text>>, RunError> {
    let listings = parse_json(json).map_err(RunError::msg)?;
    let out: Vec<Vec<Text>> = cubin.kernels.iter().map(|k| section_text(cubin, &listings, k.text_section)).collect();
    for (k, t) in cubin.kernels.iter().zip(&out) {
        if t.len() != k.instrs.len() {
            return Err(RunError::msg(format!(
                "kernel `{}`: nvdisasm lists {} instructions, the section holds {}",
                k.name,
                t.len(),
                k.instrs.len()
            )));
        }
    }
    Ok(out)
}

fn kernel_index(cubin: &Cubin, name: &str, path: &Path) -> Result<usize, RunError> {
    cubin.kernels.iter().position(|k| k.name == name).ok_or_else(|| {
        let names: Vec<&str> = cubin.kernels.iter().map(|k| k.name.as_str()).collect();
        RunError::argument(format!("no kernel `{name}` in {} (it has: {})", path.display(), names.join(", ")))
    })
}

/// The annotated listing of the cubin at `path` (only `kernel`, if given; with the
/// dependence edges if `deps`).
pub fn dump(path: &Path, kernel: Option<&str>, deps: bool) -> Result<String, RunError> {
    let (bytes, cubin) = read(path)?;
    if let Some(k) = kernel {
        kernel_index(&cubin, k, path)?;
    }
    listing(&bytes, kernel, deps)
}

/// The annotated listing of a cubin's bytes (what `trident compile --emit sass` prints).
pub fn listing(bytes: &[u8], kernel: Option<&str>, deps: bool) -> Result<String, RunError> {
    let cubin = Cubin::parse(bytes).map_err(|e| RunError::msg(format!("the cubin: {e}")))?;
    let all = kernel_texts(bytes, &cubin)?;
    let mut out = String::new();
    for (k, text) in cubin.kernels.iter().zip(&all).filter(|(k, _)| kernel.is_none_or(|n| n == k.name)) {
        let marks = k.listed_offsets(&cubin.elf);
        let _ = writeln!(out, "// kernel {} (sm_{}): {} instructions", k.name, cubin.sm(), k.instrs.len());
        let mut incoming: Vec<Vec<String>> = vec![vec![]; text.len()];
        if deps {
            for b in blocks(text) {
                for e in dependences(text, b) {
                    let why = match e.why {
                        Why::Raw(r) => format!("RAW {r}"),
                        Why::War(r) => format!("WAR {r}"),
                        Why::Waw(r) => format!("WAW {r}"),
                        Why::Memory => "memory".into(),
                        Why::Fence => "fence".into(),
                    };
                    incoming[e.to].push(format!("{:04x} {why}", 16 * e.from));
                }
            }
        }
        for (i, ins) in k.instrs.iter().enumerate() {
            let attrs: Vec<&str> = marks
                .iter()
                .filter(|(_, o)| *o == ins.offset)
                .filter_map(|(a, _)| INSTR_OFFSET_ATTRS.iter().find(|(x, _)| x == a).map(|(_, n)| *n))
                .collect();
            let mut note = String::new();
            if !attrs.is_empty() {
                note = format!("  // {}", attrs.join(", "));
            }
            if !incoming[i].is_empty() {
                let _ = write!(note, "  // after {}", incoming[i].join(", "));
            }
            let _ = writeln!(out, "/*{:04x}*/  {:<28} {} ;{note}", ins.offset, ins.control().text(), text[i].line());
        }
    }
    Ok(out)
}

/// Parses the cubin at `input` and writes it back to `output`; an error if the bytes differ.
pub fn roundtrip(input: &Path, output: &Path) -> Result<usize, RunError> {
    let (bytes, cubin) = read(input)?;
    let again = cubin.write().map_err(|e| RunError::msg(format!("error: writing {}: {e}", input.display())))?;
    if again != bytes {
        return Err(RunError::msg(format!("error: {} does not round-trip byte for byte", input.display())));
    }
    std::fs::write(output, &again).map_err(|e| RunError::msg(format!("cannot write {}: {e}", output.display())))?;
    Ok(again.len())
}

/// Checks the cubin at `path`: every kernel's timing, and with `against` that each kernel
/// is a legal reordering of the same kernel there. `Ok` with a summary when clean; an error
/// listing every violation otherwise.
pub fn verify(path: &Path, against: Option<&Path>) -> Result<String, RunError> {
    let (bytes, cubin) = read(path)?;
    let text = kernel_texts(&bytes, &cubin)?;
    let original = match against {
        Some(p) => {
            let (b, c) = read(p)?;
            let t = kernel_texts(&b, &c)?;
            Some((p, c, t))
        }
        None => None,
    };
    let (mut report, mut bad, mut instrs) = (String::new(), 0usize, 0usize);
    for (k, t) in cubin.kernels.iter().zip(&text) {
        instrs += k.instrs.len();
        let mut v = timing(cubin.sm(), &k.instrs, t);
        if let Some((p, oc, ot)) = &original {
            let j = kernel_index(oc, &k.name, p)?;
            v.extend(reordering((&oc.kernels[j].instrs, &ot[j]), (&k.instrs, t)));
        }
        for x in &v {
            let _ = writeln!(report, "{}: kernel {}: {}", path.display(), k.name, x.describe(t));
        }
        bad += v.len();
    }
    if let Some((p, oc, _)) = &original {
        for k in &oc.kernels {
            if cubin.kernel(&k.name).is_none() {
                let _ = writeln!(report, "{}: kernel {} of {} is missing", path.display(), k.name, p.display());
                bad += 1;
            }
        }
    }
    if bad > 0 {
        return Err(RunError::msg(format!("{report}error: {bad} violation(s) in {}", path.display())));
    }
    let what = if against.is_some() { "timing-clean and a legal reordering of the original" } else { "timing-clean" };
    Ok(format!("{}: {} kernel(s), {instrs} instructions: {what}", path.display(), cubin.kernels.len()))
}

/// Moves instruction `index` of `kernel` by `by` positions, repairs control bits and
/// offsets, checks the result with the verifier against the input, and writes it to
/// `output`. Returns what was done; an illegal move is refused with the reason.
pub fn move_instr(path: &Path, kernel: &str, index: usize, by: isize, output: &Path) -> Result<String, RunError> {
    let (bytes, mut cubin) = read(path)?;
    let text = kernel_texts(&bytes, &cubin)?;
    let k = kernel_index(&cubin, kernel, path)?;
    if index >= text[k].len() {
        return Err(RunError::argument(format!(
            "--index {index}: kernel {kernel} has {} instructions (0 to {})",
            text[k].len(),
            text[k].len().saturating_sub(1)
        )));
    }
    let original = cubin.clone();
    let moved = trident_sass::rewrite::move_instr(&mut cubin, k, &text[k], index, by)
        .map_err(|why| RunError::argument(format!("cannot move {:#06x} by {by}: {why}", 16 * index)))?;
    let new_bytes = cubin.write().map_err(|e| RunError::msg(format!("writing the cubin: {e}")))?;
    // Check what will be written, as nvdisasm reads it.
    let again = Cubin::parse(&new_bytes).map_err(|e| RunError::msg(format!("the rewritten cubin: {e}")))?;
    let new_text = kernel_texts(&new_bytes, &again)?;
    let mut v = timing(again.sm(), &again.kernels[k].instrs, &new_text[k]);
    v.extend(reordering((&original.kernels[k].instrs, &text[k]), (&again.kernels[k].instrs, &new_text[k])));
    if let Some(x) = v.first() {
        return Err(RunError::msg(format!("the moved kernel fails the verifier: {}", x.describe(&new_text[k]))));
    }
    std::fs::write(output, &new_bytes).map_err(|e| RunError::msg(format!("cannot write {}: {e}", output.display())))?;
    let mut out = format!(
        "moved {:#06x} `{}` to {:#06x}; wrote {}\n",
        16 * moved.from,
        text[k][index].line(),
        16 * moved.to,
        output.display()
    );
    for r in &moved.repairs {
        let _ = writeln!(out, "  repaired {r}");
    }
    Ok(out)
}

/// What [`shuffle`] did.
#[derive(Debug)]
pub struct Shuffled {
    /// The shuffled cubin.
    pub bytes: Vec<u8>,
    /// Legal moves made (with their repairs).
    pub moves: usize,
    /// Moves the repair could not make safe, refused.
    pub refused: usize,
}

/// Up to `moves` random legal moves (seeded: the same seed, the same moves) over the
/// kernels of the cubin `bytes`, each repaired; the result is verified (timing, and a legal
/// reordering of the input) as `nvdisasm` reads it before it is returned. The schedule
/// prong's GPU check runs kernels shuffled this way and compares their outputs.
pub fn shuffle(bytes: &[u8], seed: u64, moves: usize) -> Result<Shuffled, RunError> {
    let original = Cubin::parse(bytes).map_err(|e| RunError::msg(format!("the cubin: {e}")))?;
    let text = kernel_texts(bytes, &original)?;
    let mut cubin = original.clone();
    let mut now = text.clone();
    let mut state = seed ^ 0x9e37_79b9_7f4a_7c15;
    let mut next = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n.max(1) as u64) as usize
    };
    let (mut done, mut refused) = (0, 0);
    for _ in 0..moves.saturating_mul(8) {
        if done == moves || cubin.kernels.is_empty() {
            break;
        }
        let k = next(cubin.kernels.len());
        if now[k].is_empty() {
            continue;
        }
        let i = next(now[k].len());
        let Ok((lo, hi)) = trident_sass::rewrite::legal_range(&now[k], i) else { continue };
        let j = lo + next(hi - lo + 1);
        if j == i {
            continue;
        }
        match trident_sass::rewrite::move_instr(&mut cubin, k, &now[k], i, j as isize - i as isize) {
            Ok(m) => {
                now[k] = m.text;
                done += 1;
            }
            Err(_) => refused += 1,
        }
    }
    let out = cubin.write().map_err(|e| RunError::msg(format!("writing the cubin: {e}")))?;
    let again = Cubin::parse(&out).map_err(|e| RunError::msg(format!("the shuffled cubin: {e}")))?;
    let read = kernel_texts(&out, &again)?;
    for (k, kern) in again.kernels.iter().enumerate() {
        let mut v = timing(again.sm(), &kern.instrs, &read[k]);
        v.extend(reordering((&original.kernels[k].instrs, &text[k]), (&kern.instrs, &read[k])));
        if let Some(x) = v.first() {
            return Err(RunError::msg(format!(
                "the shuffled kernel {} fails the verifier: {}",
                kern.name,
                x.describe(&read[k])
            )));
        }
    }
    Ok(Shuffled { bytes: out, moves: done, refused })
}
