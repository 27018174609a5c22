//! A kernel ready to run: its decoded instructions and control bits, and what the launch
//! needs from the cubin — where the parameters sit in constant bank 0, how big the bank
//! is, how much shared memory the kernel declares.

use trident_emu::{EmuError, ErrorKind};
use trident_sass::disasm::Text;
use trident_sass::{Control, Cubin};

use crate::decode::{decode, Op};

/// `EIATTR_KPARAM_INFO`: one record per parameter (ordinal, offset, size).
const KPARAM_INFO: u8 = 0x17;
/// `EIATTR_PARAM_CBANK`: where the parameters start in constant bank 0, and their size.
const PARAM_CBANK: u8 = 0x0a;

/// One parameter: byte offset from the parameter base, and size.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Param {
    pub offset: u32,
    pub size: u32,
}

/// A kernel of a cubin, decoded.
#[derive(Clone, Debug)]
pub struct SassKernel {
    pub name: String,
    /// 80, 90.
    pub sm: u32,
    pub ops: Vec<Op>,
    pub controls: Vec<Control>,
    /// Where the parameters start in constant bank 0 (0x160 on sm_80, 0x210 on sm_90).
    pub param_base: u32,
    /// In parameter order.
    pub params: Vec<Param>,
    /// Size of constant bank 0 (`.nv.constant0.KERNEL`).
    pub cbank0_bytes: u32,
    /// Static shared memory (`.nv.shared.KERNEL`).
    pub shared_bytes: u32,
    /// The other constant banks the cubin fills (`.nv.constant2.KERNEL`: literals `ptxas`
    /// placed there; `.nv.constantN` shared by the module), by bank number.
    pub banks: Vec<(u8, Vec<u8>)>,
    /// Local memory per thread: the stack `ptxas` sized for the kernel and what it calls
    /// (`EIATTR_MIN_STACK_SIZE`/`EIATTR_FRAME_SIZE`/`EIATTR_MAX_STACK_SIZE` of its symbol in
    /// the cubin's `.nv.info`; spills and local arrays live there).
    pub local_bytes: u32,
}

/// `EIATTR_FRAME_SIZE`, `EIATTR_MIN_STACK_SIZE`, `EIATTR_MAX_STACK_SIZE`: `(symbol, bytes)`.
const STACK_ATTRS: [u8; 3] = [0x11, 0x12, 0x23];

/// The largest stack size the cubin's `.nv.info` states for kernel `name` (0 when none).
fn stack_bytes(cubin: &Cubin, name: &str) -> u32 {
    let (Some(info), Ok(symbols)) = (cubin.elf.section(".nv.info"), cubin.elf.symbols()) else { return 0 };
    let Some(index) = symbols.iter().position(|s| s.name == name) else { return 0 };
    let Ok(attrs) = trident_sass::nvinfo::parse(&info.data) else { return 0 };
    attrs
        .iter()
        .filter(|a| STACK_ATTRS.contains(&a.attr))
        .filter_map(|a| {
            let d = info.data.get(a.data.clone())?;
            let sym = u32::from_le_bytes(d.get(0..4)?.try_into().ok()?);
            let bytes = u32::from_le_bytes(d.get(4..8)?.try_into().ok()?);
            (sym as usize == index).then_some(bytes)
        })
        .max()
        .unwrap_or(0)
}

impl SassKernel {
    /// Kernel `name` of `cubin`, with `nvdisasm`'s `text` of its instructions.
    pub fn new(cubin: &Cubin, name: &str, text: &[Text]) -> Result<SassKernel, EmuError> {
        let launch = |m: String| EmuError::new(ErrorKind::Launch, m);
        let k = cubin.kernel(name).ok_or_else(|| {
            let names: Vec<&str> = cubin.kernels.iter().map(|k| k.name.as_str()).collect();
            launch(format!("no kernel `{name}` in the cubin (it has: {})", names.join(", ")))
        })?;
        if text.len() != k.instrs.len() {
            return Err(launch(format!("{} texts for {} instructions", text.len(), k.instrs.len())));
        }
        let info = k.info_section.map(|s| cubin.elf.sections[s].data.clone()).unwrap_or_default();
        let mut params = vec![];
        let mut param_base = if cubin.sm() >= 90 { 0x210 } else { 0x160 };
        for a in &k.attrs {
            let d = &info[a.data.clone()];
            if a.attr == KPARAM_INFO && d.len() >= 12 {
                let ordinal = u16::from_le_bytes([d[4], d[5]]) as usize;
                let offset = u16::from_le_bytes([d[6], d[7]]) as u32;
                let flags = u32::from_le_bytes([d[8], d[9], d[10], d[11]]);
                if params.len() <= ordinal {
                    params.resize(ordinal + 1, Param { offset: 0, size: 0 });
                }
                params[ordinal] = Param { offset, size: flags >> 18 };
            }
            if a.attr == PARAM_CBANK && d.len() >= 8 {
                param_base = u16::from_le_bytes([d[4], d[5]]) as u32;
            }
        }
        let section_size = |prefix: &str| {
            cubin.elf.sections.iter().find(|s| s.name == format!("{prefix}{name}")).map_or(0, |s| s.size as u32)
        };
        let cbank0_bytes = section_size(".nv.constant0.")
            .max(param_base + params.iter().map(|p| p.offset + p.size).max().unwrap_or(0));
        Ok(SassKernel {
            name: name.to_string(),
            sm: cubin.sm(),
            ops: text.iter().map(decode).collect(),
            controls: k.instrs.iter().map(|i| i.control()).collect(),
            param_base,
            params,
            cbank0_bytes,
            shared_bytes: section_size(".nv.shared."),
            local_bytes: stack_bytes(cubin, name),
            banks: cubin
                .elf
                .sections
                .iter()
                .filter_map(|sec| {
                    let rest = sec.name.strip_prefix(".nv.constant")?;
                    let (n, owner) = rest.split_once('.').unwrap_or((rest, ""));
                    let bank: u8 = n.parse().ok()?;
                    (bank != 0 && (owner.is_empty() || owner == name)).then(|| (bank, sec.data.clone()))
                })
                .collect(),
        })
    }

    /// Bytes reserved at the bottom of shared memory: 1 KiB from sm_90 on (the hardware's;
    /// `ptxas` addresses the kernel's shared memory from 0x400 there).
    pub fn shared_reserved(&self) -> u32 {
        if self.sm >= 90 {
            0x400
        } else {
            0
        }
    }
}
