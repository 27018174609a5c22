//! A cubin as the schedule prong sees it: the ELF container, each kernel's instructions
//! (128-bit words with their control bits) and its `.nv.info.KERNEL` attributes.

use crate::control::Control;
use crate::elf::{Elf, ElfError};
use crate::nvinfo::{self, Attr};

/// One SASS instruction: its byte offset in the kernel's `.text` section and its two
/// 64-bit halves (little-endian, low first, as stored).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Instr {
    pub offset: u32,
    pub lo: u64,
    pub hi: u64,
}

impl Instr {
    pub fn control(&self) -> Control {
        Control::decode(self.hi)
    }

    pub fn set_control(&mut self, c: Control) {
        self.hi = c.encode(self.hi);
    }
}

/// A kernel: the `.text.NAME` section's instructions and the `.nv.info.NAME` records.
#[derive(Clone, Debug)]
pub struct Kernel {
    pub name: String,
    /// Index of its `.text.NAME` section in [`Elf::sections`].
    pub text_section: usize,
    pub instrs: Vec<Instr>,
    /// Index of its `.nv.info.NAME` section, when it has one, and the records in it.
    pub info_section: Option<usize>,
    pub attrs: Vec<Attr>,
}

/// A parsed cubin.
#[derive(Clone, Debug)]
pub struct Cubin {
    pub elf: Elf,
    pub kernels: Vec<Kernel>,
}

/// Instructions are 16 bytes from sm_70 on.
pub const INSTR_BYTES: usize = 16;

impl Cubin {
    /// Parses a cubin: ELF, then every `.text.*` section as instructions and its
    /// `.nv.info.*` section as records. Errors name what is wrong; nothing panics.
    pub fn parse(bytes: &[u8]) -> Result<Cubin, ElfError> {
        let elf = Elf::parse(bytes)?;
        let mut kernels = vec![];
        for (i, s) in elf.sections.iter().enumerate() {
            let Some(name) = s.name.strip_prefix(".text.") else { continue };
            if s.data.len() % INSTR_BYTES != 0 {
                return Err(ElfError(format!("`{}` is {} bytes, not whole instructions", s.name, s.data.len())));
            }
            let instrs = s
                .data
                .chunks_exact(INSTR_BYTES)
                .enumerate()
                .map(|(k, w)| Instr {
                    offset: (k * INSTR_BYTES) as u32,
                    lo: u64::from_le_bytes(w[..8].try_into().expect("8 bytes")),
                    hi: u64::from_le_bytes(w[8..].try_into().expect("8 bytes")),
                })
                .collect();
            let info_name = format!(".nv.info.{name}");
            let info_section = elf.sections.iter().position(|x| x.name == info_name);
            let attrs = match info_section {
                Some(j) => nvinfo::parse(&elf.sections[j].data)?,
                None => vec![],
            };
            kernels.push(Kernel { name: name.to_string(), text_section: i, instrs, info_section, attrs });
        }
        Ok(Cubin { elf, kernels })
    }

    /// The cubin's bytes with the kernels' instructions (and whatever else was edited in
    /// the model) written back; unedited, the input byte for byte.
    pub fn write(&self) -> Result<Vec<u8>, ElfError> {
        let mut elf = self.elf.clone();
        for k in &self.kernels {
            let data = &mut elf.sections[k.text_section].data;
            if data.len() != k.instrs.len() * INSTR_BYTES {
                return Err(ElfError(format!("kernel `{}` changed its instruction count", k.name)));
            }
            for (w, ins) in data.chunks_exact_mut(INSTR_BYTES).zip(&k.instrs) {
                w[..8].copy_from_slice(&ins.lo.to_le_bytes());
                w[8..].copy_from_slice(&ins.hi.to_le_bytes());
            }
        }
        elf.write()
    }

    /// The kernel called `name`.
    pub fn kernel(&self, name: &str) -> Option<&Kernel> {
        self.kernels.iter().find(|k| k.name == name)
    }

    /// Registers per thread `ptxas` gave `kernel`: the `EIATTR_REGCOUNT` record of the
    /// cubin-wide `.nv.info` section that names the kernel's symbol (the one in the low 24
    /// bits of its `.text` section's `sh_info`; sm_80 cubins keep the count in the top 8 bits
    /// too, sm_90 ones do not). `None` when there is none.
    pub fn registers(&self, kernel: &Kernel) -> Option<u32> {
        let symbol = self.elf.sections.get(kernel.text_section)?.info & 0x00ff_ffff;
        let info = self.elf.sections.iter().find(|s| s.name == ".nv.info")?;
        nvinfo::parse(&info.data).ok()?.iter().find_map(|a| {
            let d = info.data.get(a.data.clone())?;
            let word = |i: usize| d.get(4 * i..4 * i + 4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")));
            (a.attr == nvinfo::EIATTR_REGCOUNT && a.format == nvinfo::EIFMT_SVAL && word(0)? == symbol)
                .then(|| word(1))
                .flatten()
        })
    }

    /// The SM version the ELF header names (80, 90): `EF_CUDA_SM` is the second byte of
    /// `e_flags` from ELF ABI version 8 on (what `ptxas` 12.x/13.x writes), the first before.
    pub fn sm(&self) -> u32 {
        let f = self.elf.header.flags;
        if self.elf.header.abi_version >= 8 {
            (f >> 8) & 0xff
        } else {
            f & 0xff
        }
    }
}

impl Kernel {
    /// Every instruction offset the kernel's attributes list, with the attribute.
    pub fn listed_offsets(&self, elf: &Elf) -> Vec<(u8, u32)> {
        let Some(j) = self.info_section else { return vec![] };
        let data = &elf.sections[j].data;
        self.attrs
            .iter()
            .filter(|a| a.lists_instr_offsets())
            .flat_map(|a| a.instr_offsets(data).into_iter().map(move |o| (a.attr, o)))
            .collect()
    }
}
