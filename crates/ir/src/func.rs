//! Functions and modules: the arenas that hold values, ops and blocks.
//!
//! Entities are typed indices into per-function arenas (`cranelift-entity`'s
//! `PrimaryMap`). Regions of structured ops are single blocks, so "region" and
//! "block" are the same entity here. An op removed from its block stays in the
//! arena (its index never dangles) but is no longer part of the function:
//! everything that walks the IR goes through block op lists.

use crate::attr::AttrMap;
use crate::layout::{Layout, LayoutId};
use crate::loc::{Loc, SourceFile};
use crate::ops::OpKind;
use crate::types::Type;
use cranelift_entity::{entity_impl, PrimaryMap};
use smallvec::SmallVec;

/// An SSA value: an op result or a block argument.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Value(u32);
entity_impl!(Value, "v");

/// An operation.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Op(u32);
entity_impl!(Op, "op");

/// A block: arguments and an ordered list of ops. Each region of a structured op is one block.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Block(u32);
entity_impl!(Block, "bb");

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ValueDef {
    /// Result `index` of an op.
    Result(Op, u32),
    /// Argument `index` of a block.
    Arg(Block, u32),
}

#[derive(Clone, Debug)]
pub struct ValueData {
    pub ty: Type,
    pub def: ValueDef,
}

#[derive(Clone, Debug)]
pub struct OpData {
    pub kind: OpKind,
    pub operands: SmallVec<[Value; 4]>,
    pub results: SmallVec<[Value; 2]>,
    pub regions: SmallVec<[Block; 2]>,
    pub loc: Loc,
    /// The block the op sits in; `None` while detached.
    pub parent: Option<Block>,
    /// Discardable attributes recorded by passes (see [`AttrMap`] and
    /// [`crate::ops::discardable`]), e.g. a GPU kernel's shared-memory offsets. Cloning an
    /// op copies them; passes that rewrite an op into new ones decide what to carry over.
    pub attrs: AttrMap,
}

#[derive(Clone, Debug, Default)]
pub struct BlockData {
    pub args: Vec<Value>,
    pub ops: Vec<Op>,
    /// The op whose region this block is; `None` for a function body.
    pub parent: Option<Op>,
}

/// Facts about a kernel parameter known at specialization time (Triton's `tt.divisibility`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParamAttrs {
    /// The integer value, or the pointer's address in bytes, is a multiple of this.
    pub divisibility: Option<u32>,
}

#[derive(Clone, Debug)]
pub struct Param {
    /// Source name of the parameter (used to bind launch arguments by name).
    pub name: String,
    /// The body block argument holding it.
    pub value: Value,
    pub attrs: ParamAttrs,
}

#[derive(Clone, Debug)]
pub struct Function {
    pub name: String,
    /// A launchable kernel (as opposed to a helper that will be inlined).
    pub kernel: bool,
    pub params: Vec<Param>,
    pub result_types: Vec<Type>,
    pub body: Block,
    pub loc: Loc,
    pub values: PrimaryMap<Value, ValueData>,
    pub ops: PrimaryMap<Op, OpData>,
    pub blocks: PrimaryMap<Block, BlockData>,
    /// Interned layouts referred to by GPU-IR tensor types (empty in tile IR).
    pub layouts: PrimaryMap<LayoutId, Layout>,
    /// Discardable attributes of the function (see [`AttrMap`] and
    /// [`crate::ops::discardable`]), e.g. a GPU kernel's total shared memory.
    pub attrs: AttrMap,
}

/// A translation unit: functions (kernels and helpers) and the source files locations refer to.
#[derive(Clone, Debug, Default)]
pub struct Module {
    pub funcs: Vec<Function>,
    pub files: Vec<SourceFile>,
}

impl Module {
    pub fn func(&self, name: &str) -> Option<&Function> {
        self.funcs.iter().find(|f| f.name == name)
    }

    pub fn func_mut(&mut self, name: &str) -> Option<&mut Function> {
        self.funcs.iter_mut().find(|f| f.name == name)
    }
}

impl Function {
    /// A function with a body block whose arguments are the parameters.
    pub fn new(name: &str, params: &[(&str, Type)], result_types: Vec<Type>, kernel: bool) -> Function {
        let mut f = Function {
            name: name.to_string(),
            kernel,
            params: vec![],
            result_types,
            body: Block::from_u32(0),
            loc: Loc::UNKNOWN,
            values: PrimaryMap::new(),
            ops: PrimaryMap::new(),
            blocks: PrimaryMap::new(),
            layouts: PrimaryMap::new(),
            attrs: AttrMap::default(),
        };
        let types: Vec<Type> = params.iter().map(|(_, t)| t.clone()).collect();
        f.body = f.new_block(&types);
        f.params = params
            .iter()
            .enumerate()
            .map(|(i, (n, _))| Param {
                name: n.to_string(),
                value: f.blocks[f.body].args[i],
                attrs: ParamAttrs::default(),
            })
            .collect();
        f
    }

    /// A detached block with arguments of the given types.
    pub fn new_block(&mut self, arg_types: &[Type]) -> Block {
        let b = self.blocks.push(BlockData::default());
        for (i, t) in arg_types.iter().enumerate() {
            let v = self.values.push(ValueData { ty: t.clone(), def: ValueDef::Arg(b, i as u32) });
            self.blocks[b].args.push(v);
        }
        b
    }

    /// Adds an argument to a block.
    pub fn add_block_arg(&mut self, b: Block, ty: Type) -> Value {
        let i = self.blocks[b].args.len() as u32;
        let v = self.values.push(ValueData { ty, def: ValueDef::Arg(b, i) });
        self.blocks[b].args.push(v);
        v
    }

    /// Creates a detached op with fresh result values of the given types.
    pub fn new_op(&mut self, kind: OpKind, operands: &[Value], result_types: &[Type], loc: Loc) -> Op {
        let op = self.ops.push(OpData {
            kind,
            operands: operands.iter().copied().collect(),
            results: SmallVec::new(),
            regions: SmallVec::new(),
            loc,
            parent: None,
            attrs: AttrMap::default(),
        });
        for (i, t) in result_types.iter().enumerate() {
            let v = self.values.push(ValueData { ty: t.clone(), def: ValueDef::Result(op, i as u32) });
            self.ops[op].results.push(v);
        }
        op
    }

    /// Attaches `region` (a detached block) as the next region of `op`.
    pub fn add_region(&mut self, op: Op, region: Block) {
        debug_assert!(self.blocks[region].parent.is_none());
        self.blocks[region].parent = Some(op);
        self.ops[op].regions.push(region);
    }

    pub fn append_op(&mut self, block: Block, op: Op) {
        debug_assert!(self.ops[op].parent.is_none(), "op already attached");
        self.ops[op].parent = Some(block);
        self.blocks[block].ops.push(op);
    }

    /// Inserts `op` right before `before` in the same block.
    pub fn insert_op_before(&mut self, before: Op, op: Op) {
        let block = self.ops[before].parent.expect("insert before a detached op");
        let pos = self.position(before);
        self.ops[op].parent = Some(block);
        self.blocks[block].ops.insert(pos, op);
    }

    /// Inserts `op` right after `after` in the same block.
    pub fn insert_op_after(&mut self, after: Op, op: Op) {
        let block = self.ops[after].parent.expect("insert after a detached op");
        let pos = self.position(after);
        self.ops[op].parent = Some(block);
        self.blocks[block].ops.insert(pos + 1, op);
    }

    /// Index of `op` in its block.
    pub fn position(&self, op: Op) -> usize {
        let block = self.ops[op].parent.expect("detached op has no position");
        self.blocks[block].ops.iter().position(|&o| o == op).expect("op missing from its parent block")
    }

    /// Detaches `op` from its block. Its results must have no remaining uses
    /// (or the caller is about to re-attach it).
    pub fn detach_op(&mut self, op: Op) {
        if let Some(block) = self.ops[op].parent.take() {
            self.blocks[block].ops.retain(|&o| o != op);
        }
    }

    pub fn ty(&self, v: Value) -> &Type {
        &self.values[v].ty
    }

    pub fn result(&self, op: Op, i: usize) -> Value {
        self.ops[op].results[i]
    }

    /// The op defining `v`, if it is an op result.
    pub fn def_op(&self, v: Value) -> Option<Op> {
        match self.values[v].def {
            ValueDef::Result(op, _) => Some(op),
            ValueDef::Arg(..) => None,
        }
    }

    pub fn kind(&self, op: Op) -> &OpKind {
        &self.ops[op].kind
    }

    /// The op whose region contains `op`, if any.
    pub fn parent_op(&self, op: Op) -> Option<Op> {
        self.ops[op].parent.and_then(|b| self.blocks[b].parent)
    }

    /// The `warp_specialize` whose region holds `op` (at any depth) and that region's index:
    /// 0 for the consumers' code, 1 for the producer's.
    pub fn warp_role(&self, op: Op) -> Option<(Op, usize)> {
        let mut b = self.ops[op].parent?;
        loop {
            let p = self.blocks[b].parent?;
            if matches!(self.ops[p].kind, OpKind::WarpSpecialize { .. }) {
                return self.ops[p].regions.iter().position(|&r| r == b).map(|i| (p, i));
            }
            b = self.ops[p].parent?;
        }
    }

    /// Visits every op in `block` and nested regions, parents before children, in order.
    pub fn walk_block(&self, block: Block, f: &mut dyn FnMut(Op)) {
        for &op in &self.blocks[block].ops {
            f(op);
            for &r in &self.ops[op].regions {
                self.walk_block(r, f);
            }
        }
    }

    /// Every attached op of the function, in pre-order.
    pub fn all_ops(&self) -> Vec<Op> {
        let mut v = Vec::new();
        self.walk_block(self.body, &mut |op| v.push(op));
        v
    }

    /// Replaces every use of `old` in attached ops by `new`.
    pub fn replace_all_uses(&mut self, old: Value, new: Value) {
        for op in self.all_ops() {
            for o in self.ops[op].operands.iter_mut() {
                if *o == old {
                    *o = new;
                }
            }
        }
    }

    /// Number of uses of each value among attached ops (indexed by value).
    pub fn use_counts(&self) -> cranelift_entity::SecondaryMap<Value, u32> {
        let mut counts = cranelift_entity::SecondaryMap::new();
        for op in self.all_ops() {
            for &o in &self.ops[op].operands {
                counts[o] += 1;
            }
        }
        counts
    }

    /// Interns a layout: returns the id of an equal layout already in the table, or adds it.
    pub fn intern_layout(&mut self, l: Layout) -> LayoutId {
        if let Some((id, _)) = self.layouts.iter().find(|(_, x)| **x == l) {
            return id;
        }
        self.layouts.push(l)
    }

    /// The terminator of a block, if its last op is one.
    pub fn terminator(&self, block: Block) -> Option<Op> {
        self.blocks[block].ops.last().copied().filter(|&op| self.ops[op].kind.is_terminator())
    }
}

pub use cranelift_entity::{EntityRef, SecondaryMap};
