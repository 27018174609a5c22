//! Editing helpers on [`Function`] used by passes: erasing and replacing ops,
//! cloning ops (within a function or from another one), inlining a region's
//! block, and removing operands, results and block arguments while keeping
//! every value's [`ValueDef`] consistent.

use crate::func::{Block, Function, Op, Value, ValueDef};
use crate::types::Type;
use std::collections::{HashMap, HashSet};

/// Old value → new value, for cloning and bulk replacement.
pub type ValueMap = HashMap<Value, Value>;

impl Function {
    /// Removes `op` from its block. Its results must be unused (or about to be replaced).
    /// The op stays in the arena; nothing refers to it any more.
    pub fn erase_op(&mut self, op: Op) {
        self.detach_op(op);
    }

    /// Removes many ops from their blocks at once: one pass per block touched, where
    /// erasing them one by one would scan the block for each.
    pub fn erase_ops(&mut self, ops: &[Op]) {
        let mut by_block: HashMap<Block, HashSet<Op>> = HashMap::new();
        for &op in ops {
            if let Some(b) = self.ops[op].parent.take() {
                by_block.entry(b).or_default().insert(op);
            }
        }
        for (b, gone) in by_block {
            self.blocks[b].ops.retain(|o| !gone.contains(o));
        }
    }

    /// Inserts `ops` (detached, in order) right before `before`, in one splice.
    pub fn insert_ops_before(&mut self, before: Op, ops: &[Op]) {
        let block = self.ops[before].parent.expect("insert before a detached op");
        let pos = self.position(before);
        for &op in ops {
            self.ops[op].parent = Some(block);
        }
        self.blocks[block].ops.splice(pos..pos, ops.iter().copied());
    }

    /// Replaces every use of each result of `op` by the matching value of `with`, then erases `op`.
    pub fn replace_op(&mut self, op: Op, with: &[Value]) {
        debug_assert_eq!(self.ops[op].results.len(), with.len());
        let map: ValueMap = self.ops[op].results.iter().copied().zip(with.iter().copied()).collect();
        self.replace_uses(&map);
        self.erase_op(op);
    }

    /// Replaces uses of the map's keys by its values in every attached op, in one walk.
    /// Chains (a → b, b → c) are followed.
    pub fn replace_uses(&mut self, map: &ValueMap) {
        if map.is_empty() {
            return;
        }
        let body = self.body;
        self.replace_uses_in_block(body, map);
    }

    /// [`Function::replace_uses`] restricted to the ops of `block` and its nested regions.
    pub fn replace_uses_in_block(&mut self, block: Block, map: &ValueMap) {
        let mut stack = vec![block];
        while let Some(b) = stack.pop() {
            for i in 0..self.blocks[b].ops.len() {
                let op = self.blocks[b].ops[i];
                for o in self.ops[op].operands.iter_mut() {
                    *o = resolve(map, *o);
                }
                stack.extend(self.ops[op].regions.iter().copied());
            }
        }
    }

    /// The block that defines `v` (the op's block for a result, the block for an argument);
    /// `None` for a result of a detached op.
    pub fn defining_block(&self, v: Value) -> Option<Block> {
        match self.values[v].def {
            ValueDef::Arg(b, _) => Some(b),
            ValueDef::Result(op, _) => self.ops[op].parent,
        }
    }

    /// Whether `op` is part of the function: in a block that is the body or, through
    /// the regions of attached ops, nested in it. Ops inside an erased op's regions are not.
    pub fn is_attached(&self, op: Op) -> bool {
        let mut op = op;
        for _ in 0..=self.blocks.len() {
            let Some(b) = self.ops[op].parent else { return false };
            if b == self.body {
                return true;
            }
            match self.blocks[b].parent {
                Some(p) => op = p,
                None => return false,
            }
        }
        false
    }

    /// Whether `inner` is `outer` or nested (through regions of ops) inside it.
    pub fn block_is_within(&self, inner: Block, outer: Block) -> bool {
        let mut b = inner;
        // Bounded walk: malformed IR could have a cycle of parents.
        for _ in 0..=self.blocks.len() {
            if b == outer {
                return true;
            }
            match self.blocks[b].parent.and_then(|op| self.ops[op].parent) {
                Some(p) => b = p,
                None => return false,
            }
        }
        false
    }

    /// Whether `v` is defined inside `block` or one of its nested regions.
    pub fn is_defined_within(&self, v: Value, block: Block) -> bool {
        self.defining_block(v).is_some_and(|b| self.block_is_within(b, block))
    }

    /// Clones `op` with its regions into a new detached op of this function. Operands found
    /// in `map` are substituted; the clone's results and region arguments are added to `map`.
    pub fn clone_op(&mut self, op: Op, map: &mut ValueMap) -> Op {
        self.clone_op_from(None, op, map)
    }

    /// Clones `op` of another function `src` (with its regions) into this one, as a detached op.
    /// Every value `op` uses from outside itself must be in `map`. Types are copied as they are
    /// (layout ids are not remapped: use on tile IR).
    pub fn import_op(&mut self, src: &Function, op: Op, map: &mut ValueMap) -> Op {
        self.clone_op_from(Some(src), op, map)
    }

    fn clone_op_from(&mut self, src: Option<&Function>, op: Op, map: &mut ValueMap) -> Op {
        let data = src.unwrap_or(self).ops[op].clone();
        // One lookup, never a chain: when importing from another function the map's keys are
        // values of `src` and its targets values of `self`, and the two numberings overlap.
        let operands: Vec<Value> = data.operands.iter().map(|&v| map.get(&v).copied().unwrap_or(v)).collect();
        let types: Vec<Type> = data.results.iter().map(|&r| src.unwrap_or(self).values[r].ty.clone()).collect();
        let new = self.new_op(data.kind.clone(), &operands, &types, data.loc);
        self.ops[new].attrs = data.attrs.clone();
        for &rb in &data.regions {
            let block = src.unwrap_or(self).blocks[rb].clone();
            let arg_types: Vec<Type> = block.args.iter().map(|&a| src.unwrap_or(self).values[a].ty.clone()).collect();
            let nb = self.new_block(&arg_types);
            for (i, &a) in block.args.iter().enumerate() {
                map.insert(a, self.blocks[nb].args[i]);
            }
            for &inner in &block.ops {
                let c = self.clone_op_from(src, inner, map);
                self.append_op(nb, c);
            }
            self.add_region(new, nb);
        }
        for (i, &r) in data.results.iter().enumerate() {
            map.insert(r, self.ops[new].results[i]);
        }
        new
    }

    /// Moves the ops of `block` (a region of some op) in front of `before`, with the block's
    /// arguments replaced by `args`. The block's terminator is dropped; its operands (after the
    /// substitution) are returned, so the caller can replace the owning op's results with them.
    pub fn inline_block_before(&mut self, block: Block, before: Op, args: &[Value]) -> Vec<Value> {
        let map: ValueMap = self.blocks[block].args.iter().copied().zip(args.iter().copied()).collect();
        self.replace_uses_in_block(block, &map);
        let mut ops = std::mem::take(&mut self.blocks[block].ops);
        let mut yielded = vec![];
        if let Some(&last) = ops.last() {
            if self.ops[last].kind.is_terminator() {
                yielded = self.ops[last].operands.iter().map(|&v| resolve(&map, v)).collect();
                self.ops[last].parent = None;
                ops.pop();
            }
        }
        self.insert_ops_before(before, &ops);
        yielded
    }

    /// Removes operand `i` of `op`.
    pub fn remove_operand(&mut self, op: Op, i: usize) {
        self.ops[op].operands.remove(i);
    }

    /// Removes result `i` of `op` (it must be unused); later results are renumbered.
    pub fn remove_result(&mut self, op: Op, i: usize) {
        self.ops[op].results.remove(i);
        for j in i..self.ops[op].results.len() {
            let r = self.ops[op].results[j];
            self.values[r].def = ValueDef::Result(op, j as u32);
        }
    }

    /// Removes argument `i` of `block` (it must be unused); later arguments are renumbered.
    pub fn remove_block_arg(&mut self, block: Block, i: usize) {
        self.blocks[block].args.remove(i);
        for j in i..self.blocks[block].args.len() {
            let a = self.blocks[block].args[j];
            self.values[a].def = ValueDef::Arg(block, j as u32);
        }
    }
}

/// Follows `v` through `map` (bounded, in case of a cycle).
fn resolve(map: &ValueMap, mut v: Value) -> Value {
    for _ in 0..64 {
        match map.get(&v) {
            Some(&w) if w != v => v = w,
            _ => break,
        }
    }
    v
}
