//! `.nv.info` and `.nv.info.KERNEL` sections: a sequence of EIATTR records, each
//! `[format: u8][attribute: u8]` then, for the sized format (`EIFMT_SVAL`, 4), a `u16`
//! length and that many bytes, else a `u16` value. Some attributes list instruction
//! offsets (where the `EXIT`s are, the `S2R SR_CTAID`s, ...): a schedule that moves an
//! instruction must move those offsets with it.

use crate::elf::ElfError;

/// `EIFMT_SVAL`: a record with a length and data.
pub const EIFMT_SVAL: u8 = 4;

/// `EIATTR_REGCOUNT` (in the cubin-wide `.nv.info`): a kernel's symbol index and its
/// registers per thread, two `u32`s.
pub const EIATTR_REGCOUNT: u8 = 0x2f;

/// One record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attr {
    pub format: u8,
    pub attr: u8,
    /// Byte offset of the record in its section.
    pub at: usize,
    /// The `u16` after the format and attribute bytes: the data's length for
    /// `EIFMT_SVAL`, the value otherwise.
    pub value: u16,
    /// Where the data is in the section (empty unless `EIFMT_SVAL`).
    pub data: std::ops::Range<usize>,
}

/// Attributes whose data is a list of `u32` instruction offsets within the kernel's
/// `.text` section, by number, with the name `nvdisasm` prints.
pub const INSTR_OFFSET_ATTRS: &[(u8, &str)] = &[
    (0x1c, "EIATTR_EXIT_INSTR_OFFSETS"),
    (0x1d, "EIATTR_S2RCTAID_INSTR_OFFSETS"),
    (0x25, "EIATTR_LD_CACHEMOD_INSTR_OFFSETS"),
    (0x28, "EIATTR_COOP_GROUP_INSTR_OFFSETS"),
    (0x31, "EIATTR_INT_WARP_WIDE_INSTR_OFFSETS"),
    (0x39, "EIATTR_MBARRIER_INSTR_OFFSETS"),
    (0x47, "EIATTR_SW_WAR_MEMBAR_SYS_INSTR_OFFSETS"),
];

impl Attr {
    /// Whether the record lists instruction offsets.
    pub fn lists_instr_offsets(&self) -> bool {
        self.format == EIFMT_SVAL && INSTR_OFFSET_ATTRS.iter().any(|(a, _)| *a == self.attr)
    }

    /// The instruction offsets a [`Attr::lists_instr_offsets`] record holds.
    pub fn instr_offsets(&self, section: &[u8]) -> Vec<u32> {
        section[self.data.clone()].chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes"))).collect()
    }
}

/// The records of a section, in order; an error if one runs past the end.
pub fn parse(section: &[u8]) -> Result<Vec<Attr>, ElfError> {
    let mut out = vec![];
    let mut at = 0;
    while at < section.len() {
        let Some(head) = section.get(at..at + 4) else {
            return Err(ElfError(format!(".nv.info record at {at} is truncated")));
        };
        let (format, attr, value) = (head[0], head[1], u16::from_le_bytes([head[2], head[3]]));
        let data = if format == EIFMT_SVAL {
            let end = at + 4 + value as usize;
            if end > section.len() {
                return Err(ElfError(format!(".nv.info record at {at} ({value} bytes) runs past its section")));
            }
            at + 4..end
        } else {
            at + 4..at + 4
        };
        let next = data.end.max(at + 4);
        out.push(Attr { format, attr, at, value, data });
        at = next;
    }
    Ok(out)
}
