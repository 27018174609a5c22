//! Test helpers: compile a kernel from source, check the IR, run it on the interpreter.
#![allow(dead_code)]

use std::collections::HashMap;
use trident_core::{DType, HostTensor};
use trident_front::{compile, parse_file, ArgInfo, CompileOptions, Compiled, ConstValue, ParamBinding};
use trident_interp::{launch, InterpArg, InterpOptions};
use trident_ir::{Elem, Type};

/// A launch argument for [`run`].
#[derive(Clone, Debug)]
pub enum A {
    T(HostTensor),
    I(i64),
    F(f64),
    B(bool),
    C(ConstValue),
}

pub fn cint(v: i64) -> A {
    A::C(ConstValue::int(v))
}

pub fn arg_info(a: &A) -> ArgInfo {
    match a {
        A::T(t) => ArgInfo::Pointer { dtype: t.dtype, aligned16: true },
        A::I(v) => ArgInfo::Int(*v),
        A::F(v) => ArgInfo::Float(*v),
        A::B(v) => ArgInfo::Bool(*v),
        A::C(c) => ArgInfo::Constexpr(c.clone()),
    }
}

/// Compiles, verifies and returns the result; panics with the rendered diagnostic on error.
pub fn compile_ok(src: &str, kernel: &str, args: &[(&str, A)]) -> Compiled {
    compile_opts(src, kernel, args, &CompileOptions { debug: true, ..Default::default() })
}

pub fn compile_opts(src: &str, kernel: &str, args: &[(&str, A)], opts: &CompileOptions) -> Compiled {
    compile_at("test.py", src, kernel, args, opts)
}

/// Like [`compile_opts`] for a file at `path` (on disk, its imports of project files are followed).
pub fn compile_at(path: &str, src: &str, kernel: &str, args: &[(&str, A)], opts: &CompileOptions) -> Compiled {
    let file = parse_file(path, src).unwrap_or_else(|d| panic!("{}", d.render(&[source(src)])));
    let infos: Vec<(String, ArgInfo)> = args.iter().map(|(k, a)| (k.to_string(), arg_info(a))).collect();
    let c = compile(&file, kernel, &infos, opts).unwrap_or_else(|ds| {
        let files = file.source_files();
        panic!("{}", ds.iter().map(|d| d.render(&files)).collect::<String>())
    });
    if let Err(errs) = trident_ir::verify_module(&c.module) {
        let msgs: String = errs.iter().map(|e| e.render(&c.module.files)).collect();
        panic!("emitted IR does not verify:\n{msgs}\n{}", c.module);
    }
    c
}

/// The rendered diagnostics of a compilation that must fail.
pub fn compile_err(src: &str, kernel: &str, args: &[(&str, A)]) -> String {
    let file = match parse_file("test.py", src) {
        Ok(f) => f,
        Err(d) => return d.render(&[source(src)]),
    };
    let infos: Vec<(String, ArgInfo)> = args.iter().map(|(k, a)| (k.to_string(), arg_info(a))).collect();
    match compile(&file, kernel, &infos, &CompileOptions { debug: true, ..Default::default() }) {
        Ok(c) => panic!("expected an error, got:\n{}", c.module),
        Err(ds) => {
            let files = vec![file.source_file()];
            ds.iter().map(|d| d.render(&files)).collect()
        }
    }
}

pub fn source(src: &str) -> trident_ir::SourceFile {
    trident_ir::SourceFile { path: "test.py".into(), text: src.into() }
}

/// Compiles and runs `kernel` over `grid`; returns every tensor argument after the launch, by name.
pub fn run(src: &str, kernel: &str, args: &[(&str, A)], grid: [u32; 3]) -> HashMap<String, HostTensor> {
    run_full(src, kernel, args, grid).0
}

/// Like [`run`], also returning what `device_print` printed.
pub fn run_full(src: &str, kernel: &str, args: &[(&str, A)], grid: [u32; 3]) -> (HashMap<String, HostTensor>, String) {
    run_full_at("test.py", src, kernel, args, grid)
}

/// Like [`run_full`] for a file at `path`.
pub fn run_full_at(
    path: &str,
    src: &str,
    kernel: &str,
    args: &[(&str, A)],
    grid: [u32; 3],
) -> (HashMap<String, HostTensor>, String) {
    run_opts_at(path, src, kernel, args, grid, &CompileOptions { debug: true, ..Default::default() })
}

/// Like [`run_full_at`] with compile options.
pub fn run_opts_at(
    path: &str,
    src: &str,
    kernel: &str,
    args: &[(&str, A)],
    grid: [u32; 3],
    opts: &CompileOptions,
) -> (HashMap<String, HostTensor>, String) {
    let c = compile_at(path, src, kernel, args, opts);
    run_compiled(&c, args, grid)
}

/// Runs a compiled kernel over `grid` on the interpreter; returns every tensor argument after the
/// launch, by name, and what `device_print` printed.
pub fn run_compiled(c: &Compiled, args: &[(&str, A)], grid: [u32; 3]) -> (HashMap<String, HostTensor>, String) {
    let f = c.module.func(&c.kernel).expect("kernel function");
    let mut iargs = vec![];
    let mut names = vec![];
    for (name, b) in c.param_names.iter().zip(&c.params) {
        let ParamBinding::Runtime { ir_index } = b else { continue };
        let default = c.runtime_defaults.iter().find(|(i, _)| i == ir_index).map(|(_, v)| match v {
            ConstValue::Int(i) => A::I(*i as i64),
            ConstValue::Float(x) => A::F(*x),
            ConstValue::Bool(b) => A::B(*b),
            other => panic!("default {other:?}"),
        });
        let a = match args.iter().find(|(k, _)| k == name) {
            Some((_, a)) => a,
            None => default.as_ref().expect("argument or default"),
        };
        let ty = &f.params[*ir_index].value;
        let ty = f.ty(*ty).clone();
        let ia = match (a, &ty) {
            (A::T(t), _) => InterpArg::Tensor(t.clone()),
            (A::I(v), Type::Scalar(Elem::Num(DType::I32))) => InterpArg::i32(*v as i32),
            (A::I(v), Type::Scalar(Elem::Num(DType::I64))) => InterpArg::i64(*v),
            (A::I(v), Type::Scalar(Elem::Num(DType::U64))) => InterpArg::u64(*v as u64),
            (A::F(v), _) => InterpArg::f32(*v as f32),
            (A::B(v), _) => InterpArg::bool(*v),
            (a, t) => panic!("cannot pass {a:?} as {t}"),
        };
        iargs.push(ia);
        names.push(name.clone());
    }
    let rep = launch(
        &c.module,
        &c.kernel,
        grid,
        &mut iargs,
        &InterpOptions { threads: Some(1), debug: true, ..Default::default() },
    )
    .unwrap_or_else(|e| panic!("launch failed: {}\n{}", e.diag.render(&c.module.files), c.module));
    let mut out = HashMap::new();
    for (n, a) in names.into_iter().zip(iargs) {
        if let InterpArg::Tensor(t) = a {
            out.insert(n, t);
        }
    }
    (out, rep.printed)
}

/// A small deterministic generator for test inputs (xorshift64*).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E3779B97F4A7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }
    /// Uniform in [-1, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
    pub fn tensor(&mut self, dtype: DType, shape: &[usize]) -> HostTensor {
        let n: usize = shape.iter().product();
        let vals: Vec<f64> = (0..n)
            .map(|_| if dtype.is_float() { self.uniform() * 4.0 } else { (self.next_u64() % 200) as f64 - 100.0 })
            .map(|v| if dtype.is_unsigned_int() { v.abs() } else { v })
            .collect();
        HostTensor::from_f64(dtype, shape, &vals)
    }
}

/// A tensor filled with a poison value, so that unwritten outputs are visible.
pub fn poison(dtype: DType, shape: &[usize]) -> HostTensor {
    let n: usize = shape.iter().product();
    let v = if dtype.is_float() { f64::NAN } else { 77.0 };
    HostTensor::from_f64(dtype, shape, &vec![v; n])
}

pub fn assert_close(got: &HostTensor, want: &[f64], rtol: f64, atol: f64) {
    assert_eq!(got.numel(), want.len());
    for (i, w) in want.iter().enumerate() {
        let g = got.get_f64(i);
        let ok = g == *w || (g - w).abs() <= atol + rtol * w.abs() || (g.is_nan() && w.is_nan());
        assert!(ok, "element {i}: got {g}, want {w}");
    }
}
