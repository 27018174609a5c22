//! `cuLaunchKernel`: the parameters read through `kernelParams` with the kernel's layout,
//! device addresses translated into the emulators' address space, the kernel run, the results
//! written back to device memory.
//!
//! The emulators place each buffer of a launch in its own region
//! (`trident_emu::buffer_base(i)`, 64 GiB apart, bounds-checked). Here every allocation a
//! parameter points into becomes one region, and the parameter gets the region's address plus
//! its offset: an 8-byte parameter whose value lies in an allocation (from its start to its
//! end inclusive) is taken for a pointer to it, and a 128-byte parameter holding an emulator
//! tensor map (`TEM1`) gets its global address translated the same way. Pointers stored in
//! device memory are not translated (no Trident kernel reads one).

use std::collections::HashMap;
use std::ffi::c_void;

use trident_emu::memory::{buffer_base, GlobalMem, MAX_BUFFERS};
use trident_emu::{ErrorKind, TensorMap};

use crate::codes::*;
use crate::load::Code;
use crate::state::{Context, Fault, Function, Target};

/// A launch as `cuLaunchKernel` describes it.
pub struct Launch {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared: u32,
}

/// Runs the launch now. `Err` is a synchronous refusal (nothing ran); a fault while running
/// is recorded on the context (reported by the next synchronising call) and is `Ok` here.
///
/// # Safety
/// `params` is null or holds one pointer per kernel parameter, each to as many bytes as the
/// parameter is wide (the `cuLaunchKernel` contract).
pub unsafe fn launch(
    ctx: &mut Context,
    f: &Function,
    target: &Target,
    l: &Launch,
    params: *mut *mut c_void,
) -> Result<(), CuResult> {
    let k = &f.module.kernels[f.index];
    let threads = l.block.iter().map(|&b| b as u64).product::<u64>();
    let max_block = [1024, 1024, 64];
    let max_grid = [i32::MAX as u32, 65535, 65535];
    if l.grid.contains(&0)
        || l.block.contains(&0)
        || threads > k.max_threads as u64
        || k.reqntid.is_some_and(|r| r != l.block)
        || (0..3).any(|i| l.block[i] > max_block[i] || l.grid[i] > max_grid[i])
    {
        return Err(INVALID_VALUE);
    }
    // Above the kernel's dynamic shared-memory limit (48 KiB unless raised with
    // cuFuncSetAttribute), or the device's: refused, as the real driver does.
    if l.shared > f.max_dynamic_shared || k.static_shared as u64 + l.shared as u64 > target.shared_optin() as u64 {
        return Err(INVALID_VALUE);
    }
    let size = k.params.iter().map(|&(o, s)| (o + s) as usize).max().unwrap_or(0);
    if !k.params.is_empty() && params.is_null() {
        return Err(INVALID_VALUE);
    }
    let mut bytes = vec![0u8; size];
    for (i, &(off, sz)) in k.params.iter().enumerate() {
        // SAFETY: the caller's contract: one pointer per parameter, to `sz` readable bytes.
        let p = unsafe { *params.add(i) } as *const u8;
        if p.is_null() {
            return Err(INVALID_VALUE);
        }
        // SAFETY: as above.
        let src = unsafe { std::slice::from_raw_parts(p, sz as usize) };
        bytes[off as usize..(off + sz) as usize].copy_from_slice(src);
    }

    // Translate addresses: each allocation referenced becomes a region.
    let mut regions: Vec<u64> = vec![];
    let mut region_of = HashMap::new();
    let mut translate = |ctx: &Context, addr: u64| -> Option<u64> {
        let (base, off) = ctx.find(addr, 0)?;
        let r = *region_of.entry(base).or_insert_with(|| {
            regions.push(base);
            regions.len() - 1
        });
        (r < MAX_BUFFERS).then(|| buffer_base(r) + off as u64)
    };
    for &(off, sz) in &k.params {
        let at = off as usize..(off + sz) as usize;
        let b = &mut bytes[at];
        if sz == 8 {
            let v = u64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8]));
            if let Some(t) = translate(ctx, v) {
                b.copy_from_slice(&t.to_le_bytes());
            }
        } else if sz as usize == trident_emu::tensormap::BYTES && b[..4] == trident_emu::tensormap::MAGIC {
            let Ok(raw) = <&[u8; 128]>::try_from(&*b) else { continue };
            if let Ok(mut m) = TensorMap::decode(raw) {
                if let Some(t) = translate(ctx, m.global_address) {
                    m.global_address = t;
                    b.copy_from_slice(&m.encode());
                }
            }
        }
    }
    if regions.len() > MAX_BUFFERS {
        eprintln!("trident-emu-driver: kernel `{}` points into more than {MAX_BUFFERS} allocations", k.name);
        return Err(NOT_SUPPORTED);
    }
    let mut mem = GlobalMem::new();
    for (r, base) in regions.iter().enumerate() {
        let data = &ctx.allocs[base];
        mem.set_region(r, format!("the allocation at {base:#x} ({} bytes)", data.len()), data, true);
    }

    let machine = target.machine();
    let result = match &k.code {
        Code::Ptx(module) => {
            let cfg = trident_emu::LaunchConfig {
                grid: l.grid,
                block: l.block,
                dynamic_shared_bytes: l.shared,
                machine: machine.clone(),
                ..Default::default()
            };
            trident_emu::launch_on(module, &k.name, &cfg, &bytes, &mut mem).map(|r| r.cycles as f64 / r.clock_ghz)
        }
        Code::Sass(program) => {
            let cfg = trident_sass_emu::LaunchConfig {
                grid: l.grid,
                block: l.block,
                dynamic_shared_bytes: l.shared,
                ..Default::default()
            };
            // The SASS emulator's estimate is in cycles of the slowest CTA, at the machine's clock.
            trident_sass_emu::launch_on(program, &cfg, &bytes, &mem).map(|r| r.cycles as f64 / machine.clock_ghz)
        }
    };
    match result {
        Ok(ns) => {
            for (r, base) in regions.iter().enumerate() {
                if let (Some(after), Some(data)) = (mem.region_bytes(r), ctx.allocs.get_mut(base)) {
                    data.copy_from_slice(&after);
                }
            }
            ctx.clock_ns += ns;
            Ok(())
        }
        Err(e) if e.kind == ErrorKind::Launch => {
            eprintln!("trident-emu-driver: launch of kernel `{}` refused: {e}", k.name);
            Err(INVALID_VALUE)
        }
        Err(e) => {
            let code = fault_code(&e);
            let name = describe(code).map_or("?", |d| d.0);
            // A real driver says only the code; the emulator knows where, and says it.
            eprintln!("trident-emu-driver: kernel `{}` faulted ({name}): {e}", k.name);
            ctx.fault = Some(Fault { code, observed: false });
            Ok(())
        }
    }
}

/// The code a GPU would report for an emulator error.
fn fault_code(e: &trident_emu::EmuError) -> CuResult {
    match e.kind {
        ErrorKind::Memory if e.message.contains("misaligned") => MISALIGNED_ADDRESS,
        ErrorKind::Memory => ILLEGAL_ADDRESS,
        // A kernel that can never finish hangs a GPU until the watchdog (if any) ends it.
        ErrorKind::Deadlock => LAUNCH_TIMEOUT,
        _ => LAUNCH_FAILED,
    }
}
