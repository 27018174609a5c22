//! What CPython checks after parsing and the parser does not — nesting limits, duplicate
//! parameter names — and a stack for deep recursion.
//!
//! The parser, the scanner and the lowering recurse over the syntax tree, so a deeply
//! nested source (10,000 unary minuses, thousands of parentheses) would overflow the
//! thread's stack and abort the process. Two things prevent that: parsing and compiling
//! run on a thread with a large stack ([`on_big_stack`]: 256 MiB of address space, used
//! only as deep as the recursion goes), and a parsed module deeper than Python itself
//! accepts is refused with a diagnostic ([`check`]) before anything else walks it. The
//! limits are CPython's: 100 levels of indentation (its tokenizer's limit) and expressions
//! nested 2,000 deep (CPython compiles a chain of 2,000 `+` and fails at 5,000). A `def` with
//! two parameters of one name is refused as CPython refuses it.

use crate::source::SrcRef;
use ruff_python_ast::visitor::{walk_expr, walk_stmt, Visitor};
use ruff_python_ast::{Expr, ModModule, Stmt};
use ruff_text_size::Ranged;
use std::cell::Cell;
use std::collections::HashSet;
use trident_ir::Diagnostic;

/// Statements nested inside one another (`if` in `for` in `def` ...), as CPython's
/// "too many levels of indentation".
pub const MAX_BLOCK_DEPTH: u32 = 100;
/// Expressions nested inside one another (operands, arguments, subscripts ...).
pub const MAX_EXPR_DEPTH: u32 = 2000;
/// Stack of the thread that parses and compiles.
const STACK_BYTES: usize = 256 << 20;

thread_local! {
    static ON_BIG_STACK: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` on a thread with a stack made for deep recursion (or directly, when already on
/// one, or when no thread can be made).
pub(crate) fn on_big_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    if ON_BIG_STACK.with(Cell::get) {
        return f();
    }
    let slot = std::sync::Mutex::new(Some(f));
    let take = || slot.lock().unwrap_or_else(|e| e.into_inner()).take().expect("run once");
    std::thread::scope(|s| {
        let spawned =
            std::thread::Builder::new().name("trident-front".into()).stack_size(STACK_BYTES).spawn_scoped(s, || {
                ON_BIG_STACK.with(|b| b.set(true));
                take()()
            });
        match spawned {
            Ok(h) => h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
            Err(_) => take()(),
        }
    })
}

/// Refuses a module nested deeper than the limits, pointing at the first place that is.
pub(crate) fn check(module: &ModModule, src: &SrcRef<'_>) -> Result<(), Diagnostic> {
    let mut d = Depth { src, blocks: 0, exprs: 0, error: None };
    for s in &module.body {
        d.visit_stmt(s);
        if let Some(e) = d.error.take() {
            return Err(e);
        }
    }
    Ok(())
}

struct Depth<'s, 'l> {
    src: &'s SrcRef<'l>,
    blocks: u32,
    exprs: u32,
    error: Option<Diagnostic>,
}

impl<'a> Visitor<'a> for Depth<'_, '_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if self.error.is_some() {
            return;
        }
        if let Stmt::FunctionDef(f) = stmt {
            let p = &f.parameters;
            let mut seen = HashSet::new();
            let all = p.posonlyargs.iter().chain(&p.args).chain(&p.kwonlyargs).map(|a| &a.parameter);
            let star = p.vararg.iter().chain(&p.kwarg).map(|b| b.as_ref());
            for param in all.chain(star) {
                if !seen.insert(param.name.id.as_str()) {
                    self.error = Some(self.src.error(
                        param.name.range(),
                        format!("duplicate argument '{}' in function definition", param.name.id),
                    ));
                    return;
                }
            }
        }
        self.blocks += 1;
        if self.blocks > MAX_BLOCK_DEPTH {
            let at = ruff_text_size::TextRange::at(stmt.start(), 1.into());
            self.error = Some(self.src.error(at, format!(
                "too many levels of indentation: statements nested more than {MAX_BLOCK_DEPTH} deep (Python's own limit)"
            )));
        } else {
            walk_stmt(self, stmt);
        }
        self.blocks -= 1;
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if self.error.is_some() {
            return;
        }
        self.exprs += 1;
        if self.exprs > MAX_EXPR_DEPTH {
            // The start of the expression: its range may be the rest of a very long line.
            let at = ruff_text_size::TextRange::at(expr.start(), 1.into());
            self.error = Some(self.src.error(at, format!(
                "expression nested more than {MAX_EXPR_DEPTH} levels deep: Trident's limit (CPython rejects such code too, at a few thousand)"
            )));
        } else {
            walk_expr(self, expr);
        }
        self.exprs -= 1;
    }
}
