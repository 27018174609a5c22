//! `trident sass`: cubins as the schedule prong sees them (trident-sass), with the tools
//! found as the GPU crate finds them.
//!
//! * [`dump`]: a listing of every kernel (or one): offset, decoded control bits,
//!   `nvdisasm`'s text of the instruction, and the `.nv.info` attributes that point at it.
//! * [`roundtrip`]: parse and write back; the output must equal the input byte for byte.

use std::fmt::Write as _;
use std::path::Path;

use crate::error::RunError;
use trident_sass::disasm::{disassemble, section_text};
use trident_sass::nvinfo::INSTR_OFFSET_ATTRS;
use trident_sass::Cubin;

fn read(path: &Path) -> Result<(Vec<u8>, Cubin), RunError> {
    let bytes = std::fs::read(path).map_err(|e| RunError::msg(format!("cannot read {}: {e}", path.display())))?;
    let cubin = Cubin::parse(&bytes).map_err(|e| RunError::msg(format!("{}: {e}", path.display())))?;
    Ok((bytes, cubin))
}

/// The annotated listing of the kernels of the cubin at `path` (only `kernel`, if given).
pub fn dump(path: &Path, kernel: Option<&str>) -> Result<String, RunError> {
    let (_, cubin) = read(path)?;
    let nvdisasm = trident_gpu::tools::find(trident_gpu::tools::Tool::Nvdisasm)
        .map_err(|e| RunError::msg(format!("error: {e} (run scripts/install-tools, or set TRIDENT_NVDISASM)")))?;
    let listings = disassemble(&nvdisasm, path).map_err(RunError::msg)?;
    let mut out = String::new();
    let mut shown = 0;
    for k in cubin.kernels.iter().filter(|k| kernel.is_none_or(|n| n == k.name)) {
        shown += 1;
        let text = section_text(&cubin, &listings, k.text_section);
        let marks = k.listed_offsets(&cubin.elf);
        let _ = writeln!(out, "// kernel {} (sm_{}): {} instructions", k.name, cubin.sm(), k.instrs.len());
        for (i, ins) in k.instrs.iter().enumerate() {
            let line = text.get(i).map(|t| t.line()).unwrap_or_else(|| "?".into());
            let attrs: Vec<&str> = marks
                .iter()
                .filter(|(_, o)| *o == ins.offset)
                .filter_map(|(a, _)| INSTR_OFFSET_ATTRS.iter().find(|(x, _)| x == a).map(|(_, n)| *n))
                .collect();
            let note = if attrs.is_empty() { String::new() } else { format!("  // {}", attrs.join(", ")) };
            let _ = writeln!(out, "/*{:04x}*/  {:<28} {line} ;{note}", ins.offset, ins.control().text());
        }
    }
    if shown == 0 {
        let names: Vec<&str> = cubin.kernels.iter().map(|k| k.name.as_str()).collect();
        return Err(RunError::argument(format!(
            "no kernel `{}` in {} (it has: {})",
            kernel.unwrap_or(""),
            path.display(),
            names.join(", ")
        )));
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
