//! The emulated device's state: one device, its primary context, device memory (host
//! allocations at fake addresses), modules, functions, streams, events, the modelled clock
//! and the context's sticky fault. Everything lives behind one lock: work runs when it is
//! issued, so streams are trivially in order and the lock is the device's one queue.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use trident_emu::MachineModel;

use crate::codes::*;
use crate::load::LoadedModule;

/// The architecture the emulated device has: `TRIDENT_EMU_TARGET` (`sm_80`, `sm_90`,
/// `sm_90a`), else sm_90a.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// `sm_90a`, as the device's name says it.
    pub name: String,
    pub cc: (u32, u32),
}

impl Target {
    pub fn from_env() -> Result<Target, String> {
        let name = match std::env::var("TRIDENT_EMU_TARGET") {
            Ok(s) => s.trim().to_string(),
            Err(_) => "sm_90a".to_string(),
        };
        let cc = match name.as_str() {
            "sm_80" => (8, 0),
            "sm_90" | "sm_90a" => (9, 0),
            _ => {
                return Err(format!(
                    "TRIDENT_EMU_TARGET=`{name}` is not a target the emulated driver has (sm_80, sm_90 or sm_90a)"
                ))
            }
        };
        Ok(Target { name, cc })
    }

    pub fn machine(&self) -> MachineModel {
        if self.cc.0 >= 9 {
            MachineModel::h100_sxm()
        } else {
            MachineModel::a100_sxm()
        }
    }

    /// Shared memory a block may opt in to (227 KiB on Hopper, 163 KiB on the A100).
    pub fn shared_optin(&self) -> u32 {
        if self.cc.0 >= 9 {
            227 * 1024
        } else {
            163 * 1024
        }
    }
}

/// Device memory the emulated device reports (an H100's 80 GiB); allocations are host memory
/// and are refused beyond it (or when the host cannot give them).
pub const TOTAL_MEMORY: usize = 80 << 30;
/// The first fake device address: far below the emulators' own address windows
/// (`trident_emu::memory::GLOBAL_BASE` = 2^44), so an address a kernel receives untranslated
/// (a dangling pointer) lies in none of the launch's buffers and faults.
pub const FIRST_ADDRESS: u64 = 0x7_0000_0000;
/// Unmapped bytes after every allocation (and addresses are never reused), so a copy or a
/// pointer that runs off one allocation never lands in another.
pub const GUARD_BYTES: u64 = 1 << 20;
/// The default dynamic shared-memory limit of a kernel (48 KiB without opting in).
pub const DEFAULT_DYNAMIC_SHARED: u32 = 48 * 1024;

/// The context handle (a fixed non-null value; one device, one primary context).
pub const CONTEXT_HANDLE: usize = 0xC0_0000;

pub struct Function {
    pub module: Arc<LoadedModule>,
    pub index: usize,
    /// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`, as set.
    pub max_dynamic_shared: u32,
}

#[derive(Clone, Copy, Debug)]
pub struct Event {
    /// The modelled clock (ns) when last recorded.
    pub at_ns: Option<f64>,
    pub timing: bool,
}

/// A fault of a launch: the context is unusable from the first call that observes it on
/// (as CUDA's sticky errors), until the primary context is released by every user.
#[derive(Clone, Debug)]
pub struct Fault {
    pub code: CuResult,
    /// Whether a synchronising call has reported it yet; before that, calls that do not wait
    /// for the device still succeed (the fault has "not happened yet" as far as they know).
    pub observed: bool,
}

#[derive(Default)]
pub struct Context {
    pub allocs: BTreeMap<u64, Vec<u8>>,
    pub allocated: usize,
    pub next_address: u64,
    pub modules: HashMap<usize, Arc<LoadedModule>>,
    pub functions: HashMap<usize, Function>,
    pub streams: HashMap<usize, ()>,
    pub events: HashMap<usize, Event>,
    /// The modelled device clock: the sum of the modelled durations of every kernel run.
    pub clock_ns: f64,
    pub fault: Option<Fault>,
}

impl Context {
    /// The allocation holding `[addr, addr + len)`: its base and the offset of `addr` in it.
    pub fn find(&self, addr: u64, len: usize) -> Option<(u64, usize)> {
        let (&base, data) = self.allocs.range(..=addr).next_back()?;
        let off = (addr - base) as usize;
        (off.checked_add(len)? <= data.len()).then_some((base, off))
    }

    pub fn bytes(&self, addr: u64, len: usize) -> Result<&[u8], CuResult> {
        let (base, off) = self.find(addr, len).ok_or(INVALID_VALUE)?;
        Ok(&self.allocs[&base][off..off + len])
    }

    pub fn bytes_mut(&mut self, addr: u64, len: usize) -> Result<&mut [u8], CuResult> {
        let (base, off) = self.find(addr, len).ok_or(INVALID_VALUE)?;
        Ok(&mut self.allocs.get_mut(&base).ok_or(INVALID_VALUE)?[off..off + len])
    }
}

pub struct Driver {
    pub target: Option<Target>,
    /// Primary-context retains outstanding; the context exists while this is positive.
    pub retains: u32,
    pub ctx: Option<Context>,
    pub next_handle: usize,
}

impl Driver {
    pub fn handle(&mut self) -> usize {
        self.next_handle += 16;
        self.next_handle
    }

    /// The context, if it is alive and current on this thread.
    pub fn current(&mut self) -> Result<&mut Context, CuResult> {
        if self.target.is_none() {
            return Err(NOT_INITIALIZED);
        }
        if CURRENT.with(Cell::get) != CONTEXT_HANDLE {
            return Err(INVALID_CONTEXT);
        }
        self.ctx.as_mut().ok_or(INVALID_CONTEXT)
    }

    /// [`Driver::current`] for a call that does not wait for the device: a fault not yet
    /// observed does not stop it, one observed does.
    pub fn ctx(&mut self) -> Result<&mut Context, CuResult> {
        let c = self.current()?;
        match &c.fault {
            Some(f) if f.observed => Err(f.code),
            _ => Ok(c),
        }
    }

    /// [`Driver::current`] for a call that waits for the device (synchronisations, copies):
    /// it reports a fault, which from then on every call reports.
    pub fn ctx_sync(&mut self) -> Result<&mut Context, CuResult> {
        let c = self.current()?;
        if let Some(f) = &mut c.fault {
            f.observed = true;
            return Err(f.code);
        }
        Ok(c)
    }
}

static DRIVER: Mutex<Driver> = Mutex::new(Driver { target: None, retains: 0, ctx: None, next_handle: 0x1000 });

thread_local! {
    /// The context current on this thread (0: none).
    pub static CURRENT: Cell<usize> = const { Cell::new(0) };
}

/// The driver's state (a poisoned lock is taken anyway: every entry point catches panics, and
/// the state stays consistent between statements that could panic).
pub fn driver() -> MutexGuard<'static, Driver> {
    DRIVER.lock().unwrap_or_else(|p| p.into_inner())
}
