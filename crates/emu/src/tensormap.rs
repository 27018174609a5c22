//! Tensor maps for the tensor-memory-accelerator copies (`cp.async.bulk.tensor`): the
//! emulator's own 128-byte encoding.
//!
//! PTX treats a tensor map as a 128-byte opaque object (PTX ISA "Tensor-map"): a kernel only
//! ever *changes* one with `tensormap.replace` (starting from zeroed bytes, or from a map it
//! copied) and *uses* it with `cp.async.bulk.tensor`, `cp.async.bulk.prefetch.tensor` and
//! `prefetch.tensormap`; the host writes it. NVIDIA does not document the driver's layout
//! (`CUtensorMap`), so the emulator defines its own, below. The same PTX then runs on the
//! emulator with this encoding and on a GPU with the driver's: only the host side
//! ([`TensorMap::tiled`] + [`TensorMap::encode`] here, `cuTensorMapEncodeTiled` there) differs.
//!
//! # Encoding (little-endian, 128 bytes, the object 64-byte aligned)
//!
//! | bytes    | field                                                                     |
//! |----------|---------------------------------------------------------------------------|
//! | 0..4     | magic `b"TEM1"` (written by [`TensorMap::encode`] and by every `tensormap.replace`) |
//! | 4..8     | rank − 1, u32 (as `tensormap.replace.tile.rank` gives it)                 |
//! | 8        | element type, PTX `.elemtype` numbering (0 `.u8` … 12 `.tf32.ftz`, 13–15 sub-byte) |
//! | 9        | interleave layout (0 none, 1 16B, 2 32B)                                  |
//! | 10       | swizzle mode (0 none, 1 32B, 2 64B, 3 128B, 4 96B)                        |
//! | 11       | swizzle atomicity (0 16B, 1 32B, 2 32B + 8B flip, 3 64B)                  |
//! | 12       | fill mode (0 zero, 1 OOB-NaN)                                             |
//! | 13..16   | reserved, zero                                                            |
//! | 16..24   | global address, u64                                                       |
//! | 24..44   | global dims 0..5, u32 each (elements)                                     |
//! | 44..48   | reserved, zero                                                            |
//! | 48..88   | global strides, u64 each: ordinal k is the byte stride of dimension k + 1 (ordinal 4 is kept, never used) |
//! | 88..108  | box dims 0..5, u32 each (elements)                                        |
//! | 108..128 | element (traversal) strides 0..5, u32 each                                |
//!
//! The numbering of every enumerated field is the PTX ISA's `tensormap.replace` table
//! ("Tensormap new_val validity"), so `tensormap.replace` stores its operand unchanged. Slots
//! past the rank are ignored.
//!
//! **Zeroed bytes.** A map whose 128 bytes are all zero decodes as
//! [`TensorMapError::NotInitialised`]; any other bytes without the magic as
//! [`TensorMapError::NotEmulatorEncoding`] (for example a driver-encoded `CUtensorMap` handed
//! to an emulator launch). A map built in a kernel from zeroed bytes has the magic after its
//! first `tensormap.replace`; fields it never replaced stay zero, which [`TensorMap::validate`]
//! rejects by name (rank 1 with `global_dim[0] = 0`, box dims 0, element strides 0).
//!
//! # Validation at use
//!
//! [`TensorMap::validate`] applies, with an error naming the rule, what the PTX ISA ("Tensors")
//! and `cuTensorMapEncodeTiled` require of a tiled map: rank 1–5; global address 16-byte
//! aligned; every global dim in 1..=2^32−1 (the encoding's width); global strides multiples of
//! 16 below 2^40; box dims in 1..=256 with the inner box (box dim 0 × element size) a multiple
//! of 16 bytes; element strides in 1..=8, dimension 0's being 1 (non-interleaved layouts);
//! with a swizzle, the inner box at most the swizzle span (32, 64 or 128 bytes); OOB-NaN fill
//! only for floating-point element types. Settings the emulator does not implement are
//! [`TensorMapError::Unsupported`]: interleaved layouts, the 96B swizzle, swizzle atomicities
//! other than 16B, sub-byte element types.
//!
//! # Swizzle
//!
//! A tile copy writes the box densely, dimension 0 fastest, from the shared-memory address
//! `dst`; with a swizzle the 16-byte chunk of each byte address `a` moves within its 128-byte
//! line (PTX ISA "Swizzling Modes", 16-byte atomicity):
//!
//! ```text
//! a' = a XOR (((a >> 7) & m) << 4)     m = 1 (32B), 3 (64B), 7 (128B)
//! ```
//!
//! i.e. the chunk index (bits 4..7) is XORed with the line index (bits 7..10) modulo 2, 4 or 8.
//! It is a function of the absolute shared address, so a destination off the pattern's 256-,
//! 512- or 1024-byte boundary starts at the ISA's "swizzle base offset" `(dst / 128) % 2, 4, 8`.
//! [`Swizzle::apply`] computes it; it is its own inverse (stores read through it).

use std::fmt;

use crate::error::{EmuError, ErrorKind};

/// The magic that marks the emulator's encoding (bytes 0..4).
pub const MAGIC: [u8; 4] = *b"TEM1";

/// Bytes of a tensor map.
pub const BYTES: usize = 128;

/// Byte offsets of the fields in the encoding (see the module docs).
pub mod offset {
    pub const RANK: usize = 4;
    pub const ELEMTYPE: usize = 8;
    pub const INTERLEAVE: usize = 9;
    pub const SWIZZLE: usize = 10;
    pub const ATOMICITY: usize = 11;
    pub const FILL: usize = 12;
    pub const GLOBAL_ADDRESS: usize = 16;
    pub const GLOBAL_DIM: usize = 24;
    pub const GLOBAL_STRIDE: usize = 48;
    pub const BOX_DIM: usize = 88;
    pub const ELEMENT_STRIDE: usize = 108;
}

/// Element types, numbered as PTX's `tensormap.replace ... .elemtype` numbers them (which is
/// not the driver's `CUtensorMapDataType` numbering).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ElemType {
    U8 = 0,
    U16 = 1,
    U32 = 2,
    S32 = 3,
    U64 = 4,
    S64 = 5,
    F16 = 6,
    F32 = 7,
    F32Ftz = 8,
    F64 = 9,
    BF16 = 10,
    TF32 = 11,
    TF32Ftz = 12,
    B4x16 = 13,
    B4x16P64 = 14,
    B6x16P32 = 15,
}

impl ElemType {
    pub fn from_ptx(v: u32) -> Option<ElemType> {
        use ElemType::*;
        Some(match v {
            0 => U8,
            1 => U16,
            2 => U32,
            3 => S32,
            4 => U64,
            5 => S64,
            6 => F16,
            7 => F32,
            8 => F32Ftz,
            9 => F64,
            10 => BF16,
            11 => TF32,
            12 => TF32Ftz,
            13 => B4x16,
            14 => B4x16P64,
            15 => B6x16P32,
            _ => return None,
        })
    }

    /// Bytes per element; `None` for the sub-byte types (not implemented).
    pub fn bytes(self) -> Option<u32> {
        use ElemType::*;
        match self {
            U8 => Some(1),
            U16 | F16 | BF16 => Some(2),
            U32 | S32 | F32 | F32Ftz | TF32 | TF32Ftz => Some(4),
            U64 | S64 | F64 => Some(8),
            B4x16 | B4x16P64 | B6x16P32 => None,
        }
    }

    pub fn is_float(self) -> bool {
        use ElemType::*;
        matches!(self, F16 | F32 | F32Ftz | F64 | BF16 | TF32 | TF32Ftz)
    }

    /// The element an OOB-NaN fill writes, little-endian (`bytes()` long): the NaN with all
    /// exponent and mantissa bits set and the sign clear. The ISA promises "a special NaN"; the
    /// hardware's exact bits are not documented.
    pub fn oob_nan(self) -> Vec<u8> {
        match self.bytes() {
            Some(2) => 0x7fffu16.to_le_bytes().to_vec(),
            Some(4) => 0x7fff_ffffu32.to_le_bytes().to_vec(),
            Some(8) => 0x7fff_ffff_ffff_ffffu64.to_le_bytes().to_vec(),
            Some(n) => vec![0; n as usize],
            None => Vec::new(),
        }
    }
}

/// Interleave layouts (`.interleave_layout`); only `None` is implemented.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Interleave {
    None = 0,
    B16 = 1,
    B32 = 2,
}

/// Swizzle modes (`.swizzle_mode`). `B96` (sm_103a) is decoded but not implemented.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Swizzle {
    None = 0,
    B32 = 1,
    B64 = 2,
    B128 = 3,
    B96 = 4,
}

impl Swizzle {
    pub fn from_ptx(v: u32) -> Option<Swizzle> {
        Some(match v {
            0 => Swizzle::None,
            1 => Swizzle::B32,
            2 => Swizzle::B64,
            3 => Swizzle::B128,
            4 => Swizzle::B96,
            _ => return None,
        })
    }

    /// The span the inner box must fit in (bytes); `None` without a swizzle.
    pub fn span(self) -> Option<u32> {
        match self {
            Swizzle::None => None,
            Swizzle::B32 => Some(32),
            Swizzle::B64 => Some(64),
            Swizzle::B128 => Some(128),
            Swizzle::B96 => Some(96),
        }
    }

    /// Where the byte a copy would place at shared address `addr` without a swizzle lands
    /// with this one (16-byte atomicity): `addr ^ (((addr >> 7) & m) << 4)`, `m` = 1, 3, 7
    /// for 32B, 64B, 128B (see the module docs). Its own inverse. `B96` is not implemented
    /// and maps `addr` to itself.
    pub fn apply(self, addr: u32) -> u32 {
        let m = match self {
            Swizzle::None | Swizzle::B96 => return addr,
            Swizzle::B32 => 1,
            Swizzle::B64 => 3,
            Swizzle::B128 => 7,
        };
        addr ^ (((addr >> 7) & m) << 4)
    }
}

/// Swizzle atomicity (`.swizzle_atomicity`, sm_100a); only `B16` (the sm_90 behaviour and the
/// value of zeroed bytes) is implemented.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SwizzleAtomicity {
    B16 = 0,
    B32 = 1,
    B32Flip8 = 2,
    B64 = 3,
}

/// Out-of-bounds fill (`.fill_mode`): zeros, or the OOB-NaN (`..._NAN_REQUEST_ZERO_FMA` in the
/// driver API) for floating-point element types.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum OobFill {
    Zero = 0,
    Nan = 1,
}

/// Why a tensor map cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TensorMapError {
    /// All 128 bytes are zero: no `tensormap.replace` and no host encode wrote the map.
    NotInitialised,
    /// The bytes are not the emulator's encoding (no magic): e.g. a driver-encoded
    /// `CUtensorMap`, which only a GPU understands.
    NotEmulatorEncoding,
    /// A field breaks a rule of the PTX ISA or of `cuTensorMapEncodeTiled`; the message names it.
    Invalid(String),
    /// A valid setting the emulator does not implement; the message names it.
    Unsupported(String),
}

impl fmt::Display for TensorMapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TensorMapError::NotInitialised => write!(
                f,
                "tensor map is not initialised (all 128 bytes are zero: build it with tensormap.replace, or encode it on the host with trident_emu::TensorMap)"
            ),
            TensorMapError::NotEmulatorEncoding => write!(
                f,
                "not an emulator tensor map (no `TEM1` magic in bytes 0..4): maps for emulator launches are encoded with trident_emu::TensorMap, not cuTensorMapEncode*"
            ),
            TensorMapError::Invalid(m) => write!(f, "invalid tensor map: {m}"),
            TensorMapError::Unsupported(m) => write!(f, "tensor map not supported by the emulator: {m}"),
        }
    }
}

impl std::error::Error for TensorMapError {}

fn invalid(m: String) -> TensorMapError {
    TensorMapError::Invalid(m)
}

/// A tiled-mode tensor map. Arrays hold five slots; those at and past `rank` are ignored
/// (and zero in maps [`TensorMap::tiled`] builds). Dimension 0 is the contiguous one.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TensorMap {
    /// Address of element (0, …, 0) in global memory.
    pub global_address: u64,
    /// 1..=5.
    pub rank: u32,
    /// Elements per dimension.
    pub global_dims: [u32; 5],
    /// `global_strides[k]`: bytes between consecutive indices of dimension k + 1.
    pub global_strides: [u64; 5],
    /// Box (tile) size per dimension, in elements of the tensor (before traversal strides).
    pub box_dims: [u32; 5],
    /// Traversal strides: a copy takes every `element_strides[i]`-th element of the box along
    /// dimension i (`ceil(box_dims[i] / element_strides[i])` of them).
    pub element_strides: [u32; 5],
    pub elem_type: ElemType,
    pub interleave: Interleave,
    pub swizzle: Swizzle,
    pub atomicity: SwizzleAtomicity,
    pub fill: OobFill,
}

impl TensorMap {
    /// A tiled map as `cuTensorMapEncodeTiled` would describe it (no interleave, element
    /// strides 1, 16-byte swizzle atomicity), validated. `dims`, `box_dims`: elements per
    /// dimension, dimension 0 (contiguous) first; `strides`: bytes between consecutive indices
    /// of dimensions 1..rank (`dims.len() - 1` of them).
    pub fn tiled(
        global_address: u64,
        elem_type: ElemType,
        dims: &[u64],
        strides: &[u64],
        box_dims: &[u32],
        swizzle: Swizzle,
        fill: OobFill,
    ) -> Result<TensorMap, TensorMapError> {
        let rank = dims.len();
        if !(1..=5).contains(&rank) {
            return Err(invalid(format!("rank {rank} outside 1..=5 (tensorRank)")));
        }
        if strides.len() + 1 != rank {
            return Err(invalid(format!(
                "{} global strides for rank {rank}: globalStrides has one per dimension after the first",
                strides.len()
            )));
        }
        if box_dims.len() != rank {
            return Err(invalid(format!("{} box dims for rank {rank} (boxDim has one per dimension)", box_dims.len())));
        }
        let mut m = TensorMap {
            global_address,
            rank: rank as u32,
            global_dims: [0; 5],
            global_strides: [0; 5],
            box_dims: [0; 5],
            element_strides: [0; 5],
            elem_type,
            interleave: Interleave::None,
            swizzle,
            atomicity: SwizzleAtomicity::B16,
            fill,
        };
        for (i, &d) in dims.iter().enumerate() {
            m.global_dims[i] = u32::try_from(d).map_err(|_| {
                invalid(format!(
                    "global_dim[{i}] = {d} above 2^32 - 1 (the encoding holds 32 bits, as tensormap.replace's .b32 operand does)"
                ))
            })?;
            m.box_dims[i] = box_dims[i];
            m.element_strides[i] = 1;
        }
        m.global_strides[..strides.len()].copy_from_slice(strides);
        m.validate()?;
        Ok(m)
    }

    /// Element size in bytes (`None` for sub-byte types).
    pub fn elem_bytes(&self) -> Option<u32> {
        self.elem_type.bytes()
    }

    /// Elements a copy moves along dimension `i`: `ceil(box_dims[i] / element_strides[i])`.
    pub fn box_elems(&self, i: usize) -> u64 {
        let (b, s) = (self.box_dims[i] as u64, self.element_strides[i].max(1) as u64);
        b.div_ceil(s)
    }

    /// Bytes a copy of one box moves, out-of-bounds elements included: what it completes as
    /// transaction bytes on its mbarrier. Meaningful for a valid map.
    pub fn box_bytes(&self) -> u64 {
        let n: u64 = (0..self.rank.min(5) as usize).map(|i| self.box_elems(i)).product();
        n * self.elem_bytes().unwrap_or(0) as u64
    }

    /// Checks the rules a map must satisfy to be used (see the module docs); the error names
    /// the rule broken.
    pub fn validate(&self) -> Result<(), TensorMapError> {
        let rank = self.rank as usize;
        if !(1..=5).contains(&rank) {
            return Err(invalid(format!("rank {} outside 1..=5", self.rank)));
        }
        if self.interleave != Interleave::None {
            return Err(TensorMapError::Unsupported(format!("interleave layout {:?}", self.interleave)));
        }
        let Some(esz) = self.elem_bytes() else {
            return Err(TensorMapError::Unsupported(format!("sub-byte element type {:?}", self.elem_type)));
        };
        if self.swizzle == Swizzle::B96 {
            return Err(TensorMapError::Unsupported("the 96B swizzle mode (sm_103a)".into()));
        }
        if self.atomicity != SwizzleAtomicity::B16 {
            return Err(TensorMapError::Unsupported(format!(
                "swizzle atomicity {:?} (sm_100a; only 16B is implemented)",
                self.atomicity
            )));
        }
        if !self.global_address.is_multiple_of(16) {
            return Err(invalid(format!(
                "global address {:#x} is not 16-byte aligned (globalAddress must be 16-byte aligned)",
                self.global_address
            )));
        }
        for i in 0..rank {
            if self.global_dims[i] == 0 {
                return Err(invalid(format!(
                    "global_dim[{i}] is 0 (every global dimension must be at least 1; a map built from zeroed bytes needs every field replaced)"
                )));
            }
        }
        for k in 0..rank - 1 {
            let s = self.global_strides[k];
            if !s.is_multiple_of(16) || s >= 1 << 40 {
                return Err(invalid(format!(
                    "global_stride[{k}] (dimension {}) = {s} bytes: global strides must be multiples of 16 below 2^40",
                    k + 1
                )));
            }
        }
        for i in 0..rank {
            let b = self.box_dims[i];
            if !(1..=256).contains(&b) {
                return Err(invalid(format!(
                    "box_dim[{i}] = {b} outside 1..=256 (boxDim must be non-zero and at most 256)"
                )));
            }
            let e = self.element_strides[i];
            if !(1..=8).contains(&e) {
                return Err(invalid(format!("element_stride[{i}] = {e} outside 1..=8 (elementStrides)")));
            }
        }
        if self.element_strides[0] != 1 {
            return Err(invalid(format!(
                "element_stride[0] = {}: without interleave the traversal stride of dimension 0 must be 1",
                self.element_strides[0]
            )));
        }
        let inner = self.box_dims[0] * esz;
        if !inner.is_multiple_of(16) {
            return Err(invalid(format!(
                "inner box of {inner} bytes (box_dim[0] = {} x {esz}-byte elements) is not a multiple of 16 bytes",
                self.box_dims[0]
            )));
        }
        if let Some(span) = self.swizzle.span() {
            if inner > span {
                return Err(invalid(format!(
                    "inner box of {inner} bytes exceeds the {span}-byte span of the {span}B swizzle (box_dim[0] x element size must be at most the swizzle span)"
                )));
            }
        }
        if self.fill == OobFill::Nan && !self.elem_type.is_float() {
            return Err(invalid(format!(
                "OOB-NaN fill with the integer element type {:?} (NaN fill needs a floating-point type)",
                self.elem_type
            )));
        }
        Ok(())
    }

    /// The 128 bytes of the map in the emulator's encoding (see the module docs). Does not
    /// validate: maps that break the rules encode too (and fail when used).
    pub fn encode(&self) -> [u8; BYTES] {
        use offset::*;
        let mut b = [0u8; BYTES];
        b[0..4].copy_from_slice(&MAGIC);
        b[RANK..RANK + 4].copy_from_slice(&self.rank.wrapping_sub(1).to_le_bytes());
        b[ELEMTYPE] = self.elem_type as u8;
        b[INTERLEAVE] = self.interleave as u8;
        b[SWIZZLE] = self.swizzle as u8;
        b[ATOMICITY] = self.atomicity as u8;
        b[FILL] = self.fill as u8;
        b[GLOBAL_ADDRESS..GLOBAL_ADDRESS + 8].copy_from_slice(&self.global_address.to_le_bytes());
        for i in 0..5 {
            b[GLOBAL_DIM + 4 * i..GLOBAL_DIM + 4 * i + 4].copy_from_slice(&self.global_dims[i].to_le_bytes());
            b[GLOBAL_STRIDE + 8 * i..GLOBAL_STRIDE + 8 * i + 8].copy_from_slice(&self.global_strides[i].to_le_bytes());
            b[BOX_DIM + 4 * i..BOX_DIM + 4 * i + 4].copy_from_slice(&self.box_dims[i].to_le_bytes());
            b[ELEMENT_STRIDE + 4 * i..ELEMENT_STRIDE + 4 * i + 4]
                .copy_from_slice(&self.element_strides[i].to_le_bytes());
        }
        b
    }

    /// Reads a map in the emulator's encoding. Fails on zeroed bytes, on bytes without the
    /// magic, and on enumerated fields outside the PTX ISA's numbering; does not validate the
    /// rest (see [`TensorMap::validate`]).
    pub fn decode(b: &[u8; BYTES]) -> Result<TensorMap, TensorMapError> {
        use offset::*;
        if b.iter().all(|&x| x == 0) {
            return Err(TensorMapError::NotInitialised);
        }
        if b[0..4] != MAGIC {
            return Err(TensorMapError::NotEmulatorEncoding);
        }
        let u32_at = |at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]));
        let bad = |field: &str, v: u8| invalid(format!("{field} value {v} is outside the PTX ISA's numbering"));
        let elem_type = ElemType::from_ptx(b[ELEMTYPE] as u32).ok_or_else(|| bad("elemtype", b[ELEMTYPE]))?;
        let interleave = match b[INTERLEAVE] {
            0 => Interleave::None,
            1 => Interleave::B16,
            2 => Interleave::B32,
            v => return Err(bad("interleave_layout", v)),
        };
        let swizzle = Swizzle::from_ptx(b[SWIZZLE] as u32).ok_or_else(|| bad("swizzle_mode", b[SWIZZLE]))?;
        let atomicity = match b[ATOMICITY] {
            0 => SwizzleAtomicity::B16,
            1 => SwizzleAtomicity::B32,
            2 => SwizzleAtomicity::B32Flip8,
            3 => SwizzleAtomicity::B64,
            v => return Err(bad("swizzle_atomicity", v)),
        };
        let fill = match b[FILL] {
            0 => OobFill::Zero,
            1 => OobFill::Nan,
            v => return Err(bad("fill_mode", v)),
        };
        let mut m = TensorMap {
            global_address: u64_at(GLOBAL_ADDRESS),
            rank: u32_at(RANK).wrapping_add(1),
            global_dims: [0; 5],
            global_strides: [0; 5],
            box_dims: [0; 5],
            element_strides: [0; 5],
            elem_type,
            interleave,
            swizzle,
            atomicity,
            fill,
        };
        for i in 0..5 {
            m.global_dims[i] = u32_at(GLOBAL_DIM + 4 * i);
            m.global_strides[i] = u64_at(GLOBAL_STRIDE + 8 * i);
            m.box_dims[i] = u32_at(BOX_DIM + 4 * i);
            m.element_strides[i] = u32_at(ELEMENT_STRIDE + 4 * i);
        }
        Ok(m)
    }
}

/// One run of a box copy: `len` contiguous bytes of the tensor at global address `addr`, which
/// are bytes `at..at + len` of the box laid out densely (dimension 0 fastest).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct BoxRun {
    pub at: u64,
    pub addr: u64,
    pub len: u64,
}

/// The box-copy semantics both emulators share (the PTX emulator's `cp.async.bulk.tensor`,
/// the SASS emulator's `UTMALDG`/`UTMASTG`): which map a copy uses, which of its box's
/// elements are in bounds, what fills the others, and where the box lies in shared memory.
impl TensorMap {
    /// The map a tensor copy of `dim` dimensions uses, from the 128 bytes at address `at` (for
    /// messages): decoded, validated ([`TensorMap::validate`]) and of rank `dim` (the
    /// instruction's dimension must be the map's rank). A setting the emulators do not
    /// implement is an `Unsupported` error, anything else wrong a `Runtime` one.
    pub fn for_copy(b: &[u8; BYTES], at: u64, dim: u32) -> Result<TensorMap, EmuError> {
        let fail = |e: TensorMapError| {
            let kind =
                if matches!(e, TensorMapError::Unsupported(_)) { ErrorKind::Unsupported } else { ErrorKind::Runtime };
            EmuError::new(kind, format!("tensor map at {at:#x}: {e}"))
        };
        let m = TensorMap::decode(b).map_err(fail)?;
        m.validate().map_err(fail)?;
        if m.rank != dim {
            return Err(EmuError::new(
                ErrorKind::Runtime,
                format!(
                    "tensor map at {at:#x} has rank {}, but the copy is .{dim}d (the instruction's dimension must be the map's rank)",
                    m.rank
                ),
            ));
        }
        Ok(m)
    }

    /// Elements a copy moves per dimension (1 past the rank).
    fn moved(&self) -> [u64; 5] {
        let mut n = [1u64; 5];
        for (i, x) in n.iter_mut().enumerate().take(self.rank.min(5) as usize) {
            *x = self.box_elems(i);
        }
        n
    }

    /// The in-bounds part of the box whose first element is at `coords` (signed, dimension 0
    /// first; slots past the rank ignored): for each row of the box along dimension 0, the
    /// run of its elements inside the tensor, as global addresses and places in the dense
    /// box. Rows with a coordinate of another dimension outside the tensor have none. What no
    /// run covers is out of bounds: a load leaves the fill there ([`TensorMap::filled_box`]),
    /// a store writes nothing. For a valid map.
    pub fn box_runs(&self, coords: &[i64; 5]) -> Result<Vec<BoxRun>, EmuError> {
        let n = self.moved();
        let esz = self.elem_bytes().unwrap_or(1) as u64;
        let rows: u64 = n[1..].iter().product();
        let row_bytes = n[0] * esz;
        let mut out = Vec::new();
        for r in 0..rows {
            let mut rest = r;
            let mut addr = self.global_address as i128;
            let mut inside = true;
            for i in 1..self.rank as usize {
                let j = rest % n[i];
                rest /= n[i];
                let g = coords[i] + j as i64 * self.element_strides[i] as i64;
                inside &= g >= 0 && g < self.global_dims[i] as i64;
                addr += g as i128 * self.global_strides[i - 1] as i128;
            }
            let (c0, d0) = (coords[0], self.global_dims[0] as i64);
            let lo = (-c0).clamp(0, n[0] as i64) as u64;
            let hi = (d0 - c0).clamp(0, n[0] as i64) as u64;
            if !inside || lo >= hi {
                continue;
            }
            addr += (c0 + lo as i64) as i128 * esz as i128;
            let a = u64::try_from(addr).map_err(|_| {
                EmuError::new(
                    ErrorKind::Memory,
                    format!("tensor copy row address {addr:#x} is outside the 64-bit address space"),
                )
            })?;
            out.push(BoxRun { at: r * row_bytes + lo * esz, addr: a, len: (hi - lo) * esz });
        }
        Ok(out)
    }

    /// A box's bytes with every element the out-of-bounds fill (zeros, or the OOB-NaN of
    /// [`ElemType::oob_nan`]): what a load starts from before reading the in-bounds runs.
    pub fn filled_box(&self) -> Vec<u8> {
        let bytes = self.box_bytes() as usize;
        match self.fill {
            OobFill::Zero => vec![0u8; bytes],
            OobFill::Nan => {
                let e = self.elem_type.oob_nan();
                e.repeat(bytes / e.len().max(1))
            }
        }
    }

    /// Where this map's box lies in shared memory at offset `off` (a copy's destination or
    /// source; `what` names it in messages): checked 128-byte aligned (the tensor memory
    /// accelerator needs it) and inside the `shared_len` bytes of the CTA. Returns the shared
    /// offset of each 16-byte chunk of the dense box after the map's swizzle
    /// ([`Swizzle::apply`]); empty without a swizzle (the box lies contiguously at `off`).
    pub fn shared_chunks(&self, off: u64, shared_len: u64, what: &str) -> Result<Vec<u32>, EmuError> {
        let mem = |m: String| EmuError::new(ErrorKind::Memory, m);
        if !off.is_multiple_of(128) {
            return Err(mem(format!(
                "tensor copy {what} at shared offset {off} is not 128-byte aligned (the tensor memory accelerator needs 128-byte aligned shared memory)"
            )));
        }
        let bytes = self.box_bytes();
        let chunks: Vec<u32> = if self.swizzle == Swizzle::None || off + bytes > u32::MAX as u64 {
            Vec::new()
        } else {
            (0..bytes / 16).map(|k| self.swizzle.apply(off as u32 + 16 * k as u32)).collect()
        };
        let end = chunks.iter().map(|&c| c as u64 + 16).max().unwrap_or(off + bytes).max(off + bytes);
        if end > shared_len {
            return Err(mem(format!(
                "tensor copy {what} at shared offset {off} + {bytes} bytes outside the CTA's {shared_len} bytes"
            )));
        }
        Ok(chunks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map2d() -> TensorMap {
        TensorMap::tiled(0x1000_0000_0100, ElemType::F16, &[100, 60], &[256], &[64, 16], Swizzle::B128, OobFill::Nan)
            .unwrap()
    }

    #[test]
    fn encode_then_decode_is_the_identity() {
        let m = map2d();
        assert_eq!(TensorMap::decode(&m.encode()), Ok(m));
        let mut m5 = TensorMap::tiled(
            1 << 44,
            ElemType::U8,
            &[32, 3, 4, 5, 6],
            &[32, 96, 384, 1920],
            &[16, 2, 3, 4, 5],
            Swizzle::None,
            OobFill::Zero,
        )
        .unwrap();
        m5.element_strides = [1, 2, 3, 4, 5];
        m5.validate().unwrap();
        assert_eq!(TensorMap::decode(&m5.encode()), Ok(m5));
        assert_eq!(m5.box_bytes(), 16);
        let b = m.encode();
        assert_eq!(&b[0..4], b"TEM1");
        assert_eq!(u32::from_le_bytes(b[4..8].try_into().unwrap()), 1, "rank 2 is stored as 1");
        assert_eq!((b[8], b[10], b[12]), (6, 3, 1), "f16, 128B, OOB-NaN in the PTX numbering");
    }

    #[test]
    fn zeroed_and_foreign_bytes_do_not_decode() {
        assert_eq!(TensorMap::decode(&[0; 128]), Err(TensorMapError::NotInitialised));
        let mut b = [0u8; 128];
        b[17] = 1;
        assert_eq!(TensorMap::decode(&b), Err(TensorMapError::NotEmulatorEncoding));
        // Magic only (a map built from zeroed bytes by one tensormap.replace): decodes, fails
        // validation by name.
        b = [0; 128];
        b[0..4].copy_from_slice(&MAGIC);
        let m = TensorMap::decode(&b).unwrap();
        assert_eq!(m.rank, 1);
        let e = m.validate().unwrap_err().to_string();
        assert!(e.contains("global address") || e.contains("global_dim[0] is 0"), "{e}");
        b[10] = 9;
        assert!(TensorMap::decode(&b).unwrap_err().to_string().contains("swizzle_mode value 9"));
    }

    #[test]
    fn tiled_applies_the_encode_rules() {
        let t = |a: u64, e: ElemType, d: &[u64], s: &[u64], bx: &[u32], sw: Swizzle, f: OobFill| {
            TensorMap::tiled(a, e, d, s, bx, sw, f).map(|_| ()).map_err(|e| e.to_string())
        };
        use ElemType::*;
        use OobFill::*;
        use Swizzle as S;
        assert!(t(8, F16, &[64], &[], &[64], S::None, Zero).unwrap_err().contains("16-byte aligned"));
        assert!(t(0, F16, &[64, 2], &[72], &[64, 2], S::None, Zero).unwrap_err().contains("multiples of 16"));
        assert!(t(0, F16, &[64, 2], &[1 << 40], &[64, 2], S::None, Zero).unwrap_err().contains("below 2^40"));
        assert!(t(0, F16, &[64, 2], &[128], &[64, 257], S::None, Zero).unwrap_err().contains("1..=256"));
        assert!(t(0, F16, &[64, 2], &[128], &[0, 2], S::None, Zero).unwrap_err().contains("box_dim[0] = 0"));
        assert!(t(0, F16, &[64], &[], &[12], S::None, Zero).unwrap_err().contains("multiple of 16 bytes"));
        assert!(t(0, F16, &[64], &[], &[64], S::B64, Zero).unwrap_err().contains("64-byte span"));
        assert!(t(0, F16, &[64], &[], &[32], S::B64, Zero).is_ok());
        assert!(t(0, U32, &[64], &[], &[32], S::None, Nan).unwrap_err().contains("floating-point"));
        assert!(t(0, F16, &[0], &[], &[8], S::None, Zero).unwrap_err().contains("global_dim[0] is 0"));
        assert!(t(0, F16, &[1 << 32], &[], &[8], S::None, Zero).unwrap_err().contains("2^32 - 1"));
        assert!(t(0, F16, &[8; 6], &[16; 5], &[8; 6], S::None, Zero).unwrap_err().contains("rank 6"));
        assert!(t(0, F16, &[8, 8], &[], &[8, 8], S::None, Zero).unwrap_err().contains("global strides"));
        assert!(matches!(
            TensorMap::tiled(0, B4x16, &[64], &[], &[64], S::None, Zero),
            Err(TensorMapError::Unsupported(_))
        ));
        let mut m = map2d();
        m.element_strides[0] = 2;
        assert!(m.validate().unwrap_err().to_string().contains("dimension 0 must be 1"));
        m.element_strides = [1, 9, 0, 0, 0];
        assert!(m.validate().unwrap_err().to_string().contains("element_stride[1] = 9"));
        m = map2d();
        m.interleave = Interleave::B32;
        assert!(matches!(m.validate(), Err(TensorMapError::Unsupported(_))));
    }

    /// The ISA's swizzle tables ("Swizzling Modes"): row r of the table (the r-th 128-byte line
    /// from the pattern's start) lists, for destination chunks 0..8, the source chunk there.
    #[test]
    fn swizzle_matches_the_isa_tables() {
        let t32: [[u32; 8]; 2] = [[0, 1, 2, 3, 4, 5, 6, 7], [1, 0, 3, 2, 5, 4, 7, 6]];
        let t64: [[u32; 8]; 4] =
            [[0, 1, 2, 3, 4, 5, 6, 7], [1, 0, 3, 2, 5, 4, 7, 6], [2, 3, 0, 1, 6, 7, 4, 5], [3, 2, 1, 0, 7, 6, 5, 4]];
        let t128: [[u32; 8]; 8] = [
            [0, 1, 2, 3, 4, 5, 6, 7],
            [1, 0, 3, 2, 5, 4, 7, 6],
            [2, 3, 0, 1, 6, 7, 4, 5],
            [3, 2, 1, 0, 7, 6, 5, 4],
            [4, 5, 6, 7, 0, 1, 2, 3],
            [5, 4, 7, 6, 1, 0, 3, 2],
            [6, 7, 4, 5, 2, 3, 0, 1],
            [7, 6, 5, 4, 3, 2, 1, 0],
        ];
        let tables: [(Swizzle, &[[u32; 8]]); 3] = [(Swizzle::B32, &t32), (Swizzle::B64, &t64), (Swizzle::B128, &t128)];
        for (sw, table) in tables {
            // Over two repeats of the pattern and at a 4-KiB offset.
            for base in [0u32, 4096] {
                for line in 0..2 * table.len() as u32 {
                    for dst_chunk in 0..8u32 {
                        let src_chunk = table[line as usize % table.len()][dst_chunk as usize];
                        for byte in [0u32, 5, 15] {
                            let src = base + line * 128 + src_chunk * 16 + byte;
                            let dst = base + line * 128 + dst_chunk * 16 + byte;
                            assert_eq!(sw.apply(src), dst, "{sw:?} line {line} chunk {src_chunk}");
                            assert_eq!(sw.apply(dst), src, "{sw:?}: its own inverse");
                        }
                    }
                }
            }
        }
        assert_eq!(Swizzle::None.apply(1234), 1234);
    }
}
