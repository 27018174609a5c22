//! Lowering of a `@triton.jit` function to tile IR.
//!
//! [`compile`] binds the launch arguments to the kernel's parameters (runtime
//! IR parameters, constexprs, specialized constants), then walks the function
//! body. Calls to user `@triton.jit` helpers become separate IR functions,
//! specialized per argument types and constexpr values, plus `call` ops (the
//! inliner pass folds them in later); calls into Trident's prelude (the parts
//! of `triton.language` written in Triton itself: random numbers, sort, ...)
//! are expanded in place, with every op at the user's call site.

mod builtins;
mod call;
mod emit;
mod expr;
mod flow;
mod profile;
mod sem;
mod stmt;
mod suggest;
mod val;

use crate::globals::Globals;
use crate::kernel::resolve_def;
use crate::kernel::{KernelFile, ParamInfo};
use crate::source::SrcRef;
use crate::value::ConstValue;
use crate::{ArgInfo, CompileOptions, Compiled, ParamBinding};
use ruff_python_ast::{self as ast, Stmt};
use ruff_text_size::TextRange;
use std::collections::{BTreeMap, HashMap, HashSet};
use trident_core::DType;
use trident_ir::{Block, Diagnostic, Elem, Function, Loc, Module, OpKind, Type, Value};
pub(crate) use val::{BlockPtr, FileId, FnRef, Val};

/// Helpers calling helpers: how deep a chain of distinct `@jit` calls may go (each is
/// lowered inside its caller's lowering, on the front end's large stack).
const MAX_CALL_DEPTH: usize = 1000;

pub(crate) type R<T> = Result<T, Box<Diagnostic>>;

/// `note` for boxed diagnostics.
pub(crate) trait DiagExt {
    fn with_note(self, text: impl Into<String>) -> Self;
}

impl DiagExt for Box<Diagnostic> {
    fn with_note(mut self, text: impl Into<String>) -> Self {
        self.notes.push(text.into());
        self
    }
}

/// Variables of a function body. Names starting with `%` are the lowering's own
/// bookkeeping (early-exit flags and the pending return value), merged through
/// control flow exactly like user variables.
pub(crate) type Scope = BTreeMap<String, Val>;

pub(crate) const RET: &str = "%ret";
pub(crate) const RETVAL: &str = "%retval";
pub(crate) const BRK: &str = "%brk";
pub(crate) const CONT: &str = "%cont";

/// A cached specialization of a user helper.
struct Spec {
    name: String,
    /// The return value with the callee's IR values as placeholders (rebuilt from the call's results).
    ret: Val,
    ret_types: Vec<Type>,
}

/// State shared by every function of one compilation.
pub(crate) struct Ctx<'a> {
    pub user: &'a KernelFile,
    pub prelude: &'a KernelFile,
    pub opts: &'a CompileOptions,
    pub debug: bool,
    helpers: Vec<Function>,
    specs: HashMap<String, Spec>,
    active: Vec<String>,
    names: HashSet<String>,
    /// Output of `tl.static_print`, in order.
    pub prints: Vec<String>,
    /// How many reduction/scan combine functions are being lowered (no profiling scopes there).
    pub combine_depth: u32,
}

impl<'a> Ctx<'a> {
    pub(crate) fn file(&self, id: FileId) -> &'a KernelFile {
        match id {
            FileId::User => self.user,
            FileId::Prelude => self.prelude,
            FileId::Dep(i) => self.user.deps.get(i as usize).unwrap_or(self.user),
        }
    }

    pub(crate) fn def(&self, f: FnRef) -> Option<&'a ast::StmtFunctionDef> {
        let file = self.file(f.file);
        let info = file.fns.get(f.idx)?;
        resolve_def(&file.module.body, &info.path)
    }

    fn unique_name(&mut self, base: &str) -> String {
        let mut name = base.to_string();
        let mut k = 1;
        while self.names.contains(&name) {
            name = format!("{base}_{k}");
            k += 1;
        }
        self.names.insert(name.clone());
        name
    }
}

/// The function body being walked: its variables and where its source lives.
pub(crate) struct Frame<'a> {
    /// The file the function being walked comes from.
    pub file: FileId,
    pub src: SrcRef<'a>,
    pub text: &'a str,
    pub globals: &'a Globals,
    pub scope: Scope,
    pub fn_name: String,
    pub is_kernel: bool,
    /// Names declared by a bare `x: tl.constexpr` annotation, waiting for their value.
    pub pending_constexpr: HashSet<String>,
    /// How many loops enclose the current statement (for `break`/`continue`).
    pub loops: u32,
    /// Profiling scopes open in this function body (`pl.enter_scope`, `with pl.scope`).
    pub scopes: profile::Scopes,
}

/// The lowering of one Python function body into one IR function: the kernel, a specialized
/// helper, or (with [`FnLowering::pin`] set) prelude code expanded in place into the caller's
/// function. Every `tl.*` builtin, operator, statement and control-flow construct is a method
/// on it, spread over the files of `lower/`.
///
/// Lifetimes: `'a` is how long the parsed files live (the user's [`KernelFile`], its project
/// dependencies and the prelude: their syntax trees, texts and module-level names), which every
/// frame borrows from; `'c` is the borrow of the compilation-wide [`Ctx`], shorter than `'a`
/// because each helper's lowering reborrows it from its caller's.
pub(crate) struct FnLowering<'c, 'a> {
    /// State shared by every function of the compilation (specializations, helpers, prints).
    pub ctx: &'c mut Ctx<'a>,
    /// The IR function being built.
    pub f: Function,
    /// Where new ops are appended (a block of `f`; regions of `if`/`for`/reductions switch it).
    pub block: Block,
    /// The Python function body being walked: its variables and source.
    pub fr: Frame<'a>,
    /// Location given to new ops.
    pub loc: Loc,
    /// While expanding prelude code: every op and error goes to the user's call site.
    pub pin: Option<(Loc, u32, String)>,
}

impl<'c, 'a> FnLowering<'c, 'a> {
    /// A diagnostic at `range` of the current frame's source (or at the pinned call site).
    pub(crate) fn err(&self, range: TextRange, msg: impl Into<String>) -> Box<Diagnostic> {
        Box::new(match &self.pin {
            Some((loc, len, what)) => Diagnostic::error(msg)
                .at(*loc, *len)
                .note(format!("raised inside Trident's implementation of `{what}`")),
            None => self.fr.src.error(range, msg),
        })
    }

    pub(crate) fn loc_of(&self, range: TextRange) -> Loc {
        match &self.pin {
            Some((loc, _, _)) => *loc,
            None => self.fr.src.loc(range.start()),
        }
    }

    /// Compiles a function body; returns the value it returns (`None` when it falls off the end).
    pub(crate) fn body(&mut self, body: &[Stmt], def_range: TextRange) -> R<Val> {
        self.fr.scope.insert(RET.into(), Val::C(ConstValue::Bool(false)));
        self.scope_block(profile::ScopeBlock::Function, |l| l.stmts(body))?;
        let ret = self.fr.scope.get(RET).cloned().unwrap_or(Val::C(ConstValue::Bool(false)));
        let retval = self.fr.scope.get(RETVAL).cloned().unwrap_or(Val::none());
        match ret {
            Val::C(ConstValue::Bool(true)) => Ok(retval),
            _ if retval.is_none() => Ok(Val::none()),
            _ => Err(self.err(
                def_range,
                format!(
                    "`{}` returns a value on some paths but reaches its end without `return` on others",
                    self.fr.fn_name
                ),
            )),
        }
    }
}

/// The IR parameters of host tensor descriptor `name` (appended to `ir_params`) and its
/// binding: the base pointer, the `rank` dimension sizes, the `rank - 1` strides before the
/// last (in elements; the launch checks them to be multiples of 16 bytes, which the code may
/// rely on). The IR names are identifiers (`x_desc_base`, `x_desc_shape0`, `x_desc_stride0`).
fn host_descriptor_params(
    name: &str,
    dtype: DType,
    aligned16: bool,
    block: &[u32],
    shape_div16: &[bool],
    ir_params: &mut Vec<(String, Type, Option<u32>)>,
) -> Result<ParamBinding, String> {
    let rank = block.len();
    if !(1..=5).contains(&rank) {
        return Err(format!("tensor descriptor `{name}` has rank {rank}; descriptors have rank 1 to 5"));
    }
    if let Some(d) = block.iter().find(|d| !d.is_power_of_two()) {
        return Err(format!("tensor descriptor `{name}`: block shape {block:?} has {d}, not a power of 2"));
    }
    let elem_bytes = (dtype.bits() as u64).div_ceil(8);
    let last = block[rank - 1] as u64;
    if last * elem_bytes < 16 {
        return Err(format!(
            "tensor descriptor `{name}`: descriptor block shape must have at least 16 bytes in the last dimension, \
             but got {last} * {elem_bytes} = {} bytes",
            last * elem_bytes
        ));
    }
    let i64t = Type::Scalar(Elem::Num(DType::I64));
    let base = ir_params.len();
    ir_params.push((format!("{name}_base"), Type::Scalar(Elem::ptr(dtype)), aligned16.then_some(16)));
    // Sizes are int32 and strides int64, as Triton passes them (the kernel sees those types).
    let shape = (0..rank)
        .map(|d| {
            let div = shape_div16.get(d).copied().unwrap_or(false).then_some(16);
            ir_params.push((format!("{name}_shape{d}"), Type::Scalar(Elem::Num(DType::I32)), div));
            ir_params.len() - 1
        })
        .collect();
    let stride_div = (16 / dtype.bits().div_ceil(8).max(1)).max(1);
    let strides = (0..rank - 1)
        .map(|d| {
            ir_params.push((format!("{name}_stride{d}"), i64t.clone(), (stride_div > 1).then_some(stride_div)));
            ir_params.len() - 1
        })
        .collect();
    Ok(ParamBinding::Descriptor { base, shape, strides })
}

/// The parameter a launch argument name belongs to: `ptrs` for a tuple element `ptrs[1][0]`.
pub fn tuple_root(name: &str) -> &str {
    name.split('[').next().unwrap_or(name)
}

/// The indices of tuple element `ptrs[1][0]` (`[1, 0]`); `None` for a name without any or a
/// malformed one.
fn tuple_path(name: &str) -> Option<Vec<usize>> {
    let rest = &name[tuple_root(name).len()..];
    if rest.is_empty() {
        return None;
    }
    let inner = rest.strip_prefix('[')?.strip_suffix(']')?;
    inner.split("][").map(|i| i.parse().ok()).collect()
}

/// The tuple whose elements are `leaves` at their index paths (checked complete by
/// [`param_slots`]).
fn tuple_of(mut leaves: Vec<(Vec<usize>, Val)>) -> Val {
    leaves.sort_by(|a, b| a.0.cmp(&b.0));
    let mut items: Vec<Val> = vec![];
    let mut i = 0;
    while i < leaves.len() {
        let head = leaves[i].0[0];
        let group: Vec<(Vec<usize>, Val)> =
            leaves[i..].iter().take_while(|(p, _)| p[0] == head).map(|(p, v)| (p[1..].to_vec(), v.clone())).collect();
        i += group.len();
        items.push(match group.as_slice() {
            [(p, v)] if p.is_empty() => v.clone(),
            _ => tuple_of(group),
        });
    }
    Val::Tuple(items)
}

/// An IR (and PTX) parameter name for a launch argument name: a tuple element `ptrs[1][0]`
/// becomes `ptrs_1_0`.
fn ir_name(name: &str) -> String {
    name.replace("][", "_").replace('[', "_").replace(']', "")
}

/// The kernel's parameters as the launch binds them: each parameter, except a tuple given
/// element by element (Triton's tuple arguments: the package passes `ptrs=(x, y)` as
/// `ptrs[0]=x`, `ptrs[1]=y`), which stands for one slot per element, in index order. An
/// element slot is a plain runtime parameter: no annotation, no default.
fn param_slots<'p>(
    params: &'p [ParamInfo],
    args: &[(String, ArgInfo)],
) -> Result<Vec<ParamInfo>, (&'p ParamInfo, String)> {
    let mut out = vec![];
    for p in params {
        let mut elems: Vec<(Vec<usize>, &str)> = vec![];
        for (n, _) in args.iter().filter(|(n, _)| tuple_root(n) == p.name && *n != p.name) {
            let path =
                tuple_path(n).ok_or_else(|| (p, format!("`{n}` does not name an element of tuple `{}`", p.name)))?;
            if !elems.iter().any(|(q, _)| *q == path) {
                elems.push((path, n));
            }
        }
        if elems.is_empty() {
            out.push(p.clone());
            continue;
        }
        if p.is_constexpr {
            return Err((
                p,
                format!("`{}` is a tl.constexpr parameter: its tuple must hold compile-time values", p.name),
            ));
        }
        if args.iter().any(|(n, _)| *n == p.name) {
            return Err((p, format!("`{}` is given both whole and element by element", p.name)));
        }
        elems.sort();
        // Complete: each element's siblings 0..n are there, no element is also a tuple's prefix.
        for (i, (path, name)) in elems.iter().enumerate() {
            let last = *path.last().expect("a tuple path has an index");
            let parent = &path[..path.len() - 1];
            let sibling_before = last == 0
                || elems
                    .iter()
                    .any(|(q, _)| q.len() >= path.len() && q[..parent.len()] == *parent && q[parent.len()] == last - 1);
            let prefix_of_next =
                elems.get(i + 1).is_some_and(|(q, _)| q.len() > path.len() && q[..path.len()] == path[..]);
            if !sibling_before || prefix_of_next {
                return Err((p, format!("tuple `{}`'s elements do not form a tuple (at `{name}`)", p.name)));
            }
        }
        for (_, name) in elems {
            out.push(ParamInfo {
                name: name.to_string(),
                annotation: None,
                annotated_type: None,
                has_default: false,
                default: None,
                is_constexpr: false,
                ..p.clone()
            });
        }
    }
    Ok(out)
}

fn suggest<'s>(name: &str, candidates: impl Iterator<Item = &'s str>) -> Option<String> {
    suggest::closest(name, candidates).map(|c| format!("did you mean `{c}`?"))
}

/// Entry point: compiles `kernel` of `file` for the given launch arguments.
pub(crate) fn compile(
    file: &KernelFile,
    kernel: &str,
    args: &[(String, ArgInfo)],
    opts: &CompileOptions,
) -> R<Compiled> {
    let shared = &file.shared;
    let src = shared.src(0);
    let Some(kidx) = file.fns.iter().rposition(|k| k.name == kernel) else {
        let mut d = Diagnostic::error(format!("no @triton.jit function named `{kernel}` in {}", shared.path));
        if let Some(s) = suggest(kernel, file.fns.iter().map(|k| k.name.as_str())) {
            d = d.note(s);
        }
        if !file.fns.is_empty() {
            let list: Vec<&str> = file.fns.iter().map(|k| k.name.as_str()).collect();
            d = d.note(format!("@triton.jit functions in this file: {}", list.join(", ")));
        }
        return Err(Box::new(d));
    };
    let info = &file.fns[kidx];
    let def = resolve_def(&file.module.body, &info.path)
        .ok_or_else(|| Box::new(Diagnostic::error(format!("internal error: lost the definition of `{kernel}`"))))?;
    if def.parameters.vararg.is_some() || def.parameters.kwarg.is_some() {
        return Err(Box::new(src.error(def.parameters.range, "kernels cannot take `*args` or `**kwargs`")));
    }
    let def_name_range = def.name.range;

    // Unknown argument names (a tuple's elements are named after it: `ptrs[0]`, `t[1][0]`).
    for (name, _) in args {
        if info.param(tuple_root(name)).is_none() {
            let mut d = src
                .error(def_name_range, format!("kernel `{kernel}` has no parameter named `{name}`"))
                .label("kernel defined here");
            if let Some(s) = suggest(name, info.params.iter().map(|p| p.name.as_str())) {
                d = d.note(s);
            }
            return Err(Box::new(d));
        }
    }

    // Bind every parameter.
    let mut bindings = vec![];
    let mut ir_params: Vec<(String, Type, Option<u32>)> = vec![];
    let mut runtime_defaults = vec![];
    // Host descriptors: (index into `bindings`, block shape, NaN padding).
    let mut descriptors: Vec<(usize, Vec<u32>, bool)> = vec![];
    let slots = param_slots(&info.params, args)
        .map_err(|(p, msg)| Box::new(Diagnostic::error(msg).at(p.loc, p.name.len() as u32)))?;
    for p in &slots {
        let arg = match args.iter().rev().find(|(n, _)| *n == p.name) {
            Some((_, a)) => a.clone(),
            None => match (&p.default, p.has_default) {
                // A default for a runtime parameter is passed like the same value given at launch.
                (Some(ConstValue::Int(v)), _) if !p.is_constexpr && i64::try_from(*v).is_ok() => ArgInfo::Int(*v as i64),
                (Some(ConstValue::Float(v)), _) if !p.is_constexpr => ArgInfo::Float(*v),
                (Some(ConstValue::Bool(v)), _) if !p.is_constexpr => ArgInfo::Bool(*v),
                (Some(d), _) => ArgInfo::Constexpr(d.clone()),
                (None, true) => {
                    return Err(Box::new(
                        Diagnostic::error(format!(
                            "parameter `{}` of `{kernel}` was not given and its default value is not a compile-time constant",
                            p.name
                        ))
                        .at(p.loc, p.name.len() as u32),
                    ))
                }
                (None, false) => {
                    return Err(Box::new(
                        Diagnostic::error(format!("missing argument `{}` for kernel `{kernel}`", p.name))
                            .at(p.loc, p.name.len() as u32)
                            .label("this parameter has no default value"),
                    ))
                }
            },
        };
        let here = |msg: String| Box::new(Diagnostic::error(msg).at(p.loc, p.name.len() as u32));
        let b = if p.is_constexpr {
            match arg {
                ArgInfo::Constexpr(c) => ParamBinding::Constexpr(c),
                ArgInfo::Int(v) => ParamBinding::Constexpr(ConstValue::Int(v as i128)),
                ArgInfo::UInt(v) => ParamBinding::Constexpr(ConstValue::Int(v as i128)),
                ArgInfo::Float(v) => ParamBinding::Constexpr(ConstValue::Float(v)),
                ArgInfo::Bool(v) => ParamBinding::Constexpr(ConstValue::Bool(v)),
                ArgInfo::Pointer { .. } => {
                    return Err(here(format!("`{}` is a tl.constexpr parameter but was given a tensor", p.name)))
                }
                ArgInfo::TensorDesc { .. } => {
                    return Err(here(format!(
                        "`{}` is a tl.constexpr parameter but was given a tensor descriptor",
                        p.name
                    )))
                }
            }
        } else {
            let ann_num = p.annotated_type.and_then(|e| e.num());
            let (ty, div16, special) = match arg {
                ArgInfo::Constexpr(c) => {
                    bindings.push(ParamBinding::Constexpr(c));
                    continue;
                }
                ArgInfo::Pointer { dtype, aligned16 } => (Elem::ptr(dtype), aligned16, None),
                ArgInfo::TensorDesc { dtype, aligned16, block, nan, shape_div16 } => {
                    let b = host_descriptor_params(
                        &ir_name(&p.name),
                        dtype,
                        aligned16,
                        &block,
                        &shape_div16,
                        &mut ir_params,
                    )
                    .map_err(here)?;
                    descriptors.push((bindings.len(), block, nan));
                    bindings.push(b);
                    continue;
                }
                ArgInfo::Int(v) => {
                    let t = match ann_num {
                        Some(d) if d.is_int() => d,
                        _ if i32::try_from(v).is_ok() => DType::I32,
                        _ => DType::I64,
                    };
                    let one = v == 1 && ann_num.is_none() && !p.do_not_specialize;
                    (Elem::Num(t), v % 16 == 0, one.then_some(ConstValue::Int(1)))
                }
                ArgInfo::UInt(v) => {
                    let t = if v > i64::MAX as u64 {
                        DType::U64
                    } else if v > i32::MAX as u64 {
                        DType::I64
                    } else {
                        DType::I32
                    };
                    let one = v == 1 && ann_num.is_none() && !p.do_not_specialize;
                    (
                        Elem::Num(ann_num.filter(|d| d.is_int()).unwrap_or(t)),
                        v % 16 == 0,
                        one.then_some(ConstValue::Int(1)),
                    )
                }
                ArgInfo::Float(_) => (Elem::Num(ann_num.filter(|d| d.is_float()).unwrap_or(DType::F32)), false, None),
                ArgInfo::Bool(_) => (Elem::Num(DType::I1), false, None),
            };
            if let Some(c) = special {
                bindings.push(ParamBinding::Specialized(c));
                continue;
            }
            if !args.iter().any(|(n, _)| *n == p.name) {
                if let Some(d) = &p.default {
                    runtime_defaults.push((ir_params.len(), d.clone()));
                }
            }
            let div = (div16 && !p.do_not_specialize && !p.do_not_specialize_on_alignment).then_some(16);
            bindings.push(ParamBinding::Runtime { ir_index: ir_params.len() });
            ir_params.push((ir_name(&p.name), Type::Scalar(ty), div));
            continue;
        };
        bindings.push(b);
    }

    let prelude = crate::scan::prelude();
    let mut ctx = Ctx {
        user: file,
        prelude,
        opts,
        debug: info.debug.unwrap_or(opts.debug),
        helpers: vec![],
        specs: HashMap::new(),
        active: vec![],
        names: HashSet::new(),
        prints: vec![],
        combine_depth: 0,
    };
    ctx.names.insert(kernel.to_string());
    let param_refs: Vec<(&str, Type)> = ir_params.iter().map(|(n, t, _)| (n.as_str(), t.clone())).collect();
    let mut f = Function::new(kernel, &param_refs, vec![], true);
    for (i, (_, _, div)) in ir_params.iter().enumerate() {
        f.params[i].attrs.divisibility = *div;
    }
    f.loc = src.loc(def_name_range.start());
    let body_block = f.body;
    let mut scope = Scope::new();
    for (i, (p, b)) in slots.iter().zip(&bindings).enumerate() {
        let v = match b {
            ParamBinding::Runtime { ir_index } => Val::T(f.params[*ir_index].value),
            ParamBinding::Constexpr(c) | ParamBinding::Specialized(c) => Val::from_const(c.clone()),
            ParamBinding::Descriptor { base, shape, strides } => {
                let (_, block, nan) = descriptors.iter().find(|(j, _, _)| *j == i).expect("descriptor's block");
                let value = |k: &usize| Val::T(f.params[*k].value);
                Val::BlockPtr(Box::new(BlockPtr {
                    base: value(base),
                    shape: shape.iter().map(value).collect(),
                    strides: strides.iter().map(value).chain(std::iter::once(Val::int(1))).collect(),
                    offsets: vec![],
                    block: block.clone(),
                    order: (0..block.len() as u32).rev().collect(),
                    descriptor: Some(*nan),
                }))
            }
        };
        scope.insert(p.name.clone(), v);
    }
    let frame = Frame {
        file: FileId::User,
        src,
        text: &shared.text,
        globals: &shared.globals,
        scope,
        fn_name: kernel.to_string(),
        is_kernel: true,
        pending_constexpr: HashSet::new(),
        loops: 0,
        scopes: Default::default(),
    };
    let mut l =
        FnLowering { ctx: &mut ctx, f, block: body_block, fr: frame, loc: src.loc(def.range.start()), pin: None };
    // A host descriptor's sizes arrive as int32 parameters; the descriptor holds them as int64,
    // as `tl.make_tensor_descriptor` makes them.
    for (i, _, _) in &descriptors {
        let name = &slots[*i].name;
        let Some(Val::BlockPtr(bp)) = l.fr.scope.get(name).cloned() else { continue };
        let mut shape = vec![];
        for v in &bp.shape {
            let Val::T(v) = v else { unreachable!("host descriptor sizes are parameters") };
            shape.push(Val::T(l.cast(*v, Elem::Num(DType::I64), None, def_name_range)?));
        }
        l.fr.scope.insert(name.clone(), Val::BlockPtr(Box::new(BlockPtr { shape, ..*bp })));
    }
    // A tuple given element by element: the parameter names the tuple of its slots' values.
    for p in &info.params {
        let leaves: Vec<(Vec<usize>, Val)> = slots
            .iter()
            .filter(|s| tuple_root(&s.name) == p.name && s.name != p.name)
            .filter_map(|s| Some((tuple_path(&s.name)?, l.fr.scope.get(&s.name)?.clone())))
            .collect();
        if !leaves.is_empty() {
            l.fr.scope.insert(p.name.clone(), tuple_of(leaves));
        }
    }
    l.body(&def.body, def_name_range)?;
    l.emit(OpKind::Return, &[], &[]);
    let f = l.f;
    let mut funcs = vec![f];
    funcs.extend(ctx.helpers);
    let module = Module { funcs, files: file.source_files() };
    Ok(Compiled {
        module,
        kernel: kernel.to_string(),
        param_names: slots.iter().map(|p| p.name.clone()).collect(),
        params: bindings,
        static_prints: ctx.prints,
        runtime_defaults,
    })
}

impl<'c, 'a> FnLowering<'c, 'a> {
    /// Calls a user `@triton.jit` helper: specializes it for these arguments (once) and emits a `call`.
    /// `params` are the callee's parameters bound to argument values.
    pub(crate) fn call_helper(&mut self, fref: FnRef, params: Vec<(String, Val)>, call: TextRange) -> R<Val> {
        let def = self.ctx.def(fref).ok_or_else(|| self.err(call, "internal error: unknown function"))?;
        let fname = def.name.id.to_string();
        let mut key = format!("{}:{}", fref.file.index(), fref.idx);
        for (_, v) in &params {
            key.push('|');
            self.spec_key(v, &mut key);
        }
        let mut arg_values = vec![];
        for (_, v) in &params {
            v.flatten(&mut arg_values);
        }
        if !self.ctx.specs.contains_key(&key) {
            if self.ctx.active.contains(&key) {
                return Err(
                    self.err(call, format!("recursive call of `{fname}`: recursion is not supported in kernels"))
                );
            }
            if self.ctx.active.len() >= MAX_CALL_DEPTH {
                return Err(self.err(
                    call,
                    format!(
                        "`{fname}` is called {MAX_CALL_DEPTH} @jit functions deep: Trident's limit for nested helper calls"
                    ),
                ));
            }
            self.ctx.active.push(key.clone());
            let r = self.specialize(fref, def, &fname, &params);
            self.ctx.active.pop();
            let spec = r.map_err(|d| {
                let loc = self.loc_of(call);
                Box::new(d.secondary(loc, call.len().to_u32(), format!("in this call of `{fname}`")))
            })?;
            self.ctx.specs.insert(key.clone(), spec);
        }
        let spec = &self.ctx.specs[&key];
        let (name, ret, ret_types) = (spec.name.clone(), spec.ret.clone(), spec.ret_types.clone());
        let op = self.emit(OpKind::Call { callee: name }, &arg_values, &ret_types);
        let results = self.f.ops[op].results.to_vec();
        Ok(ret.rebuild(&mut results.into_iter()))
    }

    fn specialize(
        &mut self,
        fref: FnRef,
        def: &'a ast::StmtFunctionDef,
        fname: &str,
        params: &[(String, Val)],
    ) -> R<Spec> {
        let name = self.ctx.unique_name(fname);
        let mut ir_params: Vec<(String, Type)> = vec![];
        for (pname, v) in params {
            let mut vals = vec![];
            v.flatten(&mut vals);
            let many = vals.len() > 1;
            for (i, x) in vals.iter().enumerate() {
                let n = if many { format!("{pname}.{i}") } else { pname.clone() };
                ir_params.push((n, self.f.ty(*x).clone()));
            }
        }
        let refs: Vec<(&str, Type)> = ir_params.iter().map(|(n, t)| (n.as_str(), t.clone())).collect();
        let mut f = Function::new(&name, &refs, vec![], false);
        let file = self.ctx.file(fref.file);
        let src = file.shared.src(fref.file.index());
        f.loc = src.loc(def.name.range.start());
        let args: Vec<Value> = f.blocks[f.body].args.clone();
        let mut it = args.into_iter();
        let mut scope = Scope::new();
        for (pname, v) in params {
            scope.insert(pname.clone(), v.rebuild(&mut it));
        }
        let body_block = f.body;
        let frame = Frame {
            file: fref.file,
            src,
            text: &file.shared.text,
            globals: &file.shared.globals,
            scope,
            fn_name: fname.to_string(),
            is_kernel: false,
            pending_constexpr: HashSet::new(),
            loops: 0,
            scopes: Default::default(),
        };
        let loc = src.loc(def.range.start());
        let mut sub = FnLowering { ctx: &mut *self.ctx, f, block: body_block, fr: frame, loc, pin: None };
        let ret = sub.body(&def.body, def.name.range)?;
        let mut ret_vals = vec![];
        ret.flatten(&mut ret_vals);
        let ret_types: Vec<Type> = ret_vals.iter().map(|v| sub.f.ty(*v).clone()).collect();
        sub.emit(OpKind::Return, &ret_vals, &[]);
        sub.f.result_types = ret_types.clone();
        let f = sub.f;
        self.ctx.helpers.push(f);
        Ok(Spec { name, ret, ret_types })
    }

    /// The part of a specialization key one argument contributes.
    fn spec_key(&self, v: &Val, out: &mut String) {
        use std::fmt::Write;
        match v {
            Val::T(x) => {
                let _ = write!(out, "T{}", self.f.ty(*x));
            }
            Val::C(c) => {
                let _ = write!(out, "C{c:?}");
            }
            Val::Tuple(t) => {
                out.push('(');
                for x in t {
                    self.spec_key(x, out);
                    out.push(',');
                }
                out.push(')');
            }
            Val::BlockPtr(b) => {
                let _ = write!(out, "B{:?}{:?}{:?}[", b.block, b.order, b.descriptor);
                for x in b.parts() {
                    self.spec_key(x, out);
                    out.push(',');
                }
                out.push(']');
            }
            other => {
                let _ = write!(out, "V{other:?}");
            }
        }
    }

    /// Expands a prelude function in place (a new variable scope, the same IR function).
    pub(crate) fn inline_call(
        &mut self,
        fref: FnRef,
        params: Vec<(String, Val)>,
        call: TextRange,
        what: &str,
    ) -> R<Val> {
        let def = self.ctx.def(fref).ok_or_else(|| self.err(call, "internal error: unknown function"))?;
        let file = self.ctx.file(fref.file);
        let frame = Frame {
            file: fref.file,
            src: file.shared.src(fref.file.index()),
            text: &file.shared.text,
            globals: &file.shared.globals,
            scope: params.into_iter().collect(),
            fn_name: def.name.id.to_string(),
            is_kernel: false,
            pending_constexpr: HashSet::new(),
            loops: 0,
            scopes: Default::default(),
        };
        let pinned = self.pin.is_none();
        if pinned {
            self.pin = Some((self.loc_of(call), call.len().to_u32().max(1), what.to_string()));
        }
        let saved = std::mem::replace(&mut self.fr, frame);
        let saved_loc = self.loc;
        let r = self.body(&def.body, def.name.range);
        self.fr = saved;
        self.loc = saved_loc;
        if pinned {
            self.pin = None;
        }
        r
    }
}
