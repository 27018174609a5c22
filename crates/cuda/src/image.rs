//! Checks on binary images before the driver reads them.
//!
//! `cuModuleLoadData` takes a bare pointer: it treats anything that is not an ELF or
//! fatbin as NUL-terminated PTX text, and trusts the offsets inside an ELF. A truncated or
//! wrong file would make it read past our buffer, so we check that every table and
//! section the headers describe lies inside the bytes we hold.

/// EM_CUDA, the ELF machine of NVIDIA cubins.
const EM_CUDA: u16 = 190;
const SHT_NOBITS: u32 = 8;
const FATBIN_MAGIC: u32 = 0xBA55_ED50;

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Whether `[offset, offset + size)` lies inside `len` bytes (without overflow).
fn inside(offset: u64, size: u64, len: usize) -> bool {
    offset.checked_add(size).is_some_and(|end| end <= len as u64)
}

/// Accepts a 64-bit little-endian CUDA ELF (a cubin) or a fatbin whose headers stay inside
/// `b`; otherwise says what is wrong.
pub(crate) fn check_binary_image(b: &[u8]) -> Result<(), String> {
    if b.starts_with(b"\x7fELF") {
        check_elf(b)
    } else if u32_at(b, 0) == Some(FATBIN_MAGIC) {
        check_fatbin(b)
    } else if b.is_empty() {
        Err("the image is empty".into())
    } else {
        Err(format!(
            "not a cubin (ELF) or fatbin: starts with {:02x?} (PTX text goes to Module::load_ptx)",
            &b[..b.len().min(8)]
        ))
    }
}

fn check_elf(b: &[u8]) -> Result<(), String> {
    let truncated = || format!("truncated ELF header ({} bytes)", b.len());
    if b.len() < 64 {
        return Err(truncated());
    }
    if b[4] != 2 || b[5] != 1 {
        return Err("not a 64-bit little-endian ELF".into());
    }
    let machine = u16_at(b, 18).ok_or_else(truncated)?;
    if machine != EM_CUDA {
        return Err(format!("ELF machine {machine} is not EM_CUDA ({EM_CUDA})"));
    }
    let phoff = u64_at(b, 32).ok_or_else(truncated)?;
    let shoff = u64_at(b, 40).ok_or_else(truncated)?;
    let phentsize = u16_at(b, 54).ok_or_else(truncated)? as u64;
    let phnum = u16_at(b, 56).ok_or_else(truncated)? as u64;
    let shentsize = u16_at(b, 58).ok_or_else(truncated)? as u64;
    let shnum = u16_at(b, 60).ok_or_else(truncated)? as u64;

    if shnum > 0 {
        if shentsize < 64 {
            return Err(format!("ELF section header size {shentsize} is too small"));
        }
        if !inside(shoff, shnum * shentsize, b.len()) {
            return Err(format!(
                "ELF section headers (at {shoff}, {shnum} x {shentsize}) run past the end ({})",
                b.len()
            ));
        }
        for i in 0..shnum {
            let h = (shoff + i * shentsize) as usize;
            let kind = u32_at(b, h + 4).ok_or_else(truncated)?;
            let offset = u64_at(b, h + 24).ok_or_else(truncated)?;
            let size = u64_at(b, h + 32).ok_or_else(truncated)?;
            if kind != SHT_NOBITS && !inside(offset, size, b.len()) {
                return Err(format!("ELF section {i} (at {offset}, {size} bytes) runs past the end ({})", b.len()));
            }
        }
    }
    if phnum > 0 {
        if phentsize < 56 {
            return Err(format!("ELF program header size {phentsize} is too small"));
        }
        if !inside(phoff, phnum * phentsize, b.len()) {
            return Err(format!(
                "ELF program headers (at {phoff}, {phnum} x {phentsize}) run past the end ({})",
                b.len()
            ));
        }
        for i in 0..phnum {
            let h = (phoff + i * phentsize) as usize;
            let offset = u64_at(b, h + 8).ok_or_else(truncated)?;
            let filesz = u64_at(b, h + 32).ok_or_else(truncated)?;
            if !inside(offset, filesz, b.len()) {
                return Err(format!("ELF segment {i} (at {offset}, {filesz} bytes) runs past the end ({})", b.len()));
            }
        }
    }
    Ok(())
}

fn check_fatbin(b: &[u8]) -> Result<(), String> {
    let header = u16_at(b, 6).ok_or("truncated fatbin header")? as u64;
    let body = u64_at(b, 8).ok_or("truncated fatbin header")?;
    if header < 16 || !inside(header, body, b.len()) {
        return Err(format!("fatbin of {header} + {body} bytes does not fit in {} bytes", b.len()));
    }
    Ok(())
}

/// PTX text as the driver wants it: NUL-terminated, with no NUL inside.
pub(crate) fn ptx_to_c_string(ptx: &str) -> Result<Vec<u8>, String> {
    if let Some(at) = ptx.bytes().position(|c| c == 0) {
        return Err(format!("the PTX text contains a NUL byte at offset {at}"));
    }
    let mut v = Vec::with_capacity(ptx.len() + 1);
    v.extend_from_slice(ptx.as_bytes());
    v.push(0);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal well-formed CUDA ELF: header, one section header table of 2 entries
    /// (the null section and one PROGBITS section of 8 bytes), no program headers.
    fn tiny_elf() -> Vec<u8> {
        let mut b = vec![0u8; 64 + 8 + 2 * 64];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 2;
        b[5] = 1;
        b[6] = 1;
        b[18..20].copy_from_slice(&EM_CUDA.to_le_bytes());
        b[40..48].copy_from_slice(&72u64.to_le_bytes()); // e_shoff
        b[52..54].copy_from_slice(&64u16.to_le_bytes());
        b[58..60].copy_from_slice(&64u16.to_le_bytes()); // e_shentsize
        b[60..62].copy_from_slice(&2u16.to_le_bytes()); // e_shnum
        let s1 = 72 + 64;
        b[s1 + 4..s1 + 8].copy_from_slice(&1u32.to_le_bytes()); // PROGBITS
        b[s1 + 24..s1 + 32].copy_from_slice(&64u64.to_le_bytes());
        b[s1 + 32..s1 + 40].copy_from_slice(&8u64.to_le_bytes());
        b
    }

    #[test]
    fn accepts_well_formed_elf() {
        assert_eq!(check_binary_image(&tiny_elf()), Ok(()));
    }

    #[test]
    fn rejects_truncated_elf() {
        let b = tiny_elf();
        for cut in [10, 63, 64, 100, b.len() - 1] {
            assert!(check_binary_image(&b[..cut]).is_err(), "accepted a cut at {cut}");
        }
    }

    #[test]
    fn rejects_section_past_end() {
        let mut b = tiny_elf();
        let s1 = 72 + 64;
        b[s1 + 32..s1 + 40].copy_from_slice(&u64::MAX.to_le_bytes());
        let e = check_binary_image(&b).unwrap_err();
        assert!(e.contains("section 1"), "{e}");
        // NOBITS sections occupy no file space and may be any size.
        b[s1 + 4..s1 + 8].copy_from_slice(&SHT_NOBITS.to_le_bytes());
        assert_eq!(check_binary_image(&b), Ok(()));
    }

    #[test]
    fn accepts_a_real_cubin_and_rejects_its_truncations() {
        // Built by ptxas 13.0 from tests/kernels/vadd.ptx (tests/kernels/build-cubins.sh).
        let cubin: &[u8] = include_bytes!("../tests/kernels/vadd.sm_90.cubin");
        assert_eq!(check_binary_image(cubin), Ok(()));
        for cut in [64, cubin.len() / 2, cubin.len() - 1] {
            assert!(check_binary_image(&cubin[..cut]).is_err(), "accepted a cut at {cut}");
        }
    }

    #[test]
    fn rejects_other_machines_and_text() {
        let mut b = tiny_elf();
        b[18..20].copy_from_slice(&62u16.to_le_bytes()); // x86-64
        assert!(check_binary_image(&b).unwrap_err().contains("EM_CUDA"));
        let e = check_binary_image(b".version 8.0\n.target sm_90\n").unwrap_err();
        assert!(e.contains("load_ptx"), "{e}");
        assert!(check_binary_image(b"").is_err());
    }

    #[test]
    fn fatbin_bounds() {
        let mut b = vec![0u8; 48];
        b[..4].copy_from_slice(&FATBIN_MAGIC.to_le_bytes());
        b[6..8].copy_from_slice(&16u16.to_le_bytes());
        b[8..16].copy_from_slice(&32u64.to_le_bytes());
        assert_eq!(check_binary_image(&b), Ok(()));
        b[8..16].copy_from_slice(&33u64.to_le_bytes());
        assert!(check_binary_image(&b).is_err());
    }

    #[test]
    fn ptx_gets_a_terminator_and_no_inner_nul() {
        assert_eq!(ptx_to_c_string("ab").unwrap(), b"ab\0");
        assert!(ptx_to_c_string("a\0b").unwrap_err().contains("offset 1"));
    }
}
