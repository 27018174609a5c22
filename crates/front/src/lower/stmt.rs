//! Statements: assignments, expression statements, `return`/`break`/`continue`, `assert`.

use super::{FnLowering, Val, BRK, CONT, R, RET, RETVAL};
use crate::value::ConstValue;
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{Ranged, TextRange};

impl<'c, 'a> FnLowering<'c, 'a> {
    pub(crate) fn stmt(&mut self, s: &Stmt) -> R<()> {
        let saved = self.loc;
        self.loc = self.loc_of(s.range());
        let r = self.stmt_inner(s);
        self.loc = saved;
        r
    }

    fn stmt_inner(&mut self, s: &Stmt) -> R<()> {
        let r = s.range();
        // Unsupported compound statements are reported at their keyword.
        let kw = |n: u32| TextRange::at(r.start(), n.into());
        match s {
            Stmt::Expr(e) => {
                self.expr(&e.value)?;
                Ok(())
            }
            Stmt::Pass(_) => Ok(()),
            Stmt::Assign(a) => {
                let v = self.expr(&a.value)?;
                for t in &a.targets {
                    let v = self.sanitize(t, v.clone(), a.value.range())?;
                    self.assign_target(t, v, r)?;
                }
                Ok(())
            }
            Stmt::AugAssign(a) => {
                if !matches!(&*a.target, Expr::Name(_)) {
                    return Err(self.err(a.target.range(), "augmented assignment needs a plain variable name here"));
                }
                let cur = self.expr(&a.target)?;
                let rhs = self.expr(&a.value)?;
                let op = crate::hosteval::py_binop(a.op)
                    .ok_or_else(|| self.err(r, "the `@=` operator is not supported; use tl.dot"))?;
                let v = self.arith(op, &cur, &rhs, r)?;
                let v = self.sanitize(&a.target, v, r)?;
                self.assign_target(&a.target, v, r)
            }
            Stmt::AnnAssign(a) => self.ann_assign(a),
            Stmt::If(i) => self.if_stmt(i),
            Stmt::For(f) => self.for_stmt(f),
            Stmt::While(w) => self.while_stmt(w),
            Stmt::Return(ret) => {
                let v = match &ret.value {
                    Some(e) => self.expr(e)?,
                    None => Val::none(),
                };
                if self.fr.is_kernel && !v.is_none() {
                    return Err(self.err(r, "a kernel cannot return a value"));
                }
                self.check_exit_scopes("return", r)?;
                self.fr.scope.insert(RETVAL.into(), v);
                self.fr.scope.insert(RET.into(), Val::C(ConstValue::Bool(true)));
                Ok(())
            }
            Stmt::Break(_) | Stmt::Continue(_) => {
                if self.fr.loops == 0 {
                    return Err(self.err(r, "`break`/`continue` outside of a loop"));
                }
                let brk = matches!(s, Stmt::Break(_));
                self.check_exit_scopes(if brk { "break" } else { "continue" }, r)?;
                let flag = if brk { BRK } else { CONT };
                self.fr.scope.insert(flag.into(), Val::C(ConstValue::Bool(true)));
                Ok(())
            }
            Stmt::Assert(a) => {
                let cond = self.expr(&a.test)?;
                let msg = match &a.msg {
                    Some(m) => self.expr(m)?,
                    None => Val::C(ConstValue::Str(String::new())),
                };
                self.device_assert(cond, msg, None, r)
            }
            Stmt::FunctionDef(_) => Err(self.err(
                kw(3),
                "nested function definitions are not allowed inside a @triton.jit function; \
                 move it to module level and decorate it with @triton.jit",
            )),
            Stmt::ClassDef(_) => Err(self.err(kw(5), "class definitions are not allowed inside a kernel")),
            Stmt::Import(_) | Stmt::ImportFrom(_) => {
                Err(self.err(r, "imports are not allowed inside a kernel; import at module level"))
            }
            Stmt::Raise(_) => {
                Err(self.err(r, "`raise` is not supported in kernels; use tl.device_assert or tl.static_assert"))
            }
            Stmt::Try(_) => Err(self.err(kw(3), "`try` is not supported in kernels")),
            Stmt::With(w) => self.with_stmt(w),
            Stmt::Global(_) | Stmt::Nonlocal(_) => Err(self.err(r, "`global`/`nonlocal` are not supported in kernels")),
            Stmt::Delete(_) => Err(self.err(r, "`del` is not supported in kernels")),
            Stmt::Match(_) => Err(self.err(kw(5), "`match` is not supported in kernels")),
            _ => Err(self.err(r, "unsupported statement in a kernel")),
        }
    }

    /// Triton's assignment rule: a Python number assigned to a variable becomes a 0-d tensor
    /// of its default type (unless the name was declared `tl.constexpr`).
    fn sanitize(&mut self, target: &Expr, v: Val, r: TextRange) -> R<Val> {
        if let Expr::Name(n) = target {
            if self.fr.pending_constexpr.remove(n.id.as_str()) {
                return Ok(v);
            }
        }
        if let (Expr::Tuple(t), Val::Tuple(items)) = (target, &v) {
            if t.elts.len() == items.len() {
                let mut out = vec![];
                for (x, it) in t.elts.iter().zip(items) {
                    out.push(self.sanitize(x, it.clone(), r)?);
                }
                return Ok(Val::Tuple(out));
            }
        }
        self.sanitize_value(v, r)
    }

    fn sanitize_value(&mut self, v: Val, r: TextRange) -> R<Val> {
        match v {
            Val::C(c) if c.is_number() => Ok(Val::T(self.tensor_of(&Val::C(c), r)?)),
            Val::Tuple(items) => {
                Ok(Val::Tuple(items.into_iter().map(|x| self.sanitize_value(x, r)).collect::<R<_>>()?))
            }
            other => Ok(other),
        }
    }

    pub(crate) fn assign_target(&mut self, target: &Expr, v: Val, r: TextRange) -> R<()> {
        match target {
            Expr::Name(n) => {
                self.fr.scope.insert(n.id.to_string(), v);
                Ok(())
            }
            Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }) => {
                let Val::Tuple(items) = v else {
                    return Err(self.err(r, format!("cannot unpack {} (not a tuple)", v.kind_name())));
                };
                if elts.iter().any(|e| matches!(e, Expr::Starred(_))) {
                    return Err(self.err(target.range(), "starred assignment targets are not supported"));
                }
                if items.len() != elts.len() {
                    let msg = if items.len() > elts.len() {
                        format!("too many values to unpack (expected {})", elts.len())
                    } else {
                        format!("not enough values to unpack (expected {}, got {})", elts.len(), items.len())
                    };
                    return Err(self.err(r, msg));
                }
                for (e, it) in elts.iter().zip(items) {
                    self.assign_target(e, it, r)?;
                }
                Ok(())
            }
            Expr::Subscript(_) => Err(self.err(
                target.range(),
                "item assignment is not supported: tensors are immutable (build a new one, e.g. with tl.where)",
            )),
            Expr::Attribute(_) => Err(self.err(target.range(), "attribute assignment is not supported in kernels")),
            _ => Err(self.err(target.range(), "unsupported assignment target")),
        }
    }

    fn ann_assign(&mut self, a: &ast::StmtAnnAssign) -> R<()> {
        let ann = self.expr(&a.annotation)?;
        let is_constexpr = matches!(&ann, Val::Builtin(_, n) if n == "constexpr");
        let Expr::Name(n) = &*a.target else {
            return Err(self.err(a.target.range(), "annotated assignments need a plain variable name"));
        };
        let name = n.id.to_string();
        let Some(value) = &a.value else {
            if is_constexpr {
                self.fr.pending_constexpr.insert(name);
            }
            return Ok(());
        };
        if is_constexpr {
            if self.fr.scope.contains_key(&name) {
                return Err(self
                    .err(a.target.range(), format!("`{name}` is already defined; a constexpr cannot be reassigned")));
            }
            let v = self.expr(value)?;
            if v.as_const().is_none() && !matches!(v, Val::Jit(_) | Val::Builtin(..) | Val::Module(_)) {
                return Err(self.err(
                    value.range(),
                    format!(
                        "`{name}` is declared tl.constexpr but its value is not a compile-time constant ({})",
                        v.kind_name()
                    ),
                ));
            }
            self.fr.scope.insert(name, v);
            return Ok(());
        }
        let v = self.expr(value)?;
        let v = self.sanitize(&a.target, v, value.range())?;
        self.assign_target(&a.target, v, a.range)
    }
}
