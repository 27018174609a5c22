//! Types of tile-IR values: scalars, pointers, and tensors of static shape.

use crate::layout::LayoutId;
use smallvec::SmallVec;
use std::fmt;
use trident_core::DType;

/// Where a pointer points. Tile IR only ever makes global pointers; the GPU
/// lowering introduces shared-memory ones.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum AddrSpace {
    Global,
    Shared,
}

/// The element of a tensor, or the type of a scalar: a number or a pointer to numbers.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Elem {
    Num(DType),
    Ptr { pointee: DType, space: AddrSpace },
}

impl Elem {
    pub fn ptr(pointee: DType) -> Elem {
        Elem::Ptr { pointee, space: AddrSpace::Global }
    }

    /// The number type, or `None` for a pointer.
    pub fn num(self) -> Option<DType> {
        match self {
            Elem::Num(d) => Some(d),
            Elem::Ptr { .. } => None,
        }
    }

    pub fn is_ptr(self) -> bool {
        matches!(self, Elem::Ptr { .. })
    }

    pub fn is_float(self) -> bool {
        matches!(self, Elem::Num(d) if d.is_float())
    }

    /// Integers including i1.
    pub fn is_int(self) -> bool {
        matches!(self, Elem::Num(d) if d.is_int())
    }

    pub fn is_bool(self) -> bool {
        self == Elem::Num(DType::I1)
    }

    /// Pointee of a pointer element.
    pub fn pointee(self) -> Option<DType> {
        match self {
            Elem::Ptr { pointee, .. } => Some(pointee),
            Elem::Num(_) => None,
        }
    }
}

impl From<DType> for Elem {
    fn from(d: DType) -> Elem {
        Elem::Num(d)
    }
}

/// A tensor shape: every dimension known at compile time.
pub type Shape = SmallVec<[u32; 4]>;

/// The type of an SSA value.
///
/// A scalar and a one-element tensor are different types (as in Triton): scalars
/// come from arguments, `program_id` and scalar arithmetic; tensors from `arange`,
/// `splat`, loads of tensors of pointers, etc.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    Scalar(Elem),
    /// `layout` is `None` in tile IR; GPU lowering sets it on every tensor.
    Tensor {
        shape: Shape,
        elem: Elem,
        layout: Option<LayoutId>,
    },
}

impl Type {
    pub fn scalar(e: impl Into<Elem>) -> Type {
        Type::Scalar(e.into())
    }

    pub fn tensor(shape: &[u32], e: impl Into<Elem>) -> Type {
        Type::Tensor { shape: shape.iter().copied().collect(), elem: e.into(), layout: None }
    }

    pub fn i1() -> Type {
        Type::scalar(DType::I1)
    }

    pub fn i32() -> Type {
        Type::scalar(DType::I32)
    }

    pub fn i64() -> Type {
        Type::scalar(DType::I64)
    }

    pub fn f32() -> Type {
        Type::scalar(DType::F32)
    }

    pub fn elem(&self) -> Elem {
        match self {
            Type::Scalar(e) => *e,
            Type::Tensor { elem, .. } => *elem,
        }
    }

    /// Dimensions; empty for a scalar.
    pub fn shape(&self) -> &[u32] {
        match self {
            Type::Scalar(_) => &[],
            Type::Tensor { shape, .. } => shape,
        }
    }

    pub fn is_tensor(&self) -> bool {
        matches!(self, Type::Tensor { .. })
    }

    pub fn is_scalar(&self) -> bool {
        matches!(self, Type::Scalar(_))
    }

    /// Number of elements (1 for a scalar).
    pub fn numel(&self) -> u64 {
        self.shape().iter().map(|&d| d as u64).product()
    }

    /// Same shape (or scalar-ness), different element.
    pub fn with_elem(&self, e: impl Into<Elem>) -> Type {
        match self {
            Type::Scalar(_) => Type::Scalar(e.into()),
            Type::Tensor { shape, layout, .. } => {
                Type::Tensor { shape: shape.clone(), elem: e.into(), layout: *layout }
            }
        }
    }

    /// The layout of a GPU-IR tensor.
    pub fn layout(&self) -> Option<LayoutId> {
        match self {
            Type::Scalar(_) => None,
            Type::Tensor { layout, .. } => *layout,
        }
    }

    /// Same shape and element, given layout (no-op on scalars).
    pub fn with_layout(&self, l: Option<LayoutId>) -> Type {
        match self {
            Type::Scalar(e) => Type::Scalar(*e),
            Type::Tensor { shape, elem, .. } => Type::Tensor { shape: shape.clone(), elem: *elem, layout: l },
        }
    }

    /// Same element, given shape, no layout (an empty shape gives a scalar).
    pub fn with_shape(&self, shape: &[u32]) -> Type {
        if shape.is_empty() {
            Type::Scalar(self.elem())
        } else {
            Type::tensor(shape, self.elem())
        }
    }
}

impl fmt::Display for AddrSpace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AddrSpace::Global => "global",
            AddrSpace::Shared => "shared",
        })
    }
}

impl fmt::Display for Elem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Elem::Num(d) => write!(f, "{d}"),
            Elem::Ptr { pointee, space: AddrSpace::Global } => write!(f, "ptr<{pointee}>"),
            Elem::Ptr { pointee, space } => write!(f, "ptr<{pointee}, {space}>"),
        }
    }
}

/// Text form: `i32`, `ptr<f16>`, `tensor<128x64xf16>`, `tensor<64xptr<f32>>`.
impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Scalar(e) => write!(f, "{e}"),
            Type::Tensor { shape, elem, layout } => {
                f.write_str("tensor<")?;
                for d in shape {
                    write!(f, "{d}x")?;
                }
                write!(f, "{elem}")?;
                if let Some(l) = layout {
                    write!(f, ", {l}")?;
                }
                f.write_str(">")
            }
        }
    }
}
