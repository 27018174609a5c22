//! `nvdisasm`'s view of a cubin (its `-json` output), matched to the instructions by
//! position: the text of each instruction (predicate, opcode, operands) for listings and
//! for the analyses that read operands. The tool is found by the caller.

use std::path::Path;
use std::process::Command;

/// One instruction as `nvdisasm` prints it.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Text {
    /// `@P0`, `@!PT`, or empty.
    pub predicate: String,
    /// `IMAD.MOV.U32`, `LDG.E.128`, ...
    pub opcode: String,
    /// Comma-separated, as printed (`R2,R4.reuse,c[0x0][0x160]`).
    pub operands: String,
}

impl Text {
    /// `@P0 IADD3 R1, R2, R3`.
    pub fn line(&self) -> String {
        let ops = self.operands.split(',').collect::<Vec<_>>().join(", ");
        let mut s = String::new();
        if !self.predicate.is_empty() {
            s.push_str(&self.predicate);
            s.push(' ');
        }
        s.push_str(&self.opcode);
        if !ops.is_empty() {
            s.push(' ');
            s.push_str(&ops);
        }
        s
    }
}

/// A function's instructions as `nvdisasm` prints them: a kernel, or a subroutine
/// `ptxas` placed in a kernel's `.text` section (`start` bytes into it).
#[derive(Clone, Debug)]
pub struct Listing {
    pub kernel: String,
    pub start: u64,
    pub instrs: Vec<Text>,
}

/// The instructions of a kernel's whole `.text` section (section `section` of `cubin`):
/// the functions whose symbols lie in it, in order.
pub fn section_text(cubin: &crate::Cubin, listings: &[Listing], section: usize) -> Vec<Text> {
    let symbols = cubin.elf.symbols().unwrap_or_default();
    let mut parts: Vec<&Listing> =
        listings.iter().filter(|l| symbols.iter().any(|s| s.name == l.kernel && s.shndx as usize == section)).collect();
    parts.sort_by_key(|l| l.start);
    parts.into_iter().flat_map(|l| l.instrs.iter().cloned()).collect()
}

/// Runs `nvdisasm -json -c` on `cubin` (a file).
pub fn disassemble(nvdisasm: &Path, cubin: &Path) -> Result<Vec<Listing>, String> {
    let out = Command::new(nvdisasm)
        .arg("-json")
        .arg("-c")
        .arg(cubin)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", nvdisasm.display()))?;
    if !out.status.success() {
        return Err(format!("nvdisasm failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    parse_json(&String::from_utf8_lossy(&out.stdout))
}

/// `nvdisasm -json` writes a load's destination and address without a comma between them
/// (`R16[R61+UR5]`, where the text listing has `R16, [R61+UR5]`): put it back, so every
/// operand is its own item. A `desc[UR4][R2.64]` operand stays whole. The tensor copies'
/// two bracketed operands come without their comma too (`UTMALDG.2D [UR20][UR6]`, where the
/// text listing has `[UR20], [UR6]`): each bracket is an operand, each with its own width.
fn separate(operands: &str) -> String {
    let parts: Vec<String> = operands
        .split(',')
        .map(|p| match p.find('[') {
            Some(0) if p.contains("][") => p.replace("][", "],["),
            Some(k) if k > 0 => {
                let head = &p[..k];
                let register = head
                    .trim_start_matches(['-', '!', '|'])
                    .chars()
                    .next()
                    .is_some_and(|c| c == 'R' || c == 'U' || c == 'P')
                    && head.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_');
                if register {
                    format!("{head},{}", &p[k..])
                } else {
                    p.to_string()
                }
            }
            _ => p.to_string(),
        })
        .collect();
    parts.join(",")
}

/// Reads `nvdisasm -json` output: `[header, [functions...]]`.
pub fn parse_json(text: &str) -> Result<Vec<Listing>, String> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("nvdisasm's JSON: {e}"))?;
    let funcs = v.get(1).and_then(|f| f.as_array()).ok_or("nvdisasm's JSON: no function list")?;
    let s = |x: &serde_json::Value, k: &str| x.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string();
    funcs
        .iter()
        .map(|f| {
            let instrs = f
                .get("sass-instructions")
                .and_then(|i| i.as_array())
                .ok_or("nvdisasm's JSON: a function without instructions")?
                .iter()
                .map(|i| Text {
                    predicate: s(i, "predicate"),
                    opcode: s(i, "opcode"),
                    operands: separate(&s(i, "operands")),
                })
                .collect();
            let start = f.get("start").and_then(|v| v.as_u64()).unwrap_or(0);
            Ok(Listing { kernel: s(f, "function-name"), start, instrs })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::separate;

    #[test]
    fn loads_get_their_comma_back() {
        assert_eq!(separate("R16[R61+UR5]"), "R16,[R61+UR5]");
        assert_eq!(separate("RZ[RZ]"), "RZ,[RZ]");
        assert_eq!(separate("[R10+UR5],R4"), "[R10+UR5],R4");
        assert_eq!(separate("R4,desc[UR4][R2.64]"), "R4,desc[UR4][R2.64]");
        assert_eq!(separate("R1,RZ,RZ,c[0x0][0x28]"), "R1,RZ,RZ,c[0x0][0x28]");
        assert_eq!(separate("[UR20][UR6]"), "[UR20],[UR6]");
        assert_eq!(separate("[UR8][UR4],UR10"), "[UR8],[UR4],UR10");
    }

    /// A tensor copy read from `nvdisasm -json` reads its two runs, not one run as wide as the
    /// first from each register (`UR6..UR9` for the map's pair would be a false dependency).
    #[test]
    fn tensor_copies_from_json_read_their_own_runs() {
        let json = r#"[{}, [{"function-name": "k", "start": 0, "sass-instructions": [
            {"predicate": "@!UP2", "opcode": "UTMALDG.2D", "operands": "[UR20][UR6]"}]}]]"#;
        let l = super::parse_json(json).unwrap();
        let o = crate::operands::operands(&l[0].instrs[0]);
        let ur = |n| crate::operands::Reg::Ur(n);
        for r in [20, 21, 22, 23, 6, 7] {
            assert!(o.uses.contains(&ur(r)), "UR{r} read: {:?}", o.uses);
        }
        for r in [8, 9, 24] {
            assert!(!o.uses.contains(&ur(r)), "UR{r} not read: {:?}", o.uses);
        }
    }
}
