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
use std::collections::{HashMap, HashSet};
use trident_ir::edit::ValueMap;
use trident_ir::{Block, Diagnostic, Function, Loc, Module, Op, OpKind, Value};

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
            // Callees come first in `order`, so their bodies hold no calls any more and one
            // pass over this function's calls is enough.
            let calls: Vec<(Op, usize)> = m.funcs[i]
                .all_ops()
                .into_iter()
                .filter_map(|op| match &m.funcs[i].ops[op].kind {
                    OpKind::Call { callee } => Some((op, index[callee.as_str()])),
                    _ => None,
                })
                .collect();
            let mut replaced = ValueMap::new();
            // Inlined ops per call, put into the block lists in one rebuild per block.
            let mut bodies: HashMap<Op, Vec<Op>> = HashMap::new();
            let mut callee_copies: HashMap<usize, Function> = HashMap::new();
            for (call, j) in calls {
                let g = callee_copies.entry(j).or_insert_with(|| m.funcs[j].clone());
                let ops = inline_call(&mut m.funcs[i], call, g, &mut replaced);
                bodies.insert(call, ops);
                changed = true;
            }
            splice_bodies(&mut m.funcs[i], &mut bodies);
            m.funcs[i].replace_uses(&replaced);
        }
        let before = m.funcs.len();
        m.funcs.retain(|f| f.kernel);
        Ok(changed || m.funcs.len() != before)
    }
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

/// Copies `g`'s body for `call` (detached ops, returned in order); the call's results go
/// into `replaced` (applied to the whole function once all calls are done).
fn inline_call(f: &mut Function, call: Op, g: &Function, replaced: &mut ValueMap) -> Vec<Op> {
    // Arguments may be results of calls inlined just before.
    let args: Vec<Value> = f.ops[call].operands.iter().map(|&a| resolve(replaced, a)).collect();
    let mut map = ValueMap::new();
    for (p, &a) in g.params.iter().zip(&args) {
        map.insert(p.value, a);
    }
    let mut returned = vec![];
    let mut ops = vec![];
    for &op in &g.blocks[g.body].ops {
        if matches!(g.ops[op].kind, OpKind::Return) {
            returned = g.ops[op].operands.iter().map(|v| map.get(v).copied().unwrap_or(*v)).collect();
            break;
        }
        ops.push(f.import_op(g, op, &mut map));
    }
    for (&r, &v) in f.ops[call].results.iter().zip(&returned) {
        replaced.insert(r, v);
    }
    ops
}

/// Replaces each call in its block list by the ops inlined for it.
fn splice_bodies(f: &mut Function, bodies: &mut HashMap<Op, Vec<Op>>) {
    let blocks: HashSet<Block> = bodies.keys().filter_map(|&c| f.ops[c].parent).collect();
    for b in blocks {
        let old = std::mem::take(&mut f.blocks[b].ops);
        let mut ops = Vec::with_capacity(old.len());
        for op in old {
            match bodies.remove(&op) {
                Some(inlined) => {
                    for &o in &inlined {
                        f.ops[o].parent = Some(b);
                    }
                    ops.extend(inlined);
                    f.ops[op].parent = None;
                }
                None => ops.push(op),
            }
        }
        f.blocks[b].ops = ops;
    }
}

fn resolve(map: &ValueMap, mut v: Value) -> Value {
    while let Some(&w) = map.get(&v) {
        v = w;
    }
    v
}
