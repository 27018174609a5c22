//! Calls: argument evaluation and binding, dispatch to builtins, `@triton.jit`
//! functions, Python builtins and methods.

use super::val::RangeVal;
use super::{suggest, FnLowering, Val, R};
use crate::language::Mod;
use crate::value::{compare, ConstValue, PyCmp};
use ruff_python_ast::{self as ast, Expr};
use ruff_text_size::{Ranged, TextRange};
use trident_ir::Elem;

#[derive(Clone, Debug)]
pub(crate) struct Arg {
    pub v: Val,
    pub r: TextRange,
}

/// The arguments of one call, as written.
#[derive(Clone, Debug)]
pub(crate) struct Args {
    pub pos: Vec<Arg>,
    pub kw: Vec<(String, Arg)>,
    /// The whole call expression.
    pub r: TextRange,
    /// How the callee is spelled, for messages (`tl.load`).
    pub name: String,
}

/// Arguments bound to a signature: one slot per named parameter, plus extra positionals for `*rest`.
pub(crate) struct Bound {
    pub slots: Vec<Option<Arg>>,
    pub rest: Vec<Arg>,
    pub r: TextRange,
}

impl Bound {
    pub(crate) fn get(&self, i: usize) -> Option<&Arg> {
        self.slots.get(i).and_then(|a| a.as_ref())
    }

    /// The argument's value, or `None` when it was not given or given as `None`.
    pub(crate) fn opt(&self, i: usize) -> Option<&Arg> {
        self.get(i).filter(|a| !a.v.is_none())
    }

    pub(crate) fn val(&self, i: usize) -> Val {
        self.get(i).map(|a| a.v.clone()).unwrap_or(Val::none())
    }

    pub(crate) fn range(&self, i: usize) -> TextRange {
        self.get(i).map(|a| a.r).unwrap_or(self.r)
    }
}

impl<'c, 'a> FnLowering<'c, 'a> {
    /// Binds `args` to `spec`: `"x"` required, `"x="` optional, `"*xs"` the remaining positionals,
    /// `"*"` starts keyword-only parameters.
    pub(crate) fn bind(&self, args: &Args, spec: &[&str]) -> R<Bound> {
        let mut slots: Vec<Option<Arg>> = vec![None; spec.len()];
        let mut rest = vec![];
        let names: Vec<&str> = spec.iter().map(|s| s.trim_start_matches('*').trim_end_matches('=')).collect();
        let mut pi = 0;
        let mut kw_only = false;
        for a in &args.pos {
            loop {
                if pi >= spec.len() || kw_only {
                    return Err(self.err(
                        a.r,
                        format!(
                            "{}() takes at most {} positional arguments",
                            args.name,
                            spec.iter().take_while(|s| !s.starts_with('*')).count()
                        ),
                    ));
                }
                let s = spec[pi];
                if s == "*" {
                    kw_only = true;
                    continue;
                }
                if s.starts_with('*') {
                    rest.push(a.clone());
                    break;
                }
                slots[pi] = Some(a.clone());
                pi += 1;
                break;
            }
        }
        for (k, a) in &args.kw {
            match names.iter().position(|n| n == k && !n.is_empty()) {
                Some(i) if !spec[i].starts_with('*') || spec[i] == "*" => {
                    if slots[i].is_some() {
                        return Err(self.err(a.r, format!("{}() got multiple values for argument `{k}`", args.name)));
                    }
                    slots[i] = Some(a.clone());
                }
                _ => {
                    let mut d = self.err(a.r, format!("{}() got an unexpected keyword argument `{k}`", args.name));
                    let cands = names.iter().copied().filter(|n| !n.is_empty());
                    if let Some(c) = suggest::closest(k, cands) {
                        d.notes.push(format!("did you mean `{c}=`?"));
                    } else {
                        let valid: Vec<&str> = names.iter().copied().filter(|n| !n.is_empty()).collect();
                        d.notes.push(format!("parameters: {}", valid.join(", ")));
                    }
                    return Err(d);
                }
            }
        }
        for (i, s) in spec.iter().enumerate() {
            if !s.ends_with('=') && !s.starts_with('*') && slots[i].is_none() {
                return Err(self.err(args.r, format!("{}() missing required argument `{}`", args.name, names[i])));
            }
        }
        Ok(Bound { slots, rest, r: args.r })
    }

    pub(crate) fn call_expr(&mut self, c: &ast::ExprCall) -> R<Val> {
        let f = self.expr(&c.func)?;
        let mut pos = vec![];
        for a in c.arguments.args.iter() {
            if let Expr::Starred(s) = a {
                match self.expr(&s.value)? {
                    Val::Tuple(items) => pos.extend(items.into_iter().map(|v| Arg { v, r: a.range() })),
                    other => return Err(self.err(a.range(), format!("`*` needs a tuple, not {}", other.kind_name()))),
                }
            } else {
                pos.push(Arg { v: self.expr(a)?, r: a.range() });
            }
        }
        let mut kw = vec![];
        for k in c.arguments.keywords.iter() {
            let Some(name) = &k.arg else {
                return Err(self.err(k.range, "`**kwargs` is not supported in kernel calls"));
            };
            kw.push((name.id.to_string(), Arg { v: self.expr(&k.value)?, r: k.value.range() }));
        }
        let name = callee_name(&c.func);
        self.call(f, Args { pos, kw, r: c.range(), name })
    }

    pub(crate) fn call(&mut self, f: Val, args: Args) -> R<Val> {
        match f {
            Val::Builtin(m, name) => self.call_builtin(m, &name, args),
            Val::Jit(fr) => self.call_jit(fr, args),
            Val::PyFn(n) => self.call_pyfn(n, args),
            Val::Method(recv, name) => self.call_method(*recv, &name, args),
            Val::C(ConstValue::DType(e)) => {
                // `tl.float32(x)`: a conversion.
                let b = self.bind(&args, &["x"])?;
                let x = self.tensor_of(&b.val(0), b.range(0))?;
                Ok(Val::T(self.cast(x, e, None, args.r)?))
            }
            other => Err(self.err(args.r, format!("{} is not callable", other.kind_name()))),
        }
    }

    /// Binds a call's arguments to a `@triton.jit` function's parameters (defaults filled in).
    pub(crate) fn bind_jit(&self, fr: super::FnRef, args: &Args) -> R<Vec<(String, Val)>> {
        let file = self.ctx.file(fr.file);
        let info = &file.fns[fr.idx];
        let spec: Vec<String> =
            info.params.iter().map(|p| if p.has_default { format!("{}=", p.name) } else { p.name.clone() }).collect();
        let spec_refs: Vec<&str> = spec.iter().map(|s| s.as_str()).collect();
        let b = self.bind(args, &spec_refs)?;
        let mut out = vec![];
        for (i, p) in info.params.iter().enumerate() {
            let v = match b.get(i) {
                Some(a) => a.v.clone(),
                None => match &p.default {
                    Some(d) => Val::from_const(d.clone()),
                    None => {
                        return Err(self.err(
                            args.r,
                            format!(
                                "the default value of `{}` of `{}` is not a compile-time constant",
                                p.name, info.name
                            ),
                        ))
                    }
                },
            };
            // A `tl.constexpr` annotation on a helper's parameter is not enforced: Triton decides what
            // is constant by the argument (the fused-attention tutorial passes offset tensors to
            // `offs_m: tl.constexpr`). Only kernel parameters are bound by their annotations.
            out.push((p.name.clone(), v));
        }
        Ok(out)
    }

    fn call_jit(&mut self, fr: super::FnRef, args: Args) -> R<Val> {
        let params = self.bind_jit(fr, &args)?;
        if fr.is_prelude() {
            let what = self.ctx.file(fr.file).fns[fr.idx].name.clone();
            self.inline_call(fr, params, args.r, &format!("tl.{what}"))
        } else {
            self.call_helper(fr, params, args.r)
        }
    }

    /// Calls the prelude function `name` (Trident's Triton-source implementation of a `tl` function).
    pub(crate) fn call_prelude(&mut self, name: &str, args: Args) -> R<Val> {
        let file = self.ctx.file(super::FileId::Prelude);
        let idx = file
            .fns
            .iter()
            .position(|k| k.name == name)
            .ok_or_else(|| self.err(args.r, format!("internal error: prelude function `{name}` is missing")))?;
        let fr = super::FnRef { file: super::FileId::Prelude, idx };
        let params = self.bind_jit(fr, &args)?;
        let shown = args.name.clone();
        self.inline_call(fr, params, args.r, &shown)
    }

    fn call_method(&mut self, recv: Val, name: &str, mut args: Args) -> R<Val> {
        match recv {
            Val::C(ConstValue::DType(e)) => {
                let d = e.num();
                let b = match name {
                    "is_floating" => d.is_some_and(|d| d.is_float()),
                    "is_int" => d.is_some_and(|d| d.is_int()),
                    "is_int_signed" => d.is_some_and(|d| d.is_signed_int()),
                    "is_int_unsigned" => d.is_some_and(|d| d.is_unsigned_int() || d.is_bool()),
                    "is_bool" | "is_int1" => d == Some(trident_core::DType::I1),
                    "is_ptr" => e.is_ptr(),
                    "is_fp8" => d.is_some_and(|d| d.is_fp8()),
                    "is_fp8e4nv" => d == Some(trident_core::DType::F8E4M3),
                    "is_fp8e5" => d == Some(trident_core::DType::F8E5M2),
                    "is_fp16" => d == Some(trident_core::DType::F16),
                    "is_bf16" => d == Some(trident_core::DType::BF16),
                    "is_fp32" => d == Some(trident_core::DType::F32),
                    "is_fp64" => d == Some(trident_core::DType::F64),
                    "is_int8" => d == Some(trident_core::DType::I8),
                    "is_int16" => d == Some(trident_core::DType::I16),
                    "is_int32" => d == Some(trident_core::DType::I32),
                    "is_int64" => d == Some(trident_core::DType::I64),
                    "is_uint8" => d == Some(trident_core::DType::U8),
                    "is_uint16" => d == Some(trident_core::DType::U16),
                    "is_uint32" => d == Some(trident_core::DType::U32),
                    "is_uint64" => d == Some(trident_core::DType::U64),
                    "is_standard_floating" => d.is_some_and(|d| d.is_float() && !d.is_fp8()),
                    "is_block" | "is_void" => false,
                    _ => return Err(self.err(args.r, format!("dtype has no method `{name}`"))),
                };
                Ok(Val::C(ConstValue::Bool(b)))
            }
            recv => {
                let r = args.r;
                let tl_name = match (&recv, name) {
                    (_, "to") => "cast",
                    (Val::BlockPtr(b), "load") if b.descriptor.is_some() => "load_tensor_descriptor",
                    (Val::BlockPtr(b), "store") if b.descriptor.is_some() => "store_tensor_descriptor",
                    _ => name,
                };
                args.pos.insert(0, Arg { v: recv, r });
                args.name = format!(".{name}");
                self.call_builtin(Mod::Language, tl_name, args)
            }
        }
    }

    fn call_pyfn(&mut self, n: &str, args: Args) -> R<Val> {
        let r = args.r;
        match n {
            "range" => {
                let b = self.bind(&args, &["arg1", "arg2=", "step="])?;
                Ok(Val::Range(range_of(&b, false)))
            }
            "min" | "max" => {
                let is_max = n == "max";
                let b = self.bind(&args, &["*args", "*", "propagate_nan="])?;
                let items: Vec<Arg> = if b.rest.len() == 1 {
                    match &b.rest[0].v {
                        Val::Tuple(t) => t.iter().map(|v| Arg { v: v.clone(), r: b.rest[0].r }).collect(),
                        _ => b.rest.clone(),
                    }
                } else {
                    b.rest.clone()
                };
                if items.is_empty() {
                    return Err(self.err(r, format!("{n}() needs at least one argument")));
                }
                if items.iter().all(|a| a.v.as_const().is_some()) {
                    let mut best = items[0].v.as_const().unwrap_or(ConstValue::None);
                    for a in &items[1..] {
                        let c = a.v.as_const().unwrap_or(ConstValue::None);
                        let better = compare(if is_max { PyCmp::Gt } else { PyCmp::Lt }, &c, &best)
                            .map_err(|m| self.err(a.r, m))?;
                        if better {
                            best = c;
                        }
                    }
                    return Ok(Val::from_const(best));
                }
                if items.len() < 2 {
                    return Err(self.err(r, format!("{n}() of a single tensor: use tl.{n}(x, axis) to reduce it")));
                }
                let nan = matches!(b.opt(2).map(|a| &a.v), Some(Val::C(ConstValue::Str(s))) if s.ends_with("ALL"));
                let mut acc = items[0].v.clone();
                for a in &items[1..] {
                    acc = self.min_max(is_max, &acc, &a.v, nan, r)?;
                }
                Ok(acc)
            }
            "len" => {
                let b = self.bind(&args, &["obj"])?;
                match b.val(0) {
                    Val::Tuple(t) => Ok(Val::int(t.len() as i128)),
                    Val::C(ConstValue::Str(s)) => Ok(Val::int(s.len() as i128)),
                    other => Err(self.err(b.range(0), format!("len() of {}", other.kind_name()))),
                }
            }
            "int" | "float" | "bool" | "abs" => {
                let b = self.bind(&args, &["x"])?;
                let Some(c) = b.val(0).as_const() else {
                    return Err(self.err(
                        b.range(0),
                        format!("{n}() needs a compile-time constant; convert tensors with `.to(...)`"),
                    ));
                };
                let v =
                    match (n, &c) {
                        ("int", ConstValue::Float(f)) if f.is_finite() => ConstValue::Int(f.trunc() as i128),
                        ("int", c) if c.as_int().is_some() => ConstValue::Int(c.as_int().unwrap_or(0)),
                        ("float", c) if c.as_f64().is_some() => ConstValue::Float(c.as_f64().unwrap_or(0.0)),
                        ("float", ConstValue::Str(s)) => match s.trim() {
                            "inf" | "+inf" => ConstValue::Float(f64::INFINITY),
                            "-inf" => ConstValue::Float(f64::NEG_INFINITY),
                            "nan" => ConstValue::Float(f64::NAN),
                            t => ConstValue::Float(t.parse().map_err(|_| {
                                self.err(b.range(0), format!("could not convert string to float: '{s}'"))
                            })?),
                        },
                        ("bool", c) => ConstValue::Bool(c.truthy().unwrap_or(true)),
                        ("abs", ConstValue::Float(f)) => ConstValue::Float(f.abs()),
                        ("abs", c) if c.as_int().is_some() => ConstValue::Int(c.as_int().unwrap_or(0).abs()),
                        _ => return Err(self.err(b.range(0), format!("{n}() of {}", c.type_name()))),
                    };
                Ok(Val::C(v))
            }
            "print" => {
                let mut args = args;
                let prefix = if args.pos.first().is_some_and(|a| matches!(a.v, Val::C(ConstValue::Str(_)))) {
                    args.pos.remove(0).v
                } else {
                    Val::C(ConstValue::Str(String::new()))
                };
                let vals: Vec<Arg> = args.pos.clone();
                self.device_print(prefix, vals, false, r)
            }
            "isinstance" => {
                let b = self.bind(&args, &["obj", "classinfo"])?;
                let v = b.val(0);
                let check = |cls: &Val| -> bool {
                    match cls {
                        Val::Builtin(_, n) if n == "tensor" => matches!(v, Val::T(_)),
                        // A tensor descriptor, made in the kernel or passed from the host.
                        Val::Builtin(_, n) if n == "tensor_descriptor" => {
                            matches!(&v, Val::BlockPtr(b) if b.descriptor.is_some())
                        }
                        Val::Builtin(_, n) if n == "constexpr" => v.as_const().is_some(),
                        Val::Builtin(_, n) if n == "dtype" => matches!(v, Val::C(ConstValue::DType(_))),
                        // `tl.pointer_type` is the class of pointer dtypes (a subclass of `tl.dtype`).
                        Val::Builtin(_, n) if n == "pointer_type" => {
                            matches!(v, Val::C(ConstValue::DType(trident_ir::Elem::Ptr { .. })))
                        }
                        Val::PyFn("int") => matches!(v, Val::C(ConstValue::Int(_)) | Val::C(ConstValue::Bool(_))),
                        Val::PyFn("float") => matches!(v, Val::C(ConstValue::Float(_))),
                        Val::PyFn("bool") => matches!(v, Val::C(ConstValue::Bool(_))),
                        Val::PyFn("tuple") | Val::PyFn("list") => matches!(v, Val::Tuple(_)),
                        _ => false,
                    }
                };
                let res = match b.val(1) {
                    Val::Tuple(cs) => cs.iter().any(check),
                    c => check(&c),
                };
                Ok(Val::C(ConstValue::Bool(res)))
            }
            "getattr" | "hasattr" => {
                let b = self.bind(&args, &["obj", "name", "default="])?;
                let Val::C(ConstValue::Str(attr)) = b.val(1) else {
                    return Err(self.err(b.range(1), format!("{n}() needs a constant attribute name")));
                };
                let res = self.attribute(b.val(0), &attr, b.range(1));
                match (n, res) {
                    ("hasattr", r) => Ok(Val::C(ConstValue::Bool(r.is_ok()))),
                    (_, Ok(v)) => Ok(v),
                    (_, Err(e)) => match b.get(2) {
                        Some(d) => Ok(d.v.clone()),
                        None => Err(e),
                    },
                }
            }
            "list" | "tuple" => {
                let b = self.bind(&args, &["iterable="])?;
                match b.val(0) {
                    Val::Tuple(t) => Ok(Val::Tuple(t)),
                    Val::C(ConstValue::None) => Ok(Val::Tuple(vec![])),
                    other => Err(self.err(b.range(0), format!("{n}() of {}", other.kind_name()))),
                }
            }
            _ => Err(self.err(r, format!("`{n}` cannot be called in a kernel"))),
        }
    }
}

/// `range(stop)`, `range(start, stop[, step])` arguments.
pub(crate) fn range_of(b: &Bound, is_static: bool) -> RangeVal {
    let (start, end) = match b.get(1) {
        Some(e) => (b.val(0), e.v.clone()),
        None => (Val::int(0), b.val(0)),
    };
    let step = b.get(2).map(|a| a.v.clone()).filter(|v| !v.is_none()).unwrap_or(Val::int(1));
    // `warp_specialize=` is the 8th parameter of `tl.range` (`range` takes only 3).
    let warp_specialize = b.get(7).and_then(|a| a.v.as_const()).and_then(|c| c.truthy()).unwrap_or(false);
    RangeVal { start: Box::new(start), end: Box::new(end), step: Box::new(step), is_static, warp_specialize }
}

/// How a call's callee is written (`tl.load`, `x.to`), for messages.
fn callee_name(e: &Expr) -> String {
    match e {
        Expr::Name(n) => n.id.to_string(),
        Expr::Attribute(a) => match &*a.value {
            Expr::Name(n) => format!("{}.{}", n.id, a.attr.id),
            Expr::Attribute(inner) => format!("{}.{}", callee_name(&Expr::Attribute(inner.clone())), a.attr.id),
            _ => format!(".{}", a.attr.id),
        },
        _ => "function".into(),
    }
}

/// A constant dtype argument.
pub(crate) fn dtype_of(v: &Val) -> Option<Elem> {
    match v {
        Val::C(ConstValue::DType(e)) => Some(*e),
        _ => None,
    }
}
