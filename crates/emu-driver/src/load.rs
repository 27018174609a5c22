//! Module images: PTX text goes to the PTX emulator (trident-emu), a cubin to the SASS
//! emulator (trident-sass-emu, with `nvdisasm`'s text of its instructions). What a real
//! driver's JIT or loader would refuse for this device is refused here too, with a log.

use std::ffi::{c_char, CStr};
use std::path::PathBuf;

use crate::codes::*;
use crate::state::Target;

/// The code of one kernel, ready to launch.
pub enum Code {
    Ptx(std::sync::Arc<trident_emu::Module>),
    Sass(Box<trident_sass_emu::Program>),
}

/// A kernel of a module: how to run it and what the driver reports about it.
pub struct Kernel {
    pub name: String,
    pub code: Code,
    /// `(offset, size)` of each parameter in the parameter space.
    pub params: Vec<(u32, u32)>,
    pub static_shared: u32,
    pub local_bytes: u32,
    /// `CU_FUNC_ATTRIBUTE_PTX_VERSION` (major * 10 + minor; 0 for a cubin).
    pub ptx_version: u32,
    /// The block a PTX `.reqntid` requires (launches with another are refused).
    pub reqntid: Option<[u32; 3]>,
    /// Threads per block allowed: `.maxntid`'s or `.reqntid`'s product, else 1024.
    pub max_threads: u32,
}

/// The numbers after `directive` in a kernel's performance directives (`.reqntid 64, 1, 1`).
fn ntid(directives: &str, directive: &str) -> Option<[u32; 3]> {
    let rest = &directives[directives.find(directive)? + directive.len()..];
    let mut v = [1u32; 3];
    for (i, w) in rest.split(',').take(3).enumerate() {
        let digits: String = w.trim().chars().take_while(char::is_ascii_digit).collect();
        if digits.is_empty() {
            break;
        }
        v[i] = digits.parse().ok()?;
        if !w.trim().chars().all(|c| c.is_ascii_digit()) {
            break;
        }
    }
    Some(v)
}

/// The text between an entry's parameter list and its body: where `.reqntid`, `.maxntid` sit.
fn directives_of<'a>(text: &'a str, entry: &str) -> &'a str {
    let Some(at) = text.find(&format!(".entry {entry}")) else { return "" };
    let rest = &text[at..];
    let Some(close) = rest.find(')') else { return "" };
    let body = rest[close..].find('{').map_or(rest.len(), |b| close + b);
    &rest[close..body]
}

pub struct LoadedModule {
    pub kernels: Vec<Kernel>,
}

/// A refused image: the code, and the log a real JIT or loader would leave.
pub struct LoadError {
    pub code: CuResult,
    pub log: String,
}

fn refuse(code: CuResult, log: impl Into<String>) -> LoadError {
    LoadError { code, log: format!("trident-emu-driver: {}", log.into()) }
}

const FATBIN_MAGIC: u32 = 0xBA55_ED50;
const EM_CUDA: u16 = 190;
/// No cubin is larger than this; a header claiming more is garbage.
const MAX_IMAGE: u64 = 1 << 30;

/// Loads the image at `image`: an ELF (cubin), a fatbin (refused), or NUL-terminated PTX.
///
/// # Safety
/// `image` points at an image as `cuModuleLoadData` documents: a whole ELF whose headers give
/// its extent, or a NUL-terminated string.
pub unsafe fn load(image: *const u8, target: &Target) -> Result<LoadedModule, LoadError> {
    if image.is_null() {
        return Err(refuse(INVALID_VALUE, "the image pointer is null"));
    }
    // The first 4 bytes, read one at a time up to a NUL: short PTX text is never over-read.
    let mut magic = [0u8; 4];
    for (i, m) in magic.iter_mut().enumerate() {
        // SAFETY: bytes before a NUL belong to the image whatever its kind.
        *m = unsafe { *image.add(i) };
        if *m == 0 {
            break;
        }
    }
    if &magic == b"\x7fELF" {
        // SAFETY: the caller's promise: the headers describe the image's extent.
        let bytes = unsafe { elf_bytes(image) }?;
        return load_cubin(bytes, target);
    }
    if u32::from_le_bytes(magic) == FATBIN_MAGIC {
        return Err(refuse(NOT_SUPPORTED, "fatbins are not supported (load the cubin or the PTX)"));
    }
    // SAFETY: anything else is NUL-terminated PTX text, as the driver API says.
    let text = unsafe { CStr::from_ptr(image as *const c_char) };
    let text = text.to_str().map_err(|e| refuse(INVALID_PTX, format!("the PTX is not UTF-8: {e}")))?;
    load_ptx(text, target)
}

/// The image's bytes: the ELF header, the program and section header tables and every
/// section with file contents.
unsafe fn elf_bytes<'a>(p: *const u8) -> Result<&'a [u8], LoadError> {
    // SAFETY: 64 bytes of header (the caller's promise).
    let h = unsafe { std::slice::from_raw_parts(p, 64) };
    let u16_at = |b: &[u8], at: usize| u16::from_le_bytes([b[at], b[at + 1]]) as u64;
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or([0; 4])) as u64;
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]));
    if h[4] != 2 || h[5] != 1 || u16_at(h, 18) != EM_CUDA as u64 {
        return Err(refuse(INVALID_IMAGE, "not a 64-bit little-endian CUDA ELF"));
    }
    let (phoff, shoff) = (u64_at(h, 32), u64_at(h, 40));
    let (phentsize, phnum) = (u16_at(h, 54), u16_at(h, 56));
    let (shentsize, shnum) = (u16_at(h, 58), u16_at(h, 60));
    let mut end = 64u64.max(phoff + phentsize * phnum).max(shoff + shentsize * shnum);
    if end > MAX_IMAGE || (shnum > 0 && shentsize < 64) {
        return Err(refuse(INVALID_IMAGE, "the ELF's header tables are implausible"));
    }
    for i in 0..shnum {
        // SAFETY: inside the section header table, within `end`.
        let s = unsafe { std::slice::from_raw_parts(p.add((shoff + i * shentsize) as usize), 64) };
        if u32_at(s, 4) != 8 {
            end = end.max(u64_at(s, 24).saturating_add(u64_at(s, 32)));
        }
    }
    for i in 0..phnum {
        // SAFETY: inside the program header table.
        let s = unsafe { std::slice::from_raw_parts(p.add((phoff + i * phentsize) as usize), 56) };
        end = end.max(u64_at(s, 8).saturating_add(u64_at(s, 32)));
    }
    if end > MAX_IMAGE {
        return Err(refuse(INVALID_IMAGE, "the ELF's sections are implausibly large"));
    }
    // SAFETY: the extent the headers describe.
    Ok(unsafe { std::slice::from_raw_parts(p, end as usize) })
}

/// `sm_90a` → 90 and whether it is the arch-specific variant.
fn sm_of(target: &str) -> Option<u32> {
    target.trim().strip_prefix("sm_")?.trim_end_matches(['a', 'f']).parse().ok()
}

fn load_ptx(text: &str, target: &Target) -> Result<LoadedModule, LoadError> {
    // The JIT compiles for the device: PTX for a newer architecture is refused, as ptxas would.
    let declared = text
        .lines()
        .find_map(|l| l.trim().strip_prefix(".target").map(|t| t.split(',').next().unwrap_or("").trim().to_string()));
    let device_sm = target.cc.0 * 10 + target.cc.1;
    if let Some(t) = &declared {
        match sm_of(t) {
            Some(sm) if sm > device_sm => {
                return Err(refuse(
                    INVALID_PTX,
                    format!("ptxas fatal: the PTX targets {t}, newer than the device ({})", target.name),
                ))
            }
            Some(sm) if t.ends_with('a') && sm != device_sm => {
                return Err(refuse(
                    INVALID_PTX,
                    format!("ptxas fatal: {t} code runs on {t} only, the device is {}", target.name),
                ))
            }
            _ => {}
        }
    }
    let version = text
        .lines()
        .find_map(|l| l.trim().strip_prefix(".version").map(|v| v.trim().to_string()))
        .and_then(|v| {
            let (a, b) = v.split_once('.')?;
            Some(a.trim().parse::<u32>().ok()? * 10 + b.trim().parse::<u32>().ok()?)
        })
        .unwrap_or(0);
    let module = trident_emu::Module::parse(text).map_err(|e| refuse(INVALID_PTX, format!("the PTX emulator: {e}")))?;
    let module = std::sync::Arc::new(module);
    let mut kernels = vec![];
    for name in module.entries() {
        let params = module.entry_params(name).map_err(|e| refuse(INVALID_PTX, e.to_string()))?;
        // The emulator skips these hints; the driver enforces them.
        let d = directives_of(text, name);
        let reqntid = ntid(d, ".reqntid");
        let max_threads = ntid(d, ".maxntid").or(reqntid).map_or(1024, |v| v.iter().product::<u32>().clamp(1, 1024));
        kernels.push(Kernel {
            reqntid,
            max_threads,
            name: name.to_string(),
            code: Code::Ptx(module.clone()),
            params: params.iter().map(|p| (p.offset, p.bytes)).collect(),
            static_shared: module.static_shared_bytes(),
            local_bytes: 0,
            ptx_version: version,
        });
    }
    Ok(LoadedModule { kernels })
}

/// `nvdisasm`: `TRIDENT_NVDISASM`, else on the `PATH`.
fn nvdisasm() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TRIDENT_NVDISASM") {
        return Some(PathBuf::from(p));
    }
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join("nvdisasm")).find(|p| p.is_file())
}

fn load_cubin(bytes: &[u8], target: &Target) -> Result<LoadedModule, LoadError> {
    if std::env::var_os("TRIDENT_EMU_DRIVER_NO_CUBIN").is_some() {
        return Err(refuse(NO_BINARY_FOR_GPU, "cubins are refused (TRIDENT_EMU_DRIVER_NO_CUBIN is set)"));
    }
    let cubin = trident_sass::Cubin::parse(bytes).map_err(|e| refuse(INVALID_IMAGE, format!("the cubin: {e}")))?;
    let Some(tool) = nvdisasm() else {
        return Err(refuse(
            NOT_SUPPORTED,
            "running a cubin needs nvdisasm (set TRIDENT_NVDISASM); load the PTX instead",
        ));
    };
    // nvdisasm reads files: a scratch file named after this process and a counter.
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("trident-emu-driver-{}-{n}.cubin", std::process::id()));
    std::fs::write(&path, bytes).map_err(|e| refuse(NOT_SUPPORTED, format!("cannot write {}: {e}", path.display())))?;
    let listings = trident_sass::disasm::disassemble(&tool, &path);
    let _ = std::fs::remove_file(&path);
    let listings = listings.map_err(|e| refuse(INVALID_IMAGE, e))?;
    let device_sm = target.cc.0 * 10 + target.cc.1;
    let mut kernels = vec![];
    for k in &cubin.kernels {
        let text = trident_sass::disasm::section_text(&cubin, &listings, k.text_section);
        let program = trident_sass_emu::Program::new(&cubin, &k.name, &text)
            .map_err(|e| refuse(NOT_SUPPORTED, format!("the SASS emulator cannot run kernel `{}`: {e}", k.name)))?;
        // Machine code runs on its own architecture only.
        if program.kernel.sm != device_sm {
            return Err(refuse(
                NO_BINARY_FOR_GPU,
                format!("kernel `{}` is sm_{} code, the device is {}", k.name, program.kernel.sm, target.name),
            ));
        }
        let p = &program.kernel;
        kernels.push(Kernel {
            name: k.name.clone(),
            params: p.params.iter().map(|q| (q.offset, q.size)).collect(),
            static_shared: p.shared_bytes,
            local_bytes: p.local_bytes,
            ptx_version: 0,
            reqntid: None,
            max_threads: 1024,
            code: Code::Sass(Box::new(program)),
        });
    }
    Ok(LoadedModule { kernels })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sm90a() -> Target {
        Target { name: "sm_90a".into(), cc: (9, 0) }
    }

    #[test]
    fn ptx_for_a_newer_or_other_arch_specific_target_is_refused() {
        let ptx = ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k() { ret; }\n";
        assert!(load_ptx(ptx, &sm90a()).is_ok());
        let sm80 = Target { name: "sm_80".into(), cc: (8, 0) };
        let e = load_ptx(ptx, &sm80).err().unwrap();
        assert_eq!(e.code, INVALID_PTX);
        assert!(e.log.contains("sm_90a"), "{}", e.log);
    }

    #[test]
    fn bad_ptx_is_invalid_ptx_with_the_emulators_message() {
        let e =
            load_ptx(".version 8.0\n.target sm_80\n.visible .entry k() { frob.u32 %r1; }\n", &sm90a()).err().unwrap();
        assert_eq!(e.code, INVALID_PTX);
        assert!(e.log.contains("frob"), "{}", e.log);
    }

    #[test]
    fn params_have_their_declared_offsets() {
        let ptx = ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k(.param .u32 a, .param .align 64 .b8 m[128], .param .u64 p) { ret; }\n";
        let m = load_ptx(ptx, &sm90a()).ok().unwrap();
        assert_eq!(m.kernels[0].params, vec![(0, 4), (64, 128), (192, 8)]);
        assert_eq!(m.kernels[0].ptx_version, 80);
        assert_eq!((m.kernels[0].reqntid, m.kernels[0].max_threads), (None, 1024));
    }

    #[test]
    fn reqntid_and_maxntid_are_read() {
        let ptx = ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k(.param .u32 a)\n.reqntid 64, 2\n{ ret; }\n.visible .entry j()\n.maxntid 128, 1, 1\n{ ret; }\n";
        let m = load_ptx(ptx, &sm90a()).ok().unwrap();
        assert_eq!((m.kernels[0].reqntid, m.kernels[0].max_threads), (Some([64, 2, 1]), 128));
        assert_eq!((m.kernels[1].reqntid, m.kernels[1].max_threads), (None, 128));
    }
}
