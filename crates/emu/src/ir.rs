//! The pre-decoded form of a PTX module: what the parser produces and the executor runs.
//!
//! Every instruction is resolved once at parse time: registers become indices into the
//! frame's register file, symbols become addresses, labels become instruction indices,
//! and opcode modifiers become small enums. Nothing is looked up by name while running.

/// Scalar and packed types of PTX (`.b32`, `.f16x2`, `.e4m3x2`, ...).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Ty {
    B8,
    B16,
    B32,
    B64,
    B128,
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
    F16,
    F16x2,
    BF16,
    BF16x2,
    TF32,
    F32,
    F64,
    Pred,
    E4M3,
    E5M2,
    E4M3x2,
    E5M2x2,
}

impl Ty {
    pub fn parse(s: &str) -> Option<Ty> {
        use Ty::*;
        Some(match s {
            "b8" => B8,
            "b16" => B16,
            "b32" => B32,
            "b64" => B64,
            "b128" => B128,
            "u8" => U8,
            "u16" => U16,
            "u32" => U32,
            "u64" => U64,
            "s8" => S8,
            "s16" => S16,
            "s32" => S32,
            "s64" => S64,
            "f16" => F16,
            "f16x2" => F16x2,
            "bf16" => BF16,
            "bf16x2" => BF16x2,
            "tf32" => TF32,
            "f32" => F32,
            "f64" => F64,
            "pred" => Pred,
            "e4m3" => E4M3,
            "e5m2" => E5M2,
            "e4m3x2" => E4M3x2,
            "e5m2x2" => E5M2x2,
            _ => return None,
        })
    }

    pub fn bits(self) -> u32 {
        use Ty::*;
        match self {
            Pred => 1,
            B8 | U8 | S8 | E4M3 | E5M2 => 8,
            B16 | U16 | S16 | F16 | BF16 | E4M3x2 | E5M2x2 => 16,
            B32 | U32 | S32 | F16x2 | BF16x2 | TF32 | F32 => 32,
            B64 | U64 | S64 | F64 => 64,
            B128 => 128,
        }
    }

    pub fn bytes(self) -> u32 {
        self.bits().div_ceil(8)
    }

    pub fn is_signed(self) -> bool {
        matches!(self, Ty::S8 | Ty::S16 | Ty::S32 | Ty::S64)
    }

    pub fn is_float(self) -> bool {
        use Ty::*;
        matches!(self, F16 | F16x2 | BF16 | BF16x2 | TF32 | F32 | F64 | E4M3 | E5M2 | E4M3x2 | E5M2x2)
    }

    /// All-ones mask of this type's width (u64::MAX for 64 bits and wider).
    pub fn mask(self) -> u64 {
        let b = self.bits();
        if b >= 64 {
            u64::MAX
        } else {
            (1u64 << b) - 1
        }
    }
}

/// State spaces.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Space {
    Generic,
    Global,
    Shared,
    Local,
    Const,
    /// Kernel parameters (uniform, read-only).
    Param,
}

/// Rounding modifiers (`.rn`, `.rz`, `.rm`, `.rp`, `.rna`; the `i` forms round to integers).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum Rnd {
    #[default]
    None,
    Rn,
    Rz,
    Rm,
    Rp,
    Rna,
    Rni,
    Rzi,
    Rmi,
    Rpi,
}

impl Rnd {
    /// The float rounding direction (integer-rounding forms map to their direction).
    pub fn dir(self) -> Rnd {
        match self {
            Rnd::Rni => Rnd::Rn,
            Rnd::Rzi => Rnd::Rz,
            Rnd::Rmi => Rnd::Rm,
            Rnd::Rpi => Rnd::Rp,
            Rnd::None => Rnd::Rn,
            r => r,
        }
    }

    pub fn is_int(self) -> bool {
        matches!(self, Rnd::Rni | Rnd::Rzi | Rnd::Rmi | Rnd::Rpi)
    }
}

/// Comparison operators of `setp`/`set`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Lo,
    Ls,
    Hi,
    Hs,
    Equ,
    Neu,
    Ltu,
    Leu,
    Gtu,
    Geu,
    Num,
    Nan,
}

/// Boolean combining operators (`setp.lt.and`, `and.pred`-style, vote modes, bar.red).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BoolOp {
    And,
    Or,
    Xor,
}

/// Arithmetic variants of `mul`/`mad`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum MulMode {
    #[default]
    Lo,
    Hi,
    Wide,
}

/// Operations of `atom`/`red`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AtomOp {
    Add,
    Min,
    Max,
    Exch,
    Cas,
    And,
    Or,
    Xor,
    Inc,
    Dec,
}

/// `shfl.sync` modes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ShflMode {
    Up,
    Down,
    Bfly,
    Idx,
}

/// `vote.sync` modes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum VoteMode {
    All,
    Any,
    Uni,
    Ballot,
}

/// Special (read-only) registers.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Sreg {
    Tid(u8),
    Ntid(u8),
    Ctaid(u8),
    Nctaid(u8),
    LaneId,
    WarpId,
    NWarpId,
    SmId,
    NSmId,
    GridId,
    Clock,
    Clock64,
    GlobalTimer,
    DynSmem,
    TotalSmem,
    LaneMaskEq,
    LaneMaskLt,
    LaneMaskLe,
    LaneMaskGt,
    LaneMaskGe,
    /// Cluster registers: the emulator launches every CTA as a cluster of one.
    ClusterCtaid(u8),
    ClusterNctaid(u8),
    ClusterId(u8),
    NClusterId(u8),
    ClusterCtaRank,
    ClusterNctaRank,
    IsExplicitCluster,
}

/// Operations of `mbarrier.*` (see `exec::mbarrier`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MbarOp {
    Init,
    Arrive,
    ArriveDrop,
    ExpectTx,
    CompleteTx,
    TestWait,
    TryWait,
    Inval,
    PendingCount,
}

/// The field `tensormap.replace.tile.<field>` writes (see `crate::tensormap`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TmapField {
    GlobalAddress,
    Rank,
    BoxDim,
    GlobalDim,
    GlobalStride,
    ElementStride,
    ElemType,
    Interleave,
    SwizzleMode,
    SwizzleAtomicity,
    FillMode,
}

/// Where an address operand starts.
#[derive(Clone, Debug, PartialEq)]
pub enum AddrBase {
    Reg(u32),
    /// An absolute address (a symbol already resolved, or a literal).
    Abs(u64),
}

/// An instruction operand, resolved.
#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    Reg(u32),
    /// Immediate bits (already in the instruction type's encoding for float immediates).
    Imm(u64),
    Sreg(Sreg),
    /// `{a, b, ...}` vector of operands.
    Vec(Vec<Operand>),
    /// `[base + offset]`.
    Addr(AddrBase, i64),
    /// `!%p` (negated predicate source).
    NotReg(u32),
    /// `_` (discarded destination).
    Sink,
    /// A branch target, call target, or other label: an instruction index or function index.
    Target(u32),
    /// `(a, b)` list of call arguments: local-memory offsets of the `.param` variables.
    ParamList(Vec<ParamRef>),
}

/// A `.param` variable of a function body, as a call passes it.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamRef {
    pub offset: u32,
    pub size: u32,
}

/// Everything one opcode's modifiers can say. Only the fields the opcode uses are meaningful.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Mods {
    pub rnd: Rnd,
    pub ftz: bool,
    pub sat: bool,
    pub approx: bool,
    pub full: bool,
    pub nan: bool,
    pub relu: bool,
    pub uni: bool,
    pub cc: bool,
    pub mul: MulMode,
    pub cmp: Option<Cmp>,
    pub boolop: Option<BoolOp>,
    pub space: Option<Space>,
    /// Vector width of `ld/st` (`.v2`, `.v4`), 1 otherwise.
    pub vec: u8,
    pub atom: Option<AtomOp>,
    pub shfl: Option<ShflMode>,
    pub vote: Option<VoteMode>,
    /// `.trans` of ldmatrix/stmatrix, `.x1/.x2/.x4` count, `.left/.right`, `.wrap/.clamp`.
    pub trans: bool,
    pub count: u8,
    pub left: bool,
    pub clamp: bool,
    /// mma/wgmma shape (m, n, k) and layouts (A row-major, B col-major).
    pub shape: (u16, u16, u16),
    pub arow: bool,
    pub bcol: bool,
    /// `cp.async.ca` vs `.cg`: accepted, no semantic difference here.
    pub satfinite: bool,
    pub arrive: bool,
    pub red: bool,
    /// `bar.*` and `barrier.*.aligned`: every thread of the warp must execute the same
    /// barrier instruction (`barrier.*` without `.aligned` may be reached divergently).
    pub aligned: bool,
    pub all: bool,
    /// `cvta.to`: generic → state space (otherwise state space → generic).
    pub to: bool,
    /// `shfl`/`vote`/... written without `.sync` (no member mask operand).
    pub nosync: bool,
    /// `.L2::cache_hint`: the instruction carries an extra cache-policy operand.
    pub cache_hint: bool,
    /// `cp.async` with an `ignore-src` predicate operand (true: zero-fill, read nothing).
    pub ignore_src: bool,
    /// `mbarrier.*`: which operation; `.expect_tx` on an arrive; `.parity` on a wait.
    pub mbar: Option<MbarOp>,
    pub expect_tx: bool,
    pub parity: bool,
    /// `cp.async.bulk.wait_group.read`; `setmaxnreg.inc` (false: `.dec`).
    pub read: bool,
    pub inc: bool,
    /// `tensormap.replace`: the field it writes.
    pub tmap: Option<TmapField>,
}

/// Opcode families. The type and modifiers select the exact behaviour.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    Add,
    Sub,
    Mul,
    Mad,
    Mul24,
    Mad24,
    Fma,
    Div,
    Rem,
    Abs,
    Neg,
    Min,
    Max,
    Sad,
    Popc,
    Clz,
    Brev,
    Bfind,
    Bfe,
    Bfi,
    And,
    Or,
    Xor,
    Not,
    Cnot,
    Shl,
    Shr,
    Shf,
    Lop3,
    Prmt,
    Rcp,
    Sqrt,
    Rsqrt,
    Ex2,
    Lg2,
    Sin,
    Cos,
    Tanh,
    Copysign,
    Testp,
    Setp,
    Set,
    Selp,
    Slct,
    Cvt,
    Cvta,
    Mov,
    Ld,
    St,
    Atom,
    Red,
    CpAsync,
    CpAsyncCommit,
    CpAsyncWait,
    CpAsyncWaitAll,
    Ldmatrix,
    Stmatrix,
    Mma,
    /// `wgmma.mma_async` (warpgroup MMA, sm_90a).
    Wgmma,
    /// `wgmma.fence`: orders register writes before the warpgroup MMAs that read them.
    WgmmaFence,
    /// `wgmma.commit_group`.
    WgmmaCommit,
    /// `wgmma.wait_group N`.
    WgmmaWait,
    Shfl,
    Vote,
    Match,
    Activemask,
    Redux,
    Bar,
    BarWarp,
    Fence,
    Nanosleep,
    Prefetch,
    Bra,
    Call,
    Ret,
    Exit,
    Trap,
    /// A `//@trident.mark N` comment: records the warp's clock, costs nothing.
    Mark,
    /// `mbarrier.*` (the operation is `Mods::mbar`).
    Mbar,
    /// `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src], size, [mbar]`.
    BulkLoad,
    /// `cp.async.bulk.global.shared::cta.bulk_group [dst], [src], size`.
    BulkStore,
    BulkCommit,
    BulkWait,
    /// `setmaxnreg.{inc,dec}.sync.aligned.u32 N`.
    SetMaxNReg,
    /// `elect.sync d|p, membermask`.
    Elect,
    /// `barrier.cluster.arrive` (`Mods::arrive`) / `barrier.cluster.wait`.
    ClusterBar,
    /// `mapa`: the address of a variable in another CTA of the cluster (rank 0 only here).
    Mapa,
    /// `cp.async.bulk.tensor.Nd.shared::{cluster,cta}.global.tile.mbarrier::complete_tx::bytes
    /// [dst], [map, {coords}], [mbar]` (N in `Mods::count`).
    TensorLoad,
    /// `cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group [map, {coords}], [src]`.
    TensorStore,
    /// `prefetch{.param,.const}.tensormap [map]` (`Mods::count` 0) and
    /// `cp.async.bulk.prefetch.tensor.Nd.L2.global.tile [map, {coords}]` (count N): hints
    /// whose map address is checked.
    TensorPrefetch,
    /// `tensormap.replace.tile.<field>{.global,.shared::cta}.b1024.<type> [map], {ord,} value`.
    TmapReplace,
    /// `tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.<scope>.sync.aligned
    /// [dst], [src], 128`.
    TmapCopy,
}

/// One decoded instruction.
#[derive(Clone, Debug)]
pub struct Instr {
    pub kind: Kind,
    /// Guard predicate: register index and whether it is negated (`@!%p`).
    pub guard: Option<(u32, bool)>,
    /// The types named by the opcode, in order (`cvt.f32.f16` → [F32, F16]).
    pub tys: Vec<Ty>,
    pub m: Mods,
    pub ops: Vec<Operand>,
    /// 1-based source line.
    pub line: u32,
    /// Reconvergence point of a branch: the immediate post-dominator's first instruction,
    /// or `NO_PC` when the paths only meet at exit.
    pub reconv: u32,
    /// What the timing model needs to know about it (see `timing::class`).
    pub timing: crate::timing::class::InstrTiming,
}

/// "No instruction": reconvergence only at exit.
pub const NO_PC: u32 = u32::MAX;

impl Instr {
    pub fn ty(&self) -> Ty {
        self.tys.first().copied().unwrap_or(Ty::B32)
    }
}

/// A parameter of an entry or function.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamDecl {
    pub name: String,
    pub ty: Ty,
    pub size: u32,
    pub align: u32,
    /// Declared `.ptr` (Triton marks pointer arguments this way).
    pub is_ptr: bool,
    /// Byte offset: in the kernel parameter buffer (entries) or in local memory (functions).
    pub offset: u32,
}

/// An `.entry` or `.func`.
#[derive(Clone, Debug)]
pub struct Function {
    pub name: String,
    pub is_entry: bool,
    pub params: Vec<ParamDecl>,
    pub rets: Vec<ParamDecl>,
    pub nregs: u32,
    pub instrs: Vec<Instr>,
    /// Line of the declaration, for messages.
    #[allow(dead_code)]
    pub line: u32,
    /// Declared without a body (`.extern .func`), e.g. `vprintf`.
    pub external: bool,
}

/// A module-scope variable with initial bytes (`.global`, `.const`).
#[derive(Clone, Debug)]
pub struct GlobalVar {
    pub name: String,
    pub space: Space,
    pub data: Vec<u8>,
}
