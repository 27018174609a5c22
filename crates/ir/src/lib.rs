//! Trident's tile IR.
//!
//! An SSA IR of block-level values, in the spirit of Triton's TTIR: scalars,
//! pointers and tensors of static shape ([`Type`]); ops ([`OpKind`]) with
//! operands, results, nested regions for structured control flow, and a source
//! location each. Entities ([`Value`], [`Op`], [`Block`]) live in per-function
//! arenas and are referred to by typed indices.
//!
//! This crate owns the data structures, the text form (printer and parser) and
//! the verifier. It must never depend on the front end, passes, or any backend.

pub mod attr;
pub mod builder;
pub mod diag;
pub mod edit;
pub mod func;
pub mod layout;
pub mod loc;
pub mod ops;
pub mod parse;
pub mod print;
pub mod types;
pub mod verify;

pub use attr::{Attr, AttrMap};
pub use builder::Builder;
pub use diag::{Diagnostic, Severity};
pub use func::{Block, BlockData, Function, Module, Op, OpData, Param, ParamAttrs, Value, ValueData, ValueDef};
pub use layout::{Layout, LayoutId};
pub use loc::{FileId, Loc, SourceFile};
pub use ops::*;
pub use parse::{parse_function, parse_module, parse_module_with, parse_type, ParseOptions};
pub use print::{print_function, print_module, print_op, PrintOptions};
pub use trident_core::DType;
pub use types::{AddrSpace, Elem, Shape, Type};
pub use verify::{verify_function, verify_module};
