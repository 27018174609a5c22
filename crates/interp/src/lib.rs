//! Trident's tile-IR interpreter: runs kernels on the CPU with the semantics
//! compiled Triton has on a GPU. It is the reference semantics of the project
//! and the backend that needs no setup.
//!
//! ```text
//! launch(&module, "add_kernel", [n_programs, 1, 1], &mut args, &InterpOptions::default())?
//! ```
//!
//! * Programs of the grid run concurrently on a rayon pool; each program runs
//!   the kernel body sequentially on block values (n-d arrays with typed storage,
//!   see `value.rs`).
//! * Tensor arguments are copied into launch-private buffers; pointers carry the
//!   buffer they came from (`memory.rs`), every load/store/atomic is checked
//!   against it, and the caller's tensors are written back only when the whole
//!   launch succeeds.
//! * Errors are [`InterpError`]s: a [`trident_ir::Diagnostic`] at the op's source
//!   location naming the program and element. When several programs fail, the one
//!   with the lowest linear program index (`x + gx*(y + gy*z)`) is reported, so the
//!   error does not depend on thread timing.
//!
//! The semantics decisions (rounding, shifts, division by zero, reduction order, ...)
//! are listed in the crate's README.

mod dot;
mod elementwise;
mod error;
mod exec;
mod float;
mod memops;
mod memory;
mod print;
mod reduce;
mod shape;
mod value;

pub use error::{ErrorKind, InterpError};

use exec::{Program, Shared};
use memory::{Buffer, Memory};
use rayon::prelude::*;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use trident_core::{DType, HostTensor};
use trident_ir::{CastKind, Elem, Module, OpKind, Type};
use value::{Data, Tensor};

/// A kernel argument, in the order of the kernel function's parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum InterpArg {
    /// A tensor, passed as a pointer to its first element. Updated in place when the launch succeeds.
    Tensor(HostTensor),
    /// A scalar of `dtype` given by its bit pattern (zero-extended to 64 bits;
    /// f16 as its 16 bits, f32 as `f32::to_bits`, ...).
    Scalar { dtype: DType, bits: u64 },
}

impl InterpArg {
    pub fn tensor(t: HostTensor) -> InterpArg {
        InterpArg::Tensor(t)
    }
    pub fn i32(v: i32) -> InterpArg {
        InterpArg::Scalar { dtype: DType::I32, bits: v as u32 as u64 }
    }
    pub fn i64(v: i64) -> InterpArg {
        InterpArg::Scalar { dtype: DType::I64, bits: v as u64 }
    }
    pub fn u32(v: u32) -> InterpArg {
        InterpArg::Scalar { dtype: DType::U32, bits: v as u64 }
    }
    pub fn u64(v: u64) -> InterpArg {
        InterpArg::Scalar { dtype: DType::U64, bits: v }
    }
    pub fn bool(v: bool) -> InterpArg {
        InterpArg::Scalar { dtype: DType::I1, bits: v as u64 }
    }
    pub fn f32(v: f32) -> InterpArg {
        InterpArg::Scalar { dtype: DType::F32, bits: v.to_bits() as u64 }
    }
    pub fn f64(v: f64) -> InterpArg {
        InterpArg::Scalar { dtype: DType::F64, bits: v.to_bits() }
    }
    /// An f16 scalar (the value is rounded to f16).
    pub fn f16(v: f32) -> InterpArg {
        InterpArg::Scalar { dtype: DType::F16, bits: half::f16::from_f32(v).to_bits() as u64 }
    }

    /// The tensor, if this is a tensor argument.
    pub fn as_tensor(&self) -> Option<&HostTensor> {
        match self {
            InterpArg::Tensor(t) => Some(t),
            InterpArg::Scalar { .. } => None,
        }
    }

    fn describe(&self) -> String {
        match self {
            InterpArg::Tensor(t) => format!("a tensor of {}", t.dtype),
            InterpArg::Scalar { dtype, .. } => format!("a {dtype} scalar"),
        }
    }
}

/// How to run a launch.
#[derive(Clone, Debug)]
pub struct InterpOptions {
    /// Worker threads for the grid; `None` uses rayon's global pool (one per core),
    /// `Some(1)` runs the programs one after another on the calling thread.
    pub threads: Option<usize>,
    /// Check `device_assert`s (compiled Triton checks them only with `debug=True`;
    /// the interpreter is a debugging backend, so they are checked by default).
    pub debug: bool,
    /// Integer division or remainder by zero stops the launch with
    /// [`ErrorKind::DivisionByZero`] (default). When false, it gives what a GPU gives
    /// (measured on an H100): quotient -1 (all ones), remainder the dividend — for
    /// kernels that divide in lanes a mask later discards.
    pub div_by_zero_is_error: bool,
    /// Stop the launch (an error, arguments untouched) if it is still running at this
    /// instant: huge grids and endless loops end with a message instead of running for ever.
    pub deadline: Option<Instant>,
}

impl Default for InterpOptions {
    fn default() -> InterpOptions {
        InterpOptions { threads: None, debug: true, div_by_zero_is_error: true, deadline: None }
    }
}

/// What a successful launch reports.
#[derive(Clone, Debug, Default)]
pub struct LaunchReport {
    /// `device_print` output: the lines of each program together, programs in linear order.
    pub printed: String,
    /// Wall time of running the programs (not counting argument checks and copies).
    pub elapsed: Duration,
    /// Number of programs run (`gx * gy * gz`).
    pub programs: u64,
}

fn check_args(module: &Module, kernel: &str, args: &[InterpArg]) -> Result<(), InterpError> {
    let f = module.func(kernel).ok_or_else(|| {
        let names: Vec<&str> = module.funcs.iter().filter(|f| f.kernel).map(|f| f.name.as_str()).collect();
        InterpError::launch(format!("no kernel `{kernel}` in the module (kernels: {})", names.join(", ")))
    })?;
    if args.len() != f.params.len() {
        let names: Vec<&str> = f.params.iter().map(|p| p.name.as_str()).collect();
        return Err(InterpError::launch(format!(
            "kernel `{kernel}` takes {} arguments ({}), got {}",
            f.params.len(),
            names.join(", "),
            args.len()
        )));
    }
    for (i, (p, a)) in f.params.iter().zip(args).enumerate() {
        let ty = f.ty(p.value);
        let bad = |want: String| {
            InterpError::launch(format!(
                "argument {i} (`{}`) of kernel `{kernel}`: expected {want}, got {}",
                p.name,
                a.describe()
            ))
        };
        match (ty, a) {
            (Type::Scalar(Elem::Ptr { pointee, .. }), InterpArg::Tensor(t)) => {
                if t.dtype != *pointee {
                    return Err(bad(format!("a tensor of {pointee}")));
                }
                if t.data.len() != t.numel() * t.dtype.size_bytes() {
                    return Err(InterpError::launch(format!(
                        "argument {i} (`{}`): tensor of shape {:?} has {} bytes of data, expected {}",
                        p.name,
                        t.shape,
                        t.data.len(),
                        t.numel() * t.dtype.size_bytes()
                    )));
                }
            }
            (Type::Scalar(Elem::Ptr { pointee, .. }), _) => return Err(bad(format!("a tensor of {pointee}"))),
            (Type::Scalar(Elem::Num(d)), InterpArg::Scalar { dtype, .. }) if dtype == d => {}
            (Type::Scalar(Elem::Num(d)), _) => return Err(bad(format!("a {d} scalar"))),
            (t, _) => return Err(bad(format!("{t} (tensor parameters are not supported)"))),
        }
    }
    Ok(())
}

/// The launch value of a scalar argument.
fn scalar_value(dtype: DType, bits: u64) -> Tensor {
    let elem = Elem::Num(dtype);
    let data = match dtype {
        DType::F64 => Data::D(vec![f64::from_bits(bits)]),
        d if d.is_float() => Data::F(vec![float::bits_to_f32(d, bits)]),
        DType::I1 => Data::I(vec![(bits != 0) as i64]),
        d => Data::I(vec![value::wrap(bits as i64, d)]),
    };
    Tensor::new(elem, &[], data)
}

/// Whether some function reinterprets pointers (bitcast or int_to_ptr to a pointer), which
/// could access one buffer at two element widths: such launches run on one thread.
fn reinterprets_pointers(module: &Module) -> bool {
    module.funcs.iter().any(|f| {
        f.all_ops().into_iter().any(|op| {
            let od = &f.ops[op];
            matches!(od.kind, OpKind::Cast { kind: CastKind::Bitcast | CastKind::IntToPtr, .. })
                && od.results.iter().any(|&r| f.ty(r).elem().is_ptr())
        })
    })
}

fn pool(n: usize) -> Result<Arc<rayon::ThreadPool>, InterpError> {
    type Pools = Mutex<Vec<(usize, Arc<rayon::ThreadPool>)>>;
    static POOLS: OnceLock<Pools> = OnceLock::new();
    let mut pools = POOLS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, p)) = pools.iter().find(|(k, _)| *k == n) {
        return Ok(p.clone());
    }
    let p = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .map_err(|e| InterpError::launch(format!("cannot start {n} worker threads: {e}")))?,
    );
    pools.push((n, p.clone()));
    Ok(p)
}

/// Runs `kernel` of `module` over `grid` programs with `args` (in parameter order).
///
/// On success the tensor arguments hold what the kernel wrote. On failure they
/// are unchanged, and the error names the kernel source line, the program and,
/// for memory errors, the buffer (by parameter name) and the offending index.
pub fn launch(
    module: &Module,
    kernel: &str,
    grid: [u32; 3],
    args: &mut [InterpArg],
    opts: &InterpOptions,
) -> Result<LaunchReport, InterpError> {
    check_args(module, kernel, args)?;
    let f = module.func(kernel).expect("checked above");
    let programs = grid.iter().map(|&g| g as u64).product::<u64>();
    if programs == 0 {
        // As on the GPU launcher: an empty grid runs nothing.
        return Ok(LaunchReport::default());
    }

    let mut bufs = Vec::new();
    // Launch values of the parameters; tensors become pointers to buffer 0, 1, ...
    let mut slots: Vec<(DType, Option<usize>, u64)> = Vec::new();
    for (p, a) in f.params.iter().zip(args.iter()) {
        match a {
            InterpArg::Tensor(t) => {
                slots.push((t.dtype, Some(bufs.len()), 0));
                bufs.push(Buffer::new(&p.name, t.dtype, t.numel(), &t.data));
            }
            InterpArg::Scalar { dtype, bits } => slots.push((*dtype, None, *bits)),
        }
    }
    let mem = Memory { bufs };
    let failed_at = AtomicU64::new(u64::MAX);
    let timed_out = std::sync::atomic::AtomicBool::new(false);
    let finished = AtomicU64::new(0);
    let shared = Shared { module, mem: &mem, opts, grid, failed_at: &failed_at, timed_out: &timed_out };
    let first_error: Mutex<Option<(u64, InterpError)>> = Mutex::new(None);
    let prints: Mutex<Vec<(u64, String)>> = Mutex::new(Vec::new());

    let run_one = |linear: u64| {
        if failed_at.load(Ordering::Relaxed) < linear || timed_out.load(Ordering::Relaxed) {
            return;
        }
        if opts.deadline.is_some_and(|d| Instant::now() >= d) {
            timed_out.store(true, Ordering::Relaxed);
            return;
        }
        let mut prog = Program::new(&shared, linear);
        let params: Vec<Rc<Tensor>> = f
            .params
            .iter()
            .zip(&slots)
            .map(|(p, &(dtype, buf, bits))| {
                Rc::new(match buf {
                    Some(b) => Tensor::scalar_int(f.ty(p.value).elem(), memory::base(b) as i64),
                    None => scalar_value(dtype, bits),
                })
            })
            .collect();
        let result = prog.call(f, params);
        let err = match result {
            Ok(_) => {
                finished.fetch_add(1, Ordering::Relaxed);
                None
            }
            Err(error::Stop::Abort) => return,
            Err(exec_stop) => Some(match exec_stop {
                error::Stop::Located(e) => *e,
                error::Stop::Fault(flt) => exec::locate(module, prog.pid(), f.loc, flt),
                error::Stop::Abort => unreachable!(),
            }),
        };
        if !prog.out.is_empty() {
            prints.lock().unwrap_or_else(|e| e.into_inner()).push((linear, std::mem::take(&mut prog.out)));
        }
        if let Some(e) = err {
            failed_at.fetch_min(linear, Ordering::Relaxed);
            let mut slot = first_error.lock().unwrap_or_else(|e| e.into_inner());
            if slot.as_ref().is_none_or(|(l, _)| linear < *l) {
                *slot = Some((linear, e));
            }
        }
    };

    let start = Instant::now();
    let threads = if reinterprets_pointers(module) { Some(1) } else { opts.threads };
    match threads {
        Some(0) => return Err(InterpError::launch("`threads` must be at least 1")),
        Some(1) => {
            for linear in 0..programs {
                run_one(linear);
                if failed_at.load(Ordering::Relaxed) != u64::MAX || timed_out.load(Ordering::Relaxed) {
                    break;
                }
            }
        }
        Some(n) => pool(n)?.install(|| (0..programs).into_par_iter().for_each(run_one)),
        None => (0..programs).into_par_iter().for_each(run_one),
    }
    let elapsed = start.elapsed();

    if let Some((_, e)) = first_error.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(e);
    }
    if timed_out.load(Ordering::Relaxed) {
        return Err(InterpError::launch(format!(
            "stopped at the time limit after {:.1} s: {} of {programs} programs had finished (nothing was written back)",
            elapsed.as_secs_f64(),
            finished.load(Ordering::Relaxed)
        )));
    }
    for (a, (_, buf, _)) in args.iter_mut().zip(&slots) {
        if let (InterpArg::Tensor(t), Some(b)) = (a, buf) {
            mem.bufs[*b].copy_to(&mut t.data);
        }
    }
    let mut prints = prints.into_inner().unwrap_or_else(|e| e.into_inner());
    prints.sort_by_key(|(l, _)| *l);
    Ok(LaunchReport { printed: prints.into_iter().map(|(_, s)| s).collect(), elapsed, programs })
}
