//! A small evaluator for host-side Python expressions: module-level constants,
//! parameter defaults, `@triton.autotune` configs and `@triton.heuristics` lambdas.
//!
//! It understands literals, names of module-level values, arithmetic and
//! comparisons, list/tuple/dict displays and comprehensions, `triton.Config`,
//! `triton.next_power_of_2`, `triton.cdiv`, `tl.constexpr`, dtypes (Triton's
//! and torch's spellings) and a few Python builtins. Anything else is reported
//! as "not statically known".

use crate::globals::{Global, Globals};
use crate::kernel::Config;
use crate::language::dtypes::tl_dtype;
use crate::language::Mod;
use crate::source::SrcRef;
use crate::value::{binop, compare, parse_py_int, ConstValue, PyBinOp, PyCmp};
use ruff_python_ast::{self as ast, Expr, Number};
use ruff_text_size::{Ranged, TextRange};
use trident_core::DType;
use trident_ir::{Diagnostic, Elem};

/// A host-side value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum HostValue {
    Const(ConstValue),
    List(Vec<HostValue>),
    Dict(Vec<(HostValue, HostValue)>),
    Config(Box<Config>),
    /// A tensor argument seen by a heuristic: only its dtype is known.
    Tensor(Elem),
    Module(Mod),
    /// A function or class of a known module (`triton.Config`, `triton.cdiv`).
    Func(Mod, String),
    /// A Python builtin (`min`, `len`).
    PyBuiltin(&'static str),
    /// A lambda, kept as its source range for later evaluation.
    Lambda(TextRange),
    /// A value of a foreign module (`torch.float16` is understood; the rest is opaque).
    Foreign(String),
    /// A module-level `def` of the file (see [`Global::HostDef`]): callable when its body is simple.
    PyDef(Option<u32>, Vec<(u32, u32)>),
    /// Another file of the project imported as a module (dependency index).
    PyModule(u32),
}

impl HostValue {
    pub(crate) fn into_const(self) -> Option<ConstValue> {
        match self {
            HostValue::Const(c) => Some(c),
            HostValue::List(v) => {
                v.into_iter().map(HostValue::into_const).collect::<Option<Vec<_>>>().map(ConstValue::Tuple)
            }
            _ => None,
        }
    }

    fn describe(&self) -> String {
        match self {
            HostValue::Const(c) => format!("`{c}`"),
            HostValue::List(_) => "a list".into(),
            HostValue::Dict(_) => "a dict".into(),
            HostValue::Config(_) => "a triton.Config".into(),
            HostValue::Tensor(_) => "a tensor".into(),
            HostValue::Module(m) => format!("module `{}`", m.display()),
            HostValue::Func(m, n) => format!("`{}.{n}`", m.display()),
            HostValue::PyBuiltin(n) => format!("builtin `{n}`"),
            HostValue::Lambda(_) => "a lambda".into(),
            HostValue::Foreign(s) => format!("`{s}`"),
            HostValue::PyDef(..) => "a Python function".into(),
            HostValue::PyModule(_) => "a module of the project".into(),
        }
    }
}

const PY_BUILTINS: &[&str] = &[
    "min", "max", "abs", "int", "float", "bool", "len", "range", "list", "tuple", "str", "round", "sum", "pow",
    "filter", "map", "any", "all",
];

/// torch dtype names that heuristics compare against.
fn torch_dtype(name: &str) -> Option<DType> {
    Some(match name {
        "float16" | "half" => DType::F16,
        "bfloat16" => DType::BF16,
        "float32" | "float" => DType::F32,
        "float64" | "double" => DType::F64,
        "int8" => DType::I8,
        "int16" | "short" => DType::I16,
        "int32" | "int" => DType::I32,
        "int64" | "long" => DType::I64,
        "uint8" => DType::U8,
        "uint16" => DType::U16,
        "uint32" => DType::U32,
        "uint64" => DType::U64,
        "bool" => DType::I1,
        "float8_e4m3fn" => DType::F8E4M3,
        "float8_e5m2" => DType::F8E5M2,
        _ => return None,
    })
}

fn py_float_const(x: f64) -> HostValue {
    HostValue::Const(ConstValue::Float(x))
}

pub(crate) struct HostEval<'a> {
    pub globals: &'a Globals,
    pub src: SrcRef<'a>,
    /// Names bound by comprehensions, lambda and function parameters and function bodies, innermost last.
    pub locals: Vec<(String, HostValue)>,
    /// The module's statements and text, to call its plain `def`s and lambdas (when given).
    module: Option<(&'a [ast::Stmt], &'a str)>,
    /// Statements left to run in called Python functions (a guard against endless loops).
    budget: u32,
    /// The project files the module imports from (to call their plain functions).
    deps: Option<&'a [Option<crate::kernel::KernelFile>]>,
}

type R<T> = Result<T, Diagnostic>;

impl<'a> HostEval<'a> {
    pub(crate) fn new(globals: &'a Globals, src: SrcRef<'a>) -> HostEval<'a> {
        HostEval { globals, src, locals: vec![], module: None, budget: 100_000, deps: None }
    }

    /// The same evaluator, able to call plain functions of the project files the module imports.
    pub(crate) fn with_deps(mut self, deps: &'a [Option<crate::kernel::KernelFile>]) -> HostEval<'a> {
        self.deps = Some(deps);
        self
    }

    /// The same evaluator, able to call the module's plain functions and lambdas.
    pub(crate) fn with_module(mut self, stmts: &'a [ast::Stmt], text: &'a str) -> HostEval<'a> {
        self.module = Some((stmts, text));
        self
    }

    fn unknown(&self, e: &Expr, what: impl Into<String>) -> Diagnostic {
        self.src.error(e.range(), format!("cannot evaluate this expression statically: {}", what.into()))
    }

    pub(crate) fn eval_const(&mut self, e: &Expr) -> R<ConstValue> {
        let v = self.eval(e)?;
        let d = v.describe();
        v.into_const().ok_or_else(|| self.unknown(e, format!("{d} is not a compile-time constant")))
    }

    pub(crate) fn eval(&mut self, e: &Expr) -> R<HostValue> {
        use HostValue as H;
        Ok(match e {
            Expr::NumberLiteral(n) => match &n.value {
                Number::Int(i) => H::Const(ConstValue::Int(
                    parse_py_int(&i.to_string()).ok_or_else(|| self.unknown(e, "integer literal too large"))?,
                )),
                Number::Float(f) => py_float_const(*f),
                Number::Complex { .. } => return Err(self.unknown(e, "complex numbers are not supported")),
            },
            Expr::BooleanLiteral(b) => H::Const(ConstValue::Bool(b.value)),
            Expr::NoneLiteral(_) => H::Const(ConstValue::None),
            Expr::StringLiteral(s) => H::Const(ConstValue::Str(s.value.to_str().to_string())),
            Expr::Name(n) => self.name(e, n.id.as_str())?,
            Expr::Attribute(a) => {
                let base = self.eval(&a.value)?;
                self.attr(e, base, a.attr.id.as_str())?
            }
            Expr::Tuple(t) => H::List(t.elts.iter().map(|x| self.eval(x)).collect::<R<_>>()?),
            Expr::List(t) => H::List(t.elts.iter().map(|x| self.eval(x)).collect::<R<_>>()?),
            Expr::Dict(d) => {
                let mut items = vec![];
                for item in &d.items {
                    let Some(k) = &item.key else {
                        return Err(self.unknown(e, "`**` in a dict display"));
                    };
                    items.push((self.eval(k)?, self.eval(&item.value)?));
                }
                H::Dict(items)
            }
            Expr::ListComp(c) => H::List(self.comprehension(&c.generators, &c.elt)?),
            Expr::Generator(c) => H::List(self.comprehension(&c.generators, &c.elt)?),
            Expr::Lambda(l) => H::Lambda(l.range),
            Expr::UnaryOp(u) => {
                let v = self.eval_const(&u.operand)?;
                H::Const(match u.op {
                    ast::UnaryOp::Not => ConstValue::Bool(!v.truthy().unwrap_or(true)),
                    ast::UnaryOp::UAdd => v,
                    ast::UnaryOp::USub => {
                        binop(PyBinOp::Sub, &ConstValue::Int(0), &v).map_err(|m| self.src.error(e.range(), m))?
                    }
                    ast::UnaryOp::Invert => match v.as_int() {
                        Some(i) => ConstValue::Int(!i),
                        None => return Err(self.unknown(e, "`~` needs an integer")),
                    },
                })
            }
            Expr::BinOp(b) => {
                let l = self.eval(&b.left)?;
                let r = self.eval(&b.right)?;
                match (l, r) {
                    (H::List(x), H::List(y)) if b.op == ast::Operator::Add => H::List(x.into_iter().chain(y).collect()),
                    (l, r) => {
                        let (Some(l), Some(r)) = (l.into_const(), r.into_const()) else {
                            return Err(self.unknown(e, "operands are not constants"));
                        };
                        let op = py_binop(b.op).ok_or_else(|| self.unknown(e, "unsupported operator"))?;
                        H::Const(binop(op, &l, &r).map_err(|m| self.src.error(e.range(), m))?)
                    }
                }
            }
            Expr::Compare(c) => {
                let mut l = self.eval(&c.left)?;
                let mut result = true;
                for (op, rhs) in c.ops.iter().zip(c.comparators.iter()) {
                    let r = self.eval(rhs)?;
                    let ok = match op {
                        ast::CmpOp::In | ast::CmpOp::NotIn => {
                            let found = match &r {
                                H::List(items) => items.contains(&l),
                                H::Dict(items) => items.iter().any(|(k, _)| *k == l),
                                H::Const(ConstValue::Str(s)) => match &l {
                                    H::Const(ConstValue::Str(x)) => s.contains(x.as_str()),
                                    _ => false,
                                },
                                _ => return Err(self.unknown(e, "`in` needs a list, dict or string")),
                            };
                            found == (*op == ast::CmpOp::In)
                        }
                        ast::CmpOp::Is | ast::CmpOp::IsNot => (l == r) == (*op == ast::CmpOp::Is),
                        _ => {
                            let cmp = py_cmp(*op).ok_or_else(|| self.unknown(e, "unsupported comparison"))?;
                            match (&l, &r) {
                                (H::Const(a), H::Const(b)) => {
                                    compare(cmp, a, b).map_err(|m| self.src.error(e.range(), m))?
                                }
                                _ if matches!(cmp, PyCmp::Eq | PyCmp::Ne) => (l == r) == (cmp == PyCmp::Eq),
                                // Lists and tuples of constants order like tuples.
                                _ => match (l.clone().into_const(), r.clone().into_const()) {
                                    (Some(a), Some(b)) => {
                                        compare(cmp, &a, &b).map_err(|m| self.src.error(e.range(), m))?
                                    }
                                    _ => return Err(self.unknown(e, "cannot order these values")),
                                },
                            }
                        }
                    };
                    result &= ok;
                    if !result {
                        break;
                    }
                    l = r;
                }
                H::Const(ConstValue::Bool(result))
            }
            Expr::BoolOp(b) => {
                let is_and = b.op == ast::BoolOp::And;
                let mut last = H::Const(ConstValue::Bool(is_and));
                for v in &b.values {
                    last = self.eval(v)?;
                    let t = match &last {
                        H::Const(c) => c.truthy().unwrap_or(true),
                        H::List(l) => !l.is_empty(),
                        _ => true,
                    };
                    if t != is_and {
                        break;
                    }
                }
                last
            }
            Expr::If(i) => {
                let c = self.eval_const(&i.test)?;
                if c.truthy().unwrap_or(false) {
                    self.eval(&i.body)?
                } else {
                    self.eval(&i.orelse)?
                }
            }
            Expr::Subscript(s) if matches!(&*s.slice, Expr::Slice(_)) => {
                let Expr::Slice(sl) = &*s.slice else { unreachable!() };
                let base = self.eval(&s.value)?;
                let mut bound = |x: &Option<Box<Expr>>| -> R<Option<i128>> {
                    match x {
                        None => Ok(None),
                        Some(x) => match self.eval(x)? {
                            H::Const(ConstValue::None) => Ok(None),
                            H::Const(c) if c.as_int().is_some() => Ok(c.as_int()),
                            _ => Err(self.unknown(x, "slice bounds must be integers")),
                        },
                    }
                };
                let (lo, hi, step) = (bound(&sl.lower)?, bound(&sl.upper)?, bound(&sl.step)?);
                let items: Vec<H> = match base {
                    H::List(v) => v,
                    H::Const(ConstValue::Tuple(v)) => v.into_iter().map(H::Const).collect(),
                    H::Const(ConstValue::Str(st)) => {
                        let chars: Vec<H> = st.chars().map(|c| H::Const(ConstValue::Str(c.to_string()))).collect();
                        let picked = py_slice(chars, lo, hi, step).ok_or_else(|| self.unknown(e, "bad slice"))?;
                        let mut out = String::new();
                        for c in picked {
                            if let H::Const(ConstValue::Str(c)) = c {
                                out.push_str(&c);
                            }
                        }
                        return Ok(H::Const(ConstValue::Str(out)));
                    }
                    other => return Err(self.unknown(e, format!("cannot slice {}", other.describe()))),
                };
                H::List(py_slice(items, lo, hi, step).ok_or_else(|| self.unknown(e, "bad slice"))?)
            }
            Expr::Subscript(s) => {
                let base = self.eval(&s.value)?;
                let idx = self.eval(&s.slice)?;
                self.subscript(e, base, idx)?
            }
            Expr::Call(c) => self.call(e, c)?,
            _ => return Err(self.unknown(e, "unsupported expression")),
        })
    }

    fn name(&self, e: &Expr, n: &str) -> R<HostValue> {
        if let Some((_, v)) = self.locals.iter().rev().find(|(k, _)| k == n) {
            return Ok(v.clone());
        }
        match self.globals.get(n).map(Global::settled) {
            Some(Global::Value(v)) => Ok(v.clone()),
            Some(Global::Module(m)) => Ok(HostValue::Module(*m)),
            Some(Global::Attr(m, a)) => self.module_attr(e, *m, a),
            Some(Global::Opaque(what)) => Ok(HostValue::Foreign(what.clone())),
            Some(Global::DepModule(d)) if self.deps.is_some() => Ok(HostValue::PyModule(*d)),
            Some(Global::DepModule(_)) => Ok(HostValue::Foreign(format!("module `{n}`"))),
            Some(Global::HostDef(_, Some(path))) if self.module.is_some() => Ok(HostValue::PyDef(None, path.clone())),
            Some(Global::DepDef(d, path)) if self.deps.is_some() => Ok(HostValue::PyDef(Some(*d), path.clone())),
            Some(Global::DepDef(..)) => Err(self.unknown(e, format!("`{n}` is a function of another file"))),
            Some(Global::Jit(_)) | Some(Global::DepJit(..)) | Some(Global::UserJit(_)) | Some(Global::HostDef(..)) => {
                Err(self.unknown(e, format!("`{n}` is a function, not a value")))
            }
            Some(Global::Ambiguous(why, _)) => Err(self.unknown(e, why.clone())),
            None if n == "__name__" => Ok(HostValue::Const(ConstValue::Str("trident_kernel_module".into()))),
            None => match PY_BUILTINS.iter().find(|b| **b == n) {
                Some(b) => Ok(HostValue::PyBuiltin(b)),
                None => Err(self.unknown(e, format!("name `{n}` is not defined at module level"))),
            },
        }
    }

    fn module_attr(&self, _e: &Expr, m: Mod, a: &str) -> R<HostValue> {
        if let Some(sub) = m.submodule(a) {
            return Ok(HostValue::Module(sub));
        }
        match m {
            Mod::Language => {
                if let Some(d) = tl_dtype(a) {
                    return Ok(HostValue::Const(ConstValue::dtype(d)));
                }
                Ok(HostValue::Func(m, a.to_string()))
            }
            Mod::PyMath => match a {
                "pi" => Ok(py_float_const(std::f64::consts::PI)),
                "e" => Ok(py_float_const(std::f64::consts::E)),
                "inf" => Ok(py_float_const(f64::INFINITY)),
                "nan" => Ok(py_float_const(f64::NAN)),
                "tau" => Ok(py_float_const(std::f64::consts::TAU)),
                _ => Ok(HostValue::Func(m, a.to_string())),
            },
            // Trident follows Triton 3.9's semantics; version checks in kernel files take that branch.
            Mod::Triton if a == "__version__" => Ok(HostValue::Const(ConstValue::Str(TRITON_VERSION.into()))),
            Mod::Triton
            | Mod::Math
            | Mod::Libdevice
            | Mod::Extra
            | Mod::ExtraVendor
            | Mod::Profiler
            | Mod::ProfilerLanguage => Ok(HostValue::Func(m, a.to_string())),
        }
    }

    fn attr(&self, e: &Expr, base: HostValue, a: &str) -> R<HostValue> {
        match base {
            HostValue::Module(m) => self.module_attr(e, m, a),
            HostValue::PyModule(d) => self.project_attr(e, d, a),
            HostValue::Foreign(what) => {
                if what == "torch" {
                    if let Some(d) = torch_dtype(a) {
                        return Ok(HostValue::Const(ConstValue::dtype(d)));
                    }
                }
                if let Some(v) = platform_attr(&what, a) {
                    return Ok(v);
                }
                Ok(HostValue::Foreign(format!("{what}.{a}")))
            }
            // Host-side parts of `triton` (`triton.runtime.driver`, `triton.testing`): foreign paths.
            HostValue::Func(Mod::Triton, name) => Ok(HostValue::Foreign(format!("triton.{name}.{a}"))),
            // Proton's host side (`proton.hooks.InstrumentationHook`, ...): likewise foreign.
            HostValue::Func(Mod::Profiler, name) => Ok(HostValue::Foreign(format!("triton.profiler.{name}.{a}"))),
            HostValue::Tensor(el) if a == "dtype" => Ok(HostValue::Const(ConstValue::DType(el))),
            HostValue::Const(ConstValue::DType(el)) => match a {
                "element_ty" => match el {
                    Elem::Ptr { pointee, .. } => Ok(HostValue::Const(ConstValue::dtype(pointee))),
                    _ => Err(self.unknown(e, "`element_ty` of a non-pointer dtype")),
                },
                "primitive_bitwidth" => Ok(HostValue::Const(ConstValue::Int(match el {
                    Elem::Num(d) => d.bits() as i128,
                    Elem::Ptr { .. } => 64,
                }))),
                "itemsize" => Ok(HostValue::Const(ConstValue::Int(match el {
                    Elem::Num(d) => d.size_bytes() as i128,
                    Elem::Ptr { .. } => 8,
                }))),
                _ => Err(self.unknown(e, format!("dtype has no attribute `{a}` here"))),
            },
            HostValue::Config(c) => match a {
                "num_warps" => Ok(HostValue::Const(ConstValue::Int(c.num_warps as i128))),
                "num_stages" => Ok(HostValue::Const(ConstValue::Int(c.num_stages as i128))),
                "kwargs" => Ok(HostValue::Dict(
                    c.kwargs
                        .iter()
                        .map(|(k, v)| (HostValue::Const(ConstValue::Str(k.clone())), HostValue::Const(v.clone())))
                        .collect(),
                )),
                _ => Err(self.unknown(e, format!("Config has no attribute `{a}` here"))),
            },
            other => Err(self.unknown(e, format!("attribute `{a}` of {}", other.describe()))),
        }
    }

    fn subscript(&self, e: &Expr, base: HostValue, idx: HostValue) -> R<HostValue> {
        match (base, idx) {
            (HostValue::Dict(items), k) => items
                .into_iter()
                .find(|(key, _)| *key == k)
                .map(|(_, v)| v)
                .ok_or_else(|| self.unknown(e, format!("key {} not found", k.describe()))),
            (HostValue::List(items), HostValue::Const(c)) => {
                let i = c.as_int().ok_or_else(|| self.unknown(e, "list index must be an integer"))?;
                let n = items.len() as i128;
                let j = if i < 0 { i + n } else { i };
                if j < 0 || j >= n {
                    return Err(self.unknown(e, "list index out of range"));
                }
                Ok(items[j as usize].clone())
            }
            (HostValue::Const(ConstValue::Tuple(items)), HostValue::Const(c)) => {
                let l = HostValue::List(items.into_iter().map(HostValue::Const).collect());
                self.subscript(e, l, HostValue::Const(c))
            }
            (b, _) => Err(self.unknown(e, format!("cannot index {}", b.describe()))),
        }
    }

    fn comprehension(&mut self, gens: &[ast::Comprehension], elt: &Expr) -> R<Vec<HostValue>> {
        let mut out = vec![];
        self.comp_rec(gens, elt, &mut out)?;
        Ok(out)
    }

    fn comp_rec(&mut self, gens: &[ast::Comprehension], elt: &Expr, out: &mut Vec<HostValue>) -> R<()> {
        let Some((g, rest)) = gens.split_first() else {
            out.push(self.eval(elt)?);
            return Ok(());
        };
        let items = match self.eval(&g.iter)? {
            HostValue::List(v) => v,
            HostValue::Const(ConstValue::Tuple(v)) => v.into_iter().map(HostValue::Const).collect(),
            HostValue::Dict(v) => v.into_iter().map(|(k, _)| k).collect(),
            other => return Err(self.unknown(&g.iter, format!("cannot iterate over {}", other.describe()))),
        };
        if out.len() + items.len() > 1 << 16 {
            return Err(self.unknown(&g.iter, "comprehension too large"));
        }
        for item in items {
            let mark = self.locals.len();
            self.bind_target(&g.target, item)?;
            let mut keep = true;
            for cond in &g.ifs {
                if !self.eval_const(cond)?.truthy().unwrap_or(false) {
                    keep = false;
                    break;
                }
            }
            if keep {
                self.comp_rec(rest, elt, out)?;
            }
            self.locals.truncate(mark);
        }
        Ok(())
    }

    fn bind_target(&mut self, target: &Expr, v: HostValue) -> R<()> {
        match target {
            Expr::Name(n) => {
                self.locals.push((n.id.to_string(), v));
                Ok(())
            }
            Expr::Tuple(t) => {
                let items = match v {
                    HostValue::List(items) => items,
                    HostValue::Const(ConstValue::Tuple(items)) => items.into_iter().map(HostValue::Const).collect(),
                    _ => return Err(self.unknown(target, "cannot unpack a non-sequence")),
                };
                if items.len() != t.elts.len() {
                    return Err(self.unknown(target, "wrong number of values to unpack"));
                }
                for (x, v) in t.elts.iter().zip(items) {
                    self.bind_target(x, v)?;
                }
                Ok(())
            }
            _ => Err(self.unknown(target, "unsupported comprehension target")),
        }
    }

    /// Calls a lambda (`lambda args: ...`) with the given positional arguments.
    pub(crate) fn call_lambda(&mut self, lambda: &ast::ExprLambda, args: Vec<HostValue>) -> R<HostValue> {
        let names: Vec<String> = match &lambda.parameters {
            Some(p) => p.args.iter().chain(p.posonlyargs.iter()).map(|a| a.parameter.name.id.to_string()).collect(),
            None => vec![],
        };
        if names.len() != args.len() {
            return Err(self.src.error(
                lambda.range,
                format!("this lambda takes {} arguments; Triton passes {}", names.len(), args.len()),
            ));
        }
        let mark = self.locals.len();
        for (n, a) in names.into_iter().zip(args) {
            self.locals.push((n, a));
        }
        let r = self.eval(&lambda.body);
        self.locals.truncate(mark);
        r
    }

    fn call(&mut self, e: &Expr, c: &ast::ExprCall) -> R<HostValue> {
        // String methods module-level version checks use: `triton.__version__.split(".")`.
        if let Expr::Attribute(at) = &*c.func {
            if let Ok(HostValue::Const(ConstValue::Str(s))) = self.eval(&at.value) {
                let mut args = vec![];
                for a in c.arguments.args.iter() {
                    args.push(self.eval(a)?.into_const());
                }
                return str_method(&s, at.attr.id.as_str(), &args)
                    .ok_or_else(|| self.unknown(e, format!("unsupported string method `{}`", at.attr.id)));
            }
        }
        let f = self.eval(&c.func)?;
        let mut args = vec![];
        for a in c.arguments.args.iter() {
            if let Expr::Starred(s) = a {
                match self.eval(&s.value)? {
                    HostValue::List(v) => args.extend(v),
                    _ => return Err(self.unknown(a, "`*` needs a list or tuple")),
                }
            } else {
                args.push(self.eval(a)?);
            }
        }
        let mut kwargs = vec![];
        for k in c.arguments.keywords.iter() {
            let Some(name) = &k.arg else {
                return Err(self.unknown(&k.value, "`**kwargs` in a call"));
            };
            kwargs.push((name.id.to_string(), self.eval(&k.value)?, k.value.range()));
        }
        let consts = |me: &Self, args: &[HostValue]| -> R<Vec<ConstValue>> {
            args.iter()
                .map(|a| a.clone().into_const().ok_or_else(|| me.unknown(e, "arguments must be constants")))
                .collect()
        };
        let int_arg =
            |me: &Self, v: &ConstValue| -> R<i128> { v.as_int().ok_or_else(|| me.unknown(e, "expected an integer")) };
        if let HostValue::Foreign(what) = &f {
            if is_version_ctor(what) {
                if let [HostValue::Const(ConstValue::Str(s))] = &args[..] {
                    return Ok(HostValue::Const(version_tuple(s)));
                }
            }
            if let Some(v) = platform_call(what) {
                return Ok(v);
            }
            // Environment switches (`os.environ.get("FLA_USE_FAST_OPS", "0")`): module-level code
            // runs in the launching process, so read this process's environment, as Python would.
            if what == "os.environ.get" || what == "os.getenv" {
                let default = match args.get(1) {
                    Some(HostValue::Const(c)) => c.clone(),
                    Some(_) => return Err(self.unknown(e, "the default of an environment lookup must be a constant")),
                    None => ConstValue::None,
                };
                if let Some(HostValue::Const(ConstValue::Str(k))) = args.first() {
                    return Ok(HostValue::Const(match std::env::var(k) {
                        Ok(v) => ConstValue::Str(v),
                        Err(_) => default,
                    }));
                }
            }
        }
        match f {
            HostValue::PyDef(dep, path) => self.call_def(e, dep, &path, args, kwargs),
            HostValue::Lambda(r) => {
                if !kwargs.is_empty() {
                    return Err(self.unknown(e, "keyword arguments to a lambda"));
                }
                self.call_lambda_at(e, r, args)
            }
            HostValue::Func(Mod::Triton, name) => match name.as_str() {
                "Config" => self.config(e, args, kwargs),
                "next_power_of_2" => {
                    let a = consts(self, &args)?;
                    let n = int_arg(self, a.first().ok_or_else(|| self.unknown(e, "missing argument"))?)?;
                    let mut p: i128 = 1;
                    while p < n {
                        p <<= 1;
                    }
                    Ok(HostValue::Const(ConstValue::Int(p)))
                }
                "cdiv" => {
                    let a = consts(self, &args)?;
                    if a.len() != 2 {
                        return Err(self.unknown(e, "triton.cdiv takes two arguments"));
                    }
                    let num =
                        binop(PyBinOp::Add, &a[0], &a[1]).and_then(|s| binop(PyBinOp::Sub, &s, &ConstValue::Int(1)));
                    let r = num
                        .and_then(|n| binop(PyBinOp::FloorDiv, &n, &a[1]))
                        .map_err(|m| self.src.error(e.range(), m))?;
                    Ok(HostValue::Const(r))
                }
                _ => Err(self.unknown(e, format!("`triton.{name}` cannot be called here"))),
            },
            HostValue::Func(Mod::Language, name) if name == "constexpr" => {
                args.into_iter().next().ok_or_else(|| self.unknown(e, "tl.constexpr needs a value"))
            }
            HostValue::Func(Mod::PyMath, name) => {
                let a = consts(self, &args)?;
                let x = a.first().and_then(|v| v.as_f64()).ok_or_else(|| self.unknown(e, "expected a number"))?;
                py_math(&name, x, a.get(1).and_then(|v| v.as_f64()))
                    .ok_or_else(|| self.unknown(e, format!("`math.{name}` is not supported")))
            }
            HostValue::PyBuiltin(b) => self.builtin(e, b, args),
            other => Err(self.unknown(e, format!("cannot call {}", other.describe()))),
        }
    }

    fn builtin(&mut self, e: &Expr, b: &str, args: Vec<HostValue>) -> R<HostValue> {
        use ConstValue as C;
        if matches!(b, "filter" | "map" | "any" | "all") {
            return self.functional_builtin(e, b, args);
        }
        let list_items = |v: &HostValue| -> Option<Vec<HostValue>> {
            match v {
                HostValue::List(v) => Some(v.clone()),
                HostValue::Const(C::Tuple(v)) => Some(v.iter().cloned().map(HostValue::Const).collect()),
                _ => None,
            }
        };
        let consts: Vec<C> = args.iter().filter_map(|a| a.clone().into_const()).collect();
        let bad = || self.unknown(e, format!("unsupported use of `{b}`"));
        match b {
            "len" => match args.first().and_then(list_items) {
                Some(v) => Ok(HostValue::Const(C::Int(v.len() as i128))),
                None => match args.first() {
                    Some(HostValue::Dict(d)) => Ok(HostValue::Const(C::Int(d.len() as i128))),
                    Some(HostValue::Const(C::Str(s))) => Ok(HostValue::Const(C::Int(s.len() as i128))),
                    _ => Err(bad()),
                },
            },
            "list" | "tuple" => {
                if args.is_empty() {
                    return Ok(HostValue::List(vec![]));
                }
                args.first().and_then(list_items).map(HostValue::List).ok_or_else(bad)
            }
            "range" => {
                let ints: Vec<i128> = consts.iter().filter_map(|c| c.as_int()).collect();
                if ints.len() != args.len() || ints.is_empty() || ints.len() > 3 {
                    return Err(bad());
                }
                let (start, stop, step) = match ints.len() {
                    1 => (0, ints[0], 1),
                    2 => (ints[0], ints[1], 1),
                    _ => (ints[0], ints[1], ints[2]),
                };
                if step == 0 {
                    return Err(self.unknown(e, "range() step must not be zero"));
                }
                let mut v = vec![];
                let mut i = start;
                while (step > 0 && i < stop) || (step < 0 && i > stop) {
                    v.push(HostValue::Const(C::Int(i)));
                    if v.len() > 1 << 16 {
                        return Err(self.unknown(e, "range too large"));
                    }
                    i += step;
                }
                Ok(HostValue::List(v))
            }
            "min" | "max" | "sum" => {
                let items: Vec<C> = if args.len() == 1 {
                    args[0]
                        .clone()
                        .into_const()
                        .and_then(|c| if let C::Tuple(v) = c { Some(v) } else { None })
                        .ok_or_else(bad)?
                } else {
                    if consts.len() != args.len() {
                        return Err(bad());
                    }
                    consts
                };
                if b == "sum" {
                    let mut acc = C::Int(0);
                    for x in &items {
                        acc = binop(PyBinOp::Add, &acc, x).map_err(|m| self.src.error(e.range(), m))?;
                    }
                    return Ok(HostValue::Const(acc));
                }
                let mut best: Option<C> = None;
                for x in items {
                    best = Some(match best {
                        None => x,
                        Some(cur) => {
                            let op = if b == "min" { PyCmp::Lt } else { PyCmp::Gt };
                            if compare(op, &x, &cur).map_err(|m| self.src.error(e.range(), m))? {
                                x
                            } else {
                                cur
                            }
                        }
                    });
                }
                best.map(HostValue::Const).ok_or_else(|| self.unknown(e, format!("{b}() of an empty sequence")))
            }
            "abs" => match consts.first() {
                Some(C::Int(v)) => Ok(HostValue::Const(C::Int(v.abs()))),
                Some(C::Float(v)) => Ok(HostValue::Const(C::Float(v.abs()))),
                Some(C::Bool(v)) => Ok(HostValue::Const(C::Int(*v as i128))),
                _ => Err(bad()),
            },
            "int" => match consts.first() {
                Some(C::Float(v)) if v.is_finite() => Ok(HostValue::Const(C::Int(v.trunc() as i128))),
                Some(c) if c.as_int().is_some() => Ok(HostValue::Const(C::Int(c.as_int().unwrap_or(0)))),
                Some(C::Str(s)) => s.trim().parse::<i128>().map(|v| HostValue::Const(C::Int(v))).map_err(|_| bad()),
                _ => Err(bad()),
            },
            "float" => match consts.first() {
                Some(c) if c.as_f64().is_some() => Ok(py_float_const(c.as_f64().unwrap_or(0.0))),
                Some(C::Str(s)) => match s.trim() {
                    "inf" | "+inf" => Ok(py_float_const(f64::INFINITY)),
                    "-inf" => Ok(py_float_const(f64::NEG_INFINITY)),
                    "nan" => Ok(py_float_const(f64::NAN)),
                    t => t.parse::<f64>().map(py_float_const).map_err(|_| bad()),
                },
                _ => Err(bad()),
            },
            "bool" => match consts.first() {
                Some(c) => Ok(HostValue::Const(C::Bool(c.truthy().unwrap_or(true)))),
                None => Ok(HostValue::Const(C::Bool(false))),
            },
            "str" => match consts.first() {
                Some(c) => Ok(HostValue::Const(C::Str(c.to_string()))),
                None => Ok(HostValue::Const(C::Str(String::new()))),
            },
            "round" => match consts.first().and_then(|c| c.as_f64()) {
                Some(v) => Ok(HostValue::Const(C::Int(round_half_even(v) as i128))),
                None => Err(bad()),
            },
            "pow" if consts.len() == 2 => binop(PyBinOp::Pow, &consts[0], &consts[1])
                .map(HostValue::Const)
                .map_err(|m| self.src.error(e.range(), m)),
            _ => Err(bad()),
        }
    }

    fn config(&mut self, e: &Expr, args: Vec<HostValue>, kwargs: Vec<(String, HostValue, TextRange)>) -> R<HostValue> {
        let mut cfg = Config::default();
        let mut it = args.into_iter();
        let mut kw_dict = it.next();
        for (k, v, r) in kwargs {
            let as_u32 = |me: &Self, v: &HostValue| -> R<Option<u32>> {
                match v {
                    HostValue::Const(ConstValue::None) => Ok(None),
                    HostValue::Const(c) => c
                        .as_int()
                        .and_then(|i| u32::try_from(i).ok())
                        .map(Some)
                        .ok_or_else(|| me.src.error(r, format!("`{k}` must be a non-negative integer"))),
                    _ => Err(me.src.error(r, format!("`{k}` must be a non-negative integer"))),
                }
            };
            match k.as_str() {
                "kwargs" => kw_dict = Some(v),
                "num_warps" => cfg.num_warps = as_u32(self, &v)?.unwrap_or(4),
                "num_stages" => cfg.num_stages = as_u32(self, &v)?.unwrap_or(3),
                "num_ctas" => cfg.num_ctas = as_u32(self, &v)?.unwrap_or(1),
                "maxnreg" => cfg.maxnreg = as_u32(self, &v)?,
                "pre_hook" => cfg.pre_hook = !matches!(v, HostValue::Const(ConstValue::None)),
                _ => {} // ir_override and future options do not change the tile IR
            }
        }
        match kw_dict {
            Some(HostValue::Dict(items)) => {
                for (k, v) in items {
                    let HostValue::Const(ConstValue::Str(k)) = k else {
                        return Err(self.unknown(e, "Config keys must be strings"));
                    };
                    let v = v
                        .into_const()
                        .ok_or_else(|| self.unknown(e, format!("Config value of `{k}` is not a constant")))?;
                    cfg.kwargs.push((k, v));
                }
            }
            Some(other) => {
                return Err(self.unknown(e, format!("Config kwargs must be a dict, not {}", other.describe())))
            }
            None => {}
        }
        Ok(HostValue::Config(Box::new(cfg)))
    }
}

fn round_half_even(v: f64) -> f64 {
    let r = v.round();
    if (v - v.trunc()).abs() == 0.5 && r % 2.0 != 0.0 {
        r - v.signum()
    } else {
        r
    }
}

fn py_math(name: &str, x: f64, y: Option<f64>) -> Option<HostValue> {
    let v = match name {
        "sqrt" => x.sqrt(),
        "exp" => x.exp(),
        "exp2" => x.exp2(),
        "log" => match y {
            Some(b) => x.ln() / b.ln(),
            None => x.ln(),
        },
        "log2" => x.log2(),
        "log10" => x.log10(),
        "sin" => x.sin(),
        "cos" => x.cos(),
        "tan" => x.tan(),
        "fabs" => x.abs(),
        "pow" => x.powf(y?),
        "floor" => return Some(HostValue::Const(ConstValue::Int(x.floor() as i128))),
        "ceil" => return Some(HostValue::Const(ConstValue::Int(x.ceil() as i128))),
        "isnan" => return Some(HostValue::Const(ConstValue::Bool(x.is_nan()))),
        "isinf" => return Some(HostValue::Const(ConstValue::Bool(x.is_infinite()))),
        _ => return None,
    };
    Some(py_float_const(v))
}

pub(crate) fn py_binop(op: ast::Operator) -> Option<PyBinOp> {
    use ast::Operator as O;
    Some(match op {
        O::Add => PyBinOp::Add,
        O::Sub => PyBinOp::Sub,
        O::Mult => PyBinOp::Mul,
        O::Div => PyBinOp::Div,
        O::FloorDiv => PyBinOp::FloorDiv,
        O::Mod => PyBinOp::Mod,
        O::Pow => PyBinOp::Pow,
        O::LShift => PyBinOp::LShift,
        O::RShift => PyBinOp::RShift,
        O::BitAnd => PyBinOp::BitAnd,
        O::BitOr => PyBinOp::BitOr,
        O::BitXor => PyBinOp::BitXor,
        O::MatMult => return None,
    })
}

pub(crate) fn py_cmp(op: ast::CmpOp) -> Option<PyCmp> {
    use ast::CmpOp as C;
    Some(match op {
        C::Eq => PyCmp::Eq,
        C::NotEq => PyCmp::Ne,
        C::Lt => PyCmp::Lt,
        C::LtE => PyCmp::Le,
        C::Gt => PyCmp::Gt,
        C::GtE => PyCmp::Ge,
        _ => return None,
    })
}

/// The Triton version whose semantics Trident follows (what `triton.__version__` reads as).
pub(crate) const TRITON_VERSION: &str = "3.9.0";

/// Whether a foreign callable builds a comparable version from a string: `packaging.version.Version`
/// and `parse`, `distutils`' `LooseVersion`/`StrictVersion`, `pkg_resources.parse_version`, and
/// projects' own re-exports of these under the same names (`from unsloth_zoo.utils import Version`).
fn is_version_ctor(what: &str) -> bool {
    let last = what.rsplit('.').next().unwrap_or(what);
    matches!(last, "Version" | "LooseVersion" | "StrictVersion" | "parse_version") || what.ends_with("version.parse")
}

/// A version string as a tuple of its leading numeric release components (`"3.0.0+git1"` → `(3, 0, 0)`).
fn version_tuple(s: &str) -> ConstValue {
    let mut parts = vec![];
    for p in s.split('.') {
        let digits: String = p.chars().take_while(|c| c.is_ascii_digit()).collect();
        match digits.parse::<i128>() {
            Ok(n) => parts.push(ConstValue::Int(n)),
            Err(_) => break,
        }
        if digits.len() != p.len() {
            break;
        }
    }
    ConstValue::Tuple(parts)
}

/// The string methods module-level code uses on version strings.
fn str_method(s: &str, name: &str, args: &[Option<ConstValue>]) -> Option<HostValue> {
    let str_arg = |i: usize| match args.get(i) {
        Some(Some(ConstValue::Str(a))) => Some(a.clone()),
        _ => None,
    };
    let strs =
        |v: Vec<&str>| HostValue::List(v.into_iter().map(|x| HostValue::Const(ConstValue::Str(x.into()))).collect());
    Some(match name {
        "split" => match args.first() {
            None | Some(Some(ConstValue::None)) => strs(s.split_whitespace().collect()),
            _ => strs(s.split(str_arg(0)?.as_str()).collect()),
        },
        "startswith" => HostValue::Const(ConstValue::Bool(s.starts_with(str_arg(0)?.as_str()))),
        "endswith" => HostValue::Const(ConstValue::Bool(s.ends_with(str_arg(0)?.as_str()))),
        "strip" => HostValue::Const(ConstValue::Str(s.trim().into())),
        "lower" => HostValue::Const(ConstValue::Str(s.to_lowercase())),
        "upper" => HostValue::Const(ConstValue::Str(s.to_uppercase())),
        _ => return None,
    })
}

/// `items[lo:hi:step]` with Python's rules for missing and negative bounds; `None` for a zero step.
fn py_slice<T>(items: Vec<T>, lo: Option<i128>, hi: Option<i128>, step: Option<i128>) -> Option<Vec<T>> {
    let n = items.len() as i128;
    let step = step.unwrap_or(1);
    if step == 0 {
        return None;
    }
    let clamp = |v: i128, lo_lim: i128, hi_lim: i128| {
        let v = if v < 0 { v + n } else { v };
        v.clamp(lo_lim, hi_lim)
    };
    let idx: Vec<usize> = if step > 0 {
        let (a, b) = (clamp(lo.unwrap_or(0), 0, n), clamp(hi.unwrap_or(n), 0, n));
        (a..b.max(a)).step_by(step as usize).map(|i| i as usize).collect()
    } else {
        let a = lo.map(|v| clamp(v, -1, n - 1)).unwrap_or(n - 1);
        let b = hi.map(|v| clamp(v, -1, n - 1)).unwrap_or(-1);
        let mut v = vec![];
        let mut i = a;
        while i > b {
            v.push(i as usize);
            i += step;
        }
        v
    };
    let mut slots: Vec<Option<T>> = items.into_iter().map(Some).collect();
    Some(idx.into_iter().filter_map(|i| slots.get_mut(i).and_then(Option::take)).collect())
}

/// What running a statement of a called Python function did.
enum Flow {
    Next,
    Return(HostValue),
}

impl HostEval<'_> {
    fn list_of(&self, e: &Expr, v: HostValue) -> R<Vec<HostValue>> {
        match v {
            HostValue::List(v) => Ok(v),
            HostValue::Const(ConstValue::Tuple(v)) => Ok(v.into_iter().map(HostValue::Const).collect()),
            other => Err(self.unknown(e, format!("cannot iterate over {}", other.describe()))),
        }
    }

    fn truthy(&self, e: &Expr, v: &HostValue) -> R<bool> {
        match v {
            HostValue::Const(c) => c.truthy().ok_or_else(|| self.unknown(e, "a truth value of a non-constant")),
            HostValue::List(l) => Ok(!l.is_empty()),
            HostValue::Dict(d) => Ok(!d.is_empty()),
            HostValue::Config(_) | HostValue::PyDef(..) | HostValue::Lambda(_) => Ok(true),
            other => Err(self.unknown(e, format!("the truth value of {}", other.describe()))),
        }
    }

    /// Calls a callable host value with positional arguments.
    fn apply(&mut self, e: &Expr, f: &HostValue, args: Vec<HostValue>) -> R<HostValue> {
        match f {
            HostValue::PyDef(dep, path) => self.call_def(e, *dep, path, args, vec![]),
            HostValue::Lambda(r) => self.call_lambda_at(e, *r, args),
            HostValue::PyBuiltin(b) => self.builtin(e, b, args),
            other => Err(self.unknown(e, format!("cannot call {}", other.describe()))),
        }
    }

    /// `filter`, `map`, `any`, `all` (eagerly: they feed `list(...)` or a truth test).
    fn functional_builtin(&mut self, e: &Expr, b: &str, args: Vec<HostValue>) -> R<HostValue> {
        match b {
            "filter" | "map" => {
                let mut it = args.into_iter();
                let (Some(f), Some(xs)) = (it.next(), it.next()) else {
                    return Err(self.unknown(e, format!("{b}() takes a function and an iterable")));
                };
                let mut out = vec![];
                for x in self.list_of(e, xs)? {
                    if b == "map" {
                        out.push(self.apply(e, &f, vec![x])?);
                    } else {
                        let keep = if matches!(f, HostValue::Const(ConstValue::None)) {
                            self.truthy(e, &x)?
                        } else {
                            let r = self.apply(e, &f, vec![x.clone()])?;
                            self.truthy(e, &r)?
                        };
                        if keep {
                            out.push(x);
                        }
                    }
                }
                Ok(HostValue::List(out))
            }
            _ => {
                let xs = self.list_of(e, args.into_iter().next().unwrap_or(HostValue::List(vec![])))?;
                let mut acc = b == "all";
                for x in &xs {
                    let t = self.truthy(e, x)?;
                    if b == "all" {
                        acc &= t;
                    } else {
                        acc |= t;
                    }
                }
                Ok(HostValue::Const(ConstValue::Bool(acc)))
            }
        }
    }

    /// Calls a lambda found at `r` in the module's text.
    fn call_lambda_at(&mut self, e: &Expr, r: TextRange, args: Vec<HostValue>) -> R<HostValue> {
        let Some((_, text)) = self.module else { return Err(self.unknown(e, "calling a lambda here")) };
        let parsed = ruff_python_parser::parse_parenthesized_expression_range(text, r)
            .map_err(|err| self.src.error(r, format!("cannot parse lambda: {}", err.error)))?;
        let Expr::Lambda(l) = &*parsed.syntax().body else { return Err(self.unknown(e, "not a lambda")) };
        let l = l.clone();
        self.call_lambda(&l, args)
    }

    /// Calls a plain module-level `def`: its body may assign names, branch, loop over lists and return.
    fn call_def(
        &mut self,
        e: &Expr,
        dep: Option<u32>,
        path: &[(u32, u32)],
        args: Vec<HostValue>,
        kwargs: Vec<(String, HostValue, TextRange)>,
    ) -> R<HostValue> {
        if let Some(d) = dep {
            // A function of another project file runs with that file's names.
            let Some(Some(f)) = self.deps.and_then(|ds| ds.get(d as usize)) else {
                return Err(self.unknown(e, "a function of a file that did not load"));
            };
            let mut inner =
                HostEval::new(&f.shared.globals, f.shared.src(2 + d)).with_module(&f.module.body, &f.shared.text);
            inner.deps = self.deps;
            inner.budget = self.budget;
            let r = inner.call_def(e, None, path, args, kwargs);
            self.budget = inner.budget;
            return r;
        }
        let Some((stmts, _)) = self.module else { return Err(self.unknown(e, "calling a Python function here")) };
        let Some(f) = crate::kernel::resolve_def(stmts, path) else {
            return Err(self.unknown(e, "the called function was not found"));
        };
        let params: Vec<&ast::ParameterWithDefault> = f
            .parameters
            .posonlyargs
            .iter()
            .chain(f.parameters.args.iter())
            .chain(f.parameters.kwonlyargs.iter())
            .collect();
        if args.len() > params.len() || f.parameters.vararg.is_some() || f.parameters.kwarg.is_some() {
            return Err(self.unknown(e, format!("the arguments of `{}`", f.name.id)));
        }
        let mut bound: Vec<(String, HostValue)> = vec![];
        let mut args = args.into_iter();
        for p in &params {
            let name = p.parameter.name.id.to_string();
            let v = match args.next() {
                Some(v) => v,
                None => match kwargs.iter().find(|(k, _, _)| *k == name) {
                    Some((_, v, _)) => v.clone(),
                    None => match &p.default {
                        Some(d) => self.eval(d)?,
                        None => return Err(self.unknown(e, format!("missing argument `{name}` of `{}`", f.name.id))),
                    },
                },
            };
            bound.push((name, v));
        }
        let mark = self.locals.len();
        self.locals.extend(bound);
        let r = self.run_body(&f.body, mark);
        self.locals.truncate(mark);
        match r? {
            Flow::Return(v) => Ok(v),
            Flow::Next => Ok(HostValue::Const(ConstValue::None)),
        }
    }

    /// Binds `name` in the innermost function frame (the locals from `mark` on).
    fn set_local(&mut self, mark: usize, name: &str, v: HostValue) {
        match self.locals[mark..].iter_mut().rev().find(|(k, _)| k == name) {
            Some(slot) => slot.1 = v,
            None => self.locals.push((name.to_string(), v)),
        }
    }

    fn assign(&mut self, mark: usize, target: &Expr, v: HostValue) -> R<()> {
        match target {
            Expr::Name(n) => {
                self.set_local(mark, n.id.as_str(), v);
                Ok(())
            }
            Expr::Tuple(t) => {
                let items = self.list_of(target, v)?;
                if items.len() != t.elts.len() {
                    return Err(self.unknown(target, "unpacking a different number of values"));
                }
                for (x, it) in t.elts.iter().zip(items) {
                    self.assign(mark, x, it)?;
                }
                Ok(())
            }
            _ => Err(self.unknown(target, "assignment to this target")),
        }
    }

    fn run_body(&mut self, body: &[ast::Stmt], mark: usize) -> R<Flow> {
        use ast::Stmt;
        for s in body {
            if self.budget == 0 {
                return Err(self.src.error(s.range(), "this Python function runs too long to evaluate statically"));
            }
            self.budget -= 1;
            match s {
                Stmt::Return(r) => {
                    let v = match &r.value {
                        Some(v) => self.eval(v)?,
                        None => HostValue::Const(ConstValue::None),
                    };
                    return Ok(Flow::Return(v));
                }
                Stmt::Assign(a) => {
                    let v = self.eval(&a.value)?;
                    for t in &a.targets {
                        self.assign(mark, t, v.clone())?;
                    }
                }
                Stmt::AnnAssign(a) => {
                    if let Some(v) = &a.value {
                        let v = self.eval(v)?;
                        self.assign(mark, &a.target, v)?;
                    }
                }
                Stmt::AugAssign(a) => {
                    let old = self.eval(&a.target)?;
                    let rhs = self.eval(&a.value)?;
                    let (Some(x), Some(y)) = (old.into_const(), rhs.into_const()) else {
                        return Err(self.src.error(s.range(), "cannot evaluate this augmented assignment statically"));
                    };
                    let op = py_binop(a.op).ok_or_else(|| self.src.error(s.range(), "unsupported operator"))?;
                    let v = binop(op, &x, &y).map_err(|m| self.src.error(s.range(), m))?;
                    self.assign(mark, &a.target, HostValue::Const(v))?;
                }
                Stmt::If(i) => {
                    let mut clauses: Vec<(Option<&Expr>, &[Stmt])> = vec![(Some(&i.test), &i.body)];
                    for c in &i.elif_else_clauses {
                        clauses.push((c.test.as_ref(), &c.body));
                    }
                    for (test, body) in clauses {
                        let take = match test {
                            None => true,
                            Some(t) => {
                                let v = self.eval(t)?;
                                self.truthy(t, &v)?
                            }
                        };
                        if take {
                            if let Flow::Return(v) = self.run_body(body, mark)? {
                                return Ok(Flow::Return(v));
                            }
                            break;
                        }
                    }
                }
                Stmt::For(f) if f.orelse.is_empty() => {
                    let xs = self.eval(&f.iter)?;
                    for x in self.list_of(&f.iter, xs)? {
                        self.assign(mark, &f.target, x)?;
                        if let Flow::Return(v) = self.run_body(&f.body, mark)? {
                            return Ok(Flow::Return(v));
                        }
                    }
                }
                Stmt::Expr(x) if matches!(&*x.value, Expr::StringLiteral(_)) => {}
                // `xs.append(v)` / `xs.extend(vs)` on a local list.
                Stmt::Expr(x) if self.list_update(mark, &x.value)? => {}
                // Other expression statements (logging, prints) have no effect on the values here.
                Stmt::Expr(_) => {}
                Stmt::Pass(_) => {}
                other => {
                    return Err(self.src.error(other.range(), "this statement cannot be evaluated statically"));
                }
            }
        }
        Ok(Flow::Next)
    }
}

/// The machine module-level code asks about (`is_hip()`, `torch.cuda.get_device_capability()`,
/// `triton.runtime.driver.active.get_current_target().arch`): Trident compiles for NVIDIA GPUs,
/// and answers as an sm_90 CUDA device would, so that platform checks take their CUDA branch.
const TARGET: &str = "<cuda target>";

fn platform_call(what: &str) -> Option<HostValue> {
    let c = |v: ConstValue| Some(HostValue::Const(v));
    match what {
        _ if what.ends_with("driver.active.get_current_target") => Some(HostValue::Foreign(TARGET.into())),
        _ if what.ends_with("driver.active.get_current_device") => c(ConstValue::Int(0)),
        "torch.cuda.is_available" => c(ConstValue::Bool(true)),
        "torch.cuda.get_device_capability" => c(ConstValue::Tuple(vec![ConstValue::Int(9), ConstValue::Int(0)])),
        "torch.cuda.device_count" | "torch.cuda.current_device" => {
            c(ConstValue::Int(if what.ends_with("count") { 1 } else { 0 }))
        }
        _ => None,
    }
}

fn platform_attr(what: &str, a: &str) -> Option<HostValue> {
    let c = |v: ConstValue| Some(HostValue::Const(v));
    match (what, a) {
        (TARGET, "backend") => c(ConstValue::Str("cuda".into())),
        (TARGET, "arch") => c(ConstValue::Int(90)),
        (TARGET, "warp_size") => c(ConstValue::Int(32)),
        ("torch.version", "hip") => c(ConstValue::None),
        _ => None,
    }
}

impl HostEval<'_> {
    /// `module.name` for a module of the project: what `name` is bound to in that file.
    fn project_attr(&self, e: &Expr, d: u32, a: &str) -> R<HostValue> {
        let Some(Some(f)) = self.deps.and_then(|ds| ds.get(d as usize)) else {
            return Err(self.unknown(e, "a module of the project that did not load"));
        };
        match f.shared.globals.get(a).map(Global::settled) {
            Some(Global::Value(v)) => Ok(v.clone()),
            Some(Global::Module(m)) => Ok(HostValue::Module(*m)),
            Some(Global::Attr(m, name)) => self.module_attr(e, *m, name),
            Some(Global::HostDef(_, Some(path))) => Ok(HostValue::PyDef(Some(d), path.clone())),
            Some(Global::DepDef(d2, path)) => Ok(HostValue::PyDef(Some(*d2), path.clone())),
            Some(Global::DepModule(d2)) => Ok(HostValue::PyModule(*d2)),
            Some(Global::Opaque(what)) => Ok(HostValue::Foreign(what.clone())),
            Some(_) => Err(self.unknown(e, format!("`{a}` of a project module is not a host value"))),
            None => Err(self.unknown(e, format!("the project module has no name `{a}`"))),
        }
    }
}

impl HostEval<'_> {
    /// Runs `name.append(v)` / `name.extend(vs)` on a list local to the running function;
    /// false when `e` is not such a call.
    fn list_update(&mut self, mark: usize, e: &Expr) -> R<bool> {
        let Expr::Call(c) = e else { return Ok(false) };
        let Expr::Attribute(at) = &*c.func else { return Ok(false) };
        let Expr::Name(n) = &*at.value else { return Ok(false) };
        let method = at.attr.id.as_str();
        if !matches!(method, "append" | "extend") || c.arguments.args.len() != 1 {
            return Ok(false);
        }
        let Some(pos) = self.locals[mark..].iter().rposition(|(k, _)| k == n.id.as_str()) else { return Ok(false) };
        let arg = self.eval(&c.arguments.args[0])?;
        let extra = if method == "append" { vec![arg] } else { self.list_of(e, arg)? };
        match &mut self.locals[mark + pos].1 {
            HostValue::List(items) => {
                items.extend(extra);
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}
