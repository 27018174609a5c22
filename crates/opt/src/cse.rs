//! Common subexpression elimination over pure ops.
//!
//! Walks the function in pre-order keeping a scoped table from (kind, operands,
//! result types) to the results of the first op seen with that key. An op whose key
//! is already in the table is replaced by the earlier results. Entries made inside a
//! region are dropped when the walk leaves it, so a value from an inner region never
//! replaces one outside it (or in a sibling region). Only pure ops without regions are
//! merged: loads may observe stores in between, and ops with effects must all run.
//! Operands of commutative integer ops (and float `add`/`mul`) are sorted in the key,
//! so `a + b` and `b + a` merge.

use crate::pass::Pass;
use std::collections::HashMap;
use trident_ir::edit::ValueMap;
use trident_ir::{BinaryOp, Block, Diagnostic, Effect, Function, OpKind, Type, Value};

/// Common subexpression elimination (pass name `cse`).
pub struct Cse;

impl Pass for Cse {
    fn name(&self) -> &'static str {
        "cse"
    }

    fn run_on_function(&self, f: &mut Function) -> Result<bool, Diagnostic> {
        let mut st = State { table: HashMap::new(), log: vec![], map: ValueMap::new(), changed: false };
        let body = f.body;
        st.block(f, body);
        Ok(st.changed)
    }
}

type Key = (OpKind, Vec<Value>, Vec<Type>);

struct State {
    table: HashMap<Key, Vec<Value>>,
    /// Keys in insertion order, so leaving a region removes its entries.
    log: Vec<Key>,
    /// Results of merged ops → the values replacing them (applied as the walk reaches uses).
    map: ValueMap,
    changed: bool,
}

fn commutative(k: &OpKind, t: &Type) -> bool {
    use BinaryOp::*;
    match k {
        OpKind::Binary(Add | Mul) => true,
        OpKind::Binary(And | Or | Xor | Max | Min) => t.elem().is_int(),
        _ => false,
    }
}

impl State {
    fn block(&mut self, f: &mut Function, b: Block) {
        let scope = self.log.len();
        let ops = f.blocks[b].ops.clone();
        let mut merged = vec![];
        for op in ops {
            // Uses come after definitions in pre-order, so replacements are applied on the way.
            for o in f.ops[op].operands.iter_mut() {
                if let Some(&n) = self.map.get(o) {
                    *o = n;
                }
            }
            for r in f.ops[op].regions.clone() {
                self.block(f, r);
            }
            let d = &f.ops[op];
            if d.kind.effect() != Effect::Pure || !d.regions.is_empty() || d.results.is_empty() {
                continue;
            }
            let mut operands = d.operands.to_vec();
            let types: Vec<Type> = d.results.iter().map(|&r| f.ty(r).clone()).collect();
            if commutative(&d.kind, &types[0]) {
                operands.sort();
            }
            let key = (d.kind.clone(), operands, types);
            match self.table.get(&key) {
                Some(existing) => {
                    for (&r, &e) in f.ops[op].results.iter().zip(existing) {
                        self.map.insert(r, e);
                    }
                    merged.push(op);
                    self.changed = true;
                }
                None => {
                    self.table.insert(key.clone(), d.results.to_vec());
                    self.log.push(key);
                }
            }
        }
        f.erase_ops(&merged);
        for k in self.log.drain(scope..) {
            self.table.remove(&k);
        }
    }
}
