//! The inliner: replaces every `call` by the body of its callee, then drops the
//! functions that are not kernels (they have no callers left).
//!
//! The front end emits each `@triton.jit` helper as a `func` and calls to it as
//! `call`; Triton's semantics are those of full inlining, and the backends know
//! nothing of calls. Callees are inlined bottom-up (a callee's own calls first), so
//! every function is inlined once per call site. Recursion cannot be inlined and is
//! reported, as are calls to functions that do not exist. Inlined ops keep their
//! locations in the helper's source.

use crate::pass::Pass;
use std::collections::HashMap;
use trident_ir::edit::ValueMap;
use trident_ir::{Diagnostic, Function, Loc, Module, Op, OpKind};

/// Inline all calls (pass name `inline`).
pub struct Inline;

impl Pass for Inline {
    fn name(&self) -> &'static str {
        "inline"
    }

    fn run_on_module(&self, m: &mut Module) -> Result<bool, Diagnostic> {
        let index: HashMap<String, usize> = m.funcs.iter().enumerate().map(|(i, f)| (f.name.clone(), i)).collect();
        // Call graph edges, with the call's location for errors.
        let mut callees: Vec<Vec<(usize, Loc)>> = vec![];
        for f in &m.funcs {
            let mut out = vec![];
            for op in f.all_ops() {
                if let OpKind::Call { callee } = &f.ops[op].kind {
                    let Some(&j) = index.get(callee) else {
                        return Err(Diagnostic::error(format!(
                            "call to unknown function `@{callee}` in `@{}`",
                            f.name
                        ))
                        .at(f.ops[op].loc, 1));
                    };
                    out.push((j, f.ops[op].loc));
                }
            }
            callees.push(out);
        }
        let order = post_order(m, &callees)?;
        let mut changed = false;
        for i in order {
            while let Some(call) = first_call(&m.funcs[i]) {
                let OpKind::Call { callee } = &m.funcs[i].ops[call].kind else { unreachable!() };
                let j = index[callee.as_str()];
                let g = m.funcs[j].clone();
                inline_call(&mut m.funcs[i], call, &g);
                changed = true;
            }
        }
        let before = m.funcs.len();
        m.funcs.retain(|f| f.kernel);
        Ok(changed || m.funcs.len() != before)
    }
}

fn first_call(f: &Function) -> Option<Op> {
    f.all_ops().into_iter().find(|&op| matches!(f.ops[op].kind, OpKind::Call { .. }))
}

/// Functions ordered callees first; an error naming the cycle if there is recursion.
fn post_order(m: &Module, callees: &[Vec<(usize, Loc)>]) -> Result<Vec<usize>, Diagnostic> {
    #[derive(Copy, Clone, PartialEq)]
    enum Mark {
        New,
        Active,
        Done,
    }
    let n = m.funcs.len();
    let mut mark = vec![Mark::New; n];
    let mut order = vec![];
    for root in 0..n {
        if mark[root] != Mark::New {
            continue;
        }
        // Iterative DFS: (function, next edge to look at); `path` is the active chain.
        let mut stack = vec![(root, 0usize)];
        mark[root] = Mark::Active;
        while let Some(&mut (u, ref mut next)) = stack.last_mut() {
            if let Some(&(v, loc)) = callees[u].get(*next) {
                *next += 1;
                match mark[v] {
                    Mark::New => {
                        mark[v] = Mark::Active;
                        stack.push((v, 0));
                    }
                    Mark::Active => {
                        let start = stack.iter().position(|&(w, _)| w == v).unwrap_or(0);
                        let mut chain: Vec<String> =
                            stack[start..].iter().map(|&(w, _)| format!("@{}", m.funcs[w].name)).collect();
                        chain.push(format!("@{}", m.funcs[v].name));
                        return Err(Diagnostic::error(format!(
                            "recursive calls cannot be inlined: {}",
                            chain.join(" -> ")
                        ))
                        .at(loc, 1));
                    }
                    Mark::Done => {}
                }
            } else {
                mark[u] = Mark::Done;
                order.push(u);
                stack.pop();
            }
        }
    }
    Ok(order)
}

/// Replaces `call` in `f` by a copy of `g`'s body.
fn inline_call(f: &mut Function, call: Op, g: &Function) {
    let args = f.ops[call].operands.to_vec();
    let mut map = ValueMap::new();
    for (p, &a) in g.params.iter().zip(&args) {
        map.insert(p.value, a);
    }
    let mut returned = vec![];
    for &op in &g.blocks[g.body].ops {
        if matches!(g.ops[op].kind, OpKind::Return) {
            returned = g.ops[op].operands.iter().map(|v| map.get(v).copied().unwrap_or(*v)).collect();
            break;
        }
        let c = f.import_op(g, op, &mut map);
        f.insert_op_before(call, c);
    }
    f.replace_op(call, &returned);
}
