//! The ELF container of a cubin: 64-bit little-endian ELF as `ptxas` writes it.
//!
//! Written here rather than with an ELF crate because the schedule prong needs more than
//! reading: a rewritten cubin must keep every byte it did not mean to change — section
//! order, offsets, alignment padding, program headers, NVIDIA's own section types and
//! flags — so the writer puts the model back onto the original bytes field by field
//! (crates that write ELF lay files out afresh). The reader checks every offset and size
//! against the file, so a damaged or hostile file is an error, never a panic.

use std::fmt;

/// What is wrong with a file that is not a cubin we can read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElfError(pub String);

impl fmt::Display for ElfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not a readable cubin: {}", self.0)
    }
}

impl std::error::Error for ElfError {}

fn bad<T>(m: impl Into<String>) -> Result<T, ElfError> {
    Err(ElfError(m.into()))
}

/// The fields of the ELF header the cubin tools read or rewrite.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// `e_ident[EI_OSABI]` (NVIDIA's CUDA ABI: 0x41) and `[EI_ABIVERSION]`.
    pub os_abi: u8,
    pub abi_version: u8,
    pub e_type: u16,
    pub machine: u16,
    pub version: u32,
    pub entry: u64,
    pub phoff: u64,
    pub shoff: u64,
    /// `EF_CUDA_*` flags: the SM version is in the low byte(s).
    pub flags: u32,
    pub ehsize: u16,
    pub phentsize: u16,
    pub phnum: u16,
    pub shentsize: u16,
    pub shnum: u16,
    pub shstrndx: u16,
}

/// One section: its header fields and its bytes (empty for `SHT_NOBITS`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    pub name: String,
    pub name_offset: u32,
    pub sh_type: u32,
    pub flags: u64,
    pub addr: u64,
    pub offset: u64,
    pub size: u64,
    pub link: u32,
    pub info: u32,
    pub addralign: u64,
    pub entsize: u64,
    pub data: Vec<u8>,
}

/// `SHT_NOBITS`: a section that occupies no bytes of the file (`.nv.shared.*`).
pub const SHT_NOBITS: u32 = 8;
/// `SHT_SYMTAB`.
pub const SHT_SYMTAB: u32 = 2;

/// A parsed ELF file and the bytes it came from (what the writer starts from).
#[derive(Clone, Debug)]
pub struct Elf {
    pub header: Header,
    pub sections: Vec<Section>,
    original: Vec<u8>,
}

/// A symbol of `.symtab`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symbol {
    pub name: String,
    pub info: u8,
    pub other: u8,
    pub shndx: u16,
    pub value: u64,
    pub size: u64,
}

fn u16_at(b: &[u8], at: usize) -> Result<u16, ElfError> {
    b.get(at..at + 2).map(|s| u16::from_le_bytes([s[0], s[1]])).ok_or_else(|| ElfError(format!("truncated at {at}")))
}

fn u32_at(b: &[u8], at: usize) -> Result<u32, ElfError> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes(s.try_into().expect("4 bytes")))
        .ok_or_else(|| ElfError(format!("truncated at {at}")))
}

fn u64_at(b: &[u8], at: usize) -> Result<u64, ElfError> {
    b.get(at..at + 8)
        .map(|s| u64::from_le_bytes(s.try_into().expect("8 bytes")))
        .ok_or_else(|| ElfError(format!("truncated at {at}")))
}

fn put(out: &mut [u8], at: usize, bytes: &[u8]) {
    out[at..at + bytes.len()].copy_from_slice(bytes);
}

/// A NUL-terminated string at `at` in `table`.
fn c_str(table: &[u8], at: usize) -> Result<String, ElfError> {
    let rest = table.get(at..).ok_or_else(|| ElfError(format!("string offset {at} outside its table")))?;
    let end = rest.iter().position(|&c| c == 0).ok_or_else(|| ElfError("unterminated string".into()))?;
    Ok(String::from_utf8_lossy(&rest[..end]).into_owned())
}

impl Elf {
    /// Parses an ELF64 little-endian file.
    pub fn parse(bytes: &[u8]) -> Result<Elf, ElfError> {
        if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" {
            return bad("no ELF magic");
        }
        if bytes[4] != 2 || bytes[5] != 1 {
            return bad("not 64-bit little-endian ELF");
        }
        let header = Header {
            os_abi: bytes[7],
            abi_version: bytes[8],
            e_type: u16_at(bytes, 16)?,
            machine: u16_at(bytes, 18)?,
            version: u32_at(bytes, 20)?,
            entry: u64_at(bytes, 24)?,
            phoff: u64_at(bytes, 32)?,
            shoff: u64_at(bytes, 40)?,
            flags: u32_at(bytes, 48)?,
            ehsize: u16_at(bytes, 52)?,
            phentsize: u16_at(bytes, 54)?,
            phnum: u16_at(bytes, 56)?,
            shentsize: u16_at(bytes, 58)?,
            shnum: u16_at(bytes, 60)?,
            shstrndx: u16_at(bytes, 62)?,
        };
        if header.shentsize != 64 {
            return bad(format!("section header size {} (expected 64)", header.shentsize));
        }
        let table_end = (header.shoff as u128) + (header.shnum as u128) * 64;
        if table_end > bytes.len() as u128 {
            return bad("section headers outside the file");
        }
        if header.phnum > 0
            && (header.phoff as u128) + (header.phnum as u128) * (header.phentsize as u128) > bytes.len() as u128
        {
            return bad("program headers outside the file");
        }
        let mut sections = Vec::with_capacity(header.shnum as usize);
        for i in 0..header.shnum as usize {
            let at = header.shoff as usize + i * 64;
            let mut s = Section {
                name: String::new(),
                name_offset: u32_at(bytes, at)?,
                sh_type: u32_at(bytes, at + 4)?,
                flags: u64_at(bytes, at + 8)?,
                addr: u64_at(bytes, at + 16)?,
                offset: u64_at(bytes, at + 24)?,
                size: u64_at(bytes, at + 32)?,
                link: u32_at(bytes, at + 40)?,
                info: u32_at(bytes, at + 44)?,
                addralign: u64_at(bytes, at + 48)?,
                entsize: u64_at(bytes, at + 56)?,
                data: vec![],
            };
            if s.sh_type != SHT_NOBITS && s.sh_type != 0 {
                let end = (s.offset as u128) + (s.size as u128);
                if end > bytes.len() as u128 {
                    return bad(format!("section {i} ({} bytes at {}) outside the file", s.size, s.offset));
                }
                s.data = bytes[s.offset as usize..end as usize].to_vec();
            }
            sections.push(s);
        }
        let names = sections
            .get(header.shstrndx as usize)
            .map(|s| s.data.clone())
            .ok_or_else(|| ElfError(format!("no section-name table (index {})", header.shstrndx)))?;
        for s in &mut sections {
            s.name = c_str(&names, s.name_offset as usize)?;
        }
        Ok(Elf { header, sections, original: bytes.to_vec() })
    }

    /// The file again: the original bytes with every modelled field written back from the
    /// model (header, section headers, section contents). Unedited, it is the input byte
    /// for byte. A section whose contents changed size is an error: the layout stays.
    pub fn write(&self) -> Result<Vec<u8>, ElfError> {
        let mut out = self.original.clone();
        let h = &self.header;
        out[7] = h.os_abi;
        out[8] = h.abi_version;
        put(&mut out, 16, &h.e_type.to_le_bytes());
        put(&mut out, 18, &h.machine.to_le_bytes());
        put(&mut out, 20, &h.version.to_le_bytes());
        put(&mut out, 24, &h.entry.to_le_bytes());
        put(&mut out, 32, &h.phoff.to_le_bytes());
        put(&mut out, 40, &h.shoff.to_le_bytes());
        put(&mut out, 48, &h.flags.to_le_bytes());
        put(&mut out, 52, &h.ehsize.to_le_bytes());
        put(&mut out, 54, &h.phentsize.to_le_bytes());
        put(&mut out, 56, &h.phnum.to_le_bytes());
        put(&mut out, 58, &h.shentsize.to_le_bytes());
        put(&mut out, 60, &h.shnum.to_le_bytes());
        put(&mut out, 62, &h.shstrndx.to_le_bytes());
        if self.sections.len() != h.shnum as usize {
            return bad("sections were added or removed: not supported");
        }
        for (i, s) in self.sections.iter().enumerate() {
            let at = h.shoff as usize + i * 64;
            put(&mut out, at, &s.name_offset.to_le_bytes());
            put(&mut out, at + 4, &s.sh_type.to_le_bytes());
            put(&mut out, at + 8, &s.flags.to_le_bytes());
            put(&mut out, at + 16, &s.addr.to_le_bytes());
            put(&mut out, at + 24, &s.offset.to_le_bytes());
            put(&mut out, at + 32, &s.size.to_le_bytes());
            put(&mut out, at + 40, &s.link.to_le_bytes());
            put(&mut out, at + 44, &s.info.to_le_bytes());
            put(&mut out, at + 48, &s.addralign.to_le_bytes());
            put(&mut out, at + 56, &s.entsize.to_le_bytes());
            if s.sh_type != SHT_NOBITS && s.sh_type != 0 {
                if s.data.len() as u64 != s.size {
                    return bad(format!("section `{}` changed size ({} -> {} bytes)", s.name, s.size, s.data.len()));
                }
                let end = s.offset as usize + s.data.len();
                if end > out.len() {
                    return bad(format!("section `{}` moved outside the file", s.name));
                }
                put(&mut out, s.offset as usize, &s.data);
            }
        }
        Ok(out)
    }

    /// The section called `name`.
    pub fn section(&self, name: &str) -> Option<&Section> {
        self.sections.iter().find(|s| s.name == name)
    }

    /// The section called `name`, to edit.
    pub fn section_mut(&mut self, name: &str) -> Option<&mut Section> {
        self.sections.iter_mut().find(|s| s.name == name)
    }

    /// The symbols of `.symtab` (names from the table its `sh_link` names).
    pub fn symbols(&self) -> Result<Vec<Symbol>, ElfError> {
        let Some(tab) = self.sections.iter().find(|s| s.sh_type == SHT_SYMTAB) else { return Ok(vec![]) };
        let names = self
            .sections
            .get(tab.link as usize)
            .ok_or_else(|| ElfError(format!("symbol table names section {}, which does not exist", tab.link)))?;
        let mut out = vec![];
        for entry in tab.data.chunks_exact(24) {
            out.push(Symbol {
                name: c_str(&names.data, u32_at(entry, 0)? as usize)?,
                info: entry[4],
                other: entry[5],
                shndx: u16_at(entry, 6)?,
                value: u64_at(entry, 8)?,
                size: u64_at(entry, 16)?,
            });
        }
        Ok(out)
    }
}
