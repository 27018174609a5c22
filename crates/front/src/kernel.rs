//! What `parse_file` records about a file's `@triton.jit` functions: parameters,
//! specialization options, `@triton.autotune` configs and `@triton.heuristics`.

use crate::globals::Globals;
use crate::hosteval::{HostEval, HostValue};
use crate::source::{LineIndex, SrcRef};
use crate::value::ConstValue;
use crate::ArgInfo;
use ruff_python_ast::{self as ast, Expr, ModModule, Stmt};
use ruff_text_size::TextRange;
use std::sync::Arc;
use trident_ir::{Diagnostic, Elem, Loc, SourceFile};

/// The parts of a parsed file that kernel descriptions keep a handle on.
#[derive(Debug)]
pub(crate) struct FileShared {
    pub path: String,
    /// What was parsed: syntax-node ranges index into it. For a live function (`crate::live`), the
    /// function sources at their lines of the real file, then a comment recording every resolved
    /// global, so that whatever hashes the text (cache keys, source ids) covers those values too.
    pub text: String,
    pub lines: LineIndex,
    pub globals: Globals,
    /// The text diagnostics are rendered against, when it is not `text`: a live function's
    /// whole source file. Its lines agree with `text` wherever a function is.
    pub shown: Option<String>,
}

impl FileShared {
    pub(crate) fn src(&self, file: u32) -> SrcRef<'_> {
        SrcRef { file, lines: &self.lines }
    }
}

/// Where each file sits among a compilation's source files (`Loc::file`, `Module::files`, the order
/// of [`KernelFile::source_files`]): the kernel's own file, Trident's prelude, then the project files
/// it imports in the order of [`KernelFile::deps`]. The scanner numbers locations by it and the
/// lowering finds files by it, so it is defined here, below both.
pub(crate) const USER_FILE_INDEX: u32 = 0;
pub(crate) const PRELUDE_FILE_INDEX: u32 = 1;

/// The source-file index of dependency `dep` (see [`USER_FILE_INDEX`]).
pub(crate) const fn dep_file_index(dep: u32) -> u32 {
    2 + dep
}

/// A Python file parsed once: its syntax tree, module-level names and `@triton.jit` functions.
pub struct KernelFile {
    pub(crate) shared: Arc<FileShared>,
    pub(crate) module: ModModule,
    pub(crate) fns: Vec<KernelInfo>,
    /// Other files of the project that this file's imports name (transitively), when the file
    /// was parsed from a path on disk: `from .utils import triton_tanh`,
    /// `from fla.ops.utils.op import exp`. Empty for a dependency itself (the kernel file holds them all).
    pub(crate) deps: Vec<KernelFile>,
    /// For a live function (`crate::live`): the index of that function in `fns` (the others are
    /// helpers of the same source file).
    pub(crate) live_root: Option<usize>,
}

impl std::fmt::Debug for KernelFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelFile").field("path", &self.shared.path).field("kernels", &self.fns).finish()
    }
}

impl KernelFile {
    /// Every `@triton.jit` function of the file (kernels and helpers alike), in source order.
    pub fn kernels(&self) -> &[KernelInfo] {
        &self.fns
    }

    /// The `@triton.jit` function called `name`.
    pub fn kernel(&self, name: &str) -> Option<&KernelInfo> {
        self.fns.iter().rev().find(|k| k.name == name)
    }

    pub fn path(&self) -> &str {
        &self.shared.path
    }

    /// The text that was parsed. For a live function, the function sources at their lines and a
    /// record of its globals' values (see [`crate::live`]): what cache keys hash.
    pub fn text(&self) -> &str {
        &self.shared.text
    }

    /// The file as a [`SourceFile`], for rendering diagnostics (for a live function, its whole
    /// source file when Python had it).
    pub fn source_file(&self) -> SourceFile {
        let text = self.shared.shown.as_ref().unwrap_or(&self.shared.text);
        SourceFile { path: self.shared.path.clone(), text: text.clone() }
    }

    /// The function a live description was made of (see [`crate::live`]); `None` for a parsed file.
    pub fn live_kernel(&self) -> Option<&KernelInfo> {
        self.fns.get(self.live_root?)
    }

    /// The other files of the project this file imports from (see [`KernelFile::source_files`]).
    pub fn dependencies(&self) -> impl Iterator<Item = &KernelFile> {
        self.deps.iter()
    }

    /// Every source file a compilation of this file's kernels can point at, in the order of
    /// `Loc::file` (and of `Compiled::module.files`): this file, Trident's prelude, then the
    /// imported project files. Render diagnostics against this list.
    pub fn source_files(&self) -> Vec<SourceFile> {
        let mut v = vec![self.source_file(), crate::language::prelude::source_file()];
        v.extend(self.deps.iter().map(KernelFile::source_file));
        v
    }
}

/// One parameter of a `@triton.jit` function.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamInfo {
    pub name: String,
    /// The annotation as written (`tl.constexpr`, `"*fp32"`, `tl.int64`), if any.
    pub annotation: Option<String>,
    /// The type an annotation pins, when it names one (`"i64"`, `tl.float32`, `"*fp16"`).
    pub annotated_type: Option<Elem>,
    /// Whether the parameter has a default value.
    pub has_default: bool,
    /// The default value, when it is a compile-time constant.
    pub default: Option<ConstValue>,
    /// Triton's rule: the annotation mentions `constexpr`.
    pub is_constexpr: bool,
    /// Listed in `do_not_specialize` (no `== 1` / divisibility specialization).
    pub do_not_specialize: bool,
    /// Listed in `do_not_specialize_on_alignment` (no divisibility specialization).
    pub do_not_specialize_on_alignment: bool,
    pub loc: Loc,
}

/// One `triton.Config`.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The constexpr values the config sets, in the order written.
    pub kwargs: Vec<(String, ConstValue)>,
    pub num_warps: u32,
    pub num_stages: u32,
    pub num_ctas: u32,
    pub maxnreg: Option<u32>,
    /// Whether a `pre_hook` is given (it runs host code Trident does not model).
    pub pre_hook: bool,
}

impl Default for Config {
    /// Triton's defaults: 4 warps, 3 stages, 1 CTA.
    fn default() -> Config {
        Config { kwargs: vec![], num_warps: 4, num_stages: 3, num_ctas: 1, maxnreg: None, pre_hook: false }
    }
}

/// `@triton.autotune(...)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Autotune {
    /// The configs, or why they could not be evaluated statically.
    pub configs: Result<Vec<Config>, Diagnostic>,
    pub key: Vec<String>,
    /// Source text of `prune_configs_by`, if given (host code, not evaluated).
    pub prune_configs_by: Option<String>,
    pub reset_to_zero: Vec<String>,
    pub restore_value: Vec<String>,
    pub loc: Loc,
}

/// One entry of `@triton.heuristics({...})`.
#[derive(Clone, Debug, PartialEq)]
pub struct Heuristic {
    /// The constexpr parameter it sets.
    pub name: String,
    /// Source text of the value (usually a lambda).
    pub source: String,
    pub loc: Loc,
    pub(crate) range: TextRange,
}

/// A `@triton.jit` function as declared.
#[derive(Clone, Debug)]
pub struct KernelInfo {
    pub name: String,
    /// Location of the function's name in its `def`.
    pub loc: Loc,
    pub params: Vec<ParamInfo>,
    pub do_not_specialize: Vec<String>,
    pub do_not_specialize_on_alignment: Vec<String>,
    /// `@triton.jit(debug=...)`.
    pub debug: Option<bool>,
    /// `@triton.jit(noinline=True)`.
    pub noinline: bool,
    pub autotune: Option<Autotune>,
    /// Heuristics in the order they are applied.
    pub heuristics: Vec<Heuristic>,
    /// Where the `def` statement is: statement indices and suite numbers from the module body down.
    pub(crate) path: Vec<(u32, u32)>,
    pub(crate) shared: Option<Arc<FileShared>>,
}

impl PartialEq for KernelInfo {
    fn eq(&self, o: &KernelInfo) -> bool {
        self.name == o.name && self.loc == o.loc && self.params == o.params
    }
}

impl KernelInfo {
    pub fn param(&self, name: &str) -> Option<&ParamInfo> {
        self.params.iter().find(|p| p.name == name)
    }

    /// Evaluates the `@triton.heuristics` entries in order, each seeing the launch
    /// arguments plus the values of the earlier entries (as Triton applies them).
    /// Tensors are visible with their `dtype` only.
    pub fn eval_heuristics(&self, args: &[(String, ArgInfo)]) -> Result<Vec<(String, ConstValue)>, Diagnostic> {
        let Some(shared) = &self.shared else { return Ok(vec![]) };
        let src = shared.src(0);
        let mut dict: Vec<(HostValue, HostValue)> = args
            .iter()
            .map(|(k, a)| {
                let v = match a {
                    ArgInfo::Pointer { dtype, .. } => HostValue::Tensor(Elem::Num(*dtype)),
                    // (A heuristic sees a host descriptor as an opaque tensor-like value.)
                    ArgInfo::TensorDesc { dtype, .. } => HostValue::Tensor(Elem::Num(*dtype)),
                    ArgInfo::Int(v) => HostValue::Const(ConstValue::Int(*v as i128)),
                    ArgInfo::UInt(v) => HostValue::Const(ConstValue::Int(*v as i128)),
                    ArgInfo::Float(v) => HostValue::Const(ConstValue::Float(*v)),
                    ArgInfo::Bool(v) => HostValue::Const(ConstValue::Bool(*v)),
                    ArgInfo::Constexpr(c) => HostValue::Const(c.clone()),
                };
                (HostValue::Const(ConstValue::Str(k.clone())), v)
            })
            .collect();
        // Parameters left to their defaults are visible too.
        for p in &self.params {
            if !args.iter().any(|(k, _)| *k == p.name) {
                if let Some(d) = &p.default {
                    dict.push((HostValue::Const(ConstValue::Str(p.name.clone())), HostValue::Const(d.clone())));
                }
            }
        }
        let mut out = vec![];
        for h in &self.heuristics {
            let parsed = ruff_python_parser::parse_parenthesized_expression_range(&shared.text, h.range)
                .map_err(|e| src.error(h.range, format!("cannot parse heuristic: {}", e.error)))?;
            let expr: &Expr = &parsed.syntax().body;
            let mut ev = HostEval::new(&shared.globals, src);
            let v = match expr {
                Expr::Lambda(l) => ev.call_lambda(l, vec![HostValue::Dict(dict.clone())])?,
                other => ev.eval(other)?,
            };
            let c = v.into_const().ok_or_else(|| {
                src.error(h.range, format!("heuristic for `{}` did not give a constant value", h.name))
            })?;
            dict.retain(|(k, _)| *k != HostValue::Const(ConstValue::Str(h.name.clone())));
            dict.push((HostValue::Const(ConstValue::Str(h.name.clone())), HostValue::Const(c.clone())));
            out.push((h.name.clone(), c));
        }
        Ok(out)
    }
}

/// Finds the `def` at `path` (see [`KernelInfo::path`]).
pub(crate) fn resolve_def<'m>(body: &'m [Stmt], path: &[(u32, u32)]) -> Option<&'m ast::StmtFunctionDef> {
    let ((i, suite), rest) = path.split_first()?;
    let stmt = body.get(*i as usize)?;
    if rest.is_empty() {
        return match stmt {
            Stmt::FunctionDef(f) => Some(f),
            _ => None,
        };
    }
    let inner: &[Stmt] = match (stmt, *suite) {
        (Stmt::If(s), 0) => &s.body,
        (Stmt::If(s), k) => &s.elif_else_clauses.get(k as usize - 1)?.body,
        (Stmt::Try(t), 0) => &t.body,
        (Stmt::Try(t), 1) => &t.orelse,
        (Stmt::Try(t), 2) => &t.finalbody,
        (Stmt::Try(t), k) => match t.handlers.get(k as usize - 3)? {
            ast::ExceptHandler::ExceptHandler(h) => &h.body,
        },
        (Stmt::With(w), _) => &w.body,
        _ => return None,
    };
    resolve_def(inner, rest)
}
