//! How long a result takes: which instructions' results are fixed-latency (the stall counts
//! before a reader must cover them) and how many cycles, per architecture; which are
//! variable-latency (a scoreboard must be waited for, or a later result of the same in-order
//! queue).
//!
//! **Where the numbers come from.** No GPU measures them here, so the table is built on what
//! `ptxas` does: over the crate's corpus (`tests/corpus.rs`, the README's evidence table),
//! the fewest stall cycles it ever leaves between a producer and a reader of its result. An
//! entry is never above that evidence (the verifier raises no false alarm on `ptxas`'s own
//! schedules) and agrees with the published microbenchmarks of Volta/Turing/Ampere (Jia et
//! al.: 4 cycles for the single-precision and integer ALU/FMA pipes, more for half and double
//! precision and the tensor cores). Where the evidence is thin or loose (few edges, none at
//! the minimum) an entry is marked `tight: false`: the verifier still enforces it, a rewrite
//! keeps at least the original distance instead of trusting it.
//!
//! **Consumers.** A reader that is a memory instruction takes its operands one cycle later
//! (every ALU producer's fewest cycles to `STG`/`STS`/`LDG`/`LDGSTS` is one more than to an
//! ALU reader, on both architectures): [`needed`] adds it; a predicate guarding a memory
//! instruction needs [`PREDICATE_TO_MEMORY`] cycles. Uniform-datapath producers
//! (`ULDC`, `UMOV`, `UIADD3`, ...) show no such step and get none. What is not modelled
//! (and so not caught when lowered): `IMAD` to an ALU-pipe reader, which `ptxas` gives one
//! cycle more than to another `IMAD`; conversions into tensor-core operands.

/// One table entry.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Opcode prefix (`IMAD.WIDE` before `IMAD`; the longest match wins).
    pub opcode: &'static str,
    /// Cycles from the producer's issue to a dependent ALU instruction's issue.
    pub cycles: u8,
    /// Whether the corpus pins the number (many edges at exactly it), not just bounds it.
    pub tight: bool,
}

const fn e(opcode: &'static str, cycles: u8, tight: bool) -> Entry {
    Entry { opcode, cycles, tight }
}

/// Shared by sm_80 and sm_90a: the fp32/integer ALU and FMA pipes, the uniform datapath.
const COMMON: &[Entry] = &[
    e("FADD", 4, true),
    e("FFMA", 4, true),
    e("FMUL", 4, true),
    e("FMNMX", 4, true),
    e("FSETP", 4, true),
    e("FSEL", 4, true),
    e("F2FP", 4, true),
    e("I2FP", 4, false),
    e("F2IP", 4, false),
    e("IADD3", 4, true),
    e("IABS", 4, true),
    e("ISETP", 4, true),
    e("IMNMX", 4, true),
    e("LEA", 4, true),
    e("LOP3", 4, true),
    e("SEL", 4, true),
    e("SGXT", 4, true),
    e("SHF", 4, true),
    e("PLOP3", 4, true),
    e("PRMT", 4, true),
    e("BMSK", 4, false),
    e("VIADD", 4, true),
    e("VIMNMX", 4, true),
    e("VIADDMNMX", 4, false),
    e("IMAD", 4, true),
    e("MOV", 4, true),
    // Zeroing a pair (`CS2R R4, SRZ`) or reading a clock: an ALU-latency move; the corpus
    // only bounds it (its readers come 30+ cycles later).
    e("CS2R", 4, false),
    // Triton's softmax on sm_90a reads a `P2R` result 4 cycles on (was 9, from the first
    // corpus's 4 edges): an ALU latency like `R2P`'s.
    e("P2R", 4, false),
    e("R2P", 4, false),
    // 5 to an ALU reader in the corpus, but `HADD2` → `HMUL2` (the same pipe) 4 cycles in the
    // SASS emulator's differential fuzzer: the table keeps the smaller.
    e("HADD2", 4, false),
    // The half-to-single conversion form: a store reads its result 5 cycles on.
    e("HADD2.F32", 4, false),
    e("HMUL2", 4, false),
    e("HMNMX2", 4, false),
    e("HSETP2", 4, false),
    e("HSET2", 4, false),
    // `HFMA2.MMA` (ptxas's constant move on the tensor pipe) included.
    e("HFMA2", 6, false),
    e("DADD", 6, false),
    e("DFMA", 6, false),
    e("DMUL", 6, false),
    e("DSETP", 6, false),
    e("HMMA", 24, true),
    // A warpgroup MMA's accumulators feed the next one on the same registers after 4
    // cycles; everyone else waits for `WARPGROUP.DEPBAR` (tracked as a pending result).
    e("HGMMA", 4, false),
    e("R2UR", 13, false),
    // `ELECT P0, UR4, PT`'s lane id is read 2 cycles on (Trident's `elect.sync` experiment,
    // sm_90a); its predicate is covered by `PREDICATE_CYCLES`.
    e("ELECT", 2, false),
    e("ULDC", 2, true),
    e("UMOV", 2, true),
    e("UIADD3", 4, true),
    e("UISETP", 4, true),
    e("USEL", 4, true),
    e("ULEA", 4, true),
    e("USGXT", 4, true),
    e("USHF", 4, true),
    e("UIMAD", 4, true),
    e("ULOP3", 4, false),
    e("UPLOP3", 4, false),
    e("UFLO", 4, false),
    e("UPOPC", 4, false),
    e("UBMSK", 4, false),
    e("UBREV", 4, false),
    e("UPRMT", 4, false),
    // `ptxas` gives votes no scoreboard and reads their results 4 cycles on (the SASS
    // emulator's fuzzer, sm_80 and sm_90a).
    e("VOTE", 4, false),
];

/// sm_90a only: `IMAD.WIDE`'s low register is read 3 cycles after issue (13 readers in the
/// corpus, all of the low half).
const SM90: &[Entry] = &[e("IMAD.WIDE", 3, false)];

/// Instructions whose results come back after a variable time: a scoreboard guards them
/// (or, where `ptxas` sets none, a later result of the same in-order queue, see [`queue`]).
const VARIABLE: &[&str] = &[
    "LDG", "LDS", "LDSM", "LDL", "LD", "LDC", "ATOM", "ATOMG", "ATOMS", "RED", "S2R", "S2UR", "MUFU", "SHFL", "REDUX",
    "MATCH", "POPC", "FLO", "BREV", "I2F", "F2I", "F2F", "I2I", "FRND", "FCHK", "DMMA", "IMMA", "BMMA", "LDTRAM",
    "SUATOM", "SULD", "TEX", "TLD", "QSPC",
    // mbarrier operations are shared-memory atomics: `ptxas` gives `SYNCS.ARRIVE`'s state and
    // `SYNCS.PHASECHK`'s predicate a write scoreboard and waits for it (experiment, sm_90a).
    "SYNCS",
];

/// Cycles before a predicate some producers write may be read, where it differs from their
/// register results (experiment, `ptxas` 13.0, sm_90a; the fewest seen, `tight: false`):
/// `ELECT`'s leader predicate 13 (4 first reads, all at 13, in `ELECT` loops and a plain
/// `elect.sync`), `R2UR`'s "value differs" predicate 8 (1 read, in `ptxas`'s loop over the
/// distinct addresses of an `mbarrier.init` by several threads).
const PREDICATE_CYCLES: &[(&str, u32)] = &[("ELECT", 13), ("R2UR", 8)];

fn root(opcode: &str) -> &str {
    opcode.split('.').next().unwrap_or(opcode)
}

/// The table entry for a fixed-latency `opcode` on `sm` (80, 90), if it has one.
pub fn entry(sm: u32, opcode: &str) -> Option<Entry> {
    let matches = |x: &&Entry| {
        opcode == x.opcode || opcode.starts_with(x.opcode) && opcode.as_bytes().get(x.opcode.len()) == Some(&b'.')
    };
    let extra: &[Entry] = if sm >= 90 { SM90 } else { &[] };
    extra.iter().chain(COMMON).filter(matches).max_by_key(|x| x.opcode.len()).copied()
}

/// Whether an instruction's result is variable-latency by its opcode. An instruction that
/// sets a write scoreboard is variable-latency whatever its opcode.
pub fn variable(opcode: &str) -> bool {
    VARIABLE.iter().any(|v| opcode == *v || root(opcode) == *v)
}

/// Queues whose variable-latency results come back in issue order: where `ptxas` sets no
/// scoreboard on one, a wait for a later one of the same queue covers it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Queue {
    /// Shared-memory reads through the MIO pipe (`LDS`, `LDSM`, `SHFL`).
    Shared,
    /// The multi-function unit (`MUFU`) and the 32-bit `I2F` conversions that share it: on sm_80
    /// `ptxas` leaves a `MUFU.RCP` without a scoreboard and covers its readers by waiting for
    /// an `I2F` issued after it (dropout, Trident's and Triton's alike).
    Mufu,
    /// Uniform special-register reads (`S2UR`): `ptxas` leaves an `S2UR` without a
    /// scoreboard and covers its reader by waiting for a later `S2UR`'s (split-K matmul on
    /// sm_90a).
    SpecialUniform,
    /// Warp reductions into uniform registers (`REDUX`): the SASS emulator's fuzzer saw a
    /// `REDUX` with no scoreboard read after a wait for a younger one's.
    Redux,
    /// Everything else: no order assumed.
    None,
}

/// The in-order queue `opcode` belongs to.
pub fn queue(opcode: &str) -> Queue {
    match root(opcode) {
        "LDS" | "LDSM" | "SHFL" => Queue::Shared,
        "MUFU" => Queue::Mufu,
        // 32-bit forms only: the evidence has no 64-bit conversion (those may use the fp64 pipe).
        // The conversions `ptxas` runs on the same unit (the SASS emulator's fuzzer: an `F2I`
        // read after a wait for a later `MUFU`, a `MUFU` after one for a later `F2I`).
        "I2F" | "F2I" | "F2F" if !opcode.contains("64") => Queue::Mufu,
        // Bit counting runs there too (the fuzzer: a `POPC` result read after a wait for a
        // younger conversion, and the other way round).
        "POPC" | "FLO" | "BREV" => Queue::Mufu,
        // And float rounding (the fuzzer: an `FRND` with no write scoreboard, read after a
        // wait for a younger `POPC`).
        "FRND" if !opcode.contains("64") => Queue::Mufu,
        // And the division check, which `ptxas` gives a scoreboard (the fuzzer: an `F2I`
        // with none, read after a wait for a younger `FCHK`).
        "FCHK" => Queue::Mufu,
        "S2UR" => Queue::SpecialUniform,
        "REDUX" => Queue::Redux,
        _ => Queue::None,
    }
}

/// Whether `opcode` takes its register operands through the memory pipe (one cycle later
/// than an ALU instruction).
pub fn memory_reader(opcode: &str) -> bool {
    matches!(
        root(opcode),
        "LDG"
            | "STG"
            | "LDS"
            | "STS"
            | "LDGSTS"
            | "LD"
            | "ST"
            | "LDL"
            | "STL"
            | "ATOM"
            | "ATOMG"
            | "ATOMS"
            | "RED"
            | "REDG"
    )
}

/// Whether `writer`'s result cannot land in a register before an earlier `reader` has read
/// it, even while `reader`'s read scoreboard is not yet waited for: a memory instruction
/// (store, load, async copy) reads its registers in the memory pipe, and a shared-memory load
/// issued after it passes the same in-order MIO queue before its result comes back. `ptxas`
/// relies on it: an `LDS`/`LDS.U16`/`LDS.64`/`LDS.128` overwrites the data or address
/// register of a preceding `STG`/`STS` with no wait for the store's read scoreboard (57 times
/// over the catalog corpora, both architectures, Trident's and Triton's `ptxas`). Only
/// shared-memory loads are taken as writers after memory readers: the evidence has no other.
/// Shuffles pass the same queue in order: `ptxas` 13.0 (sm_90a) lets a `SHFL.BFLY` overwrite
/// a register an earlier `SHFL.IDX` still reads, with no wait for its read scoreboard (the
/// SASS emulator's fuzzer, `crates/sass-emu/tests/data/fuzz_shfl_war.ptx`).
pub fn mio_ordered(reader: &str, writer: &str) -> bool {
    memory_reader(reader) && matches!(root(writer), "LDS" | "LDSM") || root(reader) == "SHFL" && root(writer) == "SHFL"
}

fn uniform(opcode: &str) -> bool {
    opcode.starts_with('U') && !opcode.starts_with("UTMA") || opcode.starts_with("R2UR")
}

/// Cycles after its issue at which `consumer` reads the high register of its 64-bit addend
/// (the last operand of `IMAD.WIDE`), on `sm`; a producer of that register needs that many
/// cycles fewer. sm_90a: 2. Evidence (the catalog corpora, Trident's and Triton's `ptxas`):
/// `IMAD.U32` / `IMAD.MOV.U32` → that register as close as 2 cycles, `MOV` and `LEA.HI.X` 3
/// (ALU to `IMAD` takes a cycle more) — 21 reads closer than the table — while the low
/// register and the other operands are never read closer than 4. sm_80: 0 (never closer than
/// 4 from `IMAD`, 5 from the ALU).
pub fn wide_addend_high_late(sm: u32, consumer: &str) -> u32 {
    // `IMAD.HI` adds a 64-bit pair too, and reads its high register as late (the SASS
    // emulator's fuzzer: `IMAD.MOV R7` then `IMAD.HI.U32 R7, R19, R21, R6` 2 cycles on).
    let wide_imad = root(consumer) == "IMAD" && consumer.split('.').any(|p| p == "WIDE" || p == "HI");
    if sm >= 90 && wide_imad {
        2
    } else {
        0
    }
}

/// Cycles after an instruction that sets a scoreboard (its write or read scoreboard) before
/// an instruction may wait on that scoreboard: a wait issued sooner does not see the new
/// count and goes ahead. Inferred, not documented: across the corpus of `ptxas` schedules
/// (sm_80 and sm_90a, `ptxas` 12.8 and 13.0) no wait comes fewer than 2 cycles after its
/// scoreboard's setter (76 of 565 waits come exactly 2 after), and on an H200 a schedule
/// with `S2R R9, SR_CTAID.X` (SB3, stall 1) followed by `IMAD R9, R9, 0x80, R0` waiting on SB3
/// computed wrong indices in every CTA (bench/SASS.md, 2026-11-29). The verifier's rule
/// `WaitTooSoon`; the SASS emulator reports it as a hazard. For wait masks, not `DEPBAR`
/// (`ptxas` puts `DEPBAR.LE SB0, 0x0` 1 cycle after a `SYNCS.EXCH.64` or `UTMACMDFLUSH` that
/// sets SB0), and not after the uniform datapath's instructions ([`scoreboard_set_at_issue`]).
pub const SCOREBOARD_SET_CYCLES: u32 = 2;

/// Whether `opcode` sets its scoreboard at issue, so that the next instruction may wait on it
/// ([`SCOREBOARD_SET_CYCLES`] does not apply): the uniform datapath's (`U...`) — `ptxas` waits
/// 1 cycle after `USETMAXREG.DEALLOC.CTAPOOL` (Trident's warp-specialized producer, sm_90a).
pub fn scoreboard_set_at_issue(opcode: &str) -> bool {
    opcode.starts_with('U')
}

/// Cycles a CTA barrier (`BAR.SYNC`) takes at least beyond its own stall count: every warp
/// must arrive and be released, which no microbenchmark puts under tens of cycles. First
/// added for an `HMMA` result stored by an `STS.64` 23 cycles later across a barrier, which
/// [`HMMA_TO_MEMORY`] now explains without it; kept as the judgment it is (2 of the tens).
/// The verifier and the SASS emulator both add this much at a barrier.
pub const BARRIER_MIN_CYCLES: u32 = 2;

/// Cycles from an `HMMA` to a memory instruction reading its result: 23, one fewer than to
/// an ALU reader where other producers need one more. `ptxas` spills `HMMA` accumulators
/// with `STL.64` exactly 23 cycles on (97 reads in Trident's ragged 128×128×32 f16 matmul
/// on sm_80), and stores them to shared memory as close (`STS.64`, the same matmul).
pub const HMMA_TO_MEMORY: u32 = 23;

/// Cycles before a memory instruction may read a predicate (its guard or an operand):
/// `ISETP` to a predicated load or store is never closer than 13 cycles in the corpus (137
/// edges, on both architectures), where `ISETP` to an ALU reader is 4.
pub const PREDICATE_TO_MEMORY: u32 = 13;

/// Cycles a reader `consumer` needs after a fixed-latency `producer` issued, on `sm`, for a
/// general or uniform register, or (`predicate`) a predicate; `None` when the table does not
/// know the producer.
pub fn needed(sm: u32, producer: &str, consumer: &str, predicate: bool) -> Option<u32> {
    let x = entry(sm, producer)?;
    let memory = memory_reader(consumer);
    if let Some(&(_, c)) = PREDICATE_CYCLES.iter().find(|(p, _)| predicate && root(producer) == *p) {
        return Some(if memory { c.max(PREDICATE_TO_MEMORY) } else { c });
    }
    if memory && predicate {
        return Some((x.cycles as u32).max(PREDICATE_TO_MEMORY));
    }
    if memory && root(producer) == "HMMA" {
        return Some(HMMA_TO_MEMORY);
    }
    let step = (memory && !uniform(producer)) as u32;
    Some(x.cycles as u32 + step)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_wins_and_architectures_differ() {
        assert_eq!(entry(90, "IMAD.WIDE.U32").map(|x| x.cycles), Some(3));
        assert_eq!(entry(80, "IMAD.WIDE.U32").map(|x| x.cycles), Some(4));
        assert_eq!(entry(90, "IMAD.MOV.U32").map(|x| x.cycles), Some(4));
        assert_eq!(entry(90, "IMADX"), None, "a prefix must end at a dot");
        assert_eq!(entry(80, "LDG.E"), None);
        assert!(variable("LDG.E.128") && variable("MUFU.EX2") && !variable("FFMA"));
        assert_eq!(needed(80, "IADD3", "STG.E", false), Some(5));
        assert_eq!(needed(80, "IADD3", "LOP3.LUT", false), Some(4));
        assert_eq!(needed(90, "ULDC.64", "LDG.E", false), Some(2));
        assert_eq!(needed(90, "ISETP.GE.AND", "LDG.E", true), Some(13));
        assert_eq!(needed(90, "ISETP.GE.AND", "SEL", true), Some(4));
        assert_eq!(needed(80, "HMMA.16816.F32", "STL.64", false), Some(23));
        assert_eq!(needed(80, "HMMA.16816.F32", "HMMA.16816.F32", false), Some(24));
        assert_eq!(queue("LDSM.16.M88.4"), Queue::Shared);
    }

    #[test]
    fn loosened_by_the_catalog_corpora() {
        // P2R → ISETP 4 cycles on sm_90a (Triton's softmax).
        assert_eq!(needed(90, "P2R", "ISETP.NE.AND", false), Some(4));
        // MUFU and 32-bit I2F share an in-order queue; 64-bit conversions are not in it.
        assert_eq!(queue("MUFU.RCP"), queue("I2F"));
        assert_eq!(queue("I2F.RP"), Queue::Mufu);
        assert_eq!(queue("I2F.F64.S64"), Queue::None);
        assert_eq!(queue("S2UR"), Queue::SpecialUniform);
        assert_eq!(queue("S2R"), Queue::None);
        // sm_90a's IMAD.WIDE reads its addend's high register 2 cycles late; sm_80's does not.
        assert_eq!(wide_addend_high_late(90, "IMAD.WIDE.U32"), 2);
        assert_eq!(wide_addend_high_late(90, "IMAD.WIDE"), 2);
        assert_eq!(wide_addend_high_late(80, "IMAD.WIDE.U32"), 0);
        assert_eq!(wide_addend_high_late(90, "IMAD.MOV.U32"), 0);
        // A shared-memory load may overwrite what an earlier store still reads; an ALU write may not.
        assert!(mio_ordered("STG.E.U16", "LDS.U16") && mio_ordered("STS.64", "LDS.128"));
        assert!(!mio_ordered("STG.E", "FADD") && !mio_ordered("STG.E", "LDG.E") && !mio_ordered("FADD", "LDS"));
        // A shuffle may overwrite what an earlier shuffle still reads; nothing else may.
        assert!(mio_ordered("SHFL.IDX", "SHFL.BFLY") && !mio_ordered("SHFL.IDX", "FADD"));
        assert!(!mio_ordered("SHFL.IDX", "LDS") && !mio_ordered("STS", "SHFL.BFLY"));
    }

    #[test]
    fn asynchronous_copy_machinery() {
        // ELECT: the lane id in 2 cycles, the leader predicate in 13; R2UR's predicate in 8.
        assert_eq!(needed(90, "ELECT", "IMAD.U32", false), Some(2));
        assert_eq!(needed(90, "ELECT", "PLOP3.LUT", true), Some(13));
        assert_eq!(needed(90, "R2UR", "PLOP3.LUT", true), Some(8));
        assert_eq!(needed(90, "R2UR", "SYNCS.EXCH.64", false), Some(13));
        assert!(variable("SYNCS.PHASECHK.TRANS64.TRYWAIT") && variable("SYNCS.ARRIVE.TRANS64.A1T0"));
    }
}
