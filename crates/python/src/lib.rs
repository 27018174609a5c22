//! `trident._native`: the native half of the Python package.
//!
//! Python describes a live kernel function (`trident._live.describe`: source, resolved
//! globals, helpers) and hands the JSON here; [`Program`] compiles it with the runtime
//! and launches it on host buffers. Everything Python-facing — argument binding, grids,
//! numpy/torch conversion, exception classes — is in the Python package (`python/trident`);
//! this module stays small and data-oriented:
//!
//! * a tensor arrives as `("tensor", dtype, address, nbytes, alias_group, owner, writable)`:
//!   the byte span `[address, address + nbytes)` holding every element the array can
//!   reach from its first one (strided views included), kept alive by `owner` for the
//!   call. It is copied in, the kernel runs on the copy (without the GIL), and it is copied
//!   back only if the kernel changed it — and never when the launch fails. (Addresses, not
//!   the buffer protocol: that is in Python's limited API only from 3.11, and the wheel is
//!   abi3 for 3.9+.) Arguments whose
//!   spans overlap share an `alias_group`; if two of a group changed, nothing is written
//!   back and an error says so (each argument runs on its own copy on the CPU backends).
//! * an array in CUDA device memory (a torch CUDA tensor, `__cuda_array_interface__`) arrives
//!   as `("device", dtype, address, nbytes)`: the kernel gets the address and writes it in
//!   place on the `cuda` backend, queued on the caller's stream (`stream`, a raw `CUstream`);
//!   the runtime checks every such address with the driver first (`gpu::check_device_args`).
//! * scalars arrive as `("int", v)`, `("float", v)`, `("bool", v)`, `("str", s)`,
//!   `("dtype", name)`, `("none",)`, `("tuple", [values])` (compile-time tuples).
//! * errors are raised as `NativeError(kind, text)`, `kind` one of `compile`, `argument`,
//!   `launch`; the package turns them into `CompilationError`, `TypeError`-like
//!   `ArgumentError` and `LaunchError`.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
mod arrays;
mod buffer;
mod dispatch;

use std::sync::Arc;

use trident_runtime::args::{Arg, ArgValue, Backend, Grid};
use trident_runtime::cache::Outcome;
use trident_runtime::compiled::CompiledKernel;
use trident_runtime::launch::{prepare, run_compiled, LaunchOptions, Prepared};
use trident_runtime::{DType, ErrorKind, HostTensor, KernelProgram, RunError};

create_exception!(_native, NativeError, PyException, "An error from Trident's runtime: args are (kind, text).");

fn native_err(kind: &str, text: impl Into<String>) -> PyErr {
    NativeError::new_err((kind.to_string(), text.into()))
}

fn run_err(e: RunError) -> PyErr {
    let kind = match e.kind {
        ErrorKind::Compile => "compile",
        ErrorKind::Argument => "argument",
        ErrorKind::Other => "launch",
    };
    native_err(kind, e.text.trim_end())
}

/// A kernel source compiled from a live function's description.
#[pyclass(frozen, module = "trident._native")]
struct Program {
    prog: KernelProgram,
}

/// A tensor argument's host memory: `nbytes` bytes at `address`, which the Python
/// package guarantees writable and alive (it holds `_owner`) for the call.
struct Held<'py> {
    index: usize,
    address: usize,
    nbytes: usize,
    group: i64,
    writable: bool,
    _owner: Owner<'py>,
}

/// What keeps a tensor argument's memory alive for the call: the Python object the package
/// passed with its span, or (the fast path, [`dispatch`]) a buffer-protocol view of the array.
enum Owner<'py> {
    Object(#[allow(dead_code)] Bound<'py, PyAny>),
    View(#[allow(dead_code)] buffer::View<'py>),
}

impl Held<'_> {
    fn read(&self) -> Vec<u8> {
        if self.nbytes == 0 {
            return Vec::new();
        }
        // SAFETY: the package passes the span of a live, writable array it holds a
        // reference to (`_owner`, alive for 'py), and we hold the GIL, so nothing frees or
        // resizes it meanwhile.
        unsafe { std::slice::from_raw_parts(self.address as *const u8, self.nbytes) }.to_vec()
    }

    fn write(&self, bytes: &[u8]) {
        assert_eq!(bytes.len(), self.nbytes, "a tensor came back with another size");
        if self.nbytes == 0 {
            return;
        }
        // SAFETY: as in `read`; the array is writable (checked by the package).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.address as *mut u8, self.nbytes) }
    }
}

#[pymethods]
impl Program {
    /// Compiles nothing yet: parses the description and the kernel source in it.
    #[new]
    fn new(description_json: &str) -> PyResult<Program> {
        KernelProgram::from_live_json(description_json).map(|prog| Program { prog }).map_err(run_err)
    }

    /// `(name, is_constexpr)` of each parameter of `kernel`, in order.
    fn params(&self, kernel: Option<&str>) -> PyResult<Vec<(String, bool)>> {
        let k = self.prog.kernel(kernel).map_err(run_err)?;
        Ok(k.params.iter().map(|p| (p.name.clone(), p.is_constexpr)).collect())
    }

    /// Compiles (through the compile cache) and runs `kernel` on `args`, a list of
    /// `(name, value)` (values as in the module docs). Returns a [`Report`] (read like a dict:
    /// `backend`, `compile_s`, `run_s`, `cache` (`memo`, `hit`, `miss` or None), `printed`). `sanitize`:
    /// bounds checks in the kernel on emu and cuda (the first violation fails the launch with
    /// the interpreter's error; nothing is written back). `sass_search`: a budget (`30s`, `500`):
    /// on sass-emu and cuda, run the schedule a search of the SASS found (searched once, kept).
    /// `stream`: for device arrays, the raw `CUstream` to queue on (None: the default stream);
    /// `timed`: for device arrays, wait for the kernel and report its device time as `run_s`
    /// (otherwise the launch is asynchronous and `run_s` is 0).
    #[pyo3(signature = (kernel, grid, args, backend="interp", num_warps=None, num_stages=None, debug=false, sanitize=false, sass_search=None, stream=None, timed=false))]
    #[allow(clippy::too_many_arguments)]
    fn launch<'py>(
        &self,
        py: Python<'py>,
        kernel: Option<&str>,
        grid: (u32, u32, u32),
        args: Vec<(String, Bound<'py, PyTuple>)>,
        backend: &str,
        num_warps: Option<u32>,
        num_stages: Option<u32>,
        debug: bool,
        sanitize: bool,
        sass_search: Option<String>,
        stream: Option<u64>,
        timed: bool,
    ) -> PyResult<Report> {
        self.prog.kernel(kernel).map_err(run_err)?;
        let backend = match Backend::parse(backend) {
            Some(b @ (Backend::Interp | Backend::Emu | Backend::Cuda | Backend::SassEmu)) => b,
            _ => {
                return Err(native_err(
                    "argument",
                    format!("unknown backend `{backend}`: interp, emu, cuda or sass-emu"),
                ))
            }
        };
        if grid.0 == 0 || grid.1 == 0 || grid.2 == 0 {
            return Err(native_err("argument", format!("the grid must be positive in every dimension, not {grid:?}")));
        }
        let mut held: Vec<Held<'py>> = Vec::new();
        let launch_args = convert_args(&args, &mut held)?;
        let mut opts = LaunchOptions::new(Grid { x: grid.0, y: grid.1, z: grid.2 });
        opts.backend = backend;
        opts.num_warps = num_warps;
        opts.num_stages = num_stages;
        opts.debug = debug;
        opts.sanitize = sanitize;
        opts.sass_search = sass_search;
        opts.stream = stream;
        opts.device_timing = timed;
        let (report, _) = run_held(py, &self.prog, kernel, launch_args, &held, &opts, None)?;
        Ok(report)
    }

    /// Compiles `kernel` for `args` (as for `launch`; nothing runs, no array is written) down
    /// to `stage`: `ttir`, `ttgir`, `ptx` (text), `cubin` (bytes, with `ptxas`) or `sass`;
    /// returns `(output, metadata)`, metadata a dict (`num_warps`, `num_stages` of the GPU
    /// stages' config; for a cubin `registers`, `spill_stores`, `spill_loads`,
    /// `shared_bytes`, `num_threads`).
    #[pyo3(signature = (kernel, args, stage, arch="sm_80", num_warps=None, num_stages=None, debug=false))]
    #[allow(clippy::too_many_arguments)]
    fn stage<'py>(
        &self,
        py: Python<'py>,
        kernel: Option<&str>,
        args: Vec<(String, Bound<'py, PyTuple>)>,
        stage: &str,
        arch: &str,
        num_warps: Option<u32>,
        num_stages: Option<u32>,
        debug: bool,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyDict>)> {
        use trident_runtime::stages::{compile_stage_args, Stage, StageOptions, StageOutput};
        let k = self.prog.kernel(kernel).map_err(run_err)?;
        let st = match stage {
            "ttir" => Stage::Ttir,
            "ttgir" => Stage::Ttgir,
            "ptx" => Stage::Ptx,
            "cubin" => Stage::Cubin,
            "sass" => Stage::Sass,
            _ => {
                return Err(native_err("argument", format!("unknown stage `{stage}`: ttir, ttgir, ptx, cubin or sass")))
            }
        };
        let values = convert_args(&args, &mut Vec::new())?;
        let opts = StageOptions { arch: arch.to_string(), num_warps, num_stages, debug, ..StageOptions::new(st) };
        let prog = &self.prog;
        let out = py.detach(|| compile_stage_args(prog, k, &values, Vec::new(), &opts)).map_err(run_err)?;
        let meta = PyDict::new(py);
        meta.set_item("num_warps", num_warps)?;
        meta.set_item("num_stages", num_stages)?;
        let obj = match out {
            StageOutput::Text(t) => t.into_pyobject(py)?.into_any(),
            StageOutput::Cubin(c) => {
                if let Some(u) = c.usage.iter().find(|u| u.function == c.kernel).or(c.usage.first()) {
                    meta.set_item("registers", u.registers)?;
                    meta.set_item("spill_stores", u.spill_stores)?;
                    meta.set_item("spill_loads", u.spill_loads)?;
                }
                meta.set_item("shared_bytes", c.shared_bytes)?;
                meta.set_item("num_threads", c.num_threads)?;
                pyo3::types::PyBytes::new(py, &c.bytes).into_any()
            }
        };
        Ok((obj, meta))
    }
}

/// Runs a launch whose arguments are converted (`held`: their tensors' caller memory) and
/// copies back what the kernel changed — nothing on any error. `compiled`: the kernel the
/// dispatcher's fast path already has for this specialization (else it is prepared: config,
/// compile cache); the second value is the kernel prepared here, for the fast path to keep.
fn run_held<'py>(
    py: Python<'py>,
    prog: &KernelProgram,
    kernel: Option<&str>,
    mut launch_args: Vec<Arg>,
    held: &[Held<'py>],
    opts: &LaunchOptions,
    compiled: Option<Arc<CompiledKernel>>,
) -> PyResult<(Report, Option<Prepared>)> {
    let k = prog.kernel(kernel).map_err(run_err)?;
    let originals: Vec<Vec<u8>> = held.iter().map(|h| tensor_bytes(&launch_args[h.index]).to_vec()).collect();
    // The kernel runs without the GIL: other Python threads go on meanwhile.
    let (outcome, prepared) = py
        .detach(|| -> Result<_, RunError> {
            match compiled {
                Some(ck) => {
                    let mut out = run_compiled(&ck, &mut launch_args, opts)?;
                    out.cache = Some(Outcome::Memo);
                    Ok((out, None))
                }
                // `launch` without profiling is exactly prepare + run; split so that the
                // prepared kernel can be kept.
                None => {
                    let p = prepare(prog, k, &launch_args, opts)?;
                    let mut out = run_compiled(&p, &mut launch_args, opts)?;
                    out.compile_time = p.compile_time;
                    out.cache = p.cache;
                    Ok((out, Some(p)))
                }
            }
        })
        .map_err(run_err)?;
    // Which buffers changed; two changed members of one alias group cannot both be
    // written back.
    let changed: Vec<bool> =
        held.iter().zip(&originals).map(|(h, o)| tensor_bytes(&launch_args[h.index]) != o.as_slice()).collect();
    for (h, &c) in held.iter().zip(&changed) {
        if c && !h.writable {
            return Err(native_err(
                "launch",
                format!(
                    "the kernel wrote to argument `{}`, a read-only array; nothing was written back",
                    launch_args[h.index].name
                ),
            ));
        }
    }
    for (a, ha) in held.iter().enumerate() {
        for (b, hb) in held.iter().enumerate().skip(a + 1) {
            if ha.group >= 0 && ha.group == hb.group && changed[a] && changed[b] {
                return Err(native_err(
                    "launch",
                    format!(
                        "arguments `{}` and `{}` share memory and the kernel wrote to both; on the CPU backends \
                         every argument runs on its own copy, so the result would depend on which is copied back \
                         last. Nothing was written back.",
                        launch_args[ha.index].name, launch_args[hb.index].name
                    ),
                ));
            }
        }
    }
    for (h, &c) in held.iter().zip(&changed) {
        if c {
            h.write(tensor_bytes(&launch_args[h.index]));
        }
    }
    let report = Report {
        backend: match outcome.backend {
            Backend::Interp | Backend::Auto => "interp",
            Backend::Emu => "emu",
            Backend::Cuda => "cuda",
            Backend::SassEmu => "sass-emu",
        },
        compile_s: outcome.compile_time.as_secs_f64(),
        run_s: outcome.run_time.as_secs_f64(),
        cache: outcome.cache.map(|c| match c {
            Outcome::Memo => "memo",
            Outcome::Hit => "hit",
            Outcome::Miss => "miss",
        }),
        printed: outcome.printed,
    };
    Ok((report, prepared))
}

/// What a launch reports, read like the dict it replaces (`r["run_s"]`, `r.get(..)`, `dict(r)`):
/// `backend`, `compile_s`, `run_s` (the interpreter's wall time, the emulator's modelled time),
/// `cache` (`memo`, `hit`, `miss` or None) and `printed`. A class, not a dict, because building
/// the dict cost more than the rest of a cached launch's native call (bench/PYTHON.md).
#[pyclass(frozen, module = "trident._native")]
struct Report {
    backend: &'static str,
    compile_s: f64,
    run_s: f64,
    cache: Option<&'static str>,
    printed: String,
}

const REPORT_KEYS: [&str; 5] = ["backend", "compile_s", "run_s", "cache", "printed"];

#[pymethods]
impl Report {
    fn __getitem__<'py>(&self, py: Python<'py>, key: &str) -> PyResult<Bound<'py, PyAny>> {
        Ok(match key {
            "backend" => self.backend.into_pyobject(py)?.into_any(),
            "compile_s" => self.compile_s.into_pyobject(py)?.into_any(),
            "run_s" => self.run_s.into_pyobject(py)?.into_any(),
            "cache" => self.cache.into_pyobject(py)?.into_any(),
            "printed" => self.printed.as_str().into_pyobject(py)?.into_any(),
            _ => return Err(pyo3::exceptions::PyKeyError::new_err(key.to_string())),
        })
    }

    #[pyo3(signature = (key, default=None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        match key.extract::<String>() {
            Ok(k) if REPORT_KEYS.contains(&k.as_str()) => self.__getitem__(py, &k).map(Some),
            _ => Ok(default),
        }
    }

    fn __contains__(&self, key: &Bound<'_, PyAny>) -> bool {
        key.extract::<String>().is_ok_and(|k| REPORT_KEYS.contains(&k.as_str()))
    }

    fn __len__(&self) -> usize {
        REPORT_KEYS.len()
    }

    fn keys(&self) -> Vec<&'static str> {
        REPORT_KEYS.to_vec()
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        REPORT_KEYS.to_vec().into_pyobject(py)?.into_any().try_iter().map(|i| i.into_any())
    }

    fn values<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        REPORT_KEYS.iter().map(|k| self.__getitem__(py, k)).collect()
    }

    fn items<'py>(&self, py: Python<'py>) -> PyResult<Vec<(&'static str, Bound<'py, PyAny>)>> {
        REPORT_KEYS.iter().map(|k| Ok((*k, self.__getitem__(py, k)?))).collect()
    }

    /// The report as a plain dict.
    fn as_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for k in REPORT_KEYS {
            d.set_item(k, self.__getitem__(py, k)?)?;
        }
        Ok(d)
    }

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.as_dict(py)?.eq(other)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("Report({})", self.as_dict(py)?.repr()?))
    }
}

/// The host bytes an argument carries: a tensor's, or a descriptor's tensor's.
fn tensor_bytes(a: &Arg) -> &[u8] {
    a.value.as_tensor().map_or(&[], |t| &t.data)
}

/// The launch's arguments from `(name, tagged value)` pairs; tensors' memory in `held`.
fn convert_args<'py>(args: &[(String, Bound<'py, PyTuple>)], held: &mut Vec<Held<'py>>) -> PyResult<Vec<Arg>> {
    let mut out = Vec::with_capacity(args.len());
    for (i, (name, v)) in args.iter().enumerate() {
        let value = arg_value(name, v, i, held)?;
        out.push(Arg { name: name.clone(), text: name.clone(), value });
    }
    Ok(out)
}

/// One `(tag, ...)` value to the runtime's argument value; tensors are copied in and
/// their buffers kept in `held` for the copy back.
fn arg_value<'py>(name: &str, v: &Bound<'py, PyTuple>, index: usize, held: &mut Vec<Held<'py>>) -> PyResult<ArgValue> {
    let bad = |m: String| native_err("argument", format!("argument `{name}`: {m}"));
    let tag: String = v.get_item(0)?.extract()?;
    let item = |i: usize| v.get_item(i);
    Ok(match tag.as_str() {
        "tensor" => {
            let dtype: String = item(1)?.extract()?;
            let dt = DType::parse(&dtype).ok_or_else(|| bad(format!("unknown dtype `{dtype}`")))?;
            let address: usize = item(2)?.extract()?;
            let nbytes: usize = item(3)?.extract()?;
            let group: i64 = item(4)?.extract()?;
            let size = dt.size_bytes().max(1);
            if !nbytes.is_multiple_of(size) || (address == 0 && nbytes > 0) {
                return Err(bad(format!("internal: a span of {nbytes} bytes at {address:#x} for {dtype} elements")));
            }
            let writable: bool = item(6)?.extract()?;
            let h = Held { index, address, nbytes, group, writable, _owner: Owner::Object(item(5)?) };
            let bytes = h.read();
            let n = bytes.len() / size;
            held.push(h);
            ArgValue::Tensor(HostTensor { dtype: dt, shape: vec![n], data: bytes })
        }
        "device" => {
            let dtype: String = item(1)?.extract()?;
            let dt = DType::parse(&dtype).ok_or_else(|| bad(format!("unknown dtype `{dtype}`")))?;
            let address: u64 = item(2)?.extract()?;
            let nbytes: usize = item(3)?.extract()?;
            if address == 0 && nbytes > 0 {
                return Err(bad("a null device pointer".into()));
            }
            ArgValue::Device(trident_runtime::args::DeviceArray { dtype: dt, address, nbytes })
        }
        "int" => ArgValue::Int(item(1)?.extract()?),
        "float" => ArgValue::Float(item(1)?.extract()?),
        "bool" => ArgValue::Bool(item(1)?.extract()?),
        "str" => ArgValue::Str(item(1)?.extract()?),
        "dtype" => {
            let s: String = item(1)?.extract()?;
            ArgValue::DType(DType::parse(&s).ok_or_else(|| bad(format!("unknown dtype `{s}`")))?)
        }
        "none" => ArgValue::None,
        // ("desc", tensor or device tag, shape, strides, block shape, nan padding)
        "desc" => {
            let inner: Bound<'py, PyTuple> = item(1)?.extract()?;
            let tag: String = inner.get_item(0)?.extract()?;
            if tag != "tensor" && tag != "device" {
                return Err(bad("a tensor descriptor's base must be an array".into()));
            }
            let base = arg_value(name, &inner, index, held)?;
            let shape: Vec<i64> = item(2)?.extract()?;
            let strides: Vec<i64> = item(3)?.extract()?;
            let block: Vec<i64> = item(4)?.extract()?;
            let block = block
                .iter()
                .map(|&b| u32::try_from(b).map_err(|_| bad(format!("a block dimension of {b}"))))
                .collect::<PyResult<_>>()?;
            let nan: bool = item(5)?.extract()?;
            let d = trident_runtime::args::DescriptorArg { base, shape, strides, block, nan };
            d.check().map_err(bad)?;
            ArgValue::Descriptor(Box::new(d))
        }
        "tuple" => {
            let items: Vec<Bound<'py, PyTuple>> = item(1)?.extract()?;
            let mut values = Vec::with_capacity(items.len());
            for t in &items {
                let tag: String = t.get_item(0)?.extract()?;
                if tag == "tensor" || tag == "device" || tag == "desc" {
                    return Err(bad("tuples of tensors are not supported yet".into()));
                }
                values.push(arg_value(name, t, index, held)?);
            }
            ArgValue::Tuple(values)
        }
        other => return Err(bad(format!("internal: unknown value tag `{other}`"))),
    })
}

/// The dtype names the runtime knows, for the package's checks.
#[pyfunction]
fn dtype_size(name: &str) -> Option<usize> {
    DType::parse(name).map(|d| d.size_bytes())
}

#[pymodule]
#[pyo3(name = "_native")]
fn trident_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Program>()?;
    m.add_class::<Report>()?;
    m.add_class::<dispatch::Dispatcher>()?;
    m.add_class::<dispatch::Launcher>()?;
    m.add_class::<dispatch::Tuned>()?;
    m.add_class::<dispatch::TunedLauncher>()?;
    m.add("NativeError", m.py().get_type::<NativeError>())?;
    m.add_function(wrap_pyfunction!(dtype_size, m)?)?;
    m.add_function(wrap_pyfunction!(set_code_file, m)?)?;
    Ok(())
}

/// Names this extension module's file as the compiler's code for the compile cache's keys
/// (`trident_runtime::cache::set_code_file`): the running executable is Python's, which a
/// rebuilt or upgraded package does not change. The package calls it on first import.
#[pyfunction]
fn set_code_file(path: std::path::PathBuf) {
    trident_runtime::cache::set_code_file(path);
}
