//! Dead code elimination by liveness.
//!
//! An op is live when it has an effect (stores, atomics, prints, asserts, calls,
//! volatile loads, `return`), when a live op uses one of its results, or when a live
//! op sits in one of its regions. Structured ops are handled slot by slot: result i of
//! a `for` is live only if used; what keeps a loop-carried slot alive is a use of the
//! result or of the body argument, and a live slot makes its init and yielded value
//! live. `if` and `while` are handled the same way. The sweep then
//!
//! * deletes every op that is not live — unused pure ops and loads, and whole
//!   `for`/`if`/`while` ops with no effects inside and no used results;
//! * drops dead slots of live structured ops: an unused `for` result whose body
//!   argument is unused (or only feeds its own yield), together with its init, block
//!   argument and yielded value; likewise for `if` results and both kinds of `while` slots.
//!
//! A `while` with no effects and unused results is removed even though it might not
//! terminate: a kernel's only observable behaviour is its effects.

use crate::pass::Pass;
use trident_ir::func::SecondaryMap;
use trident_ir::{Block, Diagnostic, Effect, Function, Op, OpKind, Value, ValueDef};

/// Dead code elimination (pass name `dce`).
pub struct Dce;

impl Pass for Dce {
    fn name(&self) -> &'static str {
        "dce"
    }

    fn run_on_function(&self, f: &mut Function) -> Result<bool, Diagnostic> {
        let mut lv = Liveness { ops: SecondaryMap::new(), vals: SecondaryMap::new(), work: vec![] };
        for op in f.all_ops() {
            let k = &f.ops[op].kind;
            let structural = matches!(k, OpKind::For | OpKind::If | OpKind::While | OpKind::Yield | OpKind::Condition);
            if k.effect() == Effect::Write && !structural {
                lv.op(f, op);
            }
        }
        while let Some(v) = lv.work.pop() {
            lv.value(f, v);
        }
        let body = f.body;
        Ok(sweep(f, body, &lv))
    }
}

struct Liveness {
    ops: SecondaryMap<Op, bool>,
    vals: SecondaryMap<Value, bool>,
    work: Vec<Value>,
}

/// Operand `i` of the terminator of `block`.
fn term_operand(f: &Function, block: Block, i: usize) -> Option<Value> {
    f.terminator(block).and_then(|t| f.ops[t].operands.get(i).copied())
}

impl Liveness {
    fn mark(&mut self, v: Option<Value>) {
        if let Some(v) = v {
            if !self.vals[v] {
                self.vals[v] = true;
                self.work.push(v);
            }
        }
    }

    /// `op` must run.
    fn op(&mut self, f: &Function, op: Op) {
        if self.ops[op] {
            return;
        }
        self.ops[op] = true;
        let d = &f.ops[op];
        match d.kind {
            OpKind::For => {
                for &v in &d.operands[..3] {
                    self.mark(Some(v));
                }
            }
            OpKind::If => self.mark(Some(d.operands[0])),
            OpKind::While => self.mark(term_operand(f, d.regions[0], 0)),
            // Slots of structured ops are marked through their results and arguments.
            OpKind::Yield | OpKind::Condition => {}
            _ => {
                for &v in &d.operands {
                    self.mark(Some(v));
                }
                // Reductions and scans: the combine region computes the results.
                for &r in &d.regions {
                    if let Some(t) = f.terminator(r) {
                        self.ops[t] = true;
                        for &v in &f.ops[t].operands {
                            self.mark(Some(v));
                        }
                    }
                }
            }
        }
        if let Some(p) = f.parent_op(op) {
            self.op(f, p);
        }
    }

    fn value(&mut self, f: &Function, v: Value) {
        match f.values[v].def {
            ValueDef::Result(op, i) => {
                let i = i as usize;
                let d = &f.ops[op];
                match d.kind {
                    OpKind::For => {
                        self.mark(d.operands.get(3 + i).copied());
                        self.mark(term_operand(f, d.regions[0], i));
                    }
                    OpKind::If => {
                        for &r in &d.regions {
                            self.mark(term_operand(f, r, i));
                        }
                    }
                    OpKind::While => self.mark(term_operand(f, d.regions[0], 1 + i)),
                    _ => {}
                }
                self.op(f, op);
            }
            ValueDef::Arg(b, i) => {
                let i = i as usize;
                let Some(p) = f.blocks[b].parent else { return };
                let d = &f.ops[p];
                match d.kind {
                    OpKind::For if i > 0 => {
                        self.mark(d.operands.get(3 + i - 1).copied());
                        self.mark(term_operand(f, b, i - 1));
                    }
                    OpKind::While if b == d.regions[0] => {
                        self.mark(d.operands.get(i).copied());
                        self.mark(term_operand(f, d.regions[1], i));
                    }
                    OpKind::While => self.mark(term_operand(f, d.regions[0], 1 + i)),
                    _ => {}
                }
                self.op(f, p);
            }
        }
    }
}

fn remove_term_operand(f: &mut Function, block: Block, i: usize) {
    if let Some(t) = f.terminator(block) {
        f.remove_operand(t, i);
    }
}

fn sweep(f: &mut Function, b: Block, lv: &Liveness) -> bool {
    let mut changed = false;
    let mut dead = vec![];
    for op in f.blocks[b].ops.clone() {
        let kind = f.ops[op].kind.clone();
        if kind.is_terminator() {
            continue;
        }
        if !lv.ops[op] {
            dead.push(op);
            changed = true;
            continue;
        }
        let regions = f.ops[op].regions.to_vec();
        let nres = f.ops[op].results.len();
        match kind {
            OpKind::For => {
                let body = regions[0];
                for i in (0..nres).rev() {
                    let arg = f.blocks[body].args[i + 1];
                    if !lv.vals[f.ops[op].results[i]] && !lv.vals[arg] {
                        f.remove_result(op, i);
                        f.remove_operand(op, 3 + i);
                        f.remove_block_arg(body, i + 1);
                        remove_term_operand(f, body, i);
                        changed = true;
                    }
                }
            }
            OpKind::If => {
                for i in (0..nres).rev() {
                    if !lv.vals[f.ops[op].results[i]] {
                        f.remove_result(op, i);
                        for &r in &regions {
                            remove_term_operand(f, r, i);
                        }
                        changed = true;
                    }
                }
            }
            OpKind::While => {
                let (before, after) = (regions[0], regions[1]);
                for i in (0..f.ops[op].operands.len()).rev() {
                    if !lv.vals[f.blocks[before].args[i]] {
                        f.remove_operand(op, i);
                        f.remove_block_arg(before, i);
                        remove_term_operand(f, after, i);
                        changed = true;
                    }
                }
                for j in (0..nres).rev() {
                    if !lv.vals[f.ops[op].results[j]] && !lv.vals[f.blocks[after].args[j]] {
                        f.remove_result(op, j);
                        f.remove_block_arg(after, j);
                        remove_term_operand(f, before, 1 + j);
                        changed = true;
                    }
                }
            }
            _ => {}
        }
        for r in regions {
            changed |= sweep(f, r, lv);
        }
    }
    f.erase_ops(&dead);
    changed
}
