//! Expressions: names, constants, operators, attributes, subscripts, conditionals.

use super::emit::type_str;
use super::{suggest, FileId, FnLowering, Val, R};
use crate::globals::Global;
use crate::hosteval::{py_binop, py_cmp, HostValue};
use crate::language::dtypes::tl_dtype;
use crate::language::functions::{DTYPE_METHODS, MATH_FUNCS, TENSOR_ATTRS, TENSOR_METHODS, TL_FUNCS, TL_UNSUPPORTED};
use crate::language::{libdevice, Mod};
use crate::value::{ConstValue, PyCmp};
use ruff_python_ast::{self as ast, Expr, Number};
use ruff_text_size::{Ranged, TextRange};
use trident_core::DType;
use trident_ir::{Elem, OpKind, Type};

/// Python builtins a kernel may call.
pub(crate) const PY_FNS: &[&str] = &[
    "range",
    "min",
    "max",
    "len",
    "int",
    "float",
    "bool",
    "print",
    "isinstance",
    "getattr",
    "hasattr",
    "list",
    "tuple",
    "abs",
];

impl<'c, 'a> FnLowering<'c, 'a> {
    pub(crate) fn expr(&mut self, e: &Expr) -> R<Val> {
        let saved = self.loc;
        self.loc = self.loc_of(e.range());
        let r = self.expr_inner(e);
        self.loc = saved;
        r
    }

    fn expr_inner(&mut self, e: &Expr) -> R<Val> {
        let r = e.range();
        match e {
            Expr::NumberLiteral(n) => match &n.value {
                Number::Int(i) => crate::value::parse_py_int(&i.to_string())
                    .map(Val::int)
                    .ok_or_else(|| self.err(r, "integer literal too large")),
                Number::Float(f) => Ok(Val::C(ConstValue::Float(*f))),
                Number::Complex { .. } => Err(self.err(r, "complex numbers are not supported in kernels")),
            },
            Expr::BooleanLiteral(b) => Ok(Val::C(ConstValue::Bool(b.value))),
            Expr::NoneLiteral(_) => Ok(Val::none()),
            Expr::StringLiteral(s) => Ok(Val::C(ConstValue::Str(s.value.to_str().to_string()))),
            Expr::FString(f) => self.fstring(f),
            Expr::Name(n) => self.lookup(n.id.as_str(), r),
            Expr::Attribute(a) => {
                let base = self.expr(&a.value)?;
                self.attribute(base, a.attr.id.as_str(), a.attr.range)
            }
            Expr::Subscript(s) => {
                let base = self.expr(&s.value)?;
                let idx = self.expr(&s.slice)?;
                self.subscript(base, idx, r)
            }
            Expr::Tuple(t) => Ok(Val::Tuple(t.elts.iter().map(|x| self.expr(x)).collect::<R<_>>()?)),
            Expr::List(t) => Ok(Val::Tuple(t.elts.iter().map(|x| self.expr(x)).collect::<R<_>>()?)),
            Expr::Slice(s) => {
                let mut parts = [Val::none(), Val::none(), Val::none()];
                for (i, p) in [&s.lower, &s.upper, &s.step].into_iter().enumerate() {
                    if let Some(p) = p {
                        parts[i] = self.expr(p)?;
                    }
                }
                Ok(Val::Slice(Box::new(parts)))
            }
            Expr::BinOp(b) => {
                let lhs = self.expr(&b.left)?;
                let rhs = self.expr(&b.right)?;
                let Some(op) = py_binop(b.op) else {
                    return Err(self.err(r, "the `@` operator is not supported; use tl.dot(a, b)"));
                };
                self.arith(op, &lhs, &rhs, r)
            }
            Expr::UnaryOp(u) => {
                let v = self.expr(&u.operand)?;
                match u.op {
                    ast::UnaryOp::USub => self.neg(&v, r),
                    ast::UnaryOp::UAdd => Ok(v),
                    ast::UnaryOp::Invert => self.invert(&v, r),
                    ast::UnaryOp::Not => self.not(&v, r),
                }
            }
            Expr::BoolOp(b) => self.bool_op(b.op == ast::BoolOp::And, &b.values, r),
            Expr::Compare(c) => self.compare_chain(c),
            Expr::Call(c) => self.call_expr(c),
            Expr::If(i) => self.if_expr(i),
            Expr::Named(n) => {
                let v = self.expr(&n.value)?;
                self.assign_target(&n.target, v.clone(), r)?;
                Ok(v)
            }
            Expr::ListComp(c) => self.comprehension(&c.generators, &c.elt, r),
            Expr::Generator(c) => self.comprehension(&c.generators, &c.elt, r),
            Expr::Starred(_) => Err(self.err(r, "`*` unpacking is only allowed in call arguments")),
            Expr::Lambda(_) => Err(self.err(r, "lambdas are not supported inside kernels; use a @triton.jit function")),
            Expr::Dict(_) | Expr::DictComp(_) | Expr::Set(_) | Expr::SetComp(_) => {
                Err(self.err(r, "dicts and sets are not supported inside kernels; use tuples"))
            }
            Expr::EllipsisLiteral(_) => Err(self.err(r, "`...` is not supported inside kernels")),
            _ => Err(self.err(r, "unsupported expression in a kernel")),
        }
    }

    fn fstring(&mut self, f: &ast::ExprFString) -> R<Val> {
        let mut out = String::new();
        for part in f.value.iter() {
            match part {
                ast::FStringPart::Literal(s) => out.push_str(&s.value),
                ast::FStringPart::FString(fs) => {
                    for el in fs.elements.iter() {
                        match el {
                            ast::InterpolatedStringElement::Literal(l) => out.push_str(&l.value),
                            ast::InterpolatedStringElement::Interpolation(i) => {
                                let v = self.expr(&i.expression)?;
                                let text = match v.as_const() {
                                    Some(c) => c.to_string(),
                                    None => match &v {
                                        Val::T(x) => type_str(self.ty(*x)),
                                        other => {
                                            return Err(self.err(
                                                i.range,
                                                format!(
                                                    "f-strings in kernels can only show constants, not {}",
                                                    other.kind_name()
                                                ),
                                            ))
                                        }
                                    },
                                };
                                if let Some(d) = &i.debug_text {
                                    out.push_str(d.leading());
                                    out.push_str(&self.fr.src_text(i.expression.range()));
                                    out.push_str(d.trailing());
                                }
                                out.push_str(&text);
                            }
                        }
                    }
                }
            }
        }
        Ok(Val::C(ConstValue::Str(out)))
    }

    /// Resolves a name: local variables, then module-level names, then Python builtins.
    pub(crate) fn lookup(&mut self, name: &str, r: TextRange) -> R<Val> {
        if let Some(v) = self.fr.scope.get(name) {
            return Ok(v.clone());
        }
        let globals = self.fr.globals;
        match globals.get(name) {
            Some(g) => return self.global(self.fr.file, name, g, r),
            None => {
                if let Some(Global::Module(m)) = globals.get("*") {
                    if let Ok(v) = self.module_attr(*m, name, r) {
                        return Ok(v);
                    }
                }
            }
        }
        if let Some(f) = PY_FNS.iter().find(|f| **f == name) {
            return Ok(Val::PyFn(f));
        }
        let mut d = self.err(r, format!("name `{name}` is not defined"));
        let cands: Vec<&str> =
            self.fr.scope.keys().map(|s| s.as_str()).chain(globals.keys().map(|s| s.as_str())).collect();
        if let Some(c) = suggest::closest(name, cands.into_iter()) {
            d.notes.push(format!("did you mean `{c}`?"));
        }
        if matches!(name, "tl" | "triton") {
            d.notes.push("add `import triton.language as tl` at the top of the file".into());
        }
        Err(d)
    }

    /// What module-level binding `g` of file `file` is, as a value.
    fn global(&mut self, file: FileId, name: &str, g: &Global, r: TextRange) -> R<Val> {
        match g {
            Global::Module(m) => Ok(Val::Module(*m)),
            Global::Attr(m, a) => self.module_attr(*m, a, r),
            Global::Jit(i) => Ok(Val::Jit(super::FnRef { file, idx: *i })),
            Global::DepJit(d, i) => Ok(Val::Jit(super::FnRef { file: FileId::Dep(*d), idx: *i })),
            Global::UserJit(i) => Ok(Val::Jit(super::FnRef { file: FileId::User, idx: *i })),
            Global::DepModule(d) => Ok(Val::PyModule(FileId::Dep(*d))),
            Global::Value(HostValue::Module(m)) => Ok(Val::Module(*m)),
            Global::Value(HostValue::Func(m, a)) => self.module_attr(*m, a, r),
            Global::Value(v) => {
                match v.clone().into_const() {
                    Some(c) => Ok(Val::from_const(c)),
                    None => Err(self
                        .err(r, format!("global `{name}` is not a compile-time constant, so a kernel cannot use it"))),
                }
            }
            Global::DepDef(..) => Err(self.err(
                r,
                format!("`{name}` is a plain Python function: only @triton.jit functions can be called from a kernel"),
            )),
            Global::HostDef(what, _) => {
                Err(self.err(r, format!("{what}: only @triton.jit functions can be called from a kernel")))
            }
            Global::Opaque(what) => {
                Err(self.err(r, format!("global `{name}` ({what}) cannot be used inside a kernel")))
            }
            Global::Ambiguous(why, alts) => {
                // The condition is host code Trident cannot run (a version or platform
                // check). Where exactly one path binds something a kernel can use, that
                // path is the one taken wherever the kernel runs under Triton 3: the
                // others name functions or modules that do not exist there.
                let usable: Vec<&Global> = alts
                    .iter()
                    .flatten()
                    .filter(|g| {
                        !matches!(
                            g,
                            Global::Opaque(_) | Global::HostDef(..) | Global::DepDef(..) | Global::Ambiguous(..)
                        )
                    })
                    .filter(|g| self.global(file, name, g, r).is_ok())
                    .collect();
                match usable.as_slice() {
                    [one] => self.global(file, name, one, r),
                    _ => {
                        let mut d = self.err(r, why.clone());
                        if usable.len() > 1 {
                            d.notes.push("more than one branch binds something a kernel can use".into());
                        }
                        Err(d)
                    }
                }
            }
        }
    }

    /// `module.attr`.
    pub(crate) fn module_attr(&mut self, m: Mod, a: &str, r: TextRange) -> R<Val> {
        if let Some(sub) = m.submodule(a) {
            return Ok(Val::Module(sub));
        }
        let ok = |name: &str| Ok(Val::Builtin(m, name.to_string()));
        match m {
            Mod::Language => {
                if let Some(d) = tl_dtype(a) {
                    return Ok(Val::C(ConstValue::dtype(d)));
                }
                match a {
                    "pi32_t" => return Ok(Val::C(ConstValue::DType(Elem::ptr(DType::I32)))),
                    "TRITON_MAX_TENSOR_NUMEL" => return Ok(Val::int(1_048_576)),
                    _ => {}
                }
                if TL_FUNCS.contains(&a) {
                    return ok(a);
                }
                if TL_UNSUPPORTED.contains(&a) {
                    return Err(self.err(r, format!("`tl.{a}` is not supported by Trident yet")));
                }
                let mut d = self.err(r, format!("unknown function `tl.{a}`: triton.language has no `{a}`"));
                if let Some(c) = suggest::closest(a, TL_FUNCS.iter().copied().filter(|n| !n.starts_with('_'))) {
                    d.notes.push(format!("did you mean `tl.{c}`?"));
                }
                Err(d)
            }
            Mod::Math => {
                if MATH_FUNCS.contains(&a) {
                    return ok(a);
                }
                if libdevice::is_known(a) {
                    return Ok(Val::Builtin(Mod::Libdevice, a.to_string()));
                }
                let mut d = self.err(r, format!("unknown function `tl.math.{a}`"));
                if let Some(c) = suggest::closest(a, MATH_FUNCS.iter().copied()) {
                    d.notes.push(format!("did you mean `tl.math.{c}`?"));
                }
                Err(d)
            }
            Mod::Libdevice => {
                if libdevice::is_known(a) {
                    return ok(a);
                }
                let mut d = self.err(r, format!("unknown or unsupported libdevice function `{a}`"));
                if let Some(c) = suggest::closest(a, libdevice::FUNCS.iter().copied()) {
                    d.notes.push(format!("did you mean `libdevice.{c}`?"));
                }
                Err(d)
            }
            Mod::Triton => match a {
                "cdiv" | "next_power_of_2" | "jit" | "constexpr" => ok(a),
                _ => Err(self.err(r, format!("`triton.{a}` cannot be used inside a kernel"))),
            },
            Mod::PyMath => match a {
                "pi" => Ok(Val::C(ConstValue::Float(std::f64::consts::PI))),
                "e" => Ok(Val::C(ConstValue::Float(std::f64::consts::E))),
                "inf" => Ok(Val::C(ConstValue::Float(f64::INFINITY))),
                "nan" => Ok(Val::C(ConstValue::Float(f64::NAN))),
                "tau" => Ok(Val::C(ConstValue::Float(std::f64::consts::TAU))),
                _ => ok(a),
            },
            Mod::Extra | Mod::ExtraVendor => Err(self.err(r, format!("unknown attribute `{a}` of `{}`", m.display()))),
            Mod::Profiler | Mod::ProfilerLanguage => self.profiler_attr(m, a, r),
        }
    }

    /// `base.attr`.
    pub(crate) fn attribute(&mut self, base: Val, a: &str, r: TextRange) -> R<Val> {
        match base {
            Val::Module(m) => self.module_attr(m, a, r),
            Val::T(x) => match a {
                "dtype" => Ok(Val::C(ConstValue::DType(self.elem(x)))),
                "shape" => Ok(Val::Tuple(self.shape(x).into_iter().map(|d| Val::int(d as i128)).collect())),
                "numel" => Ok(Val::int(self.shape(x).iter().map(|&d| d as i128).product())),
                "ndim" => Ok(Val::int(self.shape(x).len() as i128)),
                "type" => Ok(Val::C(ConstValue::DType(self.elem(x)))),
                "T" => {
                    let s = self.shape(x);
                    if s.len() != 2 {
                        return Err(self.err(r, format!("`.T` needs a 2-D tensor, got {}", type_str(self.ty(x)))));
                    }
                    let ty = Type::tensor(&[s[1], s[0]], self.elem(x));
                    Ok(Val::T(self.emit1(OpKind::Trans { perm: vec![1, 0] }, &[x], ty)))
                }
                _ if TENSOR_METHODS.contains(&a) => Ok(Val::Method(Box::new(Val::T(x)), a.to_string())),
                _ => {
                    let mut d = self.err(r, format!("tensors have no attribute `{a}`"));
                    if let Some(c) = suggest::closest(a, TENSOR_METHODS.iter().chain(TENSOR_ATTRS).copied()) {
                        d.notes.push(format!("did you mean `.{c}`?"));
                    }
                    Err(d)
                }
            },
            // `tl.constexpr(x).value` is `x`; compile-time values are their own `.value`.
            Val::C(c) if a == "value" => Ok(Val::C(c)),
            Val::C(ConstValue::DType(el)) => self.dtype_attr(el, a, r),
            Val::Builtin(Mod::Language, ref n) if n == "PropagateNan" => match a {
                "ALL" | "NONE" => Ok(Val::C(ConstValue::Str(format!("PropagateNan.{a}")))),
                _ => Err(self.err(r, "PropagateNan has members ALL and NONE")),
            },
            Val::Tuple(_) if a == "shape" => Err(self.err(r, "tuples have no `.shape`")),
            Val::BlockPtr(bp) => self.block_ptr_attr(*bp, a, r),
            Val::PyModule(file) => {
                let globals = &self.ctx.file(file).shared.globals;
                match globals.get(a) {
                    Some(g) => {
                        let g = g.clone();
                        self.global(file, a, &g, r)
                    }
                    None => {
                        let path = self.ctx.file(file).path().to_string();
                        Err(self.err(r, format!("module `{path}` has no module-level name `{a}`")))
                    }
                }
            }
            other => Err(self.err(r, format!("{} has no attribute `{a}`", other.kind_name()))),
        }
    }

    fn dtype_attr(&mut self, el: Elem, a: &str, r: TextRange) -> R<Val> {
        let bits = match el {
            Elem::Num(d) => d.bits(),
            Elem::Ptr { .. } => 64,
        };
        match a {
            "element_ty" => match el {
                Elem::Ptr { pointee, .. } => Ok(Val::C(ConstValue::dtype(pointee))),
                _ => Err(self.err(
                    r,
                    format!("`element_ty` is an attribute of pointer types, not {}", crate::value::elem_name(el)),
                )),
            },
            "primitive_bitwidth" => Ok(Val::int(bits as i128)),
            "int_bitwidth" => match el {
                Elem::Num(d) if d.is_int() => Ok(Val::int(bits as i128)),
                _ => Err(self.err(r, "`int_bitwidth` is only defined for integer types")),
            },
            "fp_mantissa_width" => match el.num().and_then(|d| d.mantissa_bits()) {
                Some(m) => Ok(Val::int(m as i128)),
                None => Err(self.err(r, "`fp_mantissa_width` is only defined for float types")),
            },
            "itemsize" => Ok(Val::int(bits.div_ceil(8) as i128)),
            "name" => Ok(Val::C(ConstValue::Str(crate::value::elem_name(el)))),
            "scalar" => Ok(Val::C(ConstValue::DType(el))),
            _ if DTYPE_METHODS.contains(&a) => Ok(Val::Method(Box::new(Val::C(ConstValue::DType(el))), a.to_string())),
            _ => {
                let mut d = self.err(r, format!("dtype has no attribute `{a}`"));
                if let Some(c) = suggest::closest(a, DTYPE_METHODS.iter().copied()) {
                    d.notes.push(format!("did you mean `.{c}()`?"));
                }
                Err(d)
            }
        }
    }

    /// `base[idx]`.
    pub(crate) fn subscript(&mut self, base: Val, idx: Val, r: TextRange) -> R<Val> {
        match base {
            Val::T(x) => {
                let items = match idx {
                    Val::Tuple(v) => v,
                    other => vec![other],
                };
                let rank = self.shape(x).len();
                let mut cur = x;
                let mut indexed = 0;
                for (dim, it) in items.iter().enumerate() {
                    match it {
                        Val::C(ConstValue::None) => cur = self.expand_dims(cur, dim as u32),
                        Val::Slice(s) if s.iter().all(Val::is_none) => {
                            indexed += 1;
                            if indexed > rank {
                                return Err(self.err(r, format!("too many indices for a tensor of rank {rank}")));
                            }
                        }
                        _ => return Err(self.err(
                            r,
                            "unsupported tensor index: only `None` (new axis) and `:` (whole axis) can index a tensor",
                        )),
                    }
                }
                Ok(Val::T(cur))
            }
            Val::Tuple(items) => match idx {
                Val::C(c) if c.as_int().is_some() => {
                    let i = c.as_int().unwrap_or(0);
                    let n = items.len() as i128;
                    let j = if i < 0 { i + n } else { i };
                    if j < 0 || j >= n {
                        return Err(self.err(r, format!("tuple index {i} out of range for a tuple of length {n}")));
                    }
                    Ok(items[j as usize].clone())
                }
                Val::Slice(s) => {
                    let n = items.len() as i128;
                    let get = |v: &Val, dflt: i128| -> Option<i128> {
                        match v {
                            Val::C(ConstValue::None) => Some(dflt),
                            Val::C(c) => c.as_int().map(|i| if i < 0 { (i + n).max(0) } else { i.min(n) }),
                            _ => None,
                        }
                    };
                    let step = get(&s[2], 1)
                        .filter(|&s| s > 0)
                        .ok_or_else(|| self.err(r, "tuple slices need a positive constant step"))?;
                    let (Some(lo), Some(hi)) = (get(&s[0], 0), get(&s[1], n)) else {
                        return Err(self.err(r, "tuple slice bounds must be constants"));
                    };
                    let mut out = vec![];
                    let mut i = lo;
                    while i < hi {
                        out.push(items[i as usize].clone());
                        i += step;
                    }
                    Ok(Val::Tuple(out))
                }
                other => {
                    Err(self.err(r, format!("tuple indices must be constant integers, not {}", other.kind_name())))
                }
            },
            other => Err(self.err(r, format!("{} cannot be indexed", other.kind_name()))),
        }
    }

    /// `a and b and ...` / `a or b or ...`: constants short-circuit at compile time.
    fn bool_op(&mut self, is_and: bool, values: &[Expr], r: TextRange) -> R<Val> {
        let mut nontrivial = vec![];
        let mut last = Val::none();
        for e in values {
            let v = self.expr(e)?;
            if let Some(c) = v.as_const() {
                let t = c.truthy().unwrap_or(true);
                if t != is_and {
                    return Ok(v);
                }
                last = v;
            } else {
                nontrivial.push(v);
            }
        }
        if nontrivial.is_empty() {
            return Ok(last);
        }
        while nontrivial.len() >= 2 {
            let rhs = nontrivial.pop().unwrap_or(Val::none());
            let lhs = nontrivial.pop().unwrap_or(Val::none());
            let v = self.logical(is_and, &lhs, &rhs, r)?;
            nontrivial.push(v);
        }
        Ok(nontrivial.pop().unwrap_or(Val::none()))
    }

    fn compare_chain(&mut self, c: &ast::ExprCompare) -> R<Val> {
        let r = c.range;
        let mut lhs = self.expr(&c.left)?;
        let mut results = vec![];
        for (op, rhs_e) in c.ops.iter().zip(c.comparators.iter()) {
            let rhs = self.expr(rhs_e)?;
            let v = match op {
                ast::CmpOp::Is | ast::CmpOp::IsNot => {
                    let same = match (&lhs, &rhs) {
                        (Val::T(a), Val::T(b)) => a == b,
                        (a, b) => match (a.as_const(), b.as_const()) {
                            (Some(x), Some(y)) => x == y,
                            _ => a.same(b),
                        },
                    };
                    Val::C(ConstValue::Bool(same == (*op == ast::CmpOp::Is)))
                }
                ast::CmpOp::In | ast::CmpOp::NotIn => {
                    let (Some(x), Val::Tuple(items)) = (lhs.as_const(), &rhs) else {
                        return Err(self.err(r, "`in` is only supported on constant tuples"));
                    };
                    let found = items.iter().any(|it| it.as_const().as_ref() == Some(&x));
                    Val::C(ConstValue::Bool(found == (*op == ast::CmpOp::In)))
                }
                _ => {
                    let pc: PyCmp = py_cmp(*op).unwrap_or(PyCmp::Eq);
                    self.compare(pc, &lhs, &rhs, r)?
                }
            };
            // Constant-false links short-circuit the chain like Python.
            if let Some(ConstValue::Bool(false)) = v.as_const() {
                return Ok(v);
            }
            results.push(v);
            lhs = rhs;
        }
        let mut nontrivial: Vec<Val> = results.into_iter().filter(|v| v.as_const().is_none()).collect();
        if nontrivial.is_empty() {
            return Ok(Val::C(ConstValue::Bool(true)));
        }
        while nontrivial.len() >= 2 {
            let rhs = nontrivial.pop().unwrap_or(Val::none());
            let lhs = nontrivial.pop().unwrap_or(Val::none());
            let v = self.logical(true, &lhs, &rhs, r)?;
            nontrivial.push(v);
        }
        Ok(nontrivial.pop().unwrap_or(Val::none()))
    }

    /// `a if cond else b`: a constant condition picks one side; a runtime one builds an `if` op.
    fn if_expr(&mut self, i: &ast::ExprIf) -> R<Val> {
        let r = i.range;
        let c = self.expr(&i.test)?;
        match c {
            Val::T(cv) => {
                let cond = self.cond_i1(cv, i.test.range())?;
                let outer = self.block;
                let then_b = self.f.new_block(&[]);
                let else_b = self.f.new_block(&[]);
                self.block = then_b;
                let va = self.expr(&i.body);
                self.block = else_b;
                let vb = self.expr(&i.orelse);
                self.block = outer;
                let (va, vb) = (va?, vb?);
                let loc = self.cur_loc();
                if va.is_none() && vb.is_none() {
                    // `tl.store(..) if c else tl.store(..)`: both sides are evaluated for their
                    // effects only; an `if` without results, the expression's value is None.
                    for b in [then_b, else_b] {
                        let y = self.f.new_op(OpKind::Yield, &[], &[], loc);
                        self.f.append_op(b, y);
                    }
                    let op = self.f.new_op(OpKind::If, &[cond], &[], loc);
                    self.f.add_region(op, then_b);
                    self.f.add_region(op, else_b);
                    self.f.append_op(self.block, op);
                    return Ok(Val::none());
                }
                self.block = then_b;
                let a = self.tensor_of(&va, i.body.range());
                self.block = else_b;
                let b = self.tensor_of(&vb, i.orelse.range());
                self.block = outer;
                let (a, b) = (a?, b?);
                if self.ty(a) != self.ty(b) {
                    return Err(self.err(
                        r,
                        format!(
                            "the two sides of this conditional expression have different types: {} and {}",
                            type_str(self.ty(a)),
                            type_str(self.ty(b))
                        ),
                    ));
                }
                let ty = self.ty(a).clone();
                let y1 = self.f.new_op(OpKind::Yield, &[a], &[], loc);
                self.f.append_op(then_b, y1);
                let y2 = self.f.new_op(OpKind::Yield, &[b], &[], loc);
                self.f.append_op(else_b, y2);
                let op = self.f.new_op(OpKind::If, &[cond], &[ty], loc);
                self.f.add_region(op, then_b);
                self.f.add_region(op, else_b);
                self.f.append_op(self.block, op);
                Ok(Val::T(self.f.ops[op].results[0]))
            }
            other => {
                let t = other.as_const().and_then(|c| c.truthy()).unwrap_or(true);
                if t {
                    self.expr(&i.body)
                } else {
                    self.expr(&i.orelse)
                }
            }
        }
    }

    /// `[f(x) for x in CONST_TUPLE if cond]`: evaluated at compile time into a tuple.
    fn comprehension(&mut self, gens: &[ast::Comprehension], elt: &Expr, r: TextRange) -> R<Val> {
        if gens.len() != 1 {
            return Err(self.err(r, "only single-`for` comprehensions are supported"));
        }
        let g = &gens[0];
        let items = match self.expr(&g.iter)? {
            Val::Tuple(v) => v,
            Val::Range(rg) if rg.start.as_const().is_some() => {
                let get = |v: &Val| v.as_const().and_then(|c| c.as_int());
                let (Some(a), Some(b), Some(s)) = (get(&rg.start), get(&rg.end), get(&rg.step)) else {
                    return Err(self.err(r, "comprehension ranges must have constant bounds"));
                };
                if s == 0 {
                    return Err(self.err(r, "range() step must not be zero"));
                }
                let mut v = vec![];
                let mut i = a;
                while (s > 0 && i < b) || (s < 0 && i > b) {
                    v.push(Val::int(i));
                    i += s;
                    if v.len() > 4096 {
                        return Err(self.err(r, "comprehension too long"));
                    }
                }
                v
            }
            other => {
                return Err(
                    self.err(g.iter.range(), format!("comprehensions iterate over tuples, not {}", other.kind_name()))
                )
            }
        };
        let mut out = vec![];
        for it in items {
            self.assign_target(&g.target, it, r)?;
            let mut keep = true;
            for c in &g.ifs {
                let v = self.expr(c)?;
                match v.as_const() {
                    Some(c) => keep &= c.truthy().unwrap_or(true),
                    None => return Err(self.err(c.range(), "comprehension conditions must be compile-time constants")),
                }
            }
            if keep {
                out.push(self.expr(elt)?);
            }
        }
        Ok(Val::Tuple(out))
    }
}

impl super::Frame<'_> {
    /// Source text of a range in this frame's file.
    pub(crate) fn src_text(&self, r: TextRange) -> String {
        self.text.get(r.start().to_usize()..r.end().to_usize()).unwrap_or("").to_string()
    }
}
