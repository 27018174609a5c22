//! Vocabulary shared by every Trident crate.
//!
//! `trident-core` owns the things that the front end, the IRs, the interpreter,
//! the PTX emulator and the runtime must agree on byte for byte: element types
//! ([`DType`]), their conversions (f16/bf16/fp8 rounding as the GPU does it),
//! and host tensors ([`HostTensor`]): a dtype, a shape and little-endian bytes.
//! It depends on nothing of Trident and must stay small.

pub mod dtype;
pub mod fp8;
pub mod tensor;

pub use dtype::DType;
pub use tensor::HostTensor;
