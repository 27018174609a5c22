//! Structured control flow: statement lists with early exits, `if`, `for`, `while`.
//!
//! Early exits (`return`, `break`, `continue` — the latter two beyond what
//! Triton accepts) are flags in the variable scope (`%ret`, `%brk`, `%cont`),
//! `true` once the exit has happened. A flag known at compile time cuts the
//! rest of a statement list; a flag only known at run time puts the rest of
//! the list under `if not exited:`. Because flags and the pending return value
//! (`%retval`) live in the scope, `if` merging and loop carrying handle them
//! like any variable. A loop containing `break` or `return` becomes a `while`
//! op whose condition also tests the flags.

use super::emit::type_str;
use super::profile::ScopeBlock;
use super::val::RangeVal;
use super::{FnLowering, Val, BRK, CONT, R, RET, RETVAL};
use crate::scan::assigned_names;
use crate::value::ConstValue;
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{Ranged, TextRange};
use trident_core::DType;
use trident_ir::{BinaryOp, Block, CmpPred, Elem, OpKind, Type, Value};

/// A loop body callback: gets the loop machinery's block arguments, returns their next values.
type LoopBody<'f, T> = dyn FnMut(&mut T, &[Value]) -> R<Vec<Value>> + 'f;

enum Exit {
    None,
    Static,
    Runtime,
}

const FLAGS: [&str; 3] = [RET, BRK, CONT];

/// A constant number or a tensor: what a runtime `if` can merge.
fn is_num(v: &Val) -> bool {
    match v {
        Val::C(c) => c.is_number(),
        Val::T(_) => true,
        _ => false,
    }
}

/// Does `body` contain `break` for this loop (not for nested loops)?
fn has_break(body: &[Stmt]) -> bool {
    body.iter().any(|s| match s {
        Stmt::Break(_) => true,
        Stmt::If(i) => has_break(&i.body) || i.elif_else_clauses.iter().any(|c| has_break(&c.body)),
        Stmt::With(w) => has_break(&w.body),
        _ => false,
    })
}

/// Does `body` contain `return` anywhere (nested loops included)? The second item: one returns a value.
fn has_return(body: &[Stmt]) -> (bool, bool) {
    let mut any = false;
    let mut value = false;
    fn walk(body: &[Stmt], any: &mut bool, value: &mut bool) {
        for s in body {
            match s {
                Stmt::Return(r) => {
                    *any = true;
                    if r.value.as_deref().is_some_and(|v| !matches!(v, Expr::NoneLiteral(_))) {
                        *value = true;
                    }
                }
                Stmt::If(i) => {
                    walk(&i.body, any, value);
                    for c in &i.elif_else_clauses {
                        walk(&c.body, any, value);
                    }
                }
                Stmt::For(f) => walk(&f.body, any, value),
                Stmt::While(w) => walk(&w.body, any, value),
                Stmt::With(w) => walk(&w.body, any, value),
                _ => {}
            }
        }
    }
    walk(body, &mut any, &mut value);
    (any, value)
}

impl<'c, 'a> FnLowering<'c, 'a> {
    /// Compiles a statement list, cutting or guarding what follows an early exit.
    pub(crate) fn stmts(&mut self, body: &[Stmt]) -> R<()> {
        for (i, s) in body.iter().enumerate() {
            self.stmt(s)?;
            match self.exit_state(&FLAGS) {
                Exit::None => {}
                Exit::Static => return Ok(()),
                Exit::Runtime => {
                    let rest = &body[i + 1..];
                    if let (Some(first), Some(last)) = (rest.first(), rest.last()) {
                        let r = TextRange::new(first.start(), last.end());
                        return self.guarded(&FLAGS, r, &mut |l: &mut Self| l.stmts(rest));
                    }
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    fn exit_state(&self, flags: &[&str]) -> Exit {
        let mut st = Exit::None;
        for f in flags {
            match self.fr.scope.get(*f) {
                Some(Val::C(ConstValue::Bool(true))) => return Exit::Static,
                Some(Val::T(_)) => st = Exit::Runtime,
                _ => {}
            }
        }
        st
    }

    /// Runs `then` under `if not (any of flags)`; inside, the flags are known clear.
    fn guarded(&mut self, flags: &[&str], r: TextRange, then: &mut dyn FnMut(&mut Self) -> R<()>) -> R<()> {
        let runtime: Vec<(String, Value)> = flags
            .iter()
            .filter_map(|f| match self.fr.scope.get(*f) {
                Some(Val::T(v)) => Some((f.to_string(), *v)),
                _ => None,
            })
            .collect();
        let mut any = runtime[0].1;
        for (_, v) in &runtime[1..] {
            let ty = self.ty(any).clone();
            any = self.emit1(OpKind::Binary(BinaryOp::Or), &[any, *v], ty);
        }
        let ty = self.ty(any).clone();
        let go = self.emit1(OpKind::Unary(trident_ir::UnaryOp::Not), &[any], ty);
        let names: Vec<String> = runtime.iter().map(|(n, _)| n.clone()).collect();
        let single = names.len() == 1;
        self.runtime_if_in(
            ScopeBlock::AfterExit,
            go,
            r,
            &mut |l: &mut Self| {
                for n in &names {
                    l.fr.scope.insert(n.clone(), Val::C(ConstValue::Bool(false)));
                }
                then(l)
            },
            &mut |l: &mut Self| {
                if single {
                    l.fr.scope.insert(names[0].clone(), Val::C(ConstValue::Bool(true)));
                }
                Ok(())
            },
        )
    }

    /// Runs `f` with ops going into `b`.
    fn in_block<T>(&mut self, b: Block, f: impl FnOnce(&mut Self) -> R<T>) -> R<T> {
        let saved = self.block;
        self.block = b;
        let r = f(self);
        self.block = saved;
        r
    }

    /// Builds an `if` op on `cond` (an i1 scalar). Variables that the two branches leave
    /// different become its results; variables defined in only one branch are dropped (as in Triton).
    pub(crate) fn runtime_if(
        &mut self,
        cond: Value,
        r: TextRange,
        then_f: &mut dyn FnMut(&mut Self) -> R<()>,
        else_f: &mut dyn FnMut(&mut Self) -> R<()>,
    ) -> R<()> {
        self.runtime_if_in(ScopeBlock::IfBranch, cond, r, then_f, else_f)
    }

    /// [`Self::runtime_if`], saying what its branches are to the profiling-scope checks.
    fn runtime_if_in(
        &mut self,
        what: ScopeBlock,
        cond: Value,
        r: TextRange,
        then_f: &mut dyn FnMut(&mut Self) -> R<()>,
        else_f: &mut dyn FnMut(&mut Self) -> R<()>,
    ) -> R<()> {
        let outer = self.block;
        let s0 = self.fr.scope.clone();
        let then_b = self.f.new_block(&[]);
        let else_b = self.f.new_block(&[]);
        self.block = then_b;
        let r1 = self.scope_block(what, |l| then_f(l));
        let s1 = std::mem::replace(&mut self.fr.scope, s0.clone());
        self.block = else_b;
        let r2 = self.scope_block(what, |l| else_f(l));
        let s2 = std::mem::take(&mut self.fr.scope);
        self.block = outer;
        self.fr.scope = s0.clone();
        r1?;
        r2?;

        let mut keys: Vec<&String> = s0.keys().chain(s1.keys()).chain(s2.keys()).collect();
        keys.sort();
        keys.dedup();
        let mut tv = vec![];
        let mut ev = vec![];
        let mut merged: Vec<(String, Val)> = vec![];
        for name in keys {
            let pseudo = name.starts_with('%');
            let (a, b) = match (s1.get(name), s2.get(name)) {
                (Some(a), Some(b)) => (a.clone(), b.clone()),
                (Some(a), None) if pseudo => {
                    let b = self.in_block(else_b, |l| l.filler(a))?;
                    (a.clone(), b)
                }
                (None, Some(b)) if pseudo => {
                    let a = self.in_block(then_b, |l| l.filler(b))?;
                    (a, b.clone())
                }
                _ => {
                    self.fr.scope.remove(name);
                    continue;
                }
            };
            if a.same(&b) {
                self.fr.scope.insert(name.clone(), a);
                continue;
            }
            let t = self.merge_val(name, &a, &b, then_b, else_b, &mut tv, &mut ev, r)?;
            merged.push((name.clone(), t));
        }
        let loc = self.cur_loc();
        let y = self.f.new_op(OpKind::Yield, &tv, &[], loc);
        self.f.append_op(then_b, y);
        let y = self.f.new_op(OpKind::Yield, &ev, &[], loc);
        self.f.append_op(else_b, y);
        let types: Vec<Type> = tv.iter().map(|v| self.ty(*v).clone()).collect();
        let op = self.f.new_op(OpKind::If, &[cond], &types, loc);
        self.f.add_region(op, then_b);
        self.f.add_region(op, else_b);
        self.f.append_op(outer, op);
        let results = self.f.ops[op].results.to_vec();
        let mut it = results.into_iter();
        for (name, t) in merged {
            let v = t.rebuild(&mut it);
            self.fr.scope.insert(name, v);
        }
        Ok(())
    }

    /// A stand-in for a pending value on a path where it was never set (never observed there).
    fn filler(&mut self, like: &Val) -> R<Val> {
        Ok(match like {
            Val::T(x) => {
                let ty = self.ty(*x).clone();
                Val::T(self.zero_of(&ty))
            }
            Val::Tuple(v) => Val::Tuple(v.iter().map(|x| self.filler(x)).collect::<R<_>>()?),
            Val::BlockPtr(b) => {
                let parts = b.parts().into_iter().map(|x| self.filler(x)).collect::<R<_>>()?;
                Val::BlockPtr(Box::new(b.with_parts(parts)))
            }
            other => other.clone(),
        })
    }

    /// One element of a tuple or block pointer being merged. An element both branches leave
    /// the same is still yielded when it holds IR values: the merged value is rebuilt from the
    /// `if` op's results, one per IR value, in order.
    #[allow(clippy::too_many_arguments)]
    fn merge_part(
        &mut self,
        name: &str,
        p: &Val,
        q: &Val,
        then_b: Block,
        else_b: Block,
        tv: &mut Vec<Value>,
        ev: &mut Vec<Value>,
        r: TextRange,
    ) -> R<Val> {
        if !p.same(q) {
            return self.merge_val(name, p, q, then_b, else_b, tv, ev, r);
        }
        let mut vals = vec![];
        p.flatten(&mut vals);
        tv.extend(&vals);
        ev.extend(&vals);
        Ok(p.clone())
    }

    /// Pairs up the two branch values of one variable, pushing the IR values to yield.
    #[allow(clippy::too_many_arguments)]
    fn merge_val(
        &mut self,
        name: &str,
        a: &Val,
        b: &Val,
        then_b: Block,
        else_b: Block,
        tv: &mut Vec<Value>,
        ev: &mut Vec<Value>,
        r: TextRange,
    ) -> R<Val> {
        let pseudo = name.starts_with('%');
        let shown = if name == RETVAL { "the return value".to_string() } else { format!("`{name}`") };
        match (a, b) {
            (Val::T(x), Val::T(y)) => {
                if self.ty(*x) != self.ty(*y) {
                    return Err(self.err(
                        r,
                        format!(
                            "{shown} has type {} at the end of the `if` branch but {} at the end of the `else` branch",
                            type_str(self.ty(*x)),
                            type_str(self.ty(*y))
                        ),
                    ));
                }
                tv.push(*x);
                ev.push(*y);
                Ok(Val::T(*x))
            }
            (Val::Tuple(x), Val::Tuple(y)) if x.len() == y.len() => {
                let mut out = vec![];
                for (p, q) in x.iter().zip(y) {
                    out.push(self.merge_part(name, p, q, then_b, else_b, tv, ev, r)?);
                }
                Ok(Val::Tuple(out))
            }
            (Val::BlockPtr(x), Val::BlockPtr(y)) if x.same_kind(y) => {
                let mut out = vec![];
                for (p, q) in x.parts().into_iter().zip(y.parts()) {
                    out.push(self.merge_part(name, p, q, then_b, else_b, tv, ev, r)?);
                }
                Ok(Val::BlockPtr(Box::new(x.with_parts(out))))
            }
            (Val::C(_), Val::C(_)) | (Val::T(_), Val::C(_)) | (Val::C(_), Val::T(_))
                if pseudo || (is_num(a) && is_num(b)) =>
            {
                // Pending return values and flags become tensors (constants take their default type).
                // So does a number variable one branch reassigns (e.g. an int argument specialized to 1):
                // Triton silently keeps the old constant there; merging the values is what the code says.
                let x = self.in_block(then_b, |l| l.tensor_of(a, r))?;
                let y = self.in_block(else_b, |l| l.tensor_of(b, r))?;
                self.merge_val(name, &Val::T(x), &Val::T(y), then_b, else_b, tv, ev, r)
            }
            _ => {
                let what = |l: &Self, v: &Val| match v {
                    Val::T(x) => type_str(l.ty(*x)),
                    other => other.kind_name(),
                };
                Err(self.err(
                    r,
                    format!(
                        "{shown} is {} at the end of the `if` branch but {} at the end of the `else` branch; \
                         a runtime `if` can only merge tensors of the same type",
                        what(self, a),
                        what(self, b)
                    ),
                ))
            }
        }
    }

    pub(crate) fn if_stmt(&mut self, i: &ast::StmtIf) -> R<()> {
        let mut clauses: Vec<(Option<&Expr>, &[Stmt])> = vec![(Some(&i.test), &i.body)];
        for c in &i.elif_else_clauses {
            clauses.push((c.test.as_ref(), &c.body));
        }
        // Errors about the merge point at the `if` line, not the whole statement.
        self.if_chain(&clauses, TextRange::new(i.range.start(), i.test.range().end()))
    }

    fn if_chain(&mut self, clauses: &[(Option<&Expr>, &[Stmt])], r: TextRange) -> R<()> {
        let Some(((test, body), rest)) = clauses.split_first() else {
            return Ok(());
        };
        let Some(test) = test else {
            return self.stmts(body);
        };
        let c = self.expr(test)?;
        match c {
            Val::T(v) => {
                let cond = self.cond_i1(v, test.range())?;
                self.runtime_if(cond, r, &mut |l: &mut Self| l.stmts(body), &mut |l: &mut Self| l.if_chain(rest, r))
            }
            other => {
                let Some(t) = other.as_const().and_then(|c| c.truthy()) else {
                    return Err(
                        self.err(test.range(), format!("`if` needs a boolean condition, not {}", other.kind_name()))
                    );
                };
                if t {
                    self.stmts(body)
                } else {
                    self.if_chain(rest, r)
                }
            }
        }
    }

    /// Names a loop body assigns that hold IR values before the loop: its loop-carried variables.
    fn carried(&self, body: &[Stmt], skip: &[String]) -> Vec<String> {
        let mut names = vec![];
        assigned_names(body, &mut names);
        names.sort();
        names.dedup();
        names.into_iter().filter(|n| !skip.contains(n) && self.fr.scope.get(n).is_some_and(Val::has_tensor)).collect()
    }

    /// After a loop body: every carried variable keeps its type, and nothing else defined before changed.
    fn check_loop_vars(&self, s0: &super::Scope, carried: &[String], r: TextRange) -> R<()> {
        for (name, v0) in s0 {
            if name.starts_with('%') {
                continue;
            }
            let Some(v1) = self.fr.scope.get(name) else { continue };
            if carried.contains(name) {
                if let Some(msg) = self.type_change(v0, v1) {
                    return Err(self.err(
                        r,
                        format!("loop-carried variable `{name}` {msg}; make sure its type stays the same (e.g. with `.to()`)"),
                    ));
                }
            } else if !v0.same(v1) {
                return Err(self.err(
                    r,
                    match v0 {
                        Val::C(_) | Val::Tuple(_) => format!(
                            "`{name}` holds a compile-time constant before the loop and cannot be reassigned inside it \
                             (an int argument equal to 1 is specialized to a constant: list it in \
                             @triton.jit(do_not_specialize=[...]))"
                        ),
                        _ => format!("`{name}` is reassigned inside the loop in a way Trident cannot carry"),
                    },
                ));
            }
        }
        Ok(())
    }

    /// Describes how `new` differs in type from `old`, if it does.
    fn type_change(&self, old: &Val, new: &Val) -> Option<String> {
        match (old, new) {
            (Val::T(a), Val::T(b)) => (self.ty(*a) != self.ty(*b)).then(|| {
                format!(
                    "has type {} before the loop but {} after an iteration",
                    type_str(self.ty(*a)),
                    type_str(self.ty(*b))
                )
            }),
            (Val::Tuple(a), Val::Tuple(b)) if a.len() == b.len() => {
                a.iter().zip(b).find_map(|(x, y)| self.type_change(x, y))
            }
            (Val::BlockPtr(a), Val::BlockPtr(b)) if a.same_kind(b) => {
                a.parts().into_iter().zip(b.parts()).find_map(|(x, y)| self.type_change(x, y))
            }
            (a, b) if a.same(b) => None,
            (Val::T(a), other) => Some(format!(
                "is a {} tensor before the loop but {} after an iteration",
                type_str(self.ty(*a)),
                other.kind_name()
            )),
            (a, b) => Some(format!("changes from {} to {}", a.kind_name(), b.kind_name())),
        }
    }

    pub(crate) fn for_stmt(&mut self, s: &ast::StmtFor) -> R<()> {
        let r = TextRange::new(s.range.start(), s.iter.range().end());
        if !s.orelse.is_empty() {
            return Err(self.err(r, "`else` on a `for` loop is not supported"));
        }
        let it = self.expr(&s.iter)?;
        let Expr::Name(tn) = &*s.target else {
            return Err(self.err(s.target.range(), "the loop variable must be a plain name"));
        };
        let target = tn.id.to_string();
        match it {
            Val::Range(rg) if rg.is_static => {
                let items = self.static_items(&rg, s.iter.range())?;
                self.unroll(&target, items, &s.body)
            }
            Val::Tuple(items) => self.unroll(&target, items, &s.body),
            Val::Range(rg) => {
                // The loop rebinds its variable; an earlier value (even a constant left by a
                // static loop) is neither carried nor checked, as in Triton.
                let earlier = self.fr.scope.remove(&target);
                let res = self.for_runtime(&target, &rg, &s.body, r);
                if let Some(v) = earlier {
                    self.fr.scope.insert(target, v);
                }
                res
            }
            other => Err(self.err(
                s.iter.range(),
                format!(
                    "`for` loops iterate over range(), tl.range(), tl.static_range() or a tuple, not {}",
                    other.kind_name()
                ),
            )),
        }
    }

    fn static_items(&mut self, rg: &RangeVal, r: TextRange) -> R<Vec<Val>> {
        let get = |v: &Val| v.as_const().and_then(|c| c.as_int());
        let (Some(a), Some(b), Some(st)) = (get(&rg.start), get(&rg.end), get(&rg.step)) else {
            return Err(self.err(r, "tl.static_range bounds must be compile-time constants"));
        };
        if st == 0 {
            return Err(self.err(r, "range() step must not be zero"));
        }
        let mut out = vec![];
        let mut i = a;
        while (st > 0 && i < b) || (st < 0 && i > b) {
            out.push(Val::int(i));
            if out.len() > 1 << 14 {
                return Err(self.err(r, "tl.static_range with more than 16384 iterations; use a runtime range"));
            }
            i += st;
        }
        Ok(out)
    }

    /// A loop unrolled at compile time; `break`/`continue`/`return` work through the flags.
    fn unroll(&mut self, target: &str, items: Vec<Val>, body: &[Stmt]) -> R<()> {
        let outer_brk = self.fr.scope.remove(BRK);
        let outer_cont = self.fr.scope.remove(CONT);
        self.fr.scope.insert(BRK.into(), Val::C(ConstValue::Bool(false)));
        self.fr.loops += 1;
        let r = self.unroll_from(target, &items, body);
        self.fr.loops -= 1;
        self.fr.scope.remove(BRK);
        self.fr.scope.remove(CONT);
        if let Some(v) = outer_brk {
            self.fr.scope.insert(BRK.into(), v);
        }
        if let Some(v) = outer_cont {
            self.fr.scope.insert(CONT.into(), v);
        }
        r
    }

    fn unroll_from(&mut self, target: &str, items: &[Val], body: &[Stmt]) -> R<()> {
        for (k, it) in items.iter().enumerate() {
            self.fr.scope.insert(target.to_string(), it.clone());
            self.fr.scope.insert(CONT.into(), Val::C(ConstValue::Bool(false)));
            self.scope_block(ScopeBlock::LoopBody, |l| l.stmts(body))?;
            self.fr.scope.insert(CONT.into(), Val::C(ConstValue::Bool(false)));
            match self.exit_state(&[RET, BRK]) {
                Exit::None => {}
                Exit::Static => return Ok(()),
                Exit::Runtime => {
                    let rest = &items[k + 1..];
                    if rest.is_empty() {
                        return Ok(());
                    }
                    let r = TextRange::new(
                        body.first().map(|s| s.start()).unwrap_or_default(),
                        body.last().map(|s| s.end()).unwrap_or_default(),
                    );
                    return self.guarded(&[RET, BRK], r, &mut |l: &mut Self| l.unroll_from(target, rest, body));
                }
            }
        }
        Ok(())
    }

    /// Bounds of a runtime `for`, cast to the induction variable's type (integer promotion of all three).
    fn loop_bounds(&mut self, rg: &RangeVal, r: TextRange) -> R<(Value, Value, Value, bool)> {
        let mut negative = false;
        let (mut start, mut end, mut step) = ((*rg.start).clone(), (*rg.end).clone(), (*rg.step).clone());
        if let Some(c) = step.as_const().and_then(|c| c.as_int()) {
            if c == 0 {
                return Err(self.err(r, "range() step must not be zero"));
            }
            if c < 0 {
                negative = true;
                step = Val::int(-c);
                std::mem::swap(&mut start, &mut end);
            }
        }
        let lb = self.tensor_of(&start, r)?;
        let ub = self.tensor_of(&end, r)?;
        let st = self.tensor_of(&step, r)?;
        let mut iv = None;
        for (v, what) in [(lb, "lower bound"), (ub, "upper bound"), (st, "step")] {
            let t = self.ty(v).clone();
            match t {
                Type::Scalar(Elem::Num(d)) if d.is_int() => {
                    iv = Some(match iv {
                        None => d,
                        Some(p) => super::sem::int_promote(p, d),
                    });
                }
                _ => {
                    return Err(
                        self.err(r, format!("`for` loop {what} must be an integer scalar, got {}", type_str(&t)))
                    );
                }
            }
        }
        let ivt = Elem::Num(iv.unwrap_or(DType::I32));
        let lb = self.cast(lb, ivt, None, r)?;
        let ub = self.cast(ub, ivt, None, r)?;
        let st = self.cast(st, ivt, None, r)?;
        Ok((lb, ub, st, negative))
    }

    /// The user-visible induction variable (`lb + ub - iv` when a negative constant step was normalized).
    fn user_iv(&mut self, iv: Value, lb: Value, ub: Value, negative: bool) -> Value {
        if !negative {
            return iv;
        }
        let ty = self.ty(iv).clone();
        let d = self.emit1(OpKind::Binary(BinaryOp::Sub), &[ub, iv], ty.clone());
        self.emit1(OpKind::Binary(BinaryOp::Add), &[d, lb], ty)
    }

    fn for_runtime(&mut self, target: &str, rg: &RangeVal, body: &[Stmt], r: TextRange) -> R<()> {
        let (lb, ub, st, negative) = self.loop_bounds(rg, r)?;
        let brk = has_break(body);
        let (ret, retval) = has_return(body);
        if brk || ret {
            return self.for_as_while(target, lb, ub, st, negative, body, ret, retval, r);
        }
        let carried = self.carried(body, &[target.to_string()]);
        let s0 = self.fr.scope.clone();
        let mut init = vec![];
        for n in &carried {
            s0[n].flatten(&mut init);
        }
        let iv_ty = self.ty(lb).clone();
        let mut arg_types = vec![iv_ty];
        arg_types.extend(init.iter().map(|v| self.ty(*v).clone()));
        let body_b = self.f.new_block(&arg_types);
        let args = self.f.blocks[body_b].args.clone();
        let outer = self.block;
        self.block = body_b;
        let mut it = args[1..].iter().copied();
        for n in &carried {
            let v = s0[n].rebuild(&mut it);
            self.fr.scope.insert(n.clone(), v);
        }
        let iv = self.user_iv(args[0], lb, ub, negative);
        self.fr.scope.insert(target.to_string(), Val::T(iv));
        self.fr.scope.insert(CONT.into(), Val::C(ConstValue::Bool(false)));
        self.fr.scope.remove(BRK);
        self.fr.loops += 1;
        let res = self.scope_block(ScopeBlock::LoopBody, |l| l.stmts(body));
        self.fr.loops -= 1;
        let res = res.and_then(|_| self.check_loop_vars(&s0, &carried, r));
        if let Err(e) = res {
            self.block = outer;
            self.fr.scope = s0;
            return Err(e);
        }
        let mut next = vec![];
        for n in &carried {
            self.fr.scope[n].flatten(&mut next);
        }
        let loc = self.cur_loc();
        let y = self.f.new_op(OpKind::Yield, &next, &[], loc);
        self.f.append_op(body_b, y);
        self.block = outer;
        let mut operands = vec![lb, ub, st];
        operands.extend(&init);
        let types: Vec<Type> = init.iter().map(|v| self.ty(*v).clone()).collect();
        let op = self.f.new_op(OpKind::For, &operands, &types, loc);
        if rg.warp_specialize {
            self.f.ops[op].attrs.set(trident_ir::discardable::WARP_SPECIALIZE, trident_ir::Attr::Bool(true));
        }
        self.f.add_region(op, body_b);
        self.f.append_op(outer, op);
        self.fr.scope = s0;
        let results = self.f.ops[op].results.to_vec();
        let mut it = results.into_iter();
        for n in &carried {
            let v = self.fr.scope[n].rebuild(&mut it);
            self.fr.scope.insert(n.clone(), v);
        }
        Ok(())
    }

    /// Compiles `body` once into a throw-away block to learn the type of what it returns.
    fn probe_retval(&mut self, target: Option<(&str, Value)>, body: &[Stmt]) -> R<Option<Val>> {
        let s0 = self.fr.scope.clone();
        let outer = self.block;
        self.block = self.f.new_block(&[]);
        if let Some((t, v)) = target {
            self.fr.scope.insert(t.to_string(), Val::T(v));
        }
        self.fr.scope.insert(BRK.into(), Val::C(ConstValue::Bool(false)));
        self.fr.scope.insert(CONT.into(), Val::C(ConstValue::Bool(false)));
        self.fr.loops += 1;
        let r = self.scope_block(ScopeBlock::LoopBody, |l| l.stmts(body));
        self.fr.loops -= 1;
        let rv = self.fr.scope.get(RETVAL).cloned();
        self.block = outer;
        self.fr.scope = s0;
        r?;
        Ok(rv)
    }

    /// The variables a `while` op carries: assigned user variables plus the exit bookkeeping.
    fn while_state(
        &mut self,
        body: &[Stmt],
        skip: &[String],
        brk: bool,
        ret: bool,
        retval: bool,
        probe_iv: Option<(&str, Value)>,
    ) -> R<Vec<String>> {
        let mut carried = self.carried(body, skip);
        if brk {
            self.fr.scope.insert(BRK.into(), Val::C(ConstValue::Bool(false)));
            carried.push(BRK.into());
        }
        if ret {
            carried.push(RET.into());
            if retval && !self.fr.is_kernel {
                if !self.fr.scope.contains_key(RETVAL) {
                    if let Some(t) = self.probe_retval(probe_iv, body)? {
                        let z = self.filler(&t)?;
                        self.fr.scope.insert(RETVAL.into(), z);
                    }
                }
                if self.fr.scope.contains_key(RETVAL) {
                    carried.push(RETVAL.into());
                }
            }
        }
        // Carried bookkeeping values must be IR values.
        for n in carried.clone() {
            if n.starts_with('%') {
                let v = self.fr.scope[&n].clone();
                let t = self.materialize(&v, TextRange::default())?;
                self.fr.scope.insert(n, t);
            }
        }
        Ok(carried)
    }

    fn materialize(&mut self, v: &Val, r: TextRange) -> R<Val> {
        Ok(match v {
            Val::C(c) if c.is_number() => Val::T(self.tensor_of(v, r)?),
            Val::Tuple(t) => Val::Tuple(t.iter().map(|x| self.materialize(x, r)).collect::<R<_>>()?),
            Val::BlockPtr(b) => {
                let parts = b.parts().into_iter().map(|x| self.materialize(x, r)).collect::<R<_>>()?;
                Val::BlockPtr(Box::new(b.with_parts(parts)))
            }
            other => other.clone(),
        })
    }

    /// Converts the body's end value of a carried variable to the loop's IR values, checking types.
    fn carried_end(&mut self, name: &str, init: &Val, end: &Val, out: &mut Vec<Value>, r: TextRange) -> R<()> {
        let end = if name.starts_with('%') { self.materialize(end, r)? } else { end.clone() };
        if let Some(msg) = self.type_change(init, &end) {
            let shown = if name.starts_with('%') {
                "the return value".to_string()
            } else {
                format!("loop-carried variable `{name}`")
            };
            return Err(self.err(r, format!("{shown} {msg}; make sure its type stays the same")));
        }
        end.flatten(out);
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn for_as_while(
        &mut self,
        target: &str,
        lb: Value,
        ub: Value,
        st: Value,
        negative: bool,
        body: &[Stmt],
        ret: bool,
        retval: bool,
        r: TextRange,
    ) -> R<()> {
        let s_before = self.fr.scope.clone();
        let outer_brk = self.fr.scope.get(BRK).cloned();
        let probe_iv = self.user_iv(lb, lb, ub, negative);
        let carried =
            self.while_state(body, &[target.to_string()], has_break(body), ret, retval, Some((target, probe_iv)))?;
        let target = target.to_string();
        self.while_loop(
            &carried,
            vec![lb],
            &mut |l: &mut Self, extra: &[Value]| {
                let ty = l.ty(extra[0]).with_elem(DType::I1);
                Ok(l.emit1(OpKind::Cmp(CmpPred::Lt), &[extra[0], ub], ty))
            },
            &mut |l: &mut Self, extra: &[Value]| {
                let iv = l.user_iv(extra[0], lb, ub, negative);
                l.fr.scope.insert(target.clone(), Val::T(iv));
                l.stmts(body)?;
                let ty = l.ty(extra[0]).clone();
                Ok(vec![l.emit1(OpKind::Binary(BinaryOp::Add), &[extra[0], st], ty)])
            },
            r,
        )?;
        if let Some(b) = outer_brk {
            self.fr.scope.insert(BRK.into(), b);
        }
        // The loop variable is not visible after the loop (as in Triton).
        match s_before.get(&target) {
            Some(v) => {
                self.fr.scope.insert(target, v.clone());
            }
            None => {
                self.fr.scope.remove(&target);
            }
        }
        Ok(())
    }

    pub(crate) fn while_stmt(&mut self, w: &ast::StmtWhile) -> R<()> {
        let r = TextRange::new(w.range.start(), w.test.range().end());
        if !w.orelse.is_empty() {
            return Err(self.err(r, "`else` on a `while` loop is not supported"));
        }
        let (ret, retval) = has_return(&w.body);
        let outer_brk = self.fr.scope.get(BRK).cloned();
        let carried = self.while_state(&w.body, &[], has_break(&w.body), ret, retval, None)?;
        let test = &*w.test;
        let res = self.while_loop(
            &carried,
            vec![],
            &mut |l: &mut Self, _| {
                let c = l.expr(test)?;
                match c {
                    Val::T(v) => l.cond_i1(v, test.range()),
                    other => match other.as_const().and_then(|c| c.truthy()) {
                        Some(b) => Ok(l.const_i1(b)),
                        None => Err(l.err(
                            test.range(),
                            format!("`while` needs a boolean condition, not {}", other.kind_name()),
                        )),
                    },
                }
            },
            &mut |l: &mut Self, _| {
                l.stmts(&w.body)?;
                Ok(vec![])
            },
            r,
        );
        if let Some(b) = outer_brk {
            self.fr.scope.insert(BRK.into(), b);
        }
        res
    }

    /// Builds a `while` op carrying `extra` values (loop machinery) and the named variables.
    fn while_loop(
        &mut self,
        carried: &[String],
        extra: Vec<Value>,
        cond_f: &mut dyn FnMut(&mut Self, &[Value]) -> R<Value>,
        body_f: &mut LoopBody<'_, Self>,
        r: TextRange,
    ) -> R<()> {
        let s0 = self.fr.scope.clone();
        let mut init = extra.clone();
        for n in carried {
            s0[n].flatten(&mut init);
        }
        let types: Vec<Type> = init.iter().map(|v| self.ty(*v).clone()).collect();
        let before = self.f.new_block(&types);
        let after = self.f.new_block(&types);
        let outer = self.block;
        let ne = extra.len();
        let bind = |l: &mut Self, b: Block| -> Vec<Value> {
            let args = l.f.blocks[b].args.clone();
            let mut it = args[ne..].iter().copied();
            for n in carried {
                let v = s0[n].rebuild(&mut it);
                l.fr.scope.insert(n.clone(), v);
            }
            args[..ne].to_vec()
        };

        // Condition region: the user's condition, and not exited.
        self.block = before;
        let ex = bind(self, before);
        let res = (|| -> R<()> {
            let mut c = self.scope_block(ScopeBlock::WhileCondition, |l| cond_f(l, &ex))?;
            for flag in [BRK, RET] {
                if carried.iter().any(|n| n == flag) {
                    if let Val::T(f) = self.fr.scope[flag] {
                        let ty = self.ty(f).clone();
                        let nf = self.emit1(OpKind::Unary(trident_ir::UnaryOp::Not), &[f], ty.clone());
                        c = self.emit1(OpKind::Binary(BinaryOp::And), &[c, nf], ty);
                    }
                }
            }
            let mut ops = vec![c];
            ops.extend(self.f.blocks[before].args.clone());
            self.emit(OpKind::Condition, &ops, &[]);
            Ok(())
        })();
        if let Err(e) = res {
            self.block = outer;
            self.fr.scope = s0;
            return Err(e);
        }

        // Body region.
        self.fr.scope = s0.clone();
        self.block = after;
        let ex = bind(self, after);
        for flag in [BRK, RET] {
            if carried.iter().any(|n| n == flag) {
                self.fr.scope.insert(flag.into(), Val::C(ConstValue::Bool(false)));
            }
        }
        self.fr.scope.insert(CONT.into(), Val::C(ConstValue::Bool(false)));
        if !carried.iter().any(|n| n == BRK) {
            self.fr.scope.remove(BRK);
        }
        self.fr.loops += 1;
        let res = self.scope_block(ScopeBlock::LoopBody, |l| body_f(l, &ex));
        self.fr.loops -= 1;
        let res = res.and_then(|next| {
            let user: Vec<String> = carried.iter().filter(|n| !n.starts_with('%')).cloned().collect();
            self.check_loop_vars(&s0, &user, r)?;
            let mut out = next;
            for n in carried {
                let end = self.fr.scope.get(n).cloned().unwrap_or_else(|| s0[n].clone());
                self.carried_end(n, &s0[n], &end, &mut out, r)?;
            }
            Ok(out)
        });
        let next = match res {
            Ok(v) => v,
            Err(e) => {
                self.block = outer;
                self.fr.scope = s0;
                return Err(e);
            }
        };
        self.emit(OpKind::Yield, &next, &[]);
        self.block = outer;
        let loc = self.cur_loc();
        let op = self.f.new_op(OpKind::While, &init, &types, loc);
        self.f.add_region(op, before);
        self.f.add_region(op, after);
        self.f.append_op(outer, op);
        self.fr.scope = s0.clone();
        let results = self.f.ops[op].results.to_vec();
        let mut it = results[ne..].iter().copied();
        for n in carried {
            let v = s0[n].rebuild(&mut it);
            self.fr.scope.insert(n.clone(), v);
        }
        // `break` ends only this loop.
        if carried.iter().any(|n| n == BRK) {
            self.fr.scope.remove(BRK);
        }
        Ok(())
    }
}
