//! Proton's in-kernel profiling API (`import triton.profiler.language as pl`):
//! `pl.enter_scope(name)`, `pl.exit_scope(name)` and `with pl.scope(name):`.
//!
//! Scopes are always checked; they become `record` ops (kind `scope`) only when
//! [`crate::CompileOptions::profile_scopes`] is set, so without it the tile IR is exactly
//! what the kernel gives without them. The rules (see the crate README) make every
//! start/end pair sit in one block, which is what the IR verifier demands of records:
//!
//! * a name is a non-empty compile-time string (a literal, or a `tl.constexpr` string,
//!   which is what Proton's `name: tl.constexpr` accepts);
//! * scopes nest: `exit_scope` closes the innermost open scope and must name it; a name
//!   already open in the function cannot be opened again;
//! * a scope opened in a runtime `if` branch, loop body (runtime or unrolled), or `while`
//!   condition is closed there; one opened outside is not closed there;
//! * `return` (anywhere) and `break`/`continue` (inside the scope's loop) may not leave an
//!   `enter_scope` scope open: the exit would skip its `exit_scope`. A `with pl.scope` is
//!   closed on every exit, as Python closes a `with` block, so exits inside it are fine;
//! * nothing is left open at the end of a function (helpers included: a scope belongs to
//!   the function that opens it); no scope in a reduction's combine function.

use super::call::{Arg, Args};
use super::{DiagExt, FnLowering, Val, R};
use crate::language::Mod;
use crate::value::ConstValue;
use ruff_python_ast::{self as ast, Expr};
use ruff_text_size::{Ranged, TextRange};
use trident_ir::{Diagnostic, Loc, OpKind, RegionKind};

/// The functions of `triton.profiler.language` Trident implements.
const PL_FUNCS: &[&str] = &["enter_scope", "exit_scope", "scope"];

/// A scope open in the function being lowered.
#[derive(Clone, Debug)]
pub(crate) struct OpenScope {
    name: String,
    /// Opened by `with pl.scope(...)` (closed by the `with` itself on every exit).
    with: bool,
    /// Where it was opened, for diagnostics that point back at it.
    loc: Loc,
    len: u32,
}

/// What kind of block a scope must be balanced in, for messages.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub(crate) enum ScopeBlock {
    /// The function body.
    #[default]
    Function,
    IfBranch,
    LoopBody,
    WhileCondition,
    /// The statements after a runtime early exit, compiled under `if not exited:`; they run
    /// to the end of the enclosing block, so an unclosed scope there is never closed.
    AfterExit,
}

/// The profiling scopes of one function body: what is open, and which part of that
/// belongs to the current block.
#[derive(Clone, Debug, Default)]
pub(crate) struct Scopes {
    open: Vec<OpenScope>,
    /// `open[..floor]` belongs to enclosing blocks: this block may not close it.
    floor: usize,
    /// `open[..loop_floor]` was opened outside the innermost loop body (for `break`/`continue`).
    loop_floor: usize,
    /// What the current block is.
    block: ScopeBlock,
}

impl<'c, 'a> FnLowering<'c, 'a> {
    /// `pl.NAME` / `triton.profiler.NAME` inside a kernel.
    pub(crate) fn profiler_attr(&self, m: Mod, a: &str, r: TextRange) -> R<Val> {
        match m {
            Mod::ProfilerLanguage if PL_FUNCS.contains(&a) => Ok(Val::Builtin(m, a.to_string())),
            Mod::ProfilerLanguage => Err(self.err(
                r,
                format!(
                    "`triton.profiler.language.{a}` is not supported by Trident (in-kernel profiling has \
                     `enter_scope`, `exit_scope` and `scope`)"
                ),
            )),
            _ => {
                Err(self
                    .err(r, format!("`triton.profiler.{a}` is host-side profiling and cannot be used inside a kernel")))
            }
        }
    }

    /// A call of `pl.enter_scope`, `pl.exit_scope` or (outside `with`) `pl.scope`.
    pub(crate) fn profiler_call(&mut self, name: &str, args: Args) -> R<Val> {
        match name {
            "enter_scope" | "exit_scope" => {
                let (scope, loc) = self.scope_name(&args)?;
                self.no_scope_in_combine(args.r)?;
                if name == "enter_scope" {
                    self.open_scope(scope, false, loc, args.r)?;
                } else {
                    self.close_scope(&scope, false, loc, args.r)?;
                }
                Ok(Val::none())
            }
            "scope" => Err(self
                .err(args.r, "`pl.scope(...)` is a context manager: use it as `with pl.scope(\"name\"):`")
                .with_note("or mark the region with `pl.enter_scope(\"name\")` ... `pl.exit_scope(\"name\")`")),
            _ => Err(self.err(args.r, format!("`pl.{name}` is not supported by Trident"))),
        }
    }

    /// The name argument of a scope call, checked; and where the call is.
    fn scope_name(&self, args: &Args) -> R<(String, (Loc, u32))> {
        let b = self.bind(args, &["name"])?;
        let r = b.range(0);
        let name = match b.val(0) {
            Val::C(ConstValue::Str(s)) => s,
            Val::T(_) => return Err(self.err(
                r,
                "a scope name must be known at compile time: a string literal or a tl.constexpr string, not a tensor",
            )),
            other => return Err(self.err(r, format!("a scope name must be a string, not {}", other.kind_name()))),
        };
        if name.is_empty() {
            return Err(self.err(r, "a scope name must not be empty"));
        }
        Ok((name, (self.loc_of(args.r), args.r.len().to_u32().max(1))))
    }

    fn no_scope_in_combine(&self, r: TextRange) -> R<()> {
        if self.ctx.combine_depth > 0 {
            return Err(self.err(r, "profiling scopes cannot be used in the combine function of a reduction or scan"));
        }
        Ok(())
    }

    fn record(&mut self, name: &str, end: bool, loc: Loc) {
        if !self.ctx.opts.profile_scopes {
            return;
        }
        let saved = std::mem::replace(&mut self.loc, loc);
        self.emit(OpKind::Record { name: name.to_string(), end, kind: RegionKind::Scope }, &[], &[]);
        self.loc = saved;
    }

    /// A diagnostic pointing at `r` with a secondary label at where `s` was opened.
    fn scope_err(&self, r: TextRange, msg: String, s: &OpenScope, label: &str) -> Box<Diagnostic> {
        let d = self.err(r, msg);
        if self.pin.is_some() {
            return d;
        }
        Box::new(d.secondary(s.loc, s.len, label.to_string()))
    }

    fn open_scope(&mut self, name: String, with: bool, (loc, len): (Loc, u32), r: TextRange) -> R<()> {
        if let Some(s) = self.fr.scopes.open.iter().find(|s| s.name == name) {
            let s = s.clone();
            return Err(self.scope_err(
                r,
                format!("scope `{name}` is already open; close it before opening it again"),
                &s,
                "opened here",
            ));
        }
        self.record(&name, false, loc);
        self.fr.scopes.open.push(OpenScope { name, with, loc, len });
        Ok(())
    }

    fn close_scope(&mut self, name: &str, with: bool, (loc, _): (Loc, u32), r: TextRange) -> R<()> {
        let sc = &self.fr.scopes;
        let here = &sc.open[sc.floor..];
        match here.last() {
            Some(top) if top.name == name && top.with == with => {}
            Some(top) if top.with && !with => {
                let top = top.clone();
                let msg = if top.name == name {
                    format!("scope `{name}` belongs to a `with pl.scope(...)` block, which closes it; remove this `pl.exit_scope`")
                } else {
                    format!(
                        "`pl.exit_scope(\"{name}\")` inside the `with pl.scope(\"{}\")` block it does not belong to",
                        top.name
                    )
                };
                return Err(self.scope_err(r, msg, &top, "the `with` scope"));
            }
            Some(top) => {
                let top = top.clone();
                let msg = if with {
                    format!("scope `{}` is opened inside this `with` block but not closed in it", top.name)
                } else {
                    format!("`pl.exit_scope(\"{name}\")` must close the innermost open scope, which is `{}`", top.name)
                };
                return Err(self.scope_err(r, msg, &top, &format!("`{}` opened here", top.name)));
            }
            None => {
                let outer = sc.open[..sc.floor].iter().rev().find(|s| s.name == name).cloned();
                return Err(match outer {
                    Some(s) => self.scope_err(
                        r,
                        format!(
                            "scope `{name}` was opened outside this {} and cannot be closed inside it: \
                             each scope must be closed in the block that opens it",
                            self.block_word()
                        ),
                        &s,
                        "opened here",
                    ),
                    None => self.err(r, format!("`pl.exit_scope(\"{name}\")` closes no open scope")),
                });
            }
        }
        self.fr.scopes.open.pop();
        self.record(name, true, loc);
        Ok(())
    }

    /// How the current block is called in messages.
    fn block_word(&self) -> &'static str {
        match self.fr.scopes.block {
            ScopeBlock::Function => "function",
            ScopeBlock::IfBranch => "branch of an `if`",
            ScopeBlock::LoopBody => "loop body",
            ScopeBlock::WhileCondition => "`while` condition",
            ScopeBlock::AfterExit => "block",
        }
    }

    /// Runs `f`, which lowers statements into a block of its own (`what`): scopes opened
    /// there must be closed there, and scopes opened before cannot be closed there.
    pub(crate) fn scope_block<T>(&mut self, what: ScopeBlock, f: impl FnOnce(&mut Self) -> R<T>) -> R<T> {
        let saved = self.fr.scopes.clone();
        self.fr.scopes.block = what;
        self.fr.scopes.floor = self.fr.scopes.open.len();
        if what == ScopeBlock::LoopBody {
            self.fr.scopes.loop_floor = self.fr.scopes.open.len();
        }
        let r = f(self);
        let left = self.fr.scopes.open.get(self.fr.scopes.floor..).and_then(|s| s.last()).cloned();
        self.fr.scopes = saved;
        let v = r?;
        if let Some(s) = left {
            let msg = match what {
                ScopeBlock::Function | ScopeBlock::AfterExit => {
                    format!("scope `{}` is still open at the end of `{}`", s.name, self.fr.fn_name)
                }
                _ => format!(
                    "scope `{}` is opened in this {} but not closed in it: a scope must be closed \
                     in the block that opens it, so that it is balanced on every path",
                    s.name,
                    match what {
                        ScopeBlock::IfBranch => "branch of an `if`",
                        ScopeBlock::LoopBody => "loop body",
                        _ => "`while` condition",
                    }
                ),
            };
            let d = Diagnostic::error(msg).at(s.loc, s.len);
            return Err(Box::new(d));
        }
        Ok(v)
    }

    /// `return` (`what = "return"`), `break` or `continue` at `r`: it may not skip an
    /// `exit_scope` (a `with` scope is closed on the way out).
    pub(crate) fn check_exit_scopes(&self, what: &str, r: TextRange) -> R<()> {
        let sc = &self.fr.scopes;
        let left = if what == "return" { &sc.open[..] } else { &sc.open[sc.loop_floor.min(sc.open.len())..] };
        if let Some(s) = left.iter().rev().find(|s| !s.with) {
            let name = &s.name;
            return Err(self
                .scope_err(
                    r,
                    format!("`{what}` leaves scope `{name}` open: it would skip its `pl.exit_scope(\"{name}\")`"),
                    s,
                    "opened here",
                )
                .with_note(format!(
                    "close it before the `{what}`, or use `with pl.scope(\"{name}\"):`, which closes it on every exit"
                )));
        }
        Ok(())
    }

    /// `with pl.scope(name), ...:` — the only `with` a kernel may use.
    pub(crate) fn with_stmt(&mut self, w: &ast::StmtWith) -> R<()> {
        let kw = TextRange::at(w.range.start(), 4.into());
        if w.is_async {
            return Err(self.err(kw, "`async with` is not supported in kernels"));
        }
        let mut names = vec![];
        for item in &w.items {
            let Expr::Call(c) = &item.context_expr else {
                return Err(self.with_unsupported(item.context_expr.range()));
            };
            // Anything else is unsupported, whatever it names (`open`, a lock, ...).
            let f = self
                .expr(&c.func)
                .map_err(|e| self.with_unsupported(item.context_expr.range()).with_note(e.message))?;
            if !matches!(&f, Val::Builtin(Mod::ProfilerLanguage, n) if n == "scope") {
                return Err(self.with_unsupported(item.context_expr.range()));
            }
            if let Some(v) = &item.optional_vars {
                return Err(self.err(v.range(), "`pl.scope(...)` has no value to bind: remove the `as ...`"));
            }
            let mut pos = vec![];
            for a in c.arguments.args.iter() {
                pos.push(Arg { v: self.expr(a)?, r: a.range() });
            }
            let mut kws = vec![];
            for k in c.arguments.keywords.iter() {
                let Some(name) = &k.arg else {
                    return Err(self.err(k.range, "`**kwargs` is not supported in kernel calls"));
                };
                kws.push((name.id.to_string(), Arg { v: self.expr(&k.value)?, r: k.value.range() }));
            }
            let args = Args { pos, kw: kws, r: c.range(), name: "pl.scope".into() };
            let (name, at) = self.scope_name(&args)?;
            self.no_scope_in_combine(args.r)?;
            names.push((name, at, args.r));
        }
        for (name, at, r) in &names {
            self.open_scope(name.clone(), true, *at, *r)?;
        }
        // Python closes a `with` on every way out of its body; so does this: the end records
        // go after the body, on the path that reaches them whatever exit was taken inside.
        self.stmts(&w.body)?;
        for (name, at, r) in names.iter().rev() {
            self.close_scope(name, true, *at, *r)?;
        }
        Ok(())
    }

    fn with_unsupported(&self, r: TextRange) -> Box<Diagnostic> {
        self.err(r, "`with` is not supported in kernels, except `with pl.scope(\"name\"):` (triton.profiler.language)")
    }
}
