//! What an expression evaluates to while lowering: a compile-time constant, an
//! IR value, a tuple of those, or a name of something callable.

use crate::kernel::{dep_file_index, PRELUDE_FILE_INDEX, USER_FILE_INDEX};
use crate::language::Mod;
use crate::value::ConstValue;
use trident_ir::Value;

/// Which parsed file: the kernel's own, Trident's prelude, or a file the kernel's file imports
/// (`Dep(i)`: entry `i` of the kernel file's dependencies). `index()` is the file's position in
/// the compiled module's source files (and so in every `Loc`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum FileId {
    User,
    Prelude,
    Dep(u32),
}

impl FileId {
    pub(crate) fn index(self) -> u32 {
        match self {
            FileId::User => USER_FILE_INDEX,
            FileId::Prelude => PRELUDE_FILE_INDEX,
            FileId::Dep(i) => dep_file_index(i),
        }
    }
}

/// A `@triton.jit` function: which file, which function of it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct FnRef {
    pub file: FileId,
    pub idx: usize,
}

impl FnRef {
    pub(crate) fn is_prelude(&self) -> bool {
        self.file == FileId::Prelude
    }
}

/// Arguments of `range` / `tl.range` / `tl.static_range`.
#[derive(Clone, Debug)]
pub(crate) struct RangeVal {
    pub start: Box<Val>,
    pub end: Box<Val>,
    pub step: Box<Val>,
    pub is_static: bool,
    /// `tl.range(..., warp_specialize=True)`: the loop carries the `warp_specialize`
    /// attribute (a request the GPU backend honours where it can).
    pub warp_specialize: bool,
}

/// A block pointer (`tl.make_block_ptr`) or a tensor descriptor
/// (`tl.make_tensor_descriptor`): a window of `block` elements into a strided
/// n-d tensor. Lowered like Triton's interpreter treats them: each access
/// becomes a block of element pointers and a bounds mask. Every field holds an
/// IR scalar (`base` a pointer, `shape`/`strides` int64, `offsets` int32), so a
/// block pointer flows through loops, branches and helper calls like a tuple.
#[derive(Clone, Debug)]
pub(crate) struct BlockPtr {
    pub base: Val,
    pub shape: Vec<Val>,
    pub strides: Vec<Val>,
    /// The window's position (block pointers only; a descriptor takes offsets per access).
    pub offsets: Vec<Val>,
    pub block: Vec<u32>,
    pub order: Vec<u32>,
    /// `Some(nan_padding)` for a tensor descriptor (every dimension is bounds-checked on
    /// access; out-of-bounds elements read as 0, or NaN with `padding_option="nan"`).
    pub descriptor: Option<bool>,
}

impl BlockPtr {
    /// The IR-carrying fields in a fixed order: base, shape, strides, offsets.
    pub(crate) fn parts(&self) -> Vec<&Val> {
        std::iter::once(&self.base).chain(&self.shape).chain(&self.strides).chain(&self.offsets).collect()
    }

    /// The same block pointer with its fields replaced (in [`BlockPtr::parts`] order).
    pub(crate) fn with_parts(&self, parts: Vec<Val>) -> BlockPtr {
        let n = self.shape.len();
        let k = self.offsets.len();
        let mut it = parts.into_iter();
        let base = it.next().expect("block pointer base");
        let shape: Vec<Val> = it.by_ref().take(n).collect();
        let strides: Vec<Val> = it.by_ref().take(n).collect();
        let offsets: Vec<Val> = it.by_ref().take(k).collect();
        BlockPtr { base, shape, strides, offsets, ..self.clone() }
    }

    /// Same kind and window shape (what must agree for two values to merge).
    pub(crate) fn same_kind(&self, o: &BlockPtr) -> bool {
        self.block == o.block && self.descriptor == o.descriptor && self.offsets.len() == o.offsets.len()
    }
}

#[derive(Clone, Debug)]
pub(crate) enum Val {
    /// A compile-time constant (never a tuple: tuples are [`Val::Tuple`]).
    C(ConstValue),
    /// An IR value: a scalar (0-d) or a block.
    T(Value),
    Tuple(Vec<Val>),
    Module(Mod),
    /// A function (or class) of a module: `tl.load`, `libdevice.tanh`, `triton.cdiv`, `tl.constexpr`.
    Builtin(Mod, String),
    Jit(FnRef),
    /// A Python module of the kernel's project (`from . import utils`): its names are looked up
    /// in that file's module-level bindings.
    PyModule(FileId),
    /// A Python builtin usable in kernels: `range`, `min`, `max`, `len`, `int`, `float`, `print`, ...
    PyFn(&'static str),
    /// A method bound to its receiver: `x.to`, `x.dtype.is_floating`.
    Method(Box<Val>, String),
    Slice(Box<[Val; 3]>),
    Range(RangeVal),
    BlockPtr(Box<BlockPtr>),
}

impl Val {
    pub(crate) fn none() -> Val {
        Val::C(ConstValue::None)
    }

    pub(crate) fn int(v: i128) -> Val {
        Val::C(ConstValue::Int(v))
    }

    /// Converts a constant to a value, turning constant tuples into [`Val::Tuple`].
    pub(crate) fn from_const(c: ConstValue) -> Val {
        match c {
            ConstValue::Tuple(v) => Val::Tuple(v.into_iter().map(Val::from_const).collect()),
            c => Val::C(c),
        }
    }

    /// The constant this value is, if it is one (tuples of constants included).
    pub(crate) fn as_const(&self) -> Option<ConstValue> {
        match self {
            Val::C(c) => Some(c.clone()),
            Val::Tuple(v) => v.iter().map(Val::as_const).collect::<Option<Vec<_>>>().map(ConstValue::Tuple),
            _ => None,
        }
    }

    pub(crate) fn is_none(&self) -> bool {
        matches!(self, Val::C(ConstValue::None))
    }

    /// Same SSA values / constants (used to see what a branch or loop body changed).
    pub(crate) fn same(&self, o: &Val) -> bool {
        match (self, o) {
            (Val::C(a), Val::C(b)) => {
                a == b || (matches!((a, b), (ConstValue::Float(x), ConstValue::Float(y)) if x.to_bits() == y.to_bits()))
            }
            (Val::T(a), Val::T(b)) => a == b,
            (Val::Tuple(a), Val::Tuple(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same(y)),
            (Val::Module(a), Val::Module(b)) => a == b,
            (Val::Builtin(a, x), Val::Builtin(b, y)) => a == b && x == y,
            (Val::Jit(a), Val::Jit(b)) => a == b,
            (Val::PyFn(a), Val::PyFn(b)) => a == b,
            (Val::BlockPtr(a), Val::BlockPtr(b)) => {
                a.same_kind(b) && a.order == b.order && a.parts().iter().zip(b.parts()).all(|(x, y)| x.same(y))
            }
            _ => false,
        }
    }

    /// Whether the value holds any IR value (so it can be carried through control flow).
    pub(crate) fn has_tensor(&self) -> bool {
        match self {
            Val::T(_) => true,
            Val::Tuple(v) => v.iter().any(Val::has_tensor),
            Val::BlockPtr(_) => true,
            _ => false,
        }
    }

    /// The IR values inside, in order.
    pub(crate) fn flatten(&self, out: &mut Vec<Value>) {
        match self {
            Val::T(v) => out.push(*v),
            Val::Tuple(t) => t.iter().for_each(|x| x.flatten(out)),
            Val::BlockPtr(b) => b.parts().into_iter().for_each(|x| x.flatten(out)),
            _ => {}
        }
    }

    /// Rebuilds a value of this shape with its IR values replaced, in order, from `vals`.
    pub(crate) fn rebuild(&self, vals: &mut impl Iterator<Item = Value>) -> Val {
        match self {
            Val::T(_) => Val::T(vals.next().expect("rebuild: too few values")),
            Val::Tuple(t) => Val::Tuple(t.iter().map(|x| x.rebuild(vals)).collect()),
            Val::BlockPtr(b) => {
                let parts = b.parts().into_iter().map(|x| x.rebuild(vals)).collect();
                Val::BlockPtr(Box::new(b.with_parts(parts)))
            }
            other => other.clone(),
        }
    }

    /// A short description for messages.
    pub(crate) fn kind_name(&self) -> String {
        match self {
            Val::C(c) => format!("constant `{c}`"),
            Val::T(_) => "tensor".into(),
            Val::Tuple(_) => "tuple".into(),
            Val::Module(m) => format!("module `{}`", m.display()),
            Val::Builtin(m, n) => format!("`{}.{n}`", m.display()),
            Val::Jit(_) => "@triton.jit function".into(),
            Val::PyModule(_) => "Python module".into(),
            Val::PyFn(n) => format!("builtin `{n}`"),
            Val::Method(_, n) => format!("method `{n}`"),
            Val::Slice(_) => "slice".into(),
            Val::Range(_) => "range".into(),
            Val::BlockPtr(b) if b.descriptor.is_some() => "tensor descriptor".into(),
            Val::BlockPtr(_) => "block pointer".into(),
        }
    }
}
