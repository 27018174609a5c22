//! The `triton.language` API surface Trident knows, as data: its modules and their import paths,
//! the functions of `tl`, `tl.math` and `libdevice` it implements (and those it knows but does
//! not), dtype spellings, and the source of the prelude that implements the parts Triton writes
//! in Triton. Both the scanner (which must tell equivalent bindings apart) and the lowering
//! (which resolves and suggests names) consult these tables, so they live below both; this
//! module depends on nothing else in the crate.

pub(crate) mod dtypes;
pub(crate) mod functions;
pub(crate) mod libdevice;
mod modules;
pub(crate) mod prelude;

pub(crate) use modules::Mod;
