//! The cached launch's fast path: `kernel[grid](*args, **kwargs)` from the call to the
//! backend in Rust, for the launches that need none of the package's Python.
//!
//! A [`Dispatcher`] belongs to one `JITFunction` (a plain signature: positional-or-keyword
//! parameters). `kernel[grid]` is a [`Launcher`]; calling it binds the arguments to the
//! parameters, classifies each value by its exact type (int, float, bool, str, None, a numpy
//! array through the buffer protocol, a torch tensor or a `__cuda_array_interface__` array
//! through `arrays`) and builds the specialization key: for each parameter what the compile
//! cache's memo key holds of it (`cache::key::signature_text`: a tensor's dtype, and a device
//! array's 16-byte alignment; an int's width, `== 1` and divisibility by 16; a constexpr's
//! exact value), plus the backend, warps, stages, debug, sanitize and every environment value
//! the compile reads. A hit goes straight to the compiled kernel's run; a miss prepares it
//! (config, compile cache) as `Program.launch` does and keeps it for the key.
//!
//! Host arrays (numpy, CPU torch tensors) run on `interp`, `emu` or `sass-emu`; device arrays (CUDA torch
//! tensors, interface arrays) on `cuda`, in place, queued on the stream the general path
//! would pick (`_args.launch_stream`: torch's current stream, else the array's own).
//! Anything else — a dtype or `tl.constexpr` object, a tensor subclass, a launch keyword not
//! handled here (`stream=`, `sass_search=`), a missing or unknown argument, a negative
//! stride, host and device arrays together, a searched schedule, an
//! autotuned kernel or one with heuristics in the runtime's view, caching off or IR dumps on —
//! returns to the package's Python path before anything happened (nothing run, nothing
//! written), so every error is raised by the code that always raised it.
//! Errors of the run itself are raised here as the package's exceptions (`from_native`), with
//! the caller's arrays untouched, as on the general path (`run_held` is shared).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString, PyTuple};
use pyo3::{intern, PyTraverseError, PyVisit};
use trident_runtime::args::{Arg, ArgValue, Backend, DescriptorArg, DeviceArray, Grid};
use trident_runtime::compiled::CompiledKernel;
use trident_runtime::launch::LaunchOptions;
use trident_runtime::{DType, HostTensor};

use crate::arrays::{self, Place, PyStream, Torch};
use crate::{buffer, run_held, Held, Owner, Program};

/// Launch keywords the package takes out before binding (`_jit._LAUNCH_KEYWORDS`).
const LAUNCH_KEYWORDS: [&str; 9] = [
    "num_warps",
    "num_stages",
    "num_ctas",
    "maxnreg",
    "enable_fp_fusion",
    "launch_cooperative_grid",
    "backend",
    "debug",
    "sanitize",
];

/// FNV-1a: the table's keys are a few small integers and short strings, hashed on every
/// launch; SipHash's protection against chosen keys buys nothing here and costs more.
#[derive(Default)]
struct Fnv(u64);

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 { 0xcbf2_9ce4_8422_2325 } else { self.0 };
        for &b in bytes {
            h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

type Table = HashMap<Key, Arc<CompiledKernel>, std::hash::BuildHasherDefault<Fnv>>;

/// Kept specializations per kernel before the table is cleared (a kernel launched with ever
/// new constexpr values must not grow it without bound).
const MAX_ENTRIES: usize = 1024;

/// One parameter's part of the key: what the compile's memo key holds of its value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Part {
    /// A host array (its memory is copied for the interpreter and the emulators).
    Tensor(DType),
    /// A device array: its dtype and whether its address is 16-byte aligned (as the
    /// runtime's key specializes pointers).
    Device {
        dtype: DType,
        aligned16: bool,
    },
    /// A runtime int: i64 (else i32), `== 1`, divisible by 16.
    Int {
        wide: bool,
        one: bool,
        div16: bool,
    },
    Float,
    Bool,
    /// None (a compile-time value on any parameter).
    None,
    ConstInt(i64),
    ConstFloat(u64),
    ConstBool(bool),
    ConstStr(String),
    /// A host tensor descriptor: its tensor's part, box shape, NaN padding and which sizes
    /// are multiples of 16 (what `signature_text` keys of `ArgInfo::TensorDesc`).
    Desc {
        base: Box<Part>,
        block: Vec<u32>,
        nan: bool,
        shape_div16: Vec<bool>,
    },
}

/// Everything besides the arguments that selects the compiled kernel.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Head {
    backend: Backend,
    num_warps: Option<u32>,
    num_stages: Option<u32>,
    debug: bool,
    /// The launch's or `TRIDENT_SANITIZE`.
    sanitize: bool,
    /// `TRITON_F32_DEFAULT` as the compile reads it.
    dot_precision: &'static str,
    /// `TRIDENT_EMU_TARGET` (emu only).
    emu_target: Option<String>,
    /// `TRIDENT_PINGPONG`, `TRIDENT_SETMAXNREG` and `TRIDENT_NO_WGMMA`: options of the GPU
    /// compile (the emulator's and CUDA's kernels).
    pingpong: bool,
    setmaxnreg: bool,
    no_wgmma: bool,
    /// `TRIDENT_SPLIT_LOOPS`: a tile pass, so every backend's kernel.
    split_loops: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    head: Head,
    parts: Vec<Part>,
}

/// A kernel's fast path (see the module docs).
#[pyclass(frozen, module = "trident._native")]
pub(crate) struct Dispatcher {
    program: Py<Program>,
    name: String,
    names: Vec<Py<PyString>>,
    name_texts: Vec<String>,
    constexpr: Vec<bool>,
    defaults: Vec<Option<Py<PyAny>>>,
    /// The decorator's `debug` and `sanitize` (launch keywords override them).
    debug: bool,
    sanitize: bool,
    /// `JITFunction._run_slow(*args, grid=grid, **kwargs)`: the package's path.
    slow: Py<PyAny>,
    /// `trident._jit`: `_default_backend`, `grid3`.
    jit: Py<PyAny>,
    /// `trident._errors.from_native`.
    from_native: Py<PyAny>,
    /// `numpy.ndarray` (exact type only: subclasses take the general path).
    ndarray: Py<PyAny>,
    /// torch's types and dtypes, read from the package once torch is imported (`arrays`).
    torch: OnceLock<Torch>,
    /// The decorator asks for a searched SASS schedule (the general path runs or refuses it).
    sass_search: bool,
    /// Whether the runtime sees no autotune configs and no heuristics: then the compiled
    /// kernel follows from the key alone.
    keyable: bool,
    table: Mutex<Table>,
}

/// `kernel[grid]`: a launch waiting for its arguments.
#[pyclass(frozen, module = "trident._native")]
pub(crate) struct Launcher {
    dispatcher: Py<Dispatcher>,
    grid: Py<PyAny>,
}

/// What the fast path decided.
enum Fast {
    /// Launched (or an empty grid): the value to return.
    Done(Py<PyAny>),
    /// Not handled: the package's path runs the launch.
    Fallback,
}

#[pymethods]
impl Dispatcher {
    #[new]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        program: Py<Program>,
        name: String,
        names: Vec<String>,
        defaults: Vec<(bool, Py<PyAny>)>,
        debug: bool,
        sanitize: bool,
        slow: Py<PyAny>,
        jit: Py<PyAny>,
        from_native: Py<PyAny>,
        ndarray: Py<PyAny>,
        sass_search: bool,
    ) -> PyResult<Dispatcher> {
        let prog = &program.get().prog;
        let k = prog.kernel(None).map_err(crate::run_err)?;
        let constexpr = names.iter().map(|n| k.param(n).is_some_and(|p| p.is_constexpr)).collect();
        let keyable = k.autotune.is_none() && k.heuristics.is_empty() && k.params.len() == names.len();
        Ok(Dispatcher {
            program,
            name,
            names: names.iter().map(|n| PyString::intern(py, n).unbind()).collect(),
            name_texts: names,
            constexpr,
            // `(has_default, default)`: a default may itself be None.
            defaults: defaults.into_iter().map(|(has, d)| has.then_some(d)).collect(),
            debug,
            sanitize,
            slow,
            jit,
            from_native,
            ndarray,
            torch: OnceLock::new(),
            sass_search,
            keyable,
            table: Mutex::new(Table::default()),
        })
    }

    /// `kernel[grid]`.
    fn __getitem__(slf: Py<Self>, grid: Py<PyAny>) -> Launcher {
        Launcher { dispatcher: slf, grid }
    }

    /// The fast path for `JITFunction.run`: `(True, result)` when it launched, `(False, None)`
    /// when the package's path must.
    fn try_launch<'py>(
        &self,
        py: Python<'py>,
        grid: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<(bool, Py<PyAny>)> {
        Ok(match self.fast(py, grid, args, kwargs)? {
            Fast::Done(r) => (true, r),
            Fast::Fallback => (false, py.None()),
        })
    }

    /// How many specializations the fast path keeps (for tests).
    fn cached(&self) -> usize {
        self.table.lock().map(|t| t.len()).unwrap_or(0)
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.program)?;
        visit.call(&self.slow)?;
        visit.call(&self.jit)?;
        visit.call(&self.from_native)?;
        visit.call(&self.ndarray)?;
        if let Some(t) = self.torch.get() {
            t.traverse(&visit)?;
        }
        for d in self.defaults.iter().flatten() {
            visit.call(d)?;
        }
        Ok(())
    }
}

#[pymethods]
impl Launcher {
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let d = self.dispatcher.get();
        let grid = self.grid.bind(py);
        match d.fast(py, grid, args, kwargs)? {
            Fast::Done(r) => Ok(r),
            Fast::Fallback => Ok(d.slow.bind(py).call(args, Some(&with_grid(py, kwargs, grid)?))?.unbind()),
        }
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.dispatcher)?;
        visit.call(&self.grid)
    }
}

/// An autotuned kernel's fast path (`Autotuner.__getitem__`): the config its Python
/// autotuner chose for a key is looked up natively, and the launch goes to the kernel's
/// [`Dispatcher`] with the config's meta-parameters and launch options, as `Autotuner.run`
/// passes them. Only keys of plain values (ints, floats, bools, strings, None — the sizes a
/// tuning key usually names) and autotuners without hooks are handled; anything else, a key
/// not tuned yet, and every fallback of the dispatcher go to `Autotuner.run`, which tunes,
/// runs the hooks and raises the errors.
#[pyclass(frozen, module = "trident._native")]
pub(crate) struct Tuned {
    dispatcher: Py<Dispatcher>,
    /// The `Autotuner` (its `run` is the general path; `best_config` is kept up to date).
    autotuner: Py<PyAny>,
    /// Each key's parameter index and name.
    keys: Vec<(usize, Py<PyString>)>,
    /// `Autotuner._fast`: key tuple → `(config, config.all_kwargs())`, filled by `run`.
    table: Py<PyDict>,
}

/// `autotuned_kernel[grid]`.
#[pyclass(frozen, module = "trident._native")]
pub(crate) struct TunedLauncher {
    tuned: Py<Tuned>,
    grid: Py<PyAny>,
}

#[pymethods]
impl Tuned {
    #[new]
    fn new(
        py: Python<'_>,
        dispatcher: Py<Dispatcher>,
        autotuner: Py<PyAny>,
        keys: Vec<(usize, String)>,
        table: Py<PyDict>,
    ) -> Tuned {
        let keys = keys.into_iter().map(|(i, n)| (i, PyString::intern(py, &n).unbind())).collect();
        Tuned { dispatcher, autotuner, keys, table }
    }

    fn __getitem__(slf: Py<Self>, grid: Py<PyAny>) -> TunedLauncher {
        TunedLauncher { tuned: slf, grid }
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.dispatcher)?;
        visit.call(&self.autotuner)?;
        visit.call(&self.table)?;
        for (_, n) in &self.keys {
            visit.call(n)?;
        }
        Ok(())
    }
}

#[pymethods]
impl TunedLauncher {
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let t = self.tuned.get();
        let grid = self.grid.bind(py);
        if let Some(r) = t.try_fast(py, grid, args, kwargs)? {
            return Ok(r);
        }
        let kw = with_grid(py, kwargs, grid)?;
        Ok(t.autotuner.bind(py).call_method(intern!(py, "run"), args, Some(&kw))?.unbind())
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.tuned)?;
        visit.call(&self.grid)
    }
}

impl Tuned {
    /// The launch, if the fast path takes it (see the type's docs).
    fn try_fast<'py>(
        &self,
        py: Python<'py>,
        grid: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Option<Py<PyAny>>> {
        let mut key = Vec::with_capacity(self.keys.len());
        for (i, name) in &self.keys {
            let v = if *i < args.len() {
                args.get_item(*i)?
            } else {
                match kwargs.map(|k| k.get_item(name.bind(py))).transpose()?.flatten() {
                    Some(v) => v,
                    None => return Ok(None), // a default: the package binds it
                }
            };
            let plain = v.is_exact_instance_of::<PyInt>()
                || v.is_exact_instance_of::<PyFloat>()
                || v.is_exact_instance_of::<PyBool>()
                || v.is_exact_instance_of::<PyString>()
                || v.is_none();
            if !plain {
                return Ok(None);
            }
            key.push(v);
        }
        let key = PyTuple::new(py, key)?;
        let Some(entry) = self.table.bind(py).get_item(&key)? else { return Ok(None) };
        let (config, meta): (Bound<'py, PyAny>, Bound<'py, PyDict>) = entry.extract()?;
        let kw = match kwargs {
            Some(k) => k.copy()?,
            None => PyDict::new(py),
        };
        for (k, v) in meta.iter() {
            if kw.contains(&k)? {
                return Ok(None); // given twice: the package's TypeError
            }
            kw.set_item(k, v)?;
        }
        match self.dispatcher.get().fast(py, grid, args, Some(&kw))? {
            Fast::Done(r) => {
                self.autotuner.bind(py).setattr(intern!(py, "best_config"), config)?;
                Ok(Some(r))
            }
            Fast::Fallback => Ok(None),
        }
    }
}

/// The call's keywords plus `grid=`, as `functools.partial(run, grid=grid)` passed them to the
/// package's path (a `grid=` at the call wins).
fn with_grid<'py>(
    py: Python<'py>,
    kwargs: Option<&Bound<'py, PyDict>>,
    grid: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyDict>> {
    let kw = match kwargs {
        Some(k) => k.copy()?,
        None => PyDict::new(py),
    };
    if !kw.contains(intern!(py, "grid"))? {
        kw.set_item(intern!(py, "grid"), grid)?;
    }
    Ok(kw)
}

/// The launch keywords the fast path takes.
#[derive(Default)]
struct LaunchKw<'py> {
    backend: Option<Bound<'py, PyAny>>,
    num_warps: Option<Bound<'py, PyAny>>,
    num_stages: Option<Bound<'py, PyAny>>,
    debug: Option<Bound<'py, PyAny>>,
    sanitize: Option<Bound<'py, PyAny>>,
}

/// An optional launch count given as an exact int (None: not given); `Err(())`: anything else.
fn opt_u32(v: &Option<Bound<'_, PyAny>>) -> Result<Option<u32>, ()> {
    match v {
        None => Ok(None),
        Some(v) if v.is_none() => Ok(None),
        Some(v) if v.is_exact_instance_of::<PyInt>() => v.extract::<u32>().map(Some).map_err(|_| ()),
        Some(_) => Err(()),
    }
}

/// A launch flag as the package reads it (`bool(value)`), for values whose truth is plain.
fn flag(v: &Option<Bound<'_, PyAny>>, default: bool) -> Result<bool, ()> {
    match v {
        None => Ok(default),
        Some(v) if v.is_none() => Ok(false),
        Some(v) if v.is_exact_instance_of::<PyBool>() || v.is_exact_instance_of::<PyInt>() => {
            v.is_truthy().map_err(|_| ())
        }
        Some(_) => Err(()),
    }
}

impl Dispatcher {
    fn fast<'py>(
        &self,
        py: Python<'py>,
        grid: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Fast> {
        if !self.keyable {
            return Ok(Fast::Fallback);
        }
        // Bind: positional, then keywords (launch keywords first, as the package takes them
        // out before binding), then defaults.
        let n = self.names.len();
        if args.len() > n {
            return Ok(Fast::Fallback);
        }
        let mut slots: Vec<Option<Bound<'py, PyAny>>> = Vec::with_capacity(n);
        slots.extend(args.iter().map(Some));
        slots.resize(n, None);
        let mut kw = LaunchKw::default();
        if let Some(kwargs) = kwargs {
            for (k, v) in kwargs.iter() {
                let Some(place) = self.keyword(&k, &mut slots, &mut kw) else { return Ok(Fast::Fallback) };
                if place.is_some() {
                    return Ok(Fast::Fallback); // given twice: the package's TypeError
                }
                *place = Some(v);
            }
        }
        for (slot, default) in slots.iter_mut().zip(&self.defaults) {
            if slot.is_none() {
                match default {
                    Some(d) => *slot = Some(d.bind(py).clone()),
                    None => return Ok(Fast::Fallback), // missing: the package's TypeError
                }
            }
        }
        let slots: Vec<Bound<'py, PyAny>> = slots.into_iter().flatten().collect();

        let (Ok(num_warps), Ok(num_stages), Ok(debug), Ok(sanitize)) = (
            opt_u32(&kw.num_warps),
            opt_u32(&kw.num_stages),
            flag(&kw.debug, self.debug),
            flag(&kw.sanitize, self.sanitize),
        ) else {
            return Ok(Fast::Fallback);
        };

        // Classify the values (no side effects: a fallback after this point is still clean).
        let Some(Classified { parts, mut values, hosts, on_device, torch_device, stream_hint }) =
            self.classify(py, &slots)?
        else {
            return Ok(Fast::Fallback);
        };

        // The backend. Device arrays run where they are: on `cuda` (a launch keyword naming
        // another backend, host arrays beside them and a searched schedule are the general
        // path's errors). Otherwise `backend=`, else `set_backend`'s, else TRIDENT_BACKEND,
        // else interp.
        let explicit = kw.backend.as_ref().filter(|b| b.is_truthy().unwrap_or(true));
        let backend = match explicit {
            Some(b) => b.clone(),
            None if on_device => PyString::new(py, "cuda").into_any(),
            None => self.jit.bind(py).getattr(intern!(py, "_default_backend"))?,
        };
        let backend = if backend.is_none() {
            match std::env::var("TRIDENT_BACKEND") {
                Ok(v) if !v.is_empty() => v,
                Ok(_) | Err(std::env::VarError::NotPresent) => "interp".to_string(),
                Err(_) => return Ok(Fast::Fallback),
            }
        } else {
            match backend.cast_exact::<PyString>() {
                Ok(s) => s.to_cow()?.into_owned(),
                Err(_) => return Ok(Fast::Fallback),
            }
        };
        // An unknown name gets the package's error on the general path.
        let backend = match (backend.as_str(), on_device) {
            ("interp", false) => Backend::Interp,
            ("emu", false) => Backend::Emu,
            ("sass-emu", false) => Backend::SassEmu,
            ("cuda", true) if hosts.is_empty() => Backend::Cuda,
            _ => return Ok(Fast::Fallback),
        };
        // A searched schedule (sass-emu, cuda) is the general path's: it searches, or refuses
        // device arrays.
        if matches!(backend, Backend::Cuda | Backend::SassEmu)
            && (self.sass_search || trident_runtime::env::sass_search().is_some())
        {
            return Ok(Fast::Fallback);
        }
        let stream = match torch_device {
            Some(d) => match self.torch.get().and_then(|t| arrays::torch_stream(py, t, d)) {
                Some(s) => Some(s),
                None => return Ok(Fast::Fallback),
            },
            None => stream_hint,
        };
        // What the compile reads from the environment, read per launch as the runtime does
        // (a test may change it between launches): part of the key, or no fast path at all.
        if trident_runtime::env::dump_ir() || !trident_runtime::env::cache_enabled() {
            return Ok(Fast::Fallback);
        }
        let emu_target = match backend {
            Backend::Emu | Backend::SassEmu => match std::env::var("TRIDENT_EMU_TARGET") {
                Ok(v) => Some(v),
                Err(std::env::VarError::NotPresent) => None,
                Err(_) => return Ok(Fast::Fallback),
            },
            _ => None,
        };
        let head = Head {
            backend,
            num_warps,
            num_stages,
            debug,
            sanitize: sanitize || trident_runtime::env::sanitize(),
            dot_precision: trident_runtime::env::compile_options(debug, false).default_dot_precision.name(),
            emu_target,
            pingpong: trident_runtime::env::pingpong(),
            setmaxnreg: trident_runtime::env::setmaxnreg(),
            no_wgmma: !trident_runtime::env::wgmma_allowed(),
            split_loops: trident_runtime::env::split_loops(),
        };

        // The grid: a tuple of positive ints here; anything else through the package's
        // `grid3` (callables get the bound arguments, as on the general path).
        let g = match simple_grid(grid) {
            Some(g) => Some(g),
            None => {
                let meta = PyDict::new(py);
                for (name, v) in self.names.iter().zip(&slots) {
                    meta.set_item(name.bind(py), v)?;
                }
                let r = self.jit.bind(py).getattr(intern!(py, "grid3"))?.call1((self.name.as_str(), grid, meta))?;
                if r.is_none() {
                    None
                } else {
                    Some(r.extract::<(u32, u32, u32)>()?)
                }
            }
        };
        let Some((gx, gy, gz)) = g else { return Ok(Fast::Done(py.None())) };
        if gx == 0 || gy == 0 || gz == 0 {
            return Ok(Fast::Done(py.None())); // an empty grid launches nothing
        }
        let groups = alias_groups(&hosts);
        let mut held: Vec<Held<'py>> = Vec::with_capacity(hosts.len());
        for (a, group) in hosts.into_iter().zip(groups) {
            let h = Held {
                index: a.index,
                address: a.address,
                nbytes: a.nbytes,
                group,
                writable: a.writable,
                _owner: a.owner,
            };
            let size = a.dtype.size_bytes().max(1);
            let t = ArgValue::Tensor(HostTensor { dtype: a.dtype, shape: vec![a.nbytes / size], data: h.read() });
            match &mut values[a.index].value {
                ArgValue::Descriptor(d) if a.in_descriptor => d.base = t,
                v => *v = t,
            }
            held.push(h);
        }
        // Descriptors breaking a rule get the general path's error (nothing has run).
        if values.iter().any(|a| matches!(&a.value, ArgValue::Descriptor(d) if d.check().is_err())) {
            return Ok(Fast::Fallback);
        }

        let mut opts = LaunchOptions::new(Grid { x: gx, y: gy, z: gz });
        opts.backend = head.backend;
        opts.num_warps = head.num_warps;
        opts.num_stages = head.num_stages;
        opts.debug = head.debug;
        opts.sanitize = sanitize;
        opts.stream = stream;
        let key = Key { head, parts };
        let start = Instant::now();
        let compiled = self.table.lock().ok().and_then(|t| t.get(&key).cloned());
        let lookup = start.elapsed();

        let hit = compiled.is_some();
        let prog = &self.program.get().prog;
        let (mut report, prepared) = match run_held(py, prog, None, values, &held, &opts, compiled) {
            Ok(r) => r,
            Err(e) => return Err(self.package_error(py, e)),
        };
        drop(held); // the views are released with the GIL held
        if hit {
            report.compile_s = lookup.as_secs_f64();
        }
        // Kept only when the runtime did no tuning and used its cache (so the memo's key,
        // which this key follows, decided the kernel).
        if let Some(p) = prepared.filter(|p| p.tuning.is_none() && p.cache.is_some()) {
            if let Ok(mut t) = self.table.lock() {
                if t.len() >= MAX_ENTRIES {
                    t.clear();
                }
                t.insert(key, p.compiled.clone());
            }
        }
        if !report.printed.is_empty() {
            let out = py.import(intern!(py, "sys"))?.getattr(intern!(py, "stdout"))?;
            out.call_method1(intern!(py, "write"), (report.printed.as_str(),))?;
            out.call_method0(intern!(py, "flush"))?;
        }
        Ok(Fast::Done(Py::new(py, report)?.into_any()))
    }

    /// Where keyword `k` goes: a parameter's slot or a launch keyword's; None for anything
    /// the fast path leaves to the package (unknown names, `warmup`, the ignored keywords).
    fn keyword<'a, 'py>(
        &self,
        k: &Bound<'py, PyAny>,
        slots: &'a mut [Option<Bound<'py, PyAny>>],
        kw: &'a mut LaunchKw<'py>,
    ) -> Option<&'a mut Option<Bound<'py, PyAny>>> {
        // Keyword names at a call site are interned: compare pointers first.
        let by_ptr = self.names.iter().position(|n| n.as_ptr() == k.as_ptr());
        let text = || k.cast_exact::<PyString>().ok().and_then(|s| s.to_cow().ok().map(|c| c.into_owned()));
        let launch_kw = |kw: &'a mut LaunchKw<'py>, t: &str| -> Option<&'a mut Option<Bound<'py, PyAny>>> {
            match t {
                "backend" => Some(&mut kw.backend),
                "num_warps" => Some(&mut kw.num_warps),
                "num_stages" => Some(&mut kw.num_stages),
                "debug" => Some(&mut kw.debug),
                "sanitize" => Some(&mut kw.sanitize),
                _ => None,
            }
        };
        match by_ptr {
            // A parameter named like a launch keyword is a launch keyword to the package.
            Some(i) if !LAUNCH_KEYWORDS.contains(&self.name_texts[i].as_str()) => Some(&mut slots[i]),
            _ => {
                let t = text()?;
                if LAUNCH_KEYWORDS.contains(&t.as_str()) {
                    return launch_kw(kw, &t);
                }
                let i = self.name_texts.iter().position(|n| *n == t)?;
                Some(&mut slots[i])
            }
        }
    }

    /// Each bound value's part of the key and its launch value (host arrays' values are filled
    /// in once every argument is known to be handled), the host arrays to copy in, and what
    /// picks a device launch's stream; None for a value the fast path leaves to the package.
    fn classify<'py>(&self, py: Python<'py>, slots: &[Bound<'py, PyAny>]) -> PyResult<Option<Classified<'py>>> {
        let mut parts = Vec::with_capacity(slots.len());
        let mut values: Vec<Arg> = Vec::with_capacity(slots.len());
        let mut hosts: Vec<HostArray<'py>> = Vec::new();
        let mut on_device = false;
        // The stream of a launch on device arrays, as `_args.launch_stream` picks it: torch's
        // current stream on the first CUDA tensor's device, else the first stream an
        // interface array names.
        let mut torch_device: Option<i64> = None;
        let mut stream_hint: Option<u64> = None;
        for (i, v) in slots.iter().enumerate() {
            let cx = self.constexpr[i];
            let (part, value) = if v.is_exact_instance_of::<PyInt>() {
                let Ok(x) = v.extract::<i64>() else { return Ok(None) };
                let part = if cx {
                    Part::ConstInt(x)
                } else {
                    Part::Int { wide: i32::try_from(x).is_err(), one: x == 1, div16: x % 16 == 0 }
                };
                (part, ArgValue::Int(x))
            } else if v.is_exact_instance_of::<PyFloat>() {
                let x: f64 = v.extract()?;
                (if cx { Part::ConstFloat(x.to_bits()) } else { Part::Float }, ArgValue::Float(x))
            } else if v.is_exact_instance_of::<PyBool>() {
                let x = v.is_truthy()?;
                (if cx { Part::ConstBool(x) } else { Part::Bool }, ArgValue::Bool(x))
            } else if v.is_none() {
                (Part::None, ArgValue::None)
            } else if v.is_exact_instance_of::<PyString>() && cx {
                let s = v.cast_exact::<PyString>()?.to_cow()?.into_owned();
                (Part::ConstStr(s.clone()), ArgValue::Str(s))
            } else if cx {
                return Ok(None);
            } else if v.get_type().is(self.ndarray.bind(py)) {
                let Some((view, info)) = buffer::view(v) else { return Ok(None) };
                hosts.push(HostArray {
                    index: i,
                    in_descriptor: false,
                    dtype: info.dtype,
                    address: info.address,
                    nbytes: info.nbytes,
                    writable: info.writable,
                    owner: Owner::View(view),
                });
                // Filled in below, once every argument is known to be handled.
                (Part::Tensor(info.dtype), ArgValue::None)
            } else if let Some(d) = descriptor_fields(py, v) {
                // A host descriptor: its fields read now (a pre-hook may have set them), its
                // tensor classified as any array argument. Triton's rules are checked once the
                // host arrays are read (`DescriptorArg::check`), falling back on a violation.
                let Some((base, base_part)) =
                    self.array(py, &d.base, i, true, &mut hosts, &mut on_device, &mut torch_device, &mut stream_hint)
                else {
                    return Ok(None);
                };
                let part = Part::Desc {
                    base: Box::new(base_part),
                    block: d.block.clone(),
                    nan: d.nan,
                    shape_div16: d.shape.iter().map(|n| n % 16 == 0).collect(),
                };
                let value = DescriptorArg { base, shape: d.shape, strides: d.strides, block: d.block, nan: d.nan };
                (part, ArgValue::Descriptor(Box::new(value)))
            } else {
                let Some((value, part)) =
                    self.array(py, v, i, false, &mut hosts, &mut on_device, &mut torch_device, &mut stream_hint)
                else {
                    return Ok(None);
                };
                (part, value)
            };
            parts.push(part);
            let name = self.name_texts[i].clone();
            values.push(Arg { text: name.clone(), name, value });
        }

        Ok(Some(Classified { parts, values, hosts, on_device, torch_device, stream_hint }))
    }

    /// A torch tensor or interface array `v` of argument `index` (`in_descriptor`: a host
    /// descriptor's tensor): its launch value (`None` for a host array, filled in once every
    /// argument is handled) and key part; None for anything else.
    #[allow(clippy::too_many_arguments)]
    fn array<'py>(
        &self,
        py: Python<'py>,
        v: &Bound<'py, PyAny>,
        index: usize,
        in_descriptor: bool,
        hosts: &mut Vec<HostArray<'py>>,
        on_device: &mut bool,
        torch_device: &mut Option<i64>,
        stream_hint: &mut Option<u64>,
    ) -> Option<(ArgValue, Part)> {
        if v.get_type().is(self.ndarray.bind(py)) {
            let (view, info) = buffer::view(v)?;
            hosts.push(HostArray {
                index,
                in_descriptor,
                dtype: info.dtype,
                address: info.address,
                nbytes: info.nbytes,
                writable: info.writable,
                owner: Owner::View(view),
            });
            return Some((ArgValue::None, Part::Tensor(info.dtype)));
        }
        let a = match self.torch(py, v) {
            Some(torch) => arrays::torch_tensor(py, torch, v),
            None => arrays::interface_array(py, v),
        }?;
        Some(match a.place {
            Place::Host => {
                hosts.push(HostArray {
                    index,
                    in_descriptor,
                    dtype: a.dtype,
                    address: a.address,
                    nbytes: a.nbytes,
                    writable: true,
                    owner: Owner::Object(v.clone()),
                });
                (ArgValue::None, Part::Tensor(a.dtype))
            }
            Place::Device { torch_device: td, stream } => {
                *on_device = true;
                if torch_device.is_none() {
                    *torch_device = td;
                }
                if let (None, Some(PyStream::Handle(h))) = (*stream_hint, stream) {
                    *stream_hint = Some(h);
                }
                let part = Part::Device { dtype: a.dtype, aligned16: a.address % 16 == 0 };
                let d = DeviceArray { dtype: a.dtype, address: a.address as u64, nbytes: a.nbytes };
                (ArgValue::Device(d), part)
            }
        })
    }

    /// torch's facts when `v` is exactly a torch tensor; they are read from the package the
    /// first time a value from torch arrives (torch need not be imported before the kernel
    /// is made, nor at all).
    fn torch<'a>(&'a self, py: Python<'_>, v: &Bound<'_, PyAny>) -> Option<&'a Torch> {
        if let Some(t) = self.torch.get() {
            return t.is_tensor(py, v).then_some(t);
        }
        let module = v.get_type().module().ok()?;
        if !module.to_cow().ok()?.starts_with("torch") {
            return None;
        }
        let info = self.jit.bind(py).getattr(intern!(py, "_args")).ok()?;
        let info = info.call_method0(intern!(py, "torch_fast_info")).ok()?;
        let t = Torch::from_info(&info)?;
        let t = self.torch.get_or_init(|| t);
        t.is_tensor(py, v).then_some(t)
    }

    /// The package's exception for a native error (`_errors.from_native`).
    fn package_error(&self, py: Python<'_>, e: PyErr) -> PyErr {
        if !e.is_instance_of::<crate::NativeError>(py) {
            return e;
        }
        match self.from_native.bind(py).call1((e.value(py),)) {
            Ok(exc) => PyErr::from_value(exc),
            Err(other) => other,
        }
    }
}

/// The bound values as the fast path takes them ([`Dispatcher::classify`]).
struct Classified<'py> {
    parts: Vec<Part>,
    values: Vec<Arg>,
    hosts: Vec<HostArray<'py>>,
    /// Whether any value is a device array.
    on_device: bool,
    /// The first CUDA torch tensor's device: the launch goes on torch's current stream there.
    torch_device: Option<i64>,
    /// Else the first stream an interface array names (`_args.launch_stream`).
    stream_hint: Option<u64>,
}

/// A host array the launch copies in (and back, if the kernel changed it).
struct HostArray<'py> {
    index: usize,
    /// The tensor of the host descriptor at `index`, not the argument itself.
    in_descriptor: bool,
    dtype: DType,
    address: usize,
    nbytes: usize,
    writable: bool,
    owner: Owner<'py>,
}

/// A host descriptor's fields, read from `v` when it is one (Trident's `TensorDescriptor` or
/// Triton's, by name and fields); None for anything else, and for a descriptor the fast path
/// leaves to the package (fields that are not ints, an unknown padding, `round_f32_to_tf32`).
fn descriptor_fields<'py>(py: Python<'py>, v: &Bound<'py, PyAny>) -> Option<DescFields<'py>> {
    let ty = v.get_type();
    if ty.name().ok()?.to_cow().ok()? != "TensorDescriptor" {
        return None;
    }
    let ints = |name: &Bound<'py, PyString>| -> Option<Vec<i64>> {
        let seq = v.getattr(name).ok()?;
        let mut out = vec![];
        for x in seq.try_iter().ok()? {
            let x = x.ok()?;
            if !x.is_exact_instance_of::<PyInt>() {
                return None;
            }
            out.push(x.extract::<i64>().ok()?);
        }
        Some(out)
    };
    let shape = ints(intern!(py, "shape"))?;
    let strides = ints(intern!(py, "strides"))?;
    let block = ints(intern!(py, "block_shape"))?.into_iter().map(|b| u32::try_from(b).ok()).collect::<Option<_>>()?;
    let nan = match v.getattr(intern!(py, "padding")) {
        Ok(p) => match p.cast_exact::<PyString>().ok()?.to_cow().ok()?.as_ref() {
            "zero" => false,
            "nan" => true,
            _ => return None,
        },
        Err(_) => false,
    };
    if v.getattr(intern!(py, "round_f32_to_tf32")).is_ok_and(|r| r.is_truthy().unwrap_or(true)) {
        return None;
    }
    Some(DescFields { base: v.getattr(intern!(py, "base")).ok()?, shape, strides, block, nan })
}

/// What [`descriptor_fields`] reads.
struct DescFields<'py> {
    base: Bound<'py, PyAny>,
    shape: Vec<i64>,
    strides: Vec<i64>,
    block: Vec<u32>,
    nan: bool,
}

/// Alias groups of host arrays (-1: none): clusters of overlapping spans, as
/// `_args.convert` makes them.
fn alias_groups(hosts: &[HostArray<'_>]) -> Vec<i64> {
    let mut groups = vec![-1i64; hosts.len()];
    if hosts.len() < 2 {
        return groups;
    }
    let mut spans: Vec<(usize, usize, usize)> =
        hosts.iter().enumerate().map(|(j, a)| (a.address, a.address + a.nbytes, j)).collect();
    spans.sort_unstable();
    let mut clusters: Vec<Vec<usize>> = Vec::new();
    let mut end = 0usize;
    for (lo, hi, j) in spans {
        if hi == lo {
            continue;
        }
        match clusters.last_mut() {
            Some(c) if lo < end => {
                c.push(j);
                end = end.max(hi);
            }
            _ => {
                clusters.push(vec![j]);
                end = hi;
            }
        }
    }
    for (gi, c) in clusters.iter().filter(|c| c.len() > 1).enumerate() {
        for &j in c {
            groups[j] = gi as i64;
        }
    }
    groups
}

/// A grid given as a tuple of one to three ints, each in `0..2^31` (0: an empty grid).
fn simple_grid(grid: &Bound<'_, PyAny>) -> Option<(u32, u32, u32)> {
    let t = grid.cast_exact::<PyTuple>().ok()?;
    if t.is_empty() || t.len() > 3 {
        return None;
    }
    let mut g = [1u32; 3];
    for (i, x) in t.iter().enumerate() {
        if !x.is_exact_instance_of::<PyInt>() {
            return None;
        }
        let v: i64 = x.extract().ok()?;
        if !(0..1 << 31).contains(&v) {
            return None;
        }
        g[i] = v as u32;
    }
    Some((g[0], g[1], g[2]))
}
