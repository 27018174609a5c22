//! Differential-test harness: compile a kernel to PTX, check it with `ptxas` for sm_80 and
//! sm_90, run it on the PTX emulator and on the tile-IR interpreter with the same fresh
//! random inputs, and compare every output buffer.
#![allow(dead_code)]

use trident_core::{DType, HostTensor};
use trident_gpu::{emit_ptx, GpuOptions, PtxKernel, Target};
use trident_ir::Module;

/// splitmix64.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// A fresh seed per run (or `TRIDENT_TEST_SEED`), printed so failures can be replayed.
pub fn seed() -> u64 {
    let s = std::env::var("TRIDENT_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(7)
    });
    eprintln!("seed = {s} (set TRIDENT_TEST_SEED={s} to replay)");
    s
}

/// Random values of `dtype` (integers in a small range so that sums do not overflow).
pub fn random(rng: &mut Rng, dtype: DType, shape: &[usize], scale: f64) -> HostTensor {
    let n: usize = shape.iter().product();
    let vals: Vec<f64> = (0..n)
        .map(|i| {
            if dtype == DType::I1 {
                (rng.next_u64() & 1) as f64
            } else if dtype.is_int() {
                let lo = if dtype.is_signed_int() { -(scale as i64) } else { 0 };
                let hi = scale as i64;
                let v = lo + rng.below((hi - lo + 1) as u64) as i64;
                // Never all zeros: element 0 is nonzero.
                if i == 0 && v == 0 {
                    1.0
                } else {
                    v as f64
                }
            } else {
                let v = rng.unit() * scale;
                if i == 0 && v == 0.0 {
                    scale / 3.0
                } else {
                    v
                }
            }
        })
        .collect();
    HostTensor::from_f64(dtype, shape, &vals)
}

/// A buffer full of a recognisable garbage pattern (NaN for floats).
pub fn poisoned(dtype: DType, shape: &[usize]) -> HostTensor {
    let mut t = HostTensor::zeros(dtype, shape);
    for b in t.data.iter_mut() {
        *b = 0xFF;
    }
    t
}

#[derive(Clone, Debug)]
pub enum Arg {
    Tensor(HostTensor),
    Scalar(DType, u64),
}

pub fn i32_arg(v: i32) -> Arg {
    Arg::Scalar(DType::I32, v as u32 as u64)
}

pub fn f32_arg(v: f32) -> Arg {
    Arg::Scalar(DType::F32, v.to_bits() as u64)
}

/// Checks PTX with ptxas for `arch`: accepted, no warnings. Fails loudly if ptxas is missing.
pub fn ptxas_ok(ptx: &str, arch: &str) -> trident_gpu::tools::PtxasOutput {
    match trident_gpu::tools::ptxas(ptx, arch) {
        Ok(out) => {
            assert!(out.warnings.is_empty(), "ptxas warnings for {arch}:\n{}\n--- PTX ---\n{}", out.log, numbered(ptx));
            out
        }
        Err(e) if e.0.contains("not found") => panic!("{e}\n(run scripts/install-tools to install ptxas)"),
        Err(e) => panic!("{e}\n--- PTX ---\n{}", numbered(ptx)),
    }
}

pub fn numbered(s: &str) -> String {
    s.lines().enumerate().map(|(i, l)| format!("{:4} {l}\n", i + 1)).collect()
}

/// Compiles for both targets, checks both with ptxas, returns the sm_80 kernel.
pub fn compile(m: &Module, kernel: &str, num_warps: u32) -> PtxKernel {
    compile_stages(m, kernel, num_warps, GpuOptions::default().num_stages)
}

/// [`compile`] with a pipelining depth.
pub fn compile_stages(m: &Module, kernel: &str, num_warps: u32, num_stages: u32) -> PtxKernel {
    compile_all(m, kernel, num_warps, num_stages).swap_remove(0)
}

/// Compiles for sm_80, sm_90 and sm_90a, checks each with ptxas; returns the kernels the
/// emulator should run: sm_80's, and sm_90a's when it uses warpgroup MMA (`wgmma`).
pub fn compile_all(m: &Module, kernel: &str, num_warps: u32, num_stages: u32) -> Vec<PtxKernel> {
    let mut out = None;
    let mut hopper = None;
    for target in [Target::Sm80, Target::Sm90, Target::Sm90a] {
        let opts = GpuOptions { target, num_warps, num_stages, ..GpuOptions::default() };
        let k = match emit_ptx(m, kernel, &opts) {
            Ok(k) => k,
            Err(d) => panic!("compiling `{kernel}` for {target}: {}", d.render(&m.files)),
        };
        let usage = ptxas_ok(&k.ptx, target.arch());
        if let Some(u) = usage.usage.first() {
            eprintln!("{kernel} {target} {num_warps} warps: {} registers, {} spill bytes", u.registers, u.spill_stores);
        }
        if target == Target::Sm80 {
            out = Some(k);
        } else if target == Target::Sm90a && k.ptx.contains("wgmma.mma_async") {
            eprintln!("{kernel}: sm_90a uses wgmma; running it too");
            hopper = Some(k);
        }
    }
    let mut v = vec![out.expect("compiled")];
    v.extend(hopper);
    v
}

/// Runs the kernel on the PTX emulator; returns the tensor arguments after the run.
pub fn run_emu(k: &PtxKernel, grid: [u32; 3], args: &[Arg]) -> Vec<HostTensor> {
    let module = trident_emu::Module::parse(&k.ptx)
        .unwrap_or_else(|e| panic!("emulator cannot parse our PTX: {e}\n{}", numbered(&k.ptx)));
    let mut kargs: Vec<trident_emu::KernelArg> = args
        .iter()
        .map(|a| match a {
            Arg::Tensor(t) => trident_emu::KernelArg::Buffer(t.clone()),
            Arg::Scalar(_, bits) => trident_emu::KernelArg::Scalar(*bits),
        })
        .collect();
    let cfg = trident_emu::LaunchConfig {
        grid,
        block: [k.num_threads, 1, 1],
        dynamic_shared_bytes: k.shared_bytes,
        ..trident_emu::LaunchConfig::default()
    };
    if let Err(e) = trident_emu::launch(&module, &k.entry, &cfg, &mut kargs) {
        panic!("emulator: {e}\n{}", numbered(&k.ptx));
    }
    kargs
        .into_iter()
        .filter_map(|a| match a {
            trident_emu::KernelArg::Buffer(t) => Some(t),
            _ => None,
        })
        .collect()
}

/// Runs the kernel on the interpreter; returns the tensor arguments after the run.
pub fn run_interp(m: &Module, kernel: &str, grid: [u32; 3], args: &[Arg]) -> Vec<HostTensor> {
    let mut iargs: Vec<trident_interp::InterpArg> = args
        .iter()
        .map(|a| match a {
            Arg::Tensor(t) => trident_interp::InterpArg::Tensor(t.clone()),
            Arg::Scalar(d, bits) => trident_interp::InterpArg::Scalar { dtype: *d, bits: *bits },
        })
        .collect();
    if let Err(e) = trident_interp::launch(m, kernel, grid, &mut iargs, &trident_interp::InterpOptions::default()) {
        panic!("interpreter: {e}");
    }
    iargs
        .into_iter()
        .filter_map(|a| match a {
            trident_interp::InterpArg::Tensor(t) => Some(t),
            _ => None,
        })
        .collect()
}

/// Tolerance for comparing `dtype` results (relative, absolute).
pub fn tolerance(dtype: DType) -> (f64, f64) {
    match dtype {
        DType::F32 => (2e-5, 1e-5),
        DType::F16 => (2e-3, 1e-3),
        DType::BF16 => (1.6e-2, 1e-2),
        DType::F8E4M3 | DType::F8E5M2 => (0.13, 0.02),
        DType::F64 => (1e-12, 1e-12),
        _ => (0.0, 0.0),
    }
}

/// Compares two runs' buffers element by element.
pub fn assert_same(got: &[HostTensor], want: &[HostTensor], tol: Option<(f64, f64)>, what: &str) {
    assert_eq!(got.len(), want.len());
    for (b, (g, w)) in got.iter().zip(want).enumerate() {
        let (rtol, atol) = tol.unwrap_or_else(|| tolerance(w.dtype));
        for i in 0..w.numel() {
            let (x, y) = (g.get_f64(i), w.get_f64(i));
            let ok = if w.dtype.is_int() {
                g.get_bits(i) == w.get_bits(i)
            } else {
                // An infinity matches only itself (the relative tolerance of an infinite
                // value would accept anything).
                (x.is_nan() && y.is_nan()) || x == y || y.is_finite() && (x - y).abs() <= atol + rtol * y.abs()
            };
            assert!(ok, "{what}: buffer {b} element {i}: emulator {x}, interpreter {y}");
        }
    }
}

/// Parses IR text (panics with a rendered error).
pub fn parse(text: &str) -> Module {
    let mut m = trident_ir::parse_module(text).unwrap_or_else(|d| panic!("{}", d.render(&[])));
    if let Err(errs) = trident_ir::verify_module(&m) {
        panic!("{}", errs.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("\n"));
    }
    for f in &mut m.funcs {
        f.kernel = true;
    }
    m
}

/// Compiles, runs both ways, compares.
pub fn differential(m: &Module, kernel: &str, num_warps: u32, grid: [u32; 3], args: &[Arg], tol: Option<(f64, f64)>) {
    differential_stages(m, kernel, num_warps, GpuOptions::default().num_stages, grid, args, tol)
}

/// [`differential`] with a pipelining depth.
pub fn differential_stages(
    m: &Module,
    kernel: &str,
    num_warps: u32,
    num_stages: u32,
    grid: [u32; 3],
    args: &[Arg],
    tol: Option<(f64, f64)>,
) {
    let want = run_interp(m, kernel, grid, args);
    for k in compile_all(m, kernel, num_warps, num_stages) {
        let got = run_emu(&k, grid, args);
        assert_same(&got, &want, tol, &format!("{kernel} {} ({num_warps} warps, grid {grid:?})", k.target));
    }
}

/// A named launch argument for a kernel compiled from Python source.
#[derive(Clone, Debug)]
pub enum A {
    /// A tensor (16-byte aligned).
    T(HostTensor),
    /// A Python int.
    I(i64),
    /// A Python float.
    F(f64),
    /// A `tl.constexpr` int.
    C(i64),
    /// A `tl.constexpr` bool.
    CB(bool),
}

/// Compiles `kernel` of `kernels/<file>` with the front end and the tile pipeline; returns
/// the module and the runtime arguments in IR parameter order.
pub fn front(file: &str, kernel: &str, args: &[(&str, A)]) -> (Module, String, Vec<Arg>) {
    let path = format!("{}/../../kernels/{file}", env!("CARGO_MANIFEST_DIR"));
    let src = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    front_text(&path, &src, kernel, args)
}

/// Like [`front`], for kernel source given as text.
pub fn front_text(path: &str, src: &str, kernel: &str, args: &[(&str, A)]) -> (Module, String, Vec<Arg>) {
    front_text_opts(path, src, kernel, args, &trident_front::CompileOptions::default())
}

/// [`front_text`] with the front end's options (`profile_scopes`, ...).
pub fn front_text_opts(
    path: &str,
    src: &str,
    kernel: &str,
    args: &[(&str, A)],
    opts: &trident_front::CompileOptions,
) -> (Module, String, Vec<Arg>) {
    use trident_front::{ArgInfo, ConstValue, ParamBinding};
    let kf = trident_front::parse_file(path, src).unwrap_or_else(|d| panic!("{d}"));
    let infos: Vec<(String, ArgInfo)> = args
        .iter()
        .map(|(k, a)| {
            let info = match a {
                A::T(t) => ArgInfo::Pointer { dtype: t.dtype, aligned16: true },
                A::I(v) => ArgInfo::Int(*v),
                A::F(v) => ArgInfo::Float(*v),
                A::C(v) => ArgInfo::Constexpr(ConstValue::int(*v)),
                A::CB(v) => ArgInfo::Constexpr(ConstValue::Bool(*v)),
            };
            (k.to_string(), info)
        })
        .collect();
    let c = trident_front::compile(&kf, kernel, &infos, opts).unwrap_or_else(|ds| {
        let files = vec![kf.source_file()];
        panic!("{}", ds.iter().map(|d| d.render(&files)).collect::<String>())
    });
    let mut module = c.module.clone();
    let mut pm = trident_opt::default_tile_pipeline();
    if let Err(errs) = pm.run(&mut module) {
        panic!("{}", errs.iter().map(|d| d.render(&module.files)).collect::<String>());
    }
    let f = module.func(&c.kernel).expect("kernel");
    let mut runtime: Vec<(usize, Arg)> = vec![];
    for (name, b) in c.param_names.iter().zip(&c.params) {
        let ParamBinding::Runtime { ir_index } = b else { continue };
        let a = &args.iter().find(|(k, _)| k == name).unwrap_or_else(|| panic!("argument {name}")).1;
        let ty = f.ty(f.params[*ir_index].value).elem();
        let arg = match (a, ty.num()) {
            (A::T(t), _) => Arg::Tensor(t.clone()),
            (A::I(v), Some(DType::I32)) => Arg::Scalar(DType::I32, *v as i32 as u32 as u64),
            (A::I(v), Some(DType::I1)) => Arg::Scalar(DType::I1, (*v != 0) as u64),
            (A::I(v), Some(d)) => Arg::Scalar(d, *v as u64),
            (A::F(v), Some(DType::F32)) => Arg::Scalar(DType::F32, (*v as f32).to_bits() as u64),
            (A::F(v), Some(d)) => Arg::Scalar(d, v.to_bits()),
            (a, t) => panic!("cannot pass {a:?} as {t:?}"),
        };
        runtime.push((*ir_index, arg));
    }
    runtime.sort_by_key(|(i, _)| *i);
    (module, c.kernel.clone(), runtime.into_iter().map(|(_, a)| a).collect())
}

/// Compiles a project kernel, runs it on the emulator and the interpreter, compares.
pub fn kernel_differential(
    file: &str,
    kernel: &str,
    args: &[(&str, A)],
    num_warps: u32,
    grid: [u32; 3],
    tol: Option<(f64, f64)>,
) {
    let (m, k, rt) = front(file, kernel, args);
    differential(&m, &k, num_warps, grid, &rt, tol);
}

/// Runs the kernel on the emulator; returns the buffers and what `printf` printed.
pub fn run_emu_printed(k: &PtxKernel, grid: [u32; 3], args: &[Arg]) -> Result<(Vec<HostTensor>, String), String> {
    let module = trident_emu::Module::parse(&k.ptx).map_err(|e| format!("emulator cannot parse our PTX: {e}"))?;
    let mut kargs: Vec<trident_emu::KernelArg> = args
        .iter()
        .map(|a| match a {
            Arg::Tensor(t) => trident_emu::KernelArg::Buffer(t.clone()),
            Arg::Scalar(_, bits) => trident_emu::KernelArg::Scalar(*bits),
        })
        .collect();
    let cfg = trident_emu::LaunchConfig {
        grid,
        block: [k.num_threads, 1, 1],
        dynamic_shared_bytes: k.shared_bytes,
        ..trident_emu::LaunchConfig::default()
    };
    let rep = trident_emu::launch(&module, &k.entry, &cfg, &mut kargs).map_err(|e| e.to_string())?;
    let bufs = kargs
        .into_iter()
        .filter_map(|a| match a {
            trident_emu::KernelArg::Buffer(t) => Some(t),
            _ => None,
        })
        .collect();
    Ok((bufs, rep.printf))
}

/// Runs on the interpreter; returns the buffers and what it printed.
pub fn run_interp_printed(
    m: &Module,
    kernel: &str,
    grid: [u32; 3],
    args: &[Arg],
) -> Result<(Vec<HostTensor>, String), String> {
    let mut iargs: Vec<trident_interp::InterpArg> = args
        .iter()
        .map(|a| match a {
            Arg::Tensor(t) => trident_interp::InterpArg::Tensor(t.clone()),
            Arg::Scalar(d, bits) => trident_interp::InterpArg::Scalar { dtype: *d, bits: *bits },
        })
        .collect();
    let rep = trident_interp::launch(m, kernel, grid, &mut iargs, &trident_interp::InterpOptions::default())
        .map_err(|e| e.to_string())?;
    let bufs = iargs
        .into_iter()
        .filter_map(|a| match a {
            trident_interp::InterpArg::Tensor(t) => Some(t),
            _ => None,
        })
        .collect();
    Ok((bufs, rep.printed))
}

/// A kernel from Python source text through the front end, compared emulator vs interpreter.
pub fn py_differential(
    src: &str,
    kernel: &str,
    args: &[(&str, A)],
    num_warps: u32,
    grid: [u32; 3],
    tol: Option<(f64, f64)>,
) {
    let (m, k, rt) = front_text("test.py", src, kernel, args);
    differential(&m, &k, num_warps, grid, &rt, tol);
}

/// The arguments of `kernels/flash_attention.py::attn_fwd` on contiguous (Z, H, N_CTX, D)
/// f16 tensors of random Q, K, V and a poisoned O.
pub fn attention_args(
    rng: &mut Rng,
    (z, h, n_ctx, d): (usize, usize, usize, usize),
    (bm, bn): (i64, i64),
    causal: bool,
) -> Vec<(&'static str, A)> {
    let shape = [z, h, n_ctx, d];
    let s = [(h * n_ctx * d) as i64, (n_ctx * d) as i64, d as i64, 1];
    let mut args = vec![
        ("q", A::T(random(rng, DType::F16, &shape, 1.0))),
        ("k", A::T(random(rng, DType::F16, &shape, 1.0))),
        ("v", A::T(random(rng, DType::F16, &shape, 1.0))),
        ("o", A::T(poisoned(DType::F16, &shape))),
        ("sm_scale", A::F(1.0 / (d as f64).sqrt())),
    ];
    let strides = [
        ["stride_qz", "stride_qh", "stride_qm", "stride_qd"],
        ["stride_kz", "stride_kh", "stride_kn", "stride_kd"],
        ["stride_vz", "stride_vh", "stride_vn", "stride_vd"],
        ["stride_oz", "stride_oh", "stride_om", "stride_od"],
    ];
    for names in strides {
        args.extend(names.iter().zip(s).map(|(&n, v)| (n, A::I(v))));
    }
    args.extend([
        ("H", A::I(h as i64)),
        ("N_CTX", A::I(n_ctx as i64)),
        ("BLOCK_M", A::C(bm)),
        ("BLOCK_N", A::C(bn)),
        ("HEAD_DIM", A::C(d as i64)),
        ("IS_CAUSAL", A::CB(causal)),
    ]);
    args
}

/// The arguments of `kernels/matmul.py::matmul_kernel`: random A (M×K) and B (K×N) of `dt`,
/// a poisoned C; `a_t` stores A column-major (M contiguous), `b_t` stores B column-major
/// (K contiguous).
pub fn matmul_args(
    rng: &mut Rng,
    (m, n, k): (usize, usize, usize),
    (bm, bn, bk): (i64, i64, i64),
    dt: DType,
    (a_t, b_t): (bool, bool),
) -> Vec<(&'static str, A)> {
    let (sam, sak) = if a_t { (1, m as i64) } else { (k as i64, 1) };
    let (sbk, sbn) = if b_t { (1, k as i64) } else { (n as i64, 1) };
    vec![
        ("a", A::T(random(rng, dt, &[m * k], 1.0))),
        ("b", A::T(random(rng, dt, &[k * n], 1.0))),
        ("c", A::T(poisoned(dt, &[m, n]))),
        ("M", A::I(m as i64)),
        ("N", A::I(n as i64)),
        ("K", A::I(k as i64)),
        ("stride_am", A::I(sam)),
        ("stride_ak", A::I(sak)),
        ("stride_bk", A::I(sbk)),
        ("stride_bn", A::I(sbn)),
        ("stride_cm", A::I(n as i64)),
        ("stride_cn", A::I(1)),
        ("BLOCK_M", A::C(bm)),
        ("BLOCK_N", A::C(bn)),
        ("BLOCK_K", A::C(bk)),
        ("GROUP_M", A::C(4)),
    ]
}
