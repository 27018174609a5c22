//! The op set of the tile IR.
//!
//! An op is an [`OpKind`] (what it does, with its compile-time parameters) plus
//! operands, results, regions and a location (see [`crate::OpData`]). Operand
//! and result *types* carry dtypes, shapes and signedness; the kind carries only
//! what types cannot. Conventions for operand lists are documented per variant.
//!
//! The text form of a kind is its [`OpKind::name`] and [`OpKind::attrs`];
//! [`OpKind::from_parts`] parses it back. Add an op here and the printer,
//! parser and verifier's generic checks follow.
//!
//! Besides its kind's attributes an op (and a function) may carry *discardable
//! attributes* ([`crate::AttrMap`]): facts a pass records for later passes or a backend,
//! which do not change what the op computes. The names the IR knows are in
//! [`discardable`]; the verifier rejects any other.

use crate::attr::Attr;
use crate::Elem;

/// Declares a C-like enum with a text name per variant, `name()`, `from_name()` and `ALL`.
macro_rules! named_enum {
    ($(#[$m:meta])* $vis:vis enum $E:ident { $($(#[$vm:meta])* $V:ident = $s:literal),* $(,)? }) => {
        $(#[$m])*
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
        $vis enum $E { $($(#[$vm])* $V),* }
        impl $E {
            pub const ALL: &'static [$E] = &[$($E::$V),*];
            pub fn name(self) -> &'static str {
                match self { $($E::$V => $s),* }
            }
            pub fn from_name(s: &str) -> Option<$E> {
                match s { $($s => Some($E::$V),)* _ => None }
            }
        }
    };
}

named_enum! {
    /// Elementwise binary operations; both operands and the result have the same type
    /// (the front end inserts casts and broadcasts first). Signedness comes from the type.
    pub enum BinaryOp {
        Add = "add",
        Sub = "sub",
        Mul = "mul",
        /// Floats: IEEE division. Integers: truncating division (C, Triton's `//`); division by zero is an error in the interpreter.
        Div = "div",
        /// Floats: C `fmod` (sign of the dividend). Integers: C remainder (Triton's `%`).
        Rem = "rem",
        And = "and",
        Or = "or",
        Xor = "xor",
        Shl = "shl",
        /// Arithmetic for signed integers, logical for unsigned.
        Shr = "shr",
        /// Floats: NaN-suppressing (IEEE maxNum, Triton's default `propagate_nan=NONE`).
        Max = "max",
        Min = "min",
        /// Floats: NaN-propagating (`propagate_nan=ALL`).
        MaxNan = "max_nan",
        MinNan = "min_nan",
        /// High half of the full product, unsigned (`tl.umulhi`).
        UMulHi = "umulhi",
        Pow = "pow",
        Atan2 = "atan2",
        Hypot = "hypot",
        CopySign = "copysign",
    }
}

named_enum! {
    /// Elementwise unary operations. The result type equals the operand type
    /// except for the predicates (`isnan`, `isinf`, `isfinite`, `signbit`), which give i1.
    pub enum UnaryOp {
        Neg = "neg",
        /// Bitwise not; on i1 a logical not.
        Not = "not",
        Abs = "abs",
        Exp = "exp",
        Exp2 = "exp2",
        Exp10 = "exp10",
        Expm1 = "expm1",
        Log = "log",
        Log2 = "log2",
        Log10 = "log10",
        Log1p = "log1p",
        Sqrt = "sqrt",
        /// Correctly rounded square root (`tl.sqrt_rn`); `sqrt` may be approximate on the GPU.
        SqrtRn = "sqrt_rn",
        Rsqrt = "rsqrt",
        Cbrt = "cbrt",
        Sin = "sin",
        Cos = "cos",
        Tan = "tan",
        Asin = "asin",
        Acos = "acos",
        Atan = "atan",
        Sinh = "sinh",
        Cosh = "cosh",
        Tanh = "tanh",
        Asinh = "asinh",
        Acosh = "acosh",
        Atanh = "atanh",
        Erf = "erf",
        Erfc = "erfc",
        Floor = "floor",
        Ceil = "ceil",
        Trunc = "trunc",
        /// Round half to even.
        Rint = "rint",
        /// Round half away from zero.
        Round = "round",
        IsNan = "isnan",
        IsInf = "isinf",
        IsFinite = "isfinite",
        Signbit = "signbit",
        Popc = "popc",
        Clz = "clz",
    }
}

named_enum! {
    /// Comparisons. Integers compare signed or unsigned by type; float comparisons are
    /// ordered (false on NaN) except `ne`, which is unordered (true on NaN), as in Triton.
    pub enum CmpPred {
        Eq = "eq",
        Ne = "ne",
        Lt = "lt",
        Le = "le",
        Gt = "gt",
        Ge = "ge",
    }
}

named_enum! {
    /// How `cast` converts.
    pub enum CastKind {
        /// Value conversion: int↔int (sign/zero extension by source signedness, truncation),
        /// int↔float (float→int truncates toward zero), float↔float (rounding per `rounding`;
        /// conversions to fp8 saturate to the largest finite value), anything→i1 is `!= 0`.
        Convert = "convert",
        /// Reinterpret the bits; same width.
        Bitcast = "bitcast",
        PtrToInt = "ptr_to_int",
        IntToPtr = "int_to_ptr",
    }
}

named_enum! {
    /// Rounding of a narrowing float conversion.
    pub enum Rounding {
        Rtne = "rtne",
        Rtz = "rtz",
    }
}

named_enum! {
    /// `cache_modifier` of `tl.load`/`tl.store` (`""`, `.ca`, `.cg`, `.cs`, `.cv`, `.wb`, `.wt`).
    pub enum CacheModifier {
        None = "none",
        Ca = "ca",
        Cg = "cg",
        Cs = "cs",
        Cv = "cv",
        Wb = "wb",
        Wt = "wt",
    }
}

named_enum! {
    /// `eviction_policy` of `tl.load`/`tl.store`.
    pub enum EvictionPolicy {
        Normal = "normal",
        First = "evict_first",
        Last = "evict_last",
    }
}

named_enum! {
    /// The read-modify-write of `atomic_rmw`. Min/max use the signedness of the type;
    /// `fadd` is not separate: `add` on a float type is a float add.
    pub enum RmwOp {
        Add = "add",
        Max = "max",
        Min = "min",
        And = "and",
        Or = "or",
        Xor = "xor",
        Xchg = "xchg",
    }
}

named_enum! {
    /// Memory ordering of atomics (`sem=`).
    pub enum MemSem {
        Relaxed = "relaxed",
        Acquire = "acquire",
        Release = "release",
        AcqRel = "acq_rel",
    }
}

named_enum! {
    /// Scope of atomics (`scope=`).
    pub enum MemScope {
        Gpu = "gpu",
        Cta = "cta",
        Sys = "sys",
    }
}

named_enum! {
    /// `input_precision` of `tl.dot` for f32 inputs.
    pub enum InputPrecision {
        Tf32 = "tf32",
        Tf32x3 = "tf32x3",
        Ieee = "ieee",
    }
}

named_enum! {
    /// What a profiled region is, as the `kind` of a `record` op (and the `kind` of the
    /// region in the profile's metadata). Only the instrumentation passes and the front
    /// end decide it; no pass changes it.
    pub enum RegionKind {
        /// A user's `pl.scope` / `pl.enter_scope` ... `pl.exit_scope`.
        Scope = "scope",
        /// The whole kernel body.
        Kernel = "kernel",
        /// One iteration of a `for`/`while` body.
        Loop = "loop",
        /// One `dot`.
        Dot = "dot",
        /// One global `load`.
        Load = "load",
    }
}

/// A constant's value; its type is the op's result type (a tensor result means a splat).
/// Integers are stored as i64 bits: an unsigned 64-bit value above `i64::MAX` is stored wrapped.
#[derive(Copy, Clone, Debug)]
pub enum Const {
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl PartialEq for Const {
    fn eq(&self, other: &Const) -> bool {
        match (self, other) {
            (Const::Int(a), Const::Int(b)) => a == b,
            // Bitwise, so that NaN constants are equal to themselves for CSE.
            (Const::Float(a), Const::Float(b)) => a.to_bits() == b.to_bits(),
            (Const::Bool(a), Const::Bool(b)) => a == b,
            _ => false,
        }
    }
}
impl Eq for Const {}

impl std::hash::Hash for Const {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        match self {
            Const::Int(v) => (0u8, *v).hash(h),
            Const::Float(v) => (1u8, v.to_bits()).hash(h),
            Const::Bool(v) => (2u8, *v).hash(h),
        }
    }
}

/// What an op does. Operand conventions are given per variant as `[a, b, ...]`;
/// `?` marks optional trailing operands (their presence is seen from the operand count).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum OpKind {
    // ---- values from nowhere ----
    /// `[]` → scalar or splat tensor.
    Constant(Const),
    /// `[]` → `tensor<(end-start) x i32>` holding start..end.
    Arange { start: i32, end: i32 },
    /// `[]` → i32.
    ProgramId { axis: u8 },
    /// `[]` → i32.
    NumPrograms { axis: u8 },

    // ---- shape manipulation ----
    /// `[scalar]` → tensor of that element.
    Splat,
    /// `[tensor]` → tensor whose size-1 dims are expanded to the result shape (same rank).
    Broadcast,
    /// `[tensor]` → tensor with a new size-1 dim at `axis`.
    ExpandDims { axis: u32 },
    /// `[tensor]` → same element count, new shape. `can_reorder` lets the compiler permute elements.
    Reshape { can_reorder: bool },
    /// `[tensor]` → permuted dims: result dim i is operand dim `perm[i]`.
    Trans { perm: Vec<u32> },
    /// `[a, b]` (same type) → shape + [2] along a new last dim.
    Join,
    /// `[tensor with last dim 2]` → two results without the last dim.
    Split,
    /// `[a, b]` → concatenation along dim 0.
    Cat,
    /// `[src, index]` → the index's shape and the source's element: `out[.., i, ..] =
    /// src[.., index[.., i, ..], ..]` along `axis` (the other dims the same sizes); an index
    /// outside `0..src.shape[axis]` gives 0.
    Gather { axis: u32 },

    // ---- elementwise ----
    /// `[args...]` (tensors of one shape) → one or more tensors of that shape: Triton's
    /// `tl.inline_asm_elementwise`. `asm` is PTX with LLVM-style operand placeholders (`$0`
    /// the first result, then the other results, then the arguments), run once per group of
    /// `pack` elements; `constraints` gives each placeholder's register kind (`"=r,r,h"`: `r`
    /// 32-bit, `h` 16-bit, `l` 64-bit, `f` f32, `d` f64; outputs marked `=`). Not `pure`: kept
    /// and ordered like a store.
    InlineAsm { asm: String, constraints: String, pure: bool, pack: u32 },
    /// `[a, b]` → same type.
    Binary(BinaryOp),
    /// `[a]` → same type (i1 for predicates).
    Unary(UnaryOp),
    /// `[a, b]` → i1 of the same shape.
    Cmp(CmpPred),
    /// `[cond: i1, a, b]` → type of a.
    Select,
    /// `[a, b, c]` → a*b+c with one rounding.
    Fma,
    /// `[a]` → result type (same shape).
    Cast { kind: CastKind, rounding: Rounding },
    /// `[ptr, offset: int]` → ptr advanced by `offset` elements of its pointee.
    AddPtr,

    // ---- memory ----
    /// `[ptr, mask?, other?]` → values; masked-off lanes get `other` (0 when absent).
    Load { cache: CacheModifier, evict: EvictionPolicy, volatile: bool },
    /// `[ptr, mask, other, base, shape × rank, strides × rank, offsets × rank]` → values: a
    /// tensor descriptor's `desc.load(offsets)`. Its value is exactly `load ptr, mask, other`
    /// (how every backend without a tensor-memory accelerator runs it); the trailing
    /// operands describe the same window — `base` a scalar pointer, `shape`/`strides` i64
    /// scalars, `offsets` i32 scalars, innermost dimension last — so a backend with TMA can
    /// copy the box instead (`trident-gpu`'s `gpu-descriptors` decides, and turns the rest
    /// into plain loads).
    DescLoad { rank: u32 },
    /// `[ptr, value, mask?]` → nothing.
    Store { cache: CacheModifier, evict: EvictionPolicy },
    /// `[ptr, value, mask, base, shape × rank, strides × rank, offsets × rank]` → nothing: a
    /// tensor descriptor's `desc.store(offsets, value)`. Its effect is exactly `store ptr,
    /// value, mask` (the window's in-bounds elements); the trailing operands describe the
    /// window as for `desc_load`, so a backend with TMA can copy the box out instead.
    DescStore { rank: u32 },
    /// `[ptr, value, mask?]` → old values (masked-off lanes: 0).
    AtomicRmw { op: RmwOp, sem: MemSem, scope: MemScope },
    /// `[ptr, cmp, value]` → old values.
    AtomicCas { sem: MemSem, scope: MemScope },

    // ---- block-level compute ----
    /// `[a: MxK, b: KxN, acc: MxN]` → MxN of acc's type (acc += a@b). Batched 3-D allowed.
    Dot { precision: InputPrecision, max_num_imprecise_acc: u32 },
    /// `[x0..xn]` → n results with `axis` removed. One region with 2n block args
    /// (accumulated values, then new values) ending in `yield` of n values.
    Reduce { axis: u32 },
    /// `[x0..xn]` → n results of the operand shapes (inclusive scan). Region as for `reduce`.
    Scan { axis: u32, reverse: bool },

    // ---- hints and debugging ----
    /// `[x]` → x; promises every element is a multiple of `values[dim]` along each dim.
    MultipleOf { values: Vec<u32> },
    /// `[x]` → x; promises runs of `values[dim]` contiguous elements.
    MaxContiguous { values: Vec<u32> },
    /// `[x]` → x; promises runs of `values[dim]` equal elements.
    MaxConstancy { values: Vec<u32> },
    /// `[cond: i1]` → nothing; the compiler may assume `cond` holds.
    Assume,
    /// `[x...]` → nothing; prints `prefix` and the values per program.
    Print { prefix: String, hex: bool },
    /// `[cond]` → nothing; stops the launch with `msg` where `cond` is false.
    Assert { msg: String },

    // ---- profiling ----
    /// `[]` → nothing. A profiling marker, in tile IR and GPU IR: the start (`end = false`)
    /// or the end (`end = true`) of one instance of the region `name` of kind `kind`
    /// (`record [name = "qk", end = false, kind = scope]`). It computes nothing: the
    /// interpreter skips it, and only the GPU lowering gives it a meaning (a clock read
    /// stored to the profile buffer). Its location is that of the source it measures.
    ///
    /// **How passes treat records.** A record's [`Effect`] is `Write`, and that one fact is
    /// what keeps every effect-aware pass correct around it:
    ///
    /// * never deleted (DCE keeps it, and keeps the `for`/`if`/`while` holding it), never
    ///   merged (CSE merges only pure ops), never moved, hoisted, sunk or duplicated into
    ///   another block (LICM hoists only pure ops; no pass moves an op with an effect);
    /// * no op with a memory effect (loads, stores, atomics, prints, asserts, calls,
    ///   shared-memory ops) is reordered with it: passes keep the relative order of ops
    ///   with effects, and a pass that moves a load (LICM of loads, say) must treat a
    ///   record as the write it is declared to be. The software pipeliner keeps each
    ///   load's wait and read where the load was; the prefetch it creates for a later
    ///   iteration is a new op, placed where the unscoped schedule puts it, so records do
    ///   not change the schedule they measure (trident-gpu's `passes/pipeline.rs`);
    /// * pure ops (`dot` included: its `Effect` is `Pure`) are placed by their data
    ///   dependences exactly as without records: LICM may hoist a loop-invariant pure op
    ///   out of a body that holds records, CSE may merge pure ops of two regions,
    ///   canonicalize may fold them. Deliberate: instrumentation must not change the
    ///   optimised program, so a region measures the code the uninstrumented kernel runs
    ///   there (this is also what Proton's record op, a read and write of memory, allows);
    /// * whole regions may still be restructured: canonicalize replaces an `if` with a
    ///   known condition by its taken region and a one-trip `for` by its body (records
    ///   and all), and drops a zero-trip `for` (its records never run). Inlining copies a
    ///   callee's records into each caller.
    ///
    /// So the only difference records make to an optimised tile IR is that a loop or `if`
    /// whose only effect is a record is not deleted.
    ///
    /// **Verifier rules.** No operands or results; a non-empty name; records sit in a
    /// function body or a `for`/`if`/`while` region (not in a reduction's combine region);
    /// and in every block they nest: an end closes the innermost open start of the same
    /// name and kind in that block, and no start is left open at the block's end. So a
    /// region is balanced on every path through structured control flow.
    Record { name: String, end: bool, kind: RegionKind },

    // ---- control flow and calls ----
    /// `[lb, ub, step, init...]` → one result per init. Region: block args `(iv, iter...)`, ends in `yield`.
    For,
    /// `[cond: i1 scalar]` → results. Regions: then, else (each ends in `yield` of the results).
    If,
    /// `[init...]` → results. Region 0 (before): args like init, ends in `condition`;
    /// region 1 (after): args like `condition`'s forwarded values, ends in `yield` of the next inits.
    While,
    /// Terminator of `for`/`if`/`while`-after/`reduce`/`scan` regions.
    Yield,
    /// `[cond, forwarded...]`: terminator of a `while`'s before region.
    Condition,
    /// `[args...]` → callee's results.
    Call { callee: String },
    /// `[values...]`: terminator of a function body.
    Return,

    // ---- GPU IR only (introduced by the GPU lowering; never in tile IR) ----
    /// `[x]` → the same values (same shape and element) in another layout.
    ConvertLayout,
    /// `[value?]` → a shared-memory buffer: a tensor type whose layout is a shared layout,
    /// initialised from `value` when given.
    LocalAlloc,
    /// `[buffer]` → the buffer's contents as a distributed tensor.
    LocalLoad,
    /// `[buffer, value]` → nothing; writes `value` into the buffer.
    LocalStore,
    /// `[buffer, index: i32]` → the `index`-th slice along dim 0 of a multi-buffered
    /// shared buffer (the result drops dim 0).
    MemDescIndex,
    /// `[buffer]` → the same bytes seen with dims permuted: result dim `i` is the buffer's dim
    /// `perm[i]`, its shared layout's `order` renamed to match (a transposed read of a tile,
    /// e.g. a `[N, K]` tile that feeds a dot as `[K, N]`; no data moves).
    MemDescTrans { perm: Vec<u32> },
    /// `[buffer, ptr, mask?, other?]` → nothing; copies from global memory into the
    /// buffer asynchronously (`cp.async`), masked-off elements get `other` (0 when absent).
    AsyncCopy,
    /// `[]` → nothing; closes the group of async copies issued since the last commit.
    AsyncCommitGroup,
    /// `[]` → nothing; waits until at most `pending` committed groups are in flight.
    AsyncWait { pending: u32 },
    /// `[]` → nothing; a CTA-wide barrier ordering shared-memory accesses.
    Barrier,
    /// `[base, shape × rank, strides × rank]` → `i64`: a tensor map (TMA descriptor) of the
    /// strided tensor at `base` (shape and strides in elements, i64 scalars, innermost last;
    /// the innermost stride is 1) copied in boxes of `block` elements, laid out in shared
    /// memory with `swizzle` (0, 32, 64 or 128: the span in bytes of TMA's swizzle pattern),
    /// out-of-bounds elements read as 0 (or NaN with `nan`). The value is the map's
    /// address; the map itself is built before the launch from the kernel's parameters, so
    /// every operand is a kernel parameter, a constant, or a conversion of one.
    TmaMap { block: Vec<u32>, swizzle: u32, nan: bool },
    /// `[map, buffer, barrier, offsets × rank, guard?]` → nothing: one thread copies the box
    /// of `map` at `offsets` (i32 element coordinates, innermost last) into `buffer` with the
    /// tensor-memory accelerator, completing the buffer's bytes as a transaction on `barrier`
    /// (a one-slot view of an `mbarrier_init`ed buffer); with an i1 `guard`, only when it is
    /// true. Asynchronous: the data is there once `mbarrier_wait` on `barrier` returns.
    /// A buffer `n` boxes wide (its innermost dimension `n` times the box's, the others
    /// equal) takes `n` boxes side by side: box `j` at innermost offset `+ j * box`, into the
    /// buffer's `j`-th `1/n` of bytes (rows wider than a swizzle span; `trident_gpu::machine::tma`).
    TmaCopy,
    /// `[map, buffer, offsets × rank]` → nothing: the box in `buffer` (laid out as `map`
    /// describes) is copied to global memory at `offsets` by one thread with the
    /// tensor-memory accelerator; elements outside the tensor's bounds are not written.
    /// Synchronous for the CTA as far as the buffer goes: its lowering publishes every
    /// thread's writes of `buffer` to the copy (proxy fence and CTA barrier) and returns once
    /// the copy has read the buffer, so a later write of it only needs the usual barrier.
    /// The global writes complete asynchronously, before the kernel ends. Marked
    /// `store_read_deferred`, it returns without waiting for the read: the buffer may be
    /// written again only after a `tma_store_wait` on it.
    TmaStore,
    /// `[buffer]` → nothing: the thread that issued the `tma_store`s of `buffer` waits until
    /// they have read it, then a CTA barrier — after it every thread may write the buffer.
    /// What a `store_read_deferred` store leaves to a later point (the next write of its box,
    /// the end of the loop holding it), so the store's read overlaps the work in between.
    TmaStoreWait,
    /// `[barriers]` → nothing: initialises every mbarrier of a `local_alloc`ed i64 buffer
    /// (`tensor<Nx1xi64>`, or `tensor<1xi64>` for one) to expect `count` arrivals. Once,
    /// before any use; every thread sees the initialised barriers after it. `primed`: the
    /// first `mbarrier_wait` on each slot returns at once (it waits for the phase before the
    /// first, which counts as complete) — the "slot is free" barriers of a producer, whose
    /// first round finds every slot empty.
    MbarrierInit { count: u32, primed: bool },
    /// `[barrier]` → nothing: waits until the barrier's current phase completes. Each wait on
    /// a barrier waits for the next phase (the lowering keeps every barrier's parity).
    MbarrierWait,
    /// `[barrier, guard?]` → nothing: every warp that executes it arrives once on the
    /// barrier (a one-slot view of an `mbarrier_init`ed buffer whose count is the number of
    /// warps that arrive per phase); with an i1 `guard`, only when it is true. The warp's
    /// earlier reads of shared memory are over when it arrives (a consumer telling a
    /// producer that a slot is free).
    MbarrierArrive,
    /// `[]` → nothing, two regions (no arguments, each ending in an empty `yield`): warp
    /// specialization. The CTA gets `producer_warps` more warps than the kernel's
    /// `num_warps`; the first `num_warps` run region 0 (the consumers: every layout of the
    /// kernel describes them), the added warps run region 1 (the producer: scalars,
    /// `tma_copy`, `mbarrier_wait`; no register tensors, no CTA barriers). The two talk
    /// only through mbarriers. Sits in the function's body, followed only by `return`: CTA
    /// barriers in region 0 and after the op synchronise the consumers alone (a named
    /// barrier), and those before it the whole CTA. With `producer_regs`/`consumer_regs`
    /// (both or neither; 0: absent), the producer warps give registers to the consumers
    /// (`setmaxnreg`: the producer's warpgroup keeps `producer_regs` per thread, each
    /// consumer warpgroup gets `consumer_regs`), and only the first producer warp runs
    /// region 1 (the others leave).
    WarpSpecialize { producer_warps: u32, producer_regs: u32, consumer_regs: u32 },
    /// `[]` → nothing: ping-pong between the two consumer warpgroups of a warp-specialized
    /// kernel (8 consumer warps). The calling warpgroup waits for its turn: until the other
    /// warpgroup has passed it one (`pingpong_pass`) since its previous wait. With `only`,
    /// executed by warpgroup `only` alone (the others skip it). Turns order the two
    /// warpgroups' warpgroup MMAs, FA3's schedule: one warpgroup's softmax runs while the
    /// other's MMAs hold the tensor cores.
    PingpongWait { only: Option<u32> },
    /// `[]` → nothing: the calling warpgroup passes the turn to the other one (it does not
    /// wait). With `only`, executed by warpgroup `only` alone.
    PingpongPass { only: Option<u32> },
}

/// The discardable attributes the IR knows (see [`crate::AttrMap`]), where they may appear,
/// and what they mean. All but `warp_specialize` (the author's request on a tile-IR loop)
/// are recorded by the GPU backend's passes on GPU IR and read by PTX emission.
///
/// ```text
/// kernel @k(%x: ptr<f32>) attributes {smem_total = 8192} {
///   %3 = convert_layout %2 {smem_offset = 0, smem_operand = true, smem_size = 8192} : tensor<64x64xf16, #L4>
/// ```
///
/// The verifier checks names, value kinds, that `smem_offset` and `smem_size` come together
/// inside the function's `smem_total`, and that a function with a shared-memory plan is GPU
/// IR (every tensor has a layout).
pub mod discardable {
    /// On an op of a kernel that uses shared memory (a `local_alloc` buffer, or scratch of a
    /// data-exchanging op): the byte offset of its bytes in the kernel's dynamic shared
    /// memory. Integer, non-negative.
    pub const SMEM_OFFSET: &str = "smem_offset";
    /// With `smem_offset`: how many bytes from there the op owns. Integer, positive.
    pub const SMEM_SIZE: &str = "smem_size";
    /// On a `convert_layout` or `local_load` into an operand of a Hopper warpgroup MMA: the
    /// op produces no registers; its tile stays in shared memory for the `dot` (its only
    /// user) to read. `true`.
    pub const SMEM_OPERAND: &str = "smem_operand";
    /// On a `barrier` in a loop of warpgroup MMAs: the last this many committed MMA groups
    /// may still run across it (they read no buffer it protects), so it waits only for the
    /// older ones (`wgmma.wait_group N` instead of 0) — the MMA of this iteration overlaps
    /// the refill of the slot the previous one read. Integer, non-negative.
    pub const WGMMA_IN_FLIGHT: &str = "wgmma_in_flight";
    /// On a `tma_store`: it does not wait for the copy to read its box; a `tma_store_wait`
    /// on the box comes before the box is written again and before the kernel ends. `true`.
    pub const STORE_READ_DEFERRED: &str = "store_read_deferred";
    /// On a `for` (tile IR, from `tl.range(..., warp_specialize=True)`): the author asks for
    /// warp specialization of the loop — on Hopper a producer warp feeds the loop's tensor
    /// cores through an mbarrier ring (`gpu-pipeline`); elsewhere, or where the loop does not
    /// fit, a hint without effect. `true`.
    pub const WARP_SPECIALIZE: &str = "warp_specialize";
    /// On a `for` (tile IR) that `split-loops` made or cut short: split already, not again.
    /// `true`.
    pub const LOOP_SPLIT: &str = "loop_split";
    /// On a kernel whose shared memory was planned: the bytes of dynamic shared memory it
    /// is launched with (every `smem_offset + smem_size` fits). Integer, non-negative.
    pub const SMEM_TOTAL: &str = "smem_total";
    /// Names allowed on ops.
    pub const OP_ATTRS: &[&str] =
        &[SMEM_OFFSET, SMEM_SIZE, SMEM_OPERAND, WGMMA_IN_FLIGHT, WARP_SPECIALIZE, STORE_READ_DEFERRED, LOOP_SPLIT];
    /// Names allowed on functions.
    pub const FUNCTION_ATTRS: &[&str] = &[SMEM_TOTAL];
}

/// What an op may do besides computing its results; decides what CSE, DCE and LICM may touch.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Effect {
    /// Result depends only on operands: may be merged, moved or deleted when unused.
    Pure,
    /// Reads memory: may be deleted when unused, not merged or moved across writes.
    Read,
    /// Writes memory, prints, traps or calls: never deleted, merged or reordered.
    Write,
}

fn ident(s: &str) -> Attr {
    Attr::Ident(s.to_string())
}

fn ints(v: &[u32]) -> Attr {
    Attr::Ints(v.iter().map(|&x| x as i64).collect())
}

/// Looks up attributes by key while parsing a kind, with helpful errors.
struct Attrs<'a> {
    op: &'a str,
    list: &'a [(String, Attr)],
}

impl Attrs<'_> {
    fn get(&self, key: &str) -> Result<&Attr, String> {
        self.list
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
            .ok_or_else(|| format!("op `{}` needs attribute `{key}`", self.op))
    }

    fn int(&self, key: &str) -> Result<i64, String> {
        self.get(key)?.as_int().ok_or_else(|| format!("attribute `{key}` of `{}` must be an integer", self.op))
    }

    fn bool_or(&self, key: &str, default: bool) -> Result<bool, String> {
        match self.list.iter().find(|(k, _)| k == key) {
            None => Ok(default),
            Some((_, v)) => {
                v.as_bool().ok_or_else(|| format!("attribute `{key}` of `{}` must be true or false", self.op))
            }
        }
    }

    fn string(&self, key: &str) -> Result<String, String> {
        self.get(key)?
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("attribute `{key}` of `{}` must be a string", self.op))
    }

    fn u32s(&self, key: &str) -> Result<Vec<u32>, String> {
        let v = self.get(key)?.as_ints().ok_or_else(|| format!("attribute `{key}` of `{}` must be a list", self.op))?;
        v.iter()
            .map(|&x| u32::try_from(x).map_err(|_| format!("attribute `{key}` of `{}`: {x} out of range", self.op)))
            .collect()
    }

    fn small(&self, key: &str, max: i64) -> Result<i64, String> {
        let v = self.int(key)?;
        if (0..=max).contains(&v) {
            Ok(v)
        } else {
            Err(format!("attribute `{key}` of `{}` must be in 0..={max}, got {v}", self.op))
        }
    }

    /// An enum attribute given as a bare word, with a default when absent.
    fn word<T>(&self, key: &str, parse: fn(&str) -> Option<T>, default: T) -> Result<T, String> {
        match self.list.iter().find(|(k, _)| k == key) {
            None => Ok(default),
            Some((_, v)) => {
                let s = v.as_ident().ok_or_else(|| format!("attribute `{key}` of `{}` must be a word", self.op))?;
                parse(s).ok_or_else(|| format!("unknown value `{s}` for attribute `{key}` of `{}`", self.op))
            }
        }
    }
}

/// Registers one operand of an `inline_asm` takes per group of `pack` elements of `bits` bits
/// each (Triton's rule: elements narrower than 32 bits share 32-bit registers, 4 int8s or 2
/// f16s to one; wider ones take a register each): `$N` placeholders and constraints count
/// these registers, the results' first.
pub fn inline_asm_registers(e: Elem, pack: u32) -> u32 {
    let per_reg = (32 / inline_asm_bits(e)).max(1);
    pack.max(1).div_ceil(per_reg)
}

/// Bits an element of `e` takes in an `inline_asm` register (pointers: 64).
pub fn inline_asm_bits(e: Elem) -> u32 {
    match e {
        Elem::Num(d) => d.bits().max(8),
        Elem::Ptr { .. } => 64,
    }
}

impl OpKind {
    /// The op's name in the text form. Elementwise families print as their operation
    /// (`add`, `exp`, `cmp` takes a `pred` attribute).
    pub fn name(&self) -> &'static str {
        use OpKind::*;
        match self {
            Constant(_) => "constant",
            Arange { .. } => "arange",
            ProgramId { .. } => "program_id",
            NumPrograms { .. } => "num_programs",
            Splat => "splat",
            Broadcast => "broadcast",
            ExpandDims { .. } => "expand_dims",
            Reshape { .. } => "reshape",
            Trans { .. } => "trans",
            Join => "join",
            Split => "split",
            Cat => "cat",
            Gather { .. } => "gather",
            InlineAsm { .. } => "inline_asm",
            Binary(op) => op.name(),
            Unary(op) => op.name(),
            Cmp(_) => "cmp",
            Select => "select",
            Fma => "fma",
            Cast { .. } => "cast",
            AddPtr => "addptr",
            Load { .. } => "load",
            DescLoad { .. } => "desc_load",
            DescStore { .. } => "desc_store",
            Store { .. } => "store",
            AtomicRmw { .. } => "atomic_rmw",
            AtomicCas { .. } => "atomic_cas",
            Dot { .. } => "dot",
            Reduce { .. } => "reduce",
            Scan { .. } => "scan",
            MultipleOf { .. } => "multiple_of",
            MaxContiguous { .. } => "max_contiguous",
            MaxConstancy { .. } => "max_constancy",
            Assume => "assume",
            Print { .. } => "print",
            Assert { .. } => "assert",
            Record { .. } => "record",
            For => "for",
            If => "if",
            While => "while",
            Yield => "yield",
            Condition => "condition",
            Call { .. } => "call",
            Return => "return",
            ConvertLayout => "convert_layout",
            LocalAlloc => "local_alloc",
            LocalLoad => "local_load",
            LocalStore => "local_store",
            MemDescIndex => "memdesc_index",
            MemDescTrans { .. } => "memdesc_trans",
            TmaMap { .. } => "tma_map",
            TmaCopy => "tma_copy",
            TmaStore => "tma_store",
            TmaStoreWait => "tma_store_wait",
            MbarrierInit { .. } => "mbarrier_init",
            MbarrierWait => "mbarrier_wait",
            MbarrierArrive => "mbarrier_arrive",
            WarpSpecialize { .. } => "warp_specialize",
            PingpongWait { .. } => "pingpong_wait",
            PingpongPass { .. } => "pingpong_pass",
            AsyncCopy => "async_copy",
            AsyncCommitGroup => "async_commit_group",
            AsyncWait { .. } => "async_wait",
            Barrier => "barrier",
        }
    }

    /// The op's parameters as `key = value` pairs (defaults omitted where noted in `from_parts`).
    pub fn attrs(&self) -> Vec<(&'static str, Attr)> {
        use OpKind::*;
        match self {
            Constant(c) => vec![(
                "value",
                match *c {
                    Const::Int(v) => Attr::Int(v),
                    Const::Float(v) => Attr::Float(v),
                    Const::Bool(v) => Attr::Bool(v),
                },
            )],
            Arange { start, end } => vec![("start", Attr::Int(*start as i64)), ("end", Attr::Int(*end as i64))],
            ProgramId { axis } | NumPrograms { axis } => vec![("axis", Attr::Int(*axis as i64))],
            ExpandDims { axis } | Gather { axis } => vec![("axis", Attr::Int(*axis as i64))],
            Reshape { can_reorder } => {
                if *can_reorder {
                    vec![("can_reorder", Attr::Bool(true))]
                } else {
                    vec![]
                }
            }
            Trans { perm } | MemDescTrans { perm } => vec![("perm", ints(perm))],
            Cmp(p) => vec![("pred", ident(p.name()))],
            Cast { kind, rounding } => {
                let mut v = vec![("kind", ident(kind.name()))];
                if *rounding != Rounding::Rtne {
                    v.push(("rounding", ident(rounding.name())));
                }
                v
            }
            Load { cache, evict, volatile } => {
                let mut v = vec![];
                if *cache != CacheModifier::None {
                    v.push(("cache", ident(cache.name())));
                }
                if *evict != EvictionPolicy::Normal {
                    v.push(("evict", ident(evict.name())));
                }
                if *volatile {
                    v.push(("volatile", Attr::Bool(true)));
                }
                v
            }
            DescLoad { rank } | DescStore { rank } => vec![("rank", Attr::Int(*rank as i64))],
            Store { cache, evict } => {
                let mut v = vec![];
                if *cache != CacheModifier::None {
                    v.push(("cache", ident(cache.name())));
                }
                if *evict != EvictionPolicy::Normal {
                    v.push(("evict", ident(evict.name())));
                }
                v
            }
            AtomicRmw { op, sem, scope } => {
                vec![("op", ident(op.name())), ("sem", ident(sem.name())), ("scope", ident(scope.name()))]
            }
            AtomicCas { sem, scope } => vec![("sem", ident(sem.name())), ("scope", ident(scope.name()))],
            Dot { precision, max_num_imprecise_acc } => {
                let mut v = vec![("precision", ident(precision.name()))];
                if *max_num_imprecise_acc != 0 {
                    v.push(("max_num_imprecise_acc", Attr::Int(*max_num_imprecise_acc as i64)));
                }
                v
            }
            Reduce { axis } => vec![("axis", Attr::Int(*axis as i64))],
            Scan { axis, reverse } => vec![("axis", Attr::Int(*axis as i64)), ("reverse", Attr::Bool(*reverse))],
            MultipleOf { values } | MaxContiguous { values } | MaxConstancy { values } => {
                vec![("values", ints(values))]
            }
            Print { prefix, hex } => vec![("prefix", Attr::Str(prefix.clone())), ("hex", Attr::Bool(*hex))],
            Assert { msg } => vec![("msg", Attr::Str(msg.clone()))],
            InlineAsm { asm, constraints, pure, pack } => vec![
                ("asm", Attr::Str(asm.clone())),
                ("constraints", Attr::Str(constraints.clone())),
                ("pure", Attr::Bool(*pure)),
                ("pack", Attr::Int(*pack as i64)),
            ],
            Record { name, end, kind } => {
                vec![("name", Attr::Str(name.clone())), ("end", Attr::Bool(*end)), ("kind", ident(kind.name()))]
            }
            Call { callee } => vec![("callee", Attr::Str(callee.clone()))],
            AsyncWait { pending } => vec![("pending", Attr::Int(*pending as i64))],
            Splat | Broadcast | Join | Split | Cat | Binary(_) | Unary(_) | Select | Fma | AddPtr | Assume | For
            | If | While | Yield | Condition | Return => vec![],
            TmaMap { block, swizzle, nan } => {
                let mut v = vec![("block", ints(block)), ("swizzle", Attr::Int(*swizzle as i64))];
                if *nan {
                    v.push(("nan", Attr::Bool(true)));
                }
                v
            }
            MbarrierInit { count, primed } => {
                let mut v = vec![("count", Attr::Int(*count as i64))];
                if *primed {
                    v.push(("primed", Attr::Bool(true)));
                }
                v
            }
            WarpSpecialize { producer_warps, producer_regs, consumer_regs } => {
                let mut v = vec![("producer_warps", Attr::Int(*producer_warps as i64))];
                if *producer_regs > 0 {
                    v.push(("producer_regs", Attr::Int(*producer_regs as i64)));
                    v.push(("consumer_regs", Attr::Int(*consumer_regs as i64)));
                }
                v
            }
            PingpongWait { only } | PingpongPass { only } => {
                only.iter().map(|&w| ("only", Attr::Int(w as i64))).collect()
            }
            ConvertLayout | LocalAlloc | LocalLoad | LocalStore | MemDescIndex | AsyncCopy | AsyncCommitGroup
            | Barrier | TmaCopy | TmaStore | TmaStoreWait | MbarrierWait | MbarrierArrive => vec![],
        }
    }

    /// Parses a kind back from its text name and attributes.
    pub fn from_parts(name: &str, list: &[(String, Attr)]) -> Result<OpKind, String> {
        use OpKind::*;
        let a = Attrs { op: name, list };
        let sem = |a: &Attrs| a.word("sem", MemSem::from_name, MemSem::AcqRel);
        let scope = |a: &Attrs| a.word("scope", MemScope::from_name, MemScope::Gpu);
        Ok(match name {
            "constant" => Constant(match a.get("value")? {
                Attr::Int(v) => Const::Int(*v),
                Attr::Float(v) => Const::Float(*v),
                Attr::Bool(v) => Const::Bool(*v),
                other => return Err(format!("constant value must be a number or bool, got {other}")),
            }),
            "arange" => Arange {
                start: i32::try_from(a.int("start")?).map_err(|e| e.to_string())?,
                end: i32::try_from(a.int("end")?).map_err(|e| e.to_string())?,
            },
            "program_id" => ProgramId { axis: a.small("axis", 2)? as u8 },
            "num_programs" => NumPrograms { axis: a.small("axis", 2)? as u8 },
            "splat" => Splat,
            "broadcast" => Broadcast,
            "expand_dims" => ExpandDims { axis: a.small("axis", 63)? as u32 },
            "reshape" => Reshape { can_reorder: a.bool_or("can_reorder", false)? },
            "trans" => Trans { perm: a.u32s("perm")? },
            "join" => Join,
            "split" => Split,
            "cat" => Cat,
            "gather" => Gather { axis: a.small("axis", 63)? as u32 },
            "inline_asm" => InlineAsm {
                asm: a.string("asm")?,
                constraints: a.string("constraints")?,
                pure: a.bool_or("pure", false)?,
                pack: a.small("pack", 64)?.max(1) as u32,
            },
            "cmp" => Cmp(a.word("pred", CmpPred::from_name, CmpPred::Eq).and_then(|p| {
                a.get("pred")?;
                Ok(p)
            })?),
            "select" => Select,
            "fma" => Fma,
            "cast" => Cast {
                kind: a.word("kind", CastKind::from_name, CastKind::Convert)?,
                rounding: a.word("rounding", Rounding::from_name, Rounding::Rtne)?,
            },
            "addptr" => AddPtr,
            "load" => Load {
                cache: a.word("cache", CacheModifier::from_name, CacheModifier::None)?,
                evict: a.word("evict", EvictionPolicy::from_name, EvictionPolicy::Normal)?,
                volatile: a.bool_or("volatile", false)?,
            },
            "desc_load" => {
                let rank = a.int("rank")?;
                if !(1..=5).contains(&rank) {
                    return Err(format!("attribute `rank` of `desc_load` must be 1 to 5, not {rank}"));
                }
                DescLoad { rank: rank as u32 }
            }
            "desc_store" => {
                let rank = a.int("rank")?;
                if !(1..=5).contains(&rank) {
                    return Err(format!("attribute `rank` of `desc_store` must be 1 to 5, not {rank}"));
                }
                DescStore { rank: rank as u32 }
            }
            "store" => Store {
                cache: a.word("cache", CacheModifier::from_name, CacheModifier::None)?,
                evict: a.word("evict", EvictionPolicy::from_name, EvictionPolicy::Normal)?,
            },
            "atomic_rmw" => AtomicRmw {
                op: a.word("op", RmwOp::from_name, RmwOp::Add).and_then(|o| {
                    a.get("op")?;
                    Ok(o)
                })?,
                sem: sem(&a)?,
                scope: scope(&a)?,
            },
            "atomic_cas" => AtomicCas { sem: sem(&a)?, scope: scope(&a)? },
            "dot" => Dot {
                precision: a.word("precision", InputPrecision::from_name, InputPrecision::Tf32)?,
                max_num_imprecise_acc: match a.list.iter().find(|(k, _)| k == "max_num_imprecise_acc") {
                    None => 0,
                    Some(_) => a.small("max_num_imprecise_acc", u32::MAX as i64)? as u32,
                },
            },
            "reduce" => Reduce { axis: a.small("axis", 63)? as u32 },
            "scan" => Scan { axis: a.small("axis", 63)? as u32, reverse: a.bool_or("reverse", false)? },
            "multiple_of" => MultipleOf { values: a.u32s("values")? },
            "max_contiguous" => MaxContiguous { values: a.u32s("values")? },
            "max_constancy" => MaxConstancy { values: a.u32s("values")? },
            "assume" => Assume,
            "print" => Print { prefix: a.string("prefix")?, hex: a.bool_or("hex", false)? },
            "assert" => Assert { msg: a.string("msg")? },
            "record" => Record {
                name: a.string("name")?,
                end: match a.get("end")?.as_bool() {
                    Some(b) => b,
                    None => return Err("attribute `end` of `record` must be true or false".into()),
                },
                kind: a.word("kind", RegionKind::from_name, RegionKind::Scope)?,
            },
            "for" => For,
            "if" => If,
            "while" => While,
            "yield" => Yield,
            "condition" => Condition,
            "call" => Call { callee: a.string("callee")? },
            "return" => Return,
            "convert_layout" => ConvertLayout,
            "local_alloc" => LocalAlloc,
            "local_load" => LocalLoad,
            "local_store" => LocalStore,
            "memdesc_index" => MemDescIndex,
            "memdesc_trans" => MemDescTrans { perm: a.u32s("perm")? },
            "tma_map" => {
                let swizzle = a.int("swizzle")?;
                if ![0, 32, 64, 128].contains(&swizzle) {
                    return Err(format!("attribute `swizzle` of `tma_map` must be 0, 32, 64 or 128, not {swizzle}"));
                }
                TmaMap { block: a.u32s("block")?, swizzle: swizzle as u32, nan: a.bool_or("nan", false)? }
            }
            "tma_copy" => TmaCopy,
            "tma_store" => TmaStore,
            "tma_store_wait" => TmaStoreWait,
            "mbarrier_init" => {
                let count = a.int("count")?;
                if !(1..=1 << 20).contains(&count) {
                    return Err(format!("attribute `count` of `mbarrier_init` must be 1 to 2^20, not {count}"));
                }
                MbarrierInit { count: count as u32, primed: a.bool_or("primed", false)? }
            }
            "mbarrier_wait" => MbarrierWait,
            "mbarrier_arrive" => MbarrierArrive,
            "warp_specialize" => {
                let n = a.int("producer_warps")?;
                if !(1..=28).contains(&n) {
                    return Err(format!("attribute `producer_warps` of `warp_specialize` must be 1 to 28, not {n}"));
                }
                let regs = |key: &str| -> Result<u32, String> {
                    if !a.list.iter().any(|(k, _)| k == key) {
                        return Ok(0);
                    }
                    let r = a.int(key)?;
                    if !(24..=256).contains(&r) || r % 8 != 0 {
                        return Err(format!(
                            "attribute `{key}` of `warp_specialize` must be a multiple of 8 in [24, 256], not {r}"
                        ));
                    }
                    Ok(r as u32)
                };
                let (producer_regs, consumer_regs) = (regs("producer_regs")?, regs("consumer_regs")?);
                if (producer_regs == 0) != (consumer_regs == 0) {
                    return Err("`warp_specialize` takes both `producer_regs` and `consumer_regs`, or neither".into());
                }
                WarpSpecialize { producer_warps: n as u32, producer_regs, consumer_regs }
            }
            "pingpong_wait" | "pingpong_pass" => {
                let only = match a.list.iter().any(|(k, _)| k == "only") {
                    true => Some(a.small("only", 1)? as u32),
                    false => None,
                };
                if name == "pingpong_wait" {
                    PingpongWait { only }
                } else {
                    PingpongPass { only }
                }
            }
            "async_copy" => AsyncCopy,
            "async_commit_group" => AsyncCommitGroup,
            "async_wait" => AsyncWait { pending: a.small("pending", u32::MAX as i64)? as u32 },
            "barrier" => Barrier,
            other => {
                if let Some(op) = BinaryOp::from_name(other) {
                    Binary(op)
                } else if let Some(op) = UnaryOp::from_name(other) {
                    Unary(op)
                } else {
                    return Err(format!("unknown op `{other}`"));
                }
            }
        })
    }

    pub fn effect(&self) -> Effect {
        use OpKind::*;
        match self {
            Load { volatile: false, .. } | DescLoad { .. } => Effect::Read,
            Load { volatile: true, .. }
            | Store { .. }
            | DescStore { .. }
            | AtomicRmw { .. }
            | AtomicCas { .. }
            | Print { .. }
            | Assert { .. }
            | InlineAsm { pure: false, .. }
            // A profiling marker: ordered with every other effect, never deleted (see `Record`).
            | Record { .. }
            | Assume
            | Call { .. }
            | Yield
            | Condition
            | Return => Effect::Write,
            // Shared-memory buffers have identity (two allocs are never one) and ordering.
            LocalAlloc | LocalStore | AsyncCopy | AsyncCommitGroup | AsyncWait { .. } | Barrier => Effect::Write,
            // The copy writes shared memory and arrives on a barrier; the wait orders what follows.
            TmaCopy | TmaStore | TmaStoreWait | MbarrierInit { .. } | MbarrierWait | MbarrierArrive => {
                Effect::Write
            }
            // Warps wait: ordered with everything else.
            PingpongWait { .. } | PingpongPass { .. } => Effect::Write,
            LocalLoad => Effect::Read,
            // Structured control flow is as effectful as what its regions hold; passes look inside.
            For | If | While | WarpSpecialize { .. } => Effect::Write,
            _ => Effect::Pure,
        }
    }

    pub fn is_terminator(&self) -> bool {
        matches!(self, OpKind::Yield | OpKind::Condition | OpKind::Return)
    }

    /// Number of regions an op of this kind has.
    pub fn num_regions(&self) -> usize {
        match self {
            OpKind::For | OpKind::Reduce { .. } | OpKind::Scan { .. } => 1,
            OpKind::If | OpKind::While | OpKind::WarpSpecialize { .. } => 2,
            _ => 0,
        }
    }

    /// Elementwise ops apply the same scalar function at every index of their (same-shape) operands.
    pub fn is_elementwise(&self) -> bool {
        use OpKind::*;
        matches!(self, Binary(_) | Unary(_) | Cmp(_) | Select | Fma | Cast { .. } | AddPtr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(k: OpKind) {
        let attrs: Vec<(String, Attr)> = k.attrs().into_iter().map(|(a, b)| (a.to_string(), b)).collect();
        assert_eq!(OpKind::from_parts(k.name(), &attrs).unwrap(), k);
    }

    #[test]
    fn kinds_round_trip_through_name_and_attrs() {
        for &op in BinaryOp::ALL {
            round_trip(OpKind::Binary(op));
        }
        for &op in UnaryOp::ALL {
            round_trip(OpKind::Unary(op));
        }
        for &p in CmpPred::ALL {
            round_trip(OpKind::Cmp(p));
        }
        round_trip(OpKind::Constant(Const::Float(-0.0)));
        round_trip(OpKind::Constant(Const::Int(-7)));
        round_trip(OpKind::Load { cache: CacheModifier::Cg, evict: EvictionPolicy::Last, volatile: true });
        round_trip(OpKind::DescLoad { rank: 2 });
        round_trip(OpKind::TmaMap { block: vec![64, 32], swizzle: 64, nan: true });
        round_trip(OpKind::TmaMap { block: vec![16], swizzle: 0, nan: false });
        round_trip(OpKind::TmaCopy);
        round_trip(OpKind::DescStore { rank: 3 });
        round_trip(OpKind::TmaStore);
        round_trip(OpKind::TmaStoreWait);
        round_trip(OpKind::MbarrierInit { count: 1, primed: false });
        round_trip(OpKind::MbarrierInit { count: 4, primed: true });
        round_trip(OpKind::MbarrierWait);
        round_trip(OpKind::MbarrierArrive);
        round_trip(OpKind::WarpSpecialize { producer_warps: 1, producer_regs: 0, consumer_regs: 0 });
        round_trip(OpKind::WarpSpecialize { producer_warps: 4, producer_regs: 40, consumer_regs: 232 });
        round_trip(OpKind::PingpongWait { only: None });
        round_trip(OpKind::PingpongWait { only: Some(0) });
        round_trip(OpKind::PingpongPass { only: Some(1) });
        round_trip(OpKind::PingpongPass { only: None });
        round_trip(OpKind::AtomicRmw { op: RmwOp::Xchg, sem: MemSem::Relaxed, scope: MemScope::Cta });
        round_trip(OpKind::Dot { precision: InputPrecision::Ieee, max_num_imprecise_acc: 32 });
        round_trip(OpKind::Trans { perm: vec![1, 0, 2] });
        round_trip(OpKind::Gather { axis: 1 });
        round_trip(OpKind::InlineAsm {
            asm: "{ .reg .b32 t;\n mul.lo.u32 $0, $1, 3; }".into(),
            constraints: "=r,r".into(),
            pure: true,
            pack: 1,
        });
        round_trip(OpKind::InlineAsm {
            asm: "and.b32 $0, $1, 31;".into(),
            constraints: "=r,r".into(),
            pure: false,
            pack: 4,
        });
        round_trip(OpKind::MemDescTrans { perm: vec![1, 0] });
        round_trip(OpKind::Cast { kind: CastKind::Convert, rounding: Rounding::Rtz });
        round_trip(OpKind::Print { prefix: "x = \"".into(), hex: true });
        round_trip(OpKind::Scan { axis: 1, reverse: true });
        round_trip(OpKind::ConvertLayout);
        round_trip(OpKind::AsyncWait { pending: 2 });
        round_trip(OpKind::Barrier);
        round_trip(OpKind::LocalAlloc);
        for &kind in RegionKind::ALL {
            round_trip(OpKind::Record { name: "qk \"x\"".into(), end: true, kind });
        }
        round_trip(OpKind::Record { name: "loop@k.py:3".into(), end: false, kind: RegionKind::Loop });
    }

    #[test]
    fn record_attrs() {
        let r = |attrs: &[(&str, Attr)]| {
            let list: Vec<(String, Attr)> = attrs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
            OpKind::from_parts("record", &list)
        };
        let name = ("name", Attr::Str("a".into()));
        // `kind` defaults to `scope`; `name` and `end` are required.
        assert_eq!(
            r(&[name.clone(), ("end", Attr::Bool(false))]).unwrap(),
            OpKind::Record { name: "a".into(), end: false, kind: RegionKind::Scope }
        );
        assert!(r(std::slice::from_ref(&name)).is_err());
        assert!(r(&[("end", Attr::Bool(true))]).is_err());
        assert!(r(&[name.clone(), ("end", Attr::Int(1))]).is_err());
        assert!(r(&[name, ("end", Attr::Bool(true)), ("kind", Attr::Ident("warp".into()))]).is_err());
        assert_eq!(OpKind::Record { name: "a".into(), end: false, kind: RegionKind::Dot }.effect(), Effect::Write);
    }

    #[test]
    fn bad_attrs_are_errors() {
        assert!(OpKind::from_parts("cmp", &[]).is_err());
        assert!(OpKind::from_parts("program_id", &[("axis".into(), Attr::Int(3))]).is_err());
        assert!(OpKind::from_parts("frobnicate", &[]).is_err());
    }
}
