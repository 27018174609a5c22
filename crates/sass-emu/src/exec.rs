//! What each instruction does: a CTA's warps, their registers, and the semantics of the
//! SASS instructions `ptxas` emits for Triton-style kernels. An instruction or modifier
//! not implemented here is refused with its text, never guessed.

use half::{bf16, f16};
use trident_emu::memory::GlobalMem;
use trident_emu::{fp, EmuError, ErrorKind, Rnd};

use crate::decode::{Op, Opnd, Sel};
use crate::kernel::SassKernel;

pub type R<T> = Result<T, EmuError>;

pub fn unsupported(op: &Op, what: &str) -> EmuError {
    EmuError::new(ErrorKind::Unsupported, format!("the SASS emulator does not implement {what}: `{}`", op.text))
}

/// One warp's architectural state.
pub struct Warp {
    /// `r[n][lane]`; index 255 is `RZ` (always 0).
    pub r: Vec<[u32; 32]>,
    /// Predicates, one bit per lane; `p[7]` (`PT`) is all ones.
    pub p: [u32; 8],
    pub ur: [u32; 64],
    pub up: [bool; 8],
    pub pc: [usize; 32],
    /// Lanes that exist and have not exited.
    pub live: u32,
    /// Lanes waiting at `BAR.SYNC`, the barrier's number and the threads it waits for (0:
    /// every warp of the CTA that has not exited).
    pub at_bar: u32,
    pub bar_id: u32,
    pub bar_count: u32,
    /// Lanes waiting at `BSYNC Bn`, per barrier register.
    pub at_bsync: [u32; 16],
    /// Convergence barrier registers (`BSSY Bn`): the lanes that must meet.
    pub breg: [u32; 16],
    /// The warp's first thread's linear index in the CTA.
    pub first_thread: u32,
    /// Each lane's local memory (`LDL`/`STL`), made at its first use.
    pub local: Vec<Vec<u8>>,
    /// Lanes parked after a `SYNCS.PHASECHK.TRANS64` none of them passed, the
    /// barriers' epoch then, and the barrier's shared offset (for a deadlock's message).
    pub parked: u32,
    pub park_epoch: u64,
    pub park_bar: u32,
}

impl Warp {
    pub fn new(first_thread: u32, lanes: u32) -> Warp {
        let live = if lanes >= 32 { u32::MAX } else { (1u32 << lanes) - 1 };
        let mut p = [0u32; 8];
        p[7] = u32::MAX;
        let mut up = [false; 8];
        up[7] = true;
        Warp {
            r: vec![[0u32; 32]; 256],
            p,
            ur: [0; 64],
            up,
            pc: [0; 32],
            live,
            at_bar: 0,
            bar_id: 0,
            bar_count: 0,
            at_bsync: [0; 16],
            breg: [0; 16],
            first_thread,
            local: vec![],
            parked: 0,
            park_epoch: 0,
            park_bar: 0,
        }
    }

    fn set_r(&mut self, n: u8, lane: usize, v: u32) {
        if n != 255 {
            self.r[n as usize][lane] = v;
        }
    }

    fn set_p(&mut self, n: u8, lane: usize, v: bool) {
        if n != 7 {
            if v {
                self.p[n as usize] |= 1 << lane;
            } else {
                self.p[n as usize] &= !(1 << lane);
            }
        }
    }

    fn set_ur(&mut self, n: u8, v: u32) {
        if n != 63 {
            self.ur[n as usize] = v;
        }
    }

    fn set_up(&mut self, n: u8, v: bool) {
        if n != 7 {
            self.up[n as usize] = v;
        }
    }
}

/// What the instruction did to control flow.
pub enum Flow {
    /// Every active lane goes on to the next instruction.
    Next,
    /// Lanes in the mask jump to the target; the others go on.
    Branch(u32, usize),
    /// Lanes in the mask exit.
    Exit(u32),
    /// Active lanes wait at CTA barrier `id` for `count` threads (0: the whole CTA).
    Bar(u32, u32),
    /// Active lanes arrive at named barrier `id` (of `count` threads) and go on.
    Arrive(u32, u32),
    /// Active lanes wait at convergence barrier `n`.
    Bsync(u8),
    /// Lanes in the mask jump each to its own target (`RET` through a register).
    JumpEach(u32, Box<[usize; 32]>),
    /// Lanes in the mask go on to the next instruction but park there: a phase check none of
    /// them passed, on the mbarrier at this shared offset. They run again once a barrier of
    /// the CTA moves (`tma::Barriers::epoch`).
    Park(u32, u32),
}

/// What an instruction runs against: the kernel, the launch's memories, where the CTA is.
pub struct Ctx<'a> {
    pub k: &'a SassKernel,
    pub mem: &'a GlobalMem,
    pub cbank: &'a [u8],
    pub shared: &'a mut Vec<u8>,
    pub ctaid: [u32; 3],
    pub ntid: [u32; 3],
    pub nctaid: [u32; 3],
    /// The warp's index in the CTA.
    pub warp_id: u32,
    /// The warp's clock, for `SR_CLOCKLO`.
    pub clock: u64,
    /// The instruction's index, for messages.
    pub pc: usize,
    /// The CTA's mbarriers.
    pub bars: &'a mut crate::tma::Barriers,
    /// Set by an mbarrier wait that passed: the clock its phase completed at (the warp
    /// resumes no earlier).
    pub waited_until: u64,
    /// The lanes' shared-memory accesses of a load or store instruction (`LDS`, `STS`,
    /// `LDSM`, `STSM`): (address, bytes), for the timing's bank-conflict count.
    pub shared_access: Vec<(u64, u32)>,
    /// The CTA's global-memory traffic so far.
    pub traffic: &'a mut Traffic,
}

/// A CTA's global-memory traffic, for the grid's bandwidth floors ([`crate::grid`]): the
/// bytes its loads, stores, atomics and copies move, and the 32-byte sectors they touch.
#[derive(Clone, Debug, Default)]
pub struct Traffic {
    pub bytes: u64,
    pub sectors: std::collections::HashSet<u64>,
}

impl Traffic {
    /// The bytes of the distinct sectors touched: what the CTA fetches from L2.
    pub fn l2_bytes(&self) -> u64 {
        32 * self.sectors.len() as u64
    }

    /// `n` bytes at global address `a` moved.
    pub fn touch(&mut self, a: u64, n: u64) {
        self.bytes += n;
        for s in a / 32..=(a + n.max(1) - 1) / 32 {
            self.sectors.insert(s);
        }
    }
}

impl Ctx<'_> {
    /// `%globaltimer`: nanoseconds, the warp's clock at the modelled machine's rate (the
    /// launch starts at 0, as the clock does).
    fn global_timer(&self) -> u64 {
        (self.clock as f64 / crate::timing::model(self.k.sm).clock_ghz) as u64
    }
}

fn sel16(v: u32, sel: Sel) -> u32 {
    match sel {
        Sel::H1 | Sel::H1H1 => v >> 16,
        Sel::H0 | Sel::H0H0 => v & 0xffff,
        Sel::B(b) => (v >> (8 * b as u32)) & 0xff,
        Sel::None => v,
    }
}

/// A half2 operand's two halves (low, high) after its selector.
fn halves(v: u32, sel: Sel) -> (u16, u16) {
    match sel {
        Sel::H0H0 | Sel::H0 => (v as u16, v as u16),
        Sel::H1H1 | Sel::H1 => ((v >> 16) as u16, (v >> 16) as u16),
        _ => (v as u16, (v >> 16) as u16),
    }
}

impl Ctx<'_> {
    fn cbank_u32(&self, op: &Op, bank: u8, off: i64) -> R<u32> {
        let data: &[u8] = if bank == 0 {
            self.cbank
        } else {
            match self.k.banks.iter().find(|(b, _)| *b == bank) {
                Some((_, d)) => d,
                None => return Err(unsupported(op, &format!("constant bank {bank} (the cubin has none)"))),
            }
        };
        let o = usize::try_from(off)
            .map_err(|_| EmuError::new(ErrorKind::Memory, format!("constant bank offset {off}: `{}`", op.text)))?;
        let b = data.get(o..o + 4).ok_or_else(|| {
            EmuError::new(
                ErrorKind::Memory,
                format!("constant bank {bank} read at {o:#x} past its {} bytes: `{}`", data.len(), op.text),
            )
        })?;
        Ok(u32::from_le_bytes(b.try_into().expect("4 bytes")))
    }

    fn special(&self, w: &Warp, lane: usize, name: &str, op: &Op) -> R<u32> {
        let t = w.first_thread + lane as u32;
        let (nx, ny) = (self.ntid[0], self.ntid[1]);
        let tid = [t % nx, (t / nx) % ny, t / (nx * ny)];
        Ok(match name {
            "SR_TID.X" => tid[0],
            "SR_TID.Y" => tid[1],
            "SR_TID.Z" => tid[2],
            "SR_CTAID.X" => self.ctaid[0],
            "SR_CTAID.Y" => self.ctaid[1],
            "SR_CTAID.Z" => self.ctaid[2],
            "SR_LANEID" => lane as u32,
            "SR_CgaCtaId" | "SRZ" => 0,
            "SR_CLOCKLO" => self.clock as u32,
            "SR_CLOCKHI" => (self.clock >> 32) as u32,
            // The SM a CTA runs on: the first round's (CTA `i` on SM `i mod SMs`, `crate::grid`).
            "SR_VIRTUALSMID" | "SR_SMID" => {
                let [x, y, z] = self.ctaid;
                let linear = x as u64 + self.nctaid[0] as u64 * (y as u64 + self.nctaid[1] as u64 * z as u64);
                (linear % crate::timing::model(self.k.sm).sms as u64) as u32
            }
            "SR_GLOBALTIMERLO" => self.global_timer() as u32,
            "SR_GLOBALTIMERHI" => (self.global_timer() >> 32) as u32,
            "SR_LEMASK" => (1u32 << lane) - 1,
            "SR_EQMASK" => 1 << lane,
            _ => return Err(unsupported(op, &format!("special register {name}"))),
        })
    }

    /// A 32-bit source, integer view (negation and `~` applied).
    pub fn u(&self, w: &Warp, lane: usize, o: &Opnd, op: &Op) -> R<u32> {
        Ok(match o {
            Opnd::R { n, neg, not, sel, abs } => {
                let mut v = if *n == 255 { 0 } else { w.r[*n as usize][lane] };
                v = sel16(v, *sel);
                if *abs {
                    v = (v as i32).unsigned_abs();
                }
                if *not {
                    v = !v;
                }
                if *neg {
                    v = v.wrapping_neg();
                }
                v
            }
            Opnd::Ur { n, neg, not } => {
                let mut v = if *n == 63 { 0 } else { w.ur[*n as usize] };
                if *not {
                    v = !v;
                }
                if *neg {
                    v = v.wrapping_neg();
                }
                v
            }
            Opnd::Imm(b) => *b as u32,
            Opnd::FImm(f) => *f as i64 as u32,
            Opnd::C { bank, off, reg, ureg, neg, .. } => {
                let a = const_offset(w, lane, *off, *reg, *ureg);
                let v = self.cbank_u32(op, *bank, a)?;
                if *neg {
                    v.wrapping_neg()
                } else {
                    v
                }
            }
            Opnd::Sr(name) => self.special(w, lane, name, op)?,
            _ => return Err(unsupported(op, "this operand")),
        })
    }

    /// The raw bits of a source (no modifiers), for float reads.
    fn raw(&self, w: &Warp, lane: usize, o: &Opnd, op: &Op) -> R<u32> {
        Ok(match o {
            Opnd::R { n, sel, .. } => sel16(if *n == 255 { 0 } else { w.r[*n as usize][lane] }, *sel),
            Opnd::Ur { n, .. } => {
                if *n == 63 {
                    0
                } else {
                    w.ur[*n as usize]
                }
            }
            Opnd::Imm(b) => *b as u32,
            Opnd::FImm(f) => (*f as f32).to_bits(),
            Opnd::C { bank, off, reg, ureg, .. } => {
                let a = const_offset(w, lane, *off, *reg, *ureg);
                self.cbank_u32(op, *bank, a)?
            }
            _ => return Err(unsupported(op, "this operand")),
        })
    }

    fn mods(o: &Opnd) -> (bool, bool) {
        match o {
            Opnd::R { neg, abs, .. } | Opnd::C { neg, abs, .. } => (*neg, *abs),
            Opnd::Ur { neg, .. } => (*neg, false),
            _ => (false, false),
        }
    }

    /// An f32 source (|x| then -x as the operand says).
    pub fn f(&self, w: &Warp, lane: usize, o: &Opnd, op: &Op) -> R<f32> {
        let mut x = f32::from_bits(self.raw(w, lane, o, op)?);
        let (neg, abs) = Self::mods(o);
        if abs {
            x = x.abs();
        }
        if neg {
            x = -x;
        }
        Ok(x)
    }

    /// An f64 source: a register pair, or an immediate.
    fn d(&self, w: &Warp, lane: usize, o: &Opnd, op: &Op) -> R<f64> {
        let mut x = match o {
            Opnd::FImm(f) => *f,
            _ => f64::from_bits(self.u64(w, lane, o, op)?),
        };
        let (neg, abs) = Self::mods(o);
        if abs {
            x = x.abs();
        }
        if neg {
            x = -x;
        }
        Ok(x)
    }

    /// A 64-bit source: register pair, uniform pair, two constant words, immediate.
    pub fn u64(&self, w: &Warp, lane: usize, o: &Opnd, op: &Op) -> R<u64> {
        Ok(match o {
            Opnd::R { n: 255, .. } => 0,
            Opnd::R { n, .. } => w.r[*n as usize][lane] as u64 | (w.r[*n as usize + 1][lane] as u64) << 32,
            Opnd::Ur { n: 63, .. } => 0,
            Opnd::Ur { n, .. } => w.ur[*n as usize] as u64 | (w.ur[*n as usize + 1] as u64) << 32,
            Opnd::C { bank, off, .. } => {
                self.cbank_u32(op, *bank, *off)? as u64 | (self.cbank_u32(op, *bank, off + 4)? as u64) << 32
            }
            Opnd::Imm(b) => *b,
            Opnd::FImm(f) => f.to_bits(),
            _ => return Err(unsupported(op, "this 64-bit operand")),
        })
    }

    pub fn p(&self, w: &Warp, lane: usize, o: &Opnd, op: &Op) -> R<bool> {
        Ok(match o {
            Opnd::P { n, not } => (w.p[*n as usize] >> lane & 1 == 1) != *not,
            Opnd::Up { n, not } => w.up[*n as usize] != *not,
            _ => return Err(unsupported(op, "a predicate operand that is not a predicate")),
        })
    }
}

/// The byte offset a constant operand (`c[bank][R+UR+off]`) reads in its bank, for `lane`.
fn const_offset(w: &Warp, lane: usize, off: i64, reg: Option<u8>, ureg: Option<u8>) -> i64 {
    let r = reg.map_or(0, |r| w.r[r as usize][lane] as i64);
    let u = ureg.map_or(0, |u| w.ur[u as usize] as i64);
    off + r + u
}

fn dst_r(o: &Opnd, op: &Op) -> R<u8> {
    match o {
        Opnd::R { n, .. } => Ok(*n),
        _ => Err(unsupported(op, "this destination")),
    }
}

fn dst_p(o: &Opnd, op: &Op) -> R<u8> {
    match o {
        Opnd::P { n, .. } => Ok(*n),
        _ => Err(unsupported(op, "this predicate destination")),
    }
}

fn is_p(o: &Opnd) -> bool {
    matches!(o, Opnd::P { .. } | Opnd::Up { .. })
}

/// `FMNMX`: a NaN operand yields the other; -0 orders below +0.
fn fminmax(a: f32, b: f32, min: bool) -> f32 {
    if a.is_nan() {
        return b;
    }
    if b.is_nan() {
        return a;
    }
    if a == 0.0 && b == 0.0 {
        let (na, nb) = (a.is_sign_negative(), b.is_sign_negative());
        let negative = if min { na || nb } else { na && nb };
        return if negative { -0.0 } else { 0.0 };
    }
    if min == (a < b) {
        a
    } else {
        b
    }
}

/// A half-precision result's bits (f16 or bf16, rounded to nearest even); the hardware's NaN
/// is 0x7fff in either format.
fn half_bits(x: f32, bf: bool) -> u32 {
    if x.is_nan() {
        0x7fff
    } else if bf {
        bf16::from_f32(x).to_bits() as u32
    } else {
        f16::from_f32(x).to_bits() as u32
    }
}

/// [`half_bits`] from an f64 (one rounding).
fn half_bits64(x: f64, bf: bool) -> u32 {
    if x.is_nan() {
        0x7fff
    } else if bf {
        bf16::from_f64(x).to_bits() as u32
    } else {
        f16::from_f64(x).to_bits() as u32
    }
}

/// The hardware's (and the PTX emulator's) NaN result: 0x7fffffff.
pub fn canon32(x: f32) -> u32 {
    if x.is_nan() {
        0x7fff_ffff
    } else {
        x.to_bits()
    }
}

fn ftz(x: f32) -> f32 {
    if x.is_subnormal() {
        0.0f32.copysign(x)
    } else {
        x
    }
}

/// `FSETP`/`ISETP`/`DSETP` comparisons: ordered ones are false on NaN, `U` ones true.
fn fcmp(cmp: &str, a: f64, b: f64) -> Option<bool> {
    let nan = a.is_nan() || b.is_nan();
    Some(match cmp {
        "EQ" => !nan && a == b,
        "NE" => !nan && a != b,
        "LT" => !nan && a < b,
        "LE" => !nan && a <= b,
        "GT" => !nan && a > b,
        "GE" => !nan && a >= b,
        "EQU" => nan || a == b,
        "NEU" => nan || a != b,
        "LTU" => nan || a < b,
        "LEU" => nan || a <= b,
        "GTU" => nan || a > b,
        "GEU" => nan || a >= b,
        "NUM" => !nan,
        "NAN" => nan,
        "F" => false,
        "T" => true,
        _ => return None,
    })
}

fn icmp(cmp: &str, a: i64, b: i64) -> Option<bool> {
    Some(match cmp {
        "EQ" => a == b,
        "NE" => a != b,
        "LT" => a < b,
        "LE" => a <= b,
        "GT" => a > b,
        "GE" => a >= b,
        "F" => false,
        "T" => true,
        _ => return None,
    })
}

/// The high half of a 64-bit compare (`ISETP.*.EX`): `a` and `b` are the high words, `low`
/// the same comparison of the low words (unsigned), made by the `ISETP` before it and
/// passed in as the last predicate operand. Equal high words defer to the low words.
fn icmp_ex(cmp: &str, a: i64, b: i64, low: bool) -> Option<bool> {
    Some(match cmp {
        "EQ" => a == b && low,
        "NE" => a != b || low,
        "LT" | "LE" => a < b || (a == b && low),
        "GT" | "GE" => a > b || (a == b && low),
        _ => return None,
    })
}

fn combine(bop: &str, a: bool, b: bool) -> Option<bool> {
    Some(match bop {
        "AND" => a && b,
        "OR" => a || b,
        "XOR" => a ^ b,
        _ => return None,
    })
}

/// `PRMT`'s default mode: byte i of the result is byte `sel[4i..4i+3]` of `b:a` (bit 3 of the
/// selector nibble: the byte's sign replicated).
fn prmt(a: u32, sel: u32, b: u32) -> u32 {
    let bytes = ((b as u64) << 32 | a as u64).to_le_bytes();
    let mut r = 0u32;
    for i in 0..4 {
        let s = sel >> (4 * i) & 0xf;
        let mut byte = bytes[(s & 7) as usize] as u32;
        if s & 8 != 0 {
            byte = if byte & 0x80 != 0 { 0xff } else { 0 };
        }
        r |= byte << (8 * i);
    }
    r
}

fn lut3(lut: u32, a: u32, b: u32, c: u32) -> u32 {
    let mut r = 0;
    for bit in 0..32 {
        let i = (a >> bit & 1) << 2 | (b >> bit & 1) << 1 | (c >> bit & 1);
        r |= (lut >> i & 1) << bit;
    }
    r
}

fn width_of(op: &Op) -> R<(usize, bool)> {
    // (bytes, sign-extend)
    for m in &op.mods {
        match m.as_str() {
            "U8" => return Ok((1, false)),
            "S8" => return Ok((1, true)),
            "U16" => return Ok((2, false)),
            "S16" => return Ok((2, true)),
            "64" => return Ok((8, false)),
            "128" => return Ok((16, false)),
            _ => {}
        }
    }
    Ok((4, false))
}

impl Ctx<'_> {
    fn address(&self, w: &Warp, lane: usize, o: &Opnd, op: &Op) -> R<u64> {
        match o {
            Opnd::Mem { reg, wide, scale, ureg, off } => {
                let mut a = *off as u64;
                if let Some(r) = reg.filter(|&r| r != 255) {
                    let lo = w.r[r as usize][lane] as u64;
                    let v = if *wide { lo | (w.r[r as usize + 1][lane] as u64) << 32 } else { lo };
                    a = a.wrapping_add(v.wrapping_mul(*scale as u64));
                }
                if let Some(u) = ureg.filter(|&u| u != 63) {
                    a = a.wrapping_add(w.ur[u as usize] as u64);
                }
                Ok(a)
            }
            _ => Err(unsupported(op, "this address")),
        }
    }

    /// The address operand `o` for `lane`.
    pub fn address_of(&self, w: &Warp, lane: usize, o: &Opnd, op: &Op) -> R<u64> {
        self.address(w, lane, o, op)
    }

    pub fn memory_error(&self, op: &Op, m: String) -> EmuError {
        self.mem_err(op, m)
    }

    pub fn shared_read(&mut self, a: u64, n: usize, op: &Op) -> R<Vec<u8>> {
        let r = self.shared_slice(a, n, op)?;
        Ok(self.shared[r].to_vec())
    }

    pub fn shared_write(&mut self, a: u64, b: &[u8], op: &Op) -> R<()> {
        let r = self.shared_slice(a, b.len(), op)?;
        self.shared[r].copy_from_slice(b);
        Ok(())
    }

    fn mem_err(&self, op: &Op, m: String) -> EmuError {
        EmuError::new(ErrorKind::Memory, format!("{m}: `{}`", op.text))
    }

    fn shared_slice(&mut self, a: u64, n: usize, op: &Op) -> R<std::ops::Range<usize>> {
        let a = a as usize;
        if a < self.k.shared_reserved() as usize || a + n > self.shared.len() {
            return Err(self.mem_err(
                op,
                format!("shared-memory access of {n} bytes at {a:#x} outside the CTA's {} bytes", self.shared.len()),
            ));
        }
        if !a.is_multiple_of(n.min(16)) {
            return Err(self.mem_err(op, format!("misaligned shared-memory access of {n} bytes at {a:#x}")));
        }
        Ok(a..a + n)
    }

    /// Lane `l`'s local memory at `a` for `n` bytes, made (zeroed) at its first use; an
    /// access outside the kernel's stack is an error.
    fn local_slice(&self, w: &mut Warp, l: usize, a: u64, n: usize, op: &Op) -> R<std::ops::Range<usize>> {
        let size = self.k.local_bytes as usize;
        let a = a as u32 as usize;
        if a + n > size {
            return Err(self.mem_err(
                op,
                format!("local-memory access of {n} bytes at {a:#x} outside the thread's {size}-byte stack"),
            ));
        }
        if !a.is_multiple_of(n.min(16)) {
            return Err(self.mem_err(op, format!("misaligned local-memory access of {n} bytes at {a:#x}")));
        }
        if w.local.is_empty() {
            w.local = vec![vec![]; 32];
        }
        if w.local[l].is_empty() {
            w.local[l] = vec![0; size];
        }
        Ok(a..a + n)
    }

    /// Runs `op` for the lanes in `active` (the guard not yet applied).
    pub fn exec(&mut self, w: &mut Warp, op: &Op, active: u32) -> R<Flow> {
        // The guard.
        let mut mask = active;
        if let Some((n, neg, uniform)) = op.guard {
            let g = if uniform {
                if w.up[n as usize] != neg {
                    u32::MAX
                } else {
                    0
                }
            } else {
                let v = w.p[n as usize];
                if neg {
                    !v
                } else {
                    v
                }
            };
            mask &= g;
        }
        let o = &op.ops;
        let lanes = move || (0..32usize).filter(move |l| mask >> l & 1 == 1);
        macro_rules! each {
            (|$l:ident| $body:block) => {
                for $l in lanes() $body
            };
        }
        let root = op.root.as_str();
        // Uniform-datapath instructions run once per warp (when any lane is active).
        let uniform_on = mask != 0;
        match root {
            "NOP" | "MEMBAR" | "ERRBAR" | "CGAERRBAR" | "CCTL" | "DEPBAR" | "LDGDEPBAR" | "FENCE" | "WARPSYNC"
            | "YIELD" | "NANOSLEEP" => {}
            "EXIT" => {
                // A condition operand (`@!P2 EXIT P0`): both must hold.
                let mut m = mask;
                for x in o.iter().filter(|x| is_p(x)) {
                    for l in 0..32 {
                        if m >> l & 1 == 1 && !self.p(w, l, x, op)? {
                            m &= !(1 << l);
                        }
                    }
                }
                return Ok(Flow::Exit(m));
            }
            "BRA" => {
                let target = o.iter().find_map(|x| if let Opnd::Label(t) = x { Some(*t) } else { None });
                let target = target.ok_or_else(|| unsupported(op, "a branch without a target"))?;
                // A condition operand (`BRA.U !UP0, 0x..`, `@P0 BRA P1, 0x..`): both must hold.
                let mut take = mask;
                for x in o.iter().filter(|x| is_p(x)) {
                    for l in 0..32 {
                        if take >> l & 1 == 1 && !self.p(w, l, x, op)? {
                            take &= !(1 << l);
                        }
                    }
                }
                // `BRA.U.ANY`: the whole warp branches if any lane's condition holds (`ptxas`
                // closes its `ELECT` loops with it, one lane served per turn).
                if op.has("ANY") && take != 0 {
                    take = active;
                }
                return Ok(Flow::Branch(take, target));
            }
            "CALL" => {
                // ptxas passes the return address in a register (`MOV R0, 0x140` before it).
                let target = o.iter().find_map(|x| if let Opnd::Label(t) = x { Some(*t) } else { None });
                let target = target.ok_or_else(|| unsupported(op, "a call without a resolved target"))?;
                return Ok(Flow::Branch(mask, target));
            }
            "RET" => {
                // RET.REL.NODEC Rn, KERNEL: back to the byte offset in Rn:Rn+1.
                let r = o.first().ok_or_else(|| unsupported(op, "RET without a register"))?;
                let mut to = [0usize; 32];
                for l in lanes() {
                    to[l] = (self.u64(w, l, r, op)? / 16) as usize;
                }
                return Ok(Flow::JumpEach(mask, Box::new(to)));
            }
            "BSSY" => {
                if let Some(Opnd::Other(b)) = o.first() {
                    let n: u8 = b
                        .strip_prefix('B')
                        .and_then(|d| d.parse().ok())
                        .ok_or_else(|| unsupported(op, "this barrier"))?;
                    w.breg[n as usize] = active;
                }
            }
            "BSYNC" => {
                if let Some(Opnd::Other(b)) = o.first() {
                    let n: u8 = b
                        .strip_prefix('B')
                        .and_then(|d| d.parse().ok())
                        .ok_or_else(|| unsupported(op, "this barrier"))?;
                    return Ok(Flow::Bsync(n));
                }
                return Err(unsupported(op, "BSYNC without a barrier"));
            }
            "BREAK" => {
                // The lanes leave convergence barrier Bn: its `BSYNC` no longer waits for them.
                if let Some(Opnd::Other(b)) = o.first() {
                    let n: u8 = b
                        .strip_prefix('B')
                        .and_then(|d| d.parse().ok())
                        .filter(|&n: &u8| n < 16)
                        .ok_or_else(|| unsupported(op, "this barrier"))?;
                    w.breg[n as usize] &= !mask;
                } else {
                    return Err(unsupported(op, "BREAK without a barrier"));
                }
            }
            "ELECT" => {
                // ELECT Pd, URd, PT: the lowest active lane leads (Pd true there, false in the
                // others); URd its lane id. ptxas only writes PT as the third operand.
                if !matches!(o.get(2), Some(Opnd::P { n: 7, not: false })) || o.len() != 3 {
                    return Err(unsupported(op, "this ELECT form (only `ELECT Pd, URd, PT`)"));
                }
                if mask != 0 {
                    let leader = mask.trailing_zeros();
                    let pd = dst_p(&o[0], op)?;
                    for l in lanes() {
                        w.set_p(pd, l, l as u32 == leader);
                    }
                    match &o[1] {
                        Opnd::Ur { n, .. } => w.set_ur(*n, leader),
                        _ => return Err(unsupported(op, "this ELECT destination")),
                    }
                }
            }
            "SYNCS" => return self.syncs(w, op, mask),
            "UTMALDG" | "UTMASTG" => self.utma(w, op, mask)?,
            "UBLKCP" => self.ublkcp(w, op, mask)?,
            // The copies completed at issue: a commit has nothing to group, a wait nothing to wait for.
            "UTMACMDFLUSH" => {}
            // `setmaxnreg`: registers move between the CTA's warpgroups. The emulator gives
            // every warp its full register file, so a give-back has nothing to do and a
            // request always succeeds (`TRY_ALLOC` sets its uniform predicate; ptxas loops
            // on it until the registers are free).
            "USETMAXREG" if op.has("DEALLOC") => {}
            "USETMAXREG" if op.has("TRY_ALLOC") => match o.first() {
                Some(Opnd::Up { n, .. }) => w.set_up(*n, true),
                _ => return Err(unsupported(op, "this USETMAXREG form")),
            },
            // Prefetches of a tensor or of a tensor map into the cache: hints.
            "UTMAPF" => {}
            "UTMACCTL" if op.has("PF") => {}
            "BAR" => {
                // `BAR.SYNC id` (the whole CTA) or `BAR.SYNC id, count` (named barriers: a
                // warp-specialized kernel's consumers), and `BAR.ARV id, count` (arrives, does
                // not wait: ping-pong turns); the id an immediate or a register (the same in
                // every lane: the warp's first active lane's). A predicated-off barrier is
                // skipped by the whole warp.
                if mask == 0 {
                    return Ok(Flow::Next);
                }
                let lane = mask.trailing_zeros() as usize;
                let val = |x: Option<&Opnd>| match x {
                    Some(Opnd::Imm(b)) => Some(*b as u32),
                    Some(r @ Opnd::R { .. }) => self.u(w, lane, r, op).ok(),
                    _ => None,
                };
                let id = if o.is_empty() { Some(0) } else { val(o.first()) };
                let count = if o.len() > 1 { val(o.get(1)) } else { Some(0) };
                match (op.has("SYNC"), op.has("ARV"), id, count, o.len()) {
                    (true, false, Some(id), Some(count), ..=2) if id < 16 && count % 32 == 0 => {
                        return Ok(Flow::Bar(id, count))
                    }
                    (false, true, Some(id), Some(count), 2) if id < 16 && count > 0 && count % 32 == 0 => {
                        return Ok(Flow::Arrive(id, count))
                    }
                    _ => return Err(unsupported(op, "this barrier form")),
                }
            }
            "MOV" => each!(|l| {
                let v = self.u(w, l, &o[1], op)?;
                w.set_r(dst_r(&o[0], op)?, l, v);
            }),
            "S2R" => each!(|l| {
                let v = self.u(w, l, &o[1], op)?;
                w.set_r(dst_r(&o[0], op)?, l, v);
            }),
            "CS2R" => each!(|l| {
                let d = dst_r(&o[0], op)?;
                let v = match &o[1] {
                    Opnd::Sr(s) if s == "SRZ" => 0,
                    Opnd::Sr(s) if s.starts_with("SR_CLOCKLO") => self.clock,
                    Opnd::Sr(s) if s.starts_with("SR_GLOBALTIMERLO") => self.global_timer(),
                    _ => return Err(unsupported(op, "this CS2R source")),
                };
                w.set_r(d, l, v as u32);
                if op.has("32") {
                    continue;
                }
                w.set_r(d.saturating_add(1), l, (v >> 32) as u32);
            }),
            "LDC" => {
                let (n, _) = width_of(op)?;
                each!(|l| {
                    let d = dst_r(&o[0], op)?;
                    let Opnd::C { bank, off, reg, ureg, .. } = &o[1] else {
                        return Err(unsupported(op, "this LDC source"));
                    };
                    let a = const_offset(w, l, *off, *reg, *ureg);
                    for k in 0..(n / 4).max(1) {
                        let v = self.cbank_u32(op, *bank, a + 4 * k as i64)?;
                        w.set_r(d.saturating_add(k as u8), l, v);
                    }
                })
            }
            "IMAD" => {
                let wide = op.has("WIDE");
                let hi = op.has("HI");
                let unsigned = op.has("U32");
                let carry_in = op.has("X");
                each!(|l| {
                    let d = dst_r(&o[0], op)?;
                    let a = self.u(w, l, &o[1], op)?;
                    let b = self.u(w, l, &o[2], op)?;
                    let cin = if carry_in && o.len() > 4 { self.p(w, l, &o[4], op)? as u64 } else { 0 };
                    if wide {
                        let prod = if unsigned {
                            (a as u64).wrapping_mul(b as u64)
                        } else {
                            (a as i32 as i64).wrapping_mul(b as i32 as i64) as u64
                        };
                        let c = self.u64(w, l, &o[3], op)?;
                        let c = if matches!(o[3], Opnd::R { neg: true, .. }) { c.wrapping_neg() } else { c };
                        let v = prod.wrapping_add(c).wrapping_add(cin);
                        w.set_r(d, l, v as u32);
                        w.set_r(d.saturating_add(1), l, (v >> 32) as u32);
                    } else if hi {
                        let prod = if unsigned {
                            (a as u64) * (b as u64)
                        } else {
                            (a as i32 as i64).wrapping_mul(b as i32 as i64) as u64
                        };
                        // The addend is a 64-bit pair added to the full product (ptxas folds
                        // an add into the high word: `IMAD.HI R9, R17, R15, R4` adds R5:R4).
                        let c = self.u64(w, l, &o[3], op)?;
                        let c = if matches!(o[3], Opnd::R { neg: true, .. }) { c.wrapping_neg() } else { c };
                        w.set_r(d, l, (prod.wrapping_add(c).wrapping_add(cin) >> 32) as u32);
                    } else {
                        let c = self.u(w, l, &o[3], op)?;
                        w.set_r(d, l, a.wrapping_mul(b).wrapping_add(c).wrapping_add(cin as u32));
                    }
                })
            }
            "IADD3" => {
                // IADD3[.X] Rd, [Pc0, [Pc1,]] a, b, c [, Pin0, Pin1]
                let outs: Vec<u8> = o[1..].iter().take_while(|x| is_p(x)).map(|x| dst_p(x, op)).collect::<R<_>>()?;
                let s = 1 + outs.len();
                let x = op.has("X");
                each!(|l| {
                    let term = |v: &Opnd, w: &Warp| -> R<u64> {
                        let neg = matches!(
                            v,
                            Opnd::R { neg: true, .. } | Opnd::Ur { neg: true, .. } | Opnd::C { neg: true, .. }
                        );
                        let raw = match v {
                            Opnd::R { n, sel, not, .. } => {
                                let mut r = sel16(if *n == 255 { 0 } else { w.r[*n as usize][l] }, *sel);
                                if *not {
                                    r = !r;
                                }
                                r
                            }
                            Opnd::Ur { n, not, .. } => {
                                let r = if *n == 63 { 0 } else { w.ur[*n as usize] };
                                if *not {
                                    !r
                                } else {
                                    r
                                }
                            }
                            Opnd::C { .. } => self.u(w, l, &strip_neg(v), op)?,
                            Opnd::Imm(b) => return Ok(*b as u32 as u64),
                            Opnd::FImm(f) => return Ok(*f as i64 as u32 as u64),
                            _ => return Err(unsupported(op, "this IADD3 operand")),
                        };
                        Ok(if neg { (!raw) as u64 + 1 } else { raw as u64 })
                    };
                    let mut sum = term(&o[s], w)? + term(&o[s + 1], w)? + term(&o[s + 2], w)?;
                    if x {
                        for pin in &o[s + 3..] {
                            sum += self.p(w, l, pin, op)? as u64;
                        }
                    }
                    w.set_r(dst_r(&o[0], op)?, l, sum as u32);
                    let carry = sum >> 32;
                    for (i, pd) in outs.iter().enumerate() {
                        w.set_p(*pd, l, carry >> i & 1 == 1);
                    }
                })
            }
            "VIADD" => each!(|l| {
                let v = self.u(w, l, &o[1], op)?.wrapping_add(self.u(w, l, &o[2], op)?);
                w.set_r(dst_r(&o[0], op)?, l, v);
            }),
            "IABS" => each!(|l| {
                let v = (self.u(w, l, &o[1], op)? as i32).unsigned_abs();
                w.set_r(dst_r(&o[0], op)?, l, v);
            }),
            "IMNMX" | "VIMNMX" => {
                let unsigned = op.has("U32");
                each!(|l| {
                    let a = self.u(w, l, &o[1], op)?;
                    let b = self.u(w, l, &o[2], op)?;
                    let min = self.p(w, l, &o[3], op)?;
                    let v = if unsigned {
                        if min {
                            a.min(b)
                        } else {
                            a.max(b)
                        }
                    } else if min {
                        (a as i32).min(b as i32) as u32
                    } else {
                        (a as i32).max(b as i32) as u32
                    };
                    w.set_r(dst_r(&o[0], op)?, l, v);
                })
            }
            "POPC" | "BREV" | "FLO" => each!(|l| {
                let a = self.u(w, l, &o[o.len() - 1], op)?;
                w.set_r(dst_r(&o[0], op)?, l, bit_count_op(op, a));
            }),
            "VIMNMX3" => {
                // d = min/max(a, b, c): the predicate picks min.
                let unsigned = op.has("U32");
                each!(|l| {
                    let (a, b, c) = (self.u(w, l, &o[1], op)?, self.u(w, l, &o[2], op)?, self.u(w, l, &o[3], op)?);
                    let min = self.p(w, l, &o[4], op)?;
                    let v = match (unsigned, min) {
                        (true, true) => a.min(b).min(c),
                        (true, false) => a.max(b).max(c),
                        (false, true) => (a as i32).min(b as i32).min(c as i32) as u32,
                        (false, false) => (a as i32).max(b as i32).max(c as i32) as u32,
                    };
                    w.set_r(dst_r(&o[0], op)?, l, v);
                })
            }
            "VIADDMNMX" => {
                // d = min/max(a + b, c): the predicate picks min (as IMNMX's does).
                let unsigned = op.has("U32");
                each!(|l| {
                    let s = self.u(w, l, &o[1], op)?.wrapping_add(self.u(w, l, &o[2], op)?);
                    let c = self.u(w, l, &o[3], op)?;
                    let min = self.p(w, l, &o[4], op)?;
                    let v = match (unsigned, min) {
                        (true, true) => s.min(c),
                        (true, false) => s.max(c),
                        (false, true) => (s as i32).min(c as i32) as u32,
                        (false, false) => (s as i32).max(c as i32) as u32,
                    };
                    w.set_r(dst_r(&o[0], op)?, l, v);
                })
            }
            "SGXT" => {
                let unsigned = op.has("U32");
                each!(|l| {
                    let a = self.u(w, l, &o[1], op)?;
                    let bits = self.u(w, l, &o[2], op)?.min(32);
                    let v = if bits == 0 {
                        0
                    } else if bits >= 32 {
                        a
                    } else if unsigned {
                        a & ((1u32 << bits) - 1)
                    } else {
                        (((a << (32 - bits)) as i32) >> (32 - bits)) as u32
                    };
                    w.set_r(dst_r(&o[0], op)?, l, v);
                })
            }
            "LEA" => {
                // LEA[.HI][.X][.SX32] Rd, [Pc,] a, b, [c,] shift [, Pin]
                let outs: Vec<u8> = o[1..].iter().take_while(|x| is_p(x)).map(|x| dst_p(x, op)).collect::<R<_>>()?;
                let s = 1 + outs.len();
                let hi = op.has("HI");
                let sx = op.has("SX32");
                let x = op.has("X");
                each!(|l| {
                    let a = self.u(w, l, &o[s], op)?;
                    let b = self.u(w, l, &o[s + 1], op)?;
                    let (c, shift_at) = if hi && !sx { (self.u(w, l, &o[s + 2], op)?, s + 3) } else { (0, s + 2) };
                    let sh = self.u(w, l, &o[shift_at], op)? & 63;
                    let cin = if x {
                        o.get(shift_at + 1).map(|p| self.p(w, l, p, op)).transpose()?.unwrap_or(false) as u64
                    } else {
                        0
                    };
                    let part = if hi {
                        let high = if sx { ((a as i32) >> 31) as u32 } else { c };
                        let v = ((high as u64) << 32 | a as u64) << sh;
                        (v >> 32) as u32
                    } else {
                        ((a as u64) << sh) as u32
                    };
                    let sum = part as u64 + b as u64 + cin;
                    w.set_r(dst_r(&o[0], op)?, l, sum as u32);
                    if let Some(pd) = outs.first() {
                        w.set_p(*pd, l, sum >> 32 & 1 == 1);
                    }
                })
            }
            "LOP3" => {
                // LOP3.LUT [Pd,] Rd, a, b, c, lut, Pin
                let pout = is_p(&o[0]).then(|| dst_p(&o[0], op)).transpose()?;
                let s = if pout.is_some() { 1 } else { 0 };
                each!(|l| {
                    let a = self.u(w, l, &o[s + 1], op)?;
                    let b = self.u(w, l, &o[s + 2], op)?;
                    let c = self.u(w, l, &o[s + 3], op)?;
                    let lut = self.u(w, l, &o[s + 4], op)?;
                    let v = lut3(lut, a, b, c);
                    w.set_r(dst_r(&o[s], op)?, l, v);
                    if let Some(pd) = pout {
                        let pin = o.get(s + 5).map(|p| self.p(w, l, p, op)).transpose()?.unwrap_or(false);
                        w.set_p(pd, l, v != 0 || pin);
                    }
                })
            }
            "PLOP3" => {
                // PLOP3.LUT Pd, Pe, a, b, c, lut, lut2
                each!(|l| {
                    let a = self.p(w, l, &o[2], op)? as u32;
                    let b = self.p(w, l, &o[3], op)? as u32;
                    let c = self.p(w, l, &o[4], op)? as u32;
                    let lut = self.u(w, l, &o[5], op)?;
                    let lut2 = self.u(w, l, &o[6], op)?;
                    let i = a << 2 | b << 1 | c;
                    w.set_p(dst_p(&o[0], op)?, l, lut >> i & 1 == 1);
                    w.set_p(dst_p(&o[1], op)?, l, lut2 >> i & 1 == 1);
                })
            }
            "SHF" => {
                let left = op.has("L");
                let wide = op.has("U64") || op.has("S64");
                let signed = op.has("S32") || op.has("S64");
                let high = op.has("HI");
                let wrap = op.has("W");
                each!(|l| {
                    let lo = self.u(w, l, &o[1], op)?;
                    let s = self.u(w, l, &o[2], op)?;
                    let hi = self.u(w, l, &o[3], op)?;
                    let max = if wide { 64 } else { 32 };
                    let s = if wrap { s & (max - 1) } else { s.min(max) };
                    let v = (hi as u64) << 32 | lo as u64;
                    let r = if left {
                        let r = if s >= 64 { 0 } else { v << s };
                        if high {
                            (r >> 32) as u32
                        } else {
                            r as u32
                        }
                    } else {
                        let r = if signed {
                            if s >= 64 {
                                ((v as i64) >> 63) as u64
                            } else {
                                ((v as i64) >> s) as u64
                            }
                        } else if s >= 64 {
                            0
                        } else {
                            v >> s
                        };
                        if high {
                            (r >> 32) as u32
                        } else {
                            r as u32
                        }
                    };
                    w.set_r(dst_r(&o[0], op)?, l, r);
                })
            }
            "PRMT" => each!(|l| {
                if op.mods.iter().any(|m| m != "reuse") {
                    return Err(unsupported(op, "a PRMT mode"));
                }
                let a = self.u(w, l, &o[1], op)?;
                let sel = self.u(w, l, &o[2], op)?;
                let b = self.u(w, l, &o[3], op)?;
                w.set_r(dst_r(&o[0], op)?, l, prmt(a, sel, b));
            }),
            "SEL" | "FSEL" => each!(|l| {
                let v = if self.p(w, l, &o[3], op)? { self.u(w, l, &o[1], op)? } else { self.u(w, l, &o[2], op)? };
                let v = if root == "FSEL" {
                    // FSEL takes float modifiers.
                    let x = if self.p(w, l, &o[3], op)? { self.f(w, l, &o[1], op)? } else { self.f(w, l, &o[2], op)? };
                    x.to_bits()
                } else {
                    v
                };
                w.set_r(dst_r(&o[0], op)?, l, v);
            }),
            "ISETP" | "FSETP" | "DSETP" => {
                let cmp = op.mods.first().cloned().unwrap_or_default();
                let bop = op
                    .mods
                    .iter()
                    .find(|m| matches!(m.as_str(), "AND" | "OR" | "XOR"))
                    .cloned()
                    .unwrap_or_else(|| "AND".into());
                let unsigned = op.has("U32");
                let extended = op.has("EX");
                if extended && root != "ISETP" {
                    return Err(unsupported(op, "this extended compare"));
                }
                let flush = op.has("FTZ");
                each!(|l| {
                    let c = match root {
                        "ISETP" => {
                            let a = self.u(w, l, &o[2], op)?;
                            let b = self.u(w, l, &o[3], op)?;
                            let (a, b) =
                                if unsigned { (a as i64, b as i64) } else { (a as i32 as i64, b as i32 as i64) };
                            if extended {
                                icmp_ex(&cmp, a, b, self.p(w, l, &o[5], op)?)
                            } else {
                                icmp(&cmp, a, b)
                            }
                        }
                        "FSETP" => {
                            let (mut a, mut b) = (self.f(w, l, &o[2], op)?, self.f(w, l, &o[3], op)?);
                            if flush {
                                a = ftz(a);
                                b = ftz(b);
                            }
                            fcmp(&cmp, a as f64, b as f64)
                        }
                        _ => fcmp(&cmp, self.d(w, l, &o[2], op)?, self.d(w, l, &o[3], op)?),
                    }
                    .ok_or_else(|| unsupported(op, "this comparison"))?;
                    let pc = self.p(w, l, &o[4], op)?;
                    let r1 = combine(&bop, c, pc).ok_or_else(|| unsupported(op, "this combination"))?;
                    let r2 = combine(&bop, !c, pc).ok_or_else(|| unsupported(op, "this combination"))?;
                    w.set_p(dst_p(&o[0], op)?, l, r1);
                    w.set_p(dst_p(&o[1], op)?, l, r2);
                })
            }
            "FADD" | "FMUL" | "FFMA" | "FMNMX" => {
                // Directed rounding (`ptxas`'s IEEE division and square root use it): the exact
                // result as an f64 and its error term, rounded as the PTX emulator rounds.
                let dir = op.mods.iter().find_map(|m| match m.as_str() {
                    "RZ" => Some(Rnd::Rz),
                    "RM" => Some(Rnd::Rm),
                    "RP" => Some(Rnd::Rp),
                    _ => None,
                });
                let flush = op.has("FTZ");
                let sat = op.has("SAT");
                each!(|l| {
                    let mut a = self.f(w, l, &o[1], op)?;
                    let mut b = self.f(w, l, &o[2], op)?;
                    if flush {
                        a = ftz(a);
                        b = ftz(b);
                    }
                    let mut v = match (root, dir) {
                        ("FADD", None) => a + b,
                        ("FMUL", None) => a * b,
                        ("FFMA", _) => {
                            let mut c = self.f(w, l, &o[3], op)?;
                            if flush {
                                c = ftz(c);
                            }
                            match dir {
                                // f32 × f32 is exact in f64.
                                Some(d) => {
                                    let (s, e) = fp::two_sum(a as f64 * b as f64, c as f64);
                                    fp::round_f32(s, e, d)
                                }
                                None => a.mul_add(b, c),
                            }
                        }
                        ("FADD", Some(d)) => {
                            let (s, e) = fp::two_sum(a as f64, b as f64);
                            fp::round_f32(s, e, d)
                        }
                        ("FMUL", Some(d)) => fp::round_f32(a as f64 * b as f64, 0.0, d),
                        _ => fminmax(a, b, self.p(w, l, &o[3], op)?),
                    };
                    if flush {
                        v = ftz(v);
                    }
                    if sat {
                        v = if v.is_nan() { 0.0 } else { v.clamp(0.0, 1.0) };
                    }
                    w.set_r(dst_r(&o[0], op)?, l, canon32(v));
                })
            }
            "FCHK" => {
                // Whether the fast path of an IEEE division (reciprocal, Newton steps, a
                // correcting FFMA) may be inexact, so that `ptxas`'s code calls its slow
                // routine. The hardware's exact rule is not documented; this one says "slow"
                // wherever an operand is not an ordinary normal number or the exponents are
                // far apart — a superset of the hardware's cases, so the fast path is taken
                // only where it is exact and the result never depends on the rule. A zero
                // dividend is one: the fast path's `FFMA a, r, RZ` makes -0 / b come out +0.
                each!(|l| {
                    let a = self.f(w, l, &o[1], op)?;
                    let b = self.f(w, l, &o[2], op)?;
                    let exp = |x: f32| ((x.to_bits() >> 23) & 0xff) as i32 - 127;
                    let fast = b.is_normal()
                        && a.is_normal()
                        && exp(a).abs() <= 100
                        && (exp(a) - exp(b)).abs() <= 100
                        && exp(b).abs() <= 100;
                    w.set_p(dst_p(&o[0], op)?, l, !fast);
                })
            }
            "FRND" => {
                // Round to an integral float: to nearest even unless told otherwise.
                if op.has("F64") || op.has("F16") {
                    return Err(unsupported(op, "this FRND width"));
                }
                let mode = ["FLOOR", "CEIL", "TRUNC"].into_iter().find(|m| op.has(m));
                let flush = op.has("FTZ");
                each!(|l| {
                    let mut x = self.f(w, l, &o[1], op)?;
                    if flush {
                        x = ftz(x);
                    }
                    let v = match mode {
                        Some("FLOOR") => x.floor(),
                        Some("CEIL") => x.ceil(),
                        Some(_) => x.trunc(),
                        None => x.round_ties_even(),
                    };
                    w.set_r(dst_r(&o[0], op)?, l, canon32(v));
                })
            }
            "MUFU" => {
                let f = op.mods.first().cloned().unwrap_or_default();
                each!(|l| {
                    // The multi-function unit flushes subnormal inputs and results to zero
                    // (`ptxas` wraps it in scaling code where PTX asks for subnormals).
                    let x = ftz(self.f(w, l, &o[1], op)?) as f64;
                    let v = match f.as_str() {
                        "EX2" => x.exp2(),
                        "RCP" => 1.0 / x,
                        "RSQ" => 1.0 / x.sqrt(),
                        "LG2" => x.log2(),
                        "SIN" => x.sin(),
                        "COS" => x.cos(),
                        "SQRT" => x.sqrt(),
                        "TANH" => x.tanh(),
                        _ => return Err(unsupported(op, "this MUFU function")),
                    };
                    w.set_r(dst_r(&o[0], op)?, l, canon32(ftz(v as f32)));
                })
            }
            "DADD" | "DMUL" | "DFMA" => each!(|l| {
                let a = self.d(w, l, &o[1], op)?;
                let b = self.d(w, l, &o[2], op)?;
                let v = match root {
                    "DADD" => a + b,
                    "DMUL" => a * b,
                    _ => a.mul_add(b, self.d(w, l, &o[3], op)?),
                };
                let d = dst_r(&o[0], op)?;
                w.set_r(d, l, v.to_bits() as u32);
                w.set_r(d.saturating_add(1), l, (v.to_bits() >> 32) as u32);
            }),
            "F2FP" => {
                let bf = op.has("BF16");
                if !op.has("PACK_AB") {
                    return Err(unsupported(op, "this F2FP form"));
                }
                each!(|l| {
                    let a = self.f(w, l, &o[1], op)?;
                    let b = self.f(w, l, &o[2], op)?;
                    w.set_r(dst_r(&o[0], op)?, l, half_bits(a, bf) << 16 | half_bits(b, bf));
                })
            }
            "HADD2" | "HMUL2" | "HFMA2" => {
                let to_f32 = op.has("F32");
                let bf = op.has("BF16_V2") || op.has("BF16");
                // A half2 immediate is printed as two numbers, high half first
                // (`HFMA2.MMA R11, -RZ, RZ, 0, 2.384185791015625e-07` sets R11 to 4).
                let mut logical: Vec<Opnd> = vec![];
                let mut i = 1;
                while i < o.len() {
                    match (&o[i], o.get(i + 1)) {
                        (Opnd::FImm(hi), Some(Opnd::FImm(lo))) => {
                            let h = |x: f64| if bf { bf16::from_f64(x).to_bits() } else { f16::from_f64(x).to_bits() } as u64;
                            logical.push(Opnd::Imm(h(*hi) << 16 | h(*lo)));
                            i += 2;
                        }
                        (x, _) => {
                            logical.push(x.clone());
                            i += 1;
                        }
                    }
                }
                each!(|l| {
                    let get = |i: usize, w: &Warp| -> R<(f32, f32)> {
                        let x = &logical[i - 1];
                        let (neg, abs) = Self::mods(x);
                        let (lo, hi) = match x {
                            Opnd::R { n, sel, .. } => halves(if *n == 255 { 0 } else { w.r[*n as usize][l] }, *sel),
                            Opnd::FImm(f) => {
                                let h = if bf { bf16::from_f64(*f).to_bits() } else { f16::from_f64(*f).to_bits() };
                                (h, h)
                            }
                            Opnd::Imm(b) => ((*b as u32) as u16, (*b as u32 >> 16) as u16),
                            _ => halves(self.raw(w, l, x, op)?, Sel::None),
                        };
                        let cv = |h: u16| {
                            let mut v = if bf { bf16::from_bits(h).to_f32() } else { f16::from_bits(h).to_f32() };
                            if abs {
                                v = v.abs();
                            }
                            if neg {
                                v = -v;
                            }
                            v
                        };
                        Ok((cv(lo), cv(hi)))
                    };
                    let a = get(1, w)?;
                    let b = get(2, w)?;
                    // In f64, where sums and products of halves are exact: one rounding, to
                    // the result's format, as the hardware (and the PTX emulator) rounds.
                    let (a, b) = ((a.0 as f64, a.1 as f64), (b.0 as f64, b.1 as f64));
                    let r = match root {
                        "HADD2" => (a.0 + b.0, a.1 + b.1),
                        "HMUL2" => (a.0 * b.0, a.1 * b.1),
                        _ => {
                            let c = get(3, w)?;
                            (a.0.mul_add(b.0, c.0 as f64), a.1.mul_add(b.1, c.1 as f64))
                        }
                    };
                    let d = dst_r(&o[0], op)?;
                    if to_f32 {
                        w.set_r(d, l, canon32(r.0 as f32));
                    } else {
                        w.set_r(d, l, half_bits64(r.1, bf) << 16 | half_bits64(r.0, bf));
                    }
                })
            }
            "P2R" => {
                // P2R[.Bn] Rd, [PR,] Rs, mask: the predicates P0..P6 as bits (byte n), the
                // other bits from Rs. nvdisasm's JSON moves the `PR` operand out.
                let at = o.iter().position(|x| !matches!(x, Opnd::Other(_))).unwrap_or(0);
                let rest: Vec<&Opnd> = o.iter().filter(|x| !matches!(x, Opnd::Other(_))).collect();
                let _ = at;
                let byte =
                    op.mods.iter().find_map(|m| m.strip_prefix('B').and_then(|d| d.parse::<u32>().ok())).unwrap_or(0);
                each!(|l| {
                    let src = self.u(w, l, rest[1], op)?;
                    let m = self.u(w, l, rest[2], op)? & 0x7f;
                    let preds = (0..7).fold(0u32, |acc, i| acc | ((w.p[i] >> l & 1) << i));
                    let v = (src & !(m << (8 * byte))) | ((preds & m) << (8 * byte));
                    w.set_r(dst_r(rest[0], op)?, l, v);
                })
            }
            "R2P" => {
                // R2P PR, Rs[.Bn], mask: P_i = bit i of Rs (byte n) where the mask has it.
                let rest: Vec<&Opnd> = o.iter().filter(|x| !matches!(x, Opnd::Other(_))).collect();
                let byte =
                    op.mods.iter().find_map(|m| m.strip_prefix('B').and_then(|d| d.parse::<u32>().ok())).unwrap_or(0);
                each!(|l| {
                    let src = self.u(w, l, rest[0], op)? >> (8 * byte);
                    let m = self.u(w, l, rest[1], op)? & 0x7f;
                    for i in 0..7u8 {
                        if m >> i & 1 == 1 {
                            w.set_p(i, l, src >> i & 1 == 1);
                        }
                    }
                })
            }
            "I2FP" | "I2F" | "F2I" | "F2F" => return self.convert(w, op, mask),
            "SHFL" => return self.shfl(w, op, mask).map(|_| Flow::Next),
            "VOTE" | "VOTEU" | "REDUX" | "MATCH" => return self.warp_wide(w, op, mask).map(|_| Flow::Next),
            "LDG" | "STG" | "LDS" | "STS" | "LDL" | "STL" => return self.memory(w, op, mask).map(|_| Flow::Next),
            "LDSM" => self.ldsm(w, op, mask)?,
            "STSM" => self.stsm(w, op, mask)?,
            "ATOMG" | "RED" | "REDG" => self.atomic(w, op, mask)?,
            "HMMA" => self.hmma(w, op, mask)?,
            "HGMMA" => self.hgmma(w, op, mask)?,
            // The warpgroup MMA computes at issue; its results' time (and the hazard of reading
            // them early) is the timing model's, which holds them until `WARPGROUP.DEPBAR`.
            "WARPGROUP" if op.has("ARRIVE") || op.has("DEPBAR") => {}
            "LDGSTS" => self.ldgsts(w, op, mask)?,
            // Uniform datapath.
            "S2UR" | "ULDC" | "UMOV" | "UIADD3" | "UIMAD" | "ULEA" | "USHF" | "USEL" | "UISETP" | "ULOP3" | "USGXT"
            | "UPOPC" | "UBREV" | "UFLO" | "UPLOP3" | "UPRMT" | "R2UR" | "UP2UR" => {
                if uniform_on {
                    self.uniform(w, op, mask)?;
                }
            }
            _ => return Err(unsupported(op, &format!("`{root}`"))),
        }
        Ok(Flow::Next)
    }

    /// Instructions over the lanes `mask` together: `VOTE{,U}.{ANY,ALL,EQ} [Rd,] Pd, Ps`
    /// (the ballot of `Ps` into `Rd`, the verdict into `Pd`), `REDUX.{SUM,MIN,MAX,AND,OR,XOR}
    /// [.S32] URd, Rs`, `MATCH.ANY Rd, Rs` (each lane: the lanes holding its value) and
    /// `MATCH.ALL Pd, Rd, Rs` (all equal: the lanes, else 0).
    fn warp_wide(&mut self, w: &mut Warp, op: &Op, mask: u32) -> R<()> {
        if mask == 0 {
            return Ok(());
        }
        let o = &op.ops;
        let lanes: Vec<usize> = (0..32).filter(|l| mask >> l & 1 == 1).collect();
        let l0 = lanes[0];
        match op.root.as_str() {
            "VOTE" | "VOTEU" => {
                let src = o.last().ok_or_else(|| unsupported(op, "VOTE without a source"))?;
                let mut ballot = 0u32;
                for &l in &lanes {
                    if self.p(w, l, src, op)? {
                        ballot |= 1 << l;
                    }
                }
                let verdict = if op.has("ANY") {
                    ballot != 0
                } else if op.has("ALL") {
                    ballot == mask
                } else if op.has("EQ") {
                    ballot == 0 || ballot == mask
                } else {
                    return Err(unsupported(op, "this vote"));
                };
                let (reg, pred) = match o.len() {
                    3 => (Some(&o[0]), &o[1]),
                    2 => (None, &o[0]),
                    _ => return Err(unsupported(op, "these operands")),
                };
                match reg {
                    Some(Opnd::Ur { n, .. }) => w.set_ur(*n, ballot),
                    Some(r) => {
                        let d = dst_r(r, op)?;
                        for &l in &lanes {
                            w.set_r(d, l, ballot);
                        }
                    }
                    None => {}
                }
                match pred {
                    Opnd::Up { n, .. } => w.set_up(*n, verdict),
                    p => {
                        let d = dst_p(p, op)?;
                        for &l in &lanes {
                            w.set_p(d, l, verdict);
                        }
                    }
                }
            }
            "REDUX" => {
                let signed = op.has("S32");
                let vals = lanes.iter().map(|&l| self.u(w, l, &o[1], op)).collect::<R<Vec<u32>>>()?;
                // No function printed: AND (`redux.sync.and` assembles to a bare `REDUX`).
                let f = op.mods.iter().map(String::as_str).find(|m| *m != "S32").unwrap_or("AND");
                let v = match f {
                    "SUM" => vals.iter().fold(0u32, |a, &b| a.wrapping_add(b)),
                    "AND" => vals.iter().fold(u32::MAX, |a, &b| a & b),
                    "OR" => vals.iter().fold(0, |a, &b| a | b),
                    "XOR" => vals.iter().fold(0, |a, &b| a ^ b),
                    "MIN" if signed => vals.iter().map(|&x| x as i32).min().unwrap_or(0) as u32,
                    "MAX" if signed => vals.iter().map(|&x| x as i32).max().unwrap_or(0) as u32,
                    "MIN" => vals.iter().copied().min().unwrap_or(0),
                    "MAX" => vals.iter().copied().max().unwrap_or(0),
                    _ => return Err(unsupported(op, "this reduction")),
                };
                match &o[0] {
                    Opnd::Ur { n, .. } => w.set_ur(*n, v),
                    r => {
                        let d = dst_r(r, op)?;
                        for &l in &lanes {
                            w.set_r(d, l, v);
                        }
                    }
                }
            }
            _ => {
                if op.has("U64") || op.has("64") {
                    return Err(unsupported(op, "64-bit matches"));
                }
                let src = o.last().ok_or_else(|| unsupported(op, "MATCH without a source"))?;
                let vals = (0..32)
                    .map(|l| if mask >> l & 1 == 1 { self.u(w, l, src, op) } else { Ok(0) })
                    .collect::<R<Vec<u32>>>()?;
                if op.has("ANY") {
                    let d = dst_r(&o[0], op)?;
                    for &l in &lanes {
                        let same = lanes.iter().filter(|&&k| vals[k] == vals[l]).fold(0u32, |m, &k| m | 1 << k);
                        w.set_r(d, l, same);
                    }
                } else if op.has("ALL") {
                    let all = lanes.iter().all(|&k| vals[k] == vals[l0]);
                    let (dp, dr) = (dst_p(&o[0], op)?, dst_r(&o[1], op)?);
                    for &l in &lanes {
                        w.set_p(dp, l, all);
                        w.set_r(dr, l, if all { mask } else { 0 });
                    }
                } else {
                    return Err(unsupported(op, "this match"));
                }
            }
        }
        Ok(())
    }

    fn uniform(&mut self, w: &mut Warp, op: &Op, mask: u32) -> R<()> {
        let o = &op.ops;
        let l0 = mask.trailing_zeros() as usize;
        let du = |x: &Opnd| match x {
            Opnd::Ur { n, .. } => Ok(*n),
            _ => Err(unsupported(op, "this uniform destination")),
        };
        let dp = |x: &Opnd| match x {
            Opnd::Up { n, .. } => Ok(*n),
            _ => Err(unsupported(op, "this uniform predicate destination")),
        };
        match op.root.as_str() {
            "R2UR" if matches!(o.first(), Some(Opnd::P { .. })) => {
                // `R2UR Pd, URd, Rs` (ptxas's loop over the distinct values of a register a
                // uniform instruction needs): URd takes the first active lane's value; Pd is
                // true in the lanes whose value differs, which the loop serves later.
                let v = self.u(w, l0, &o[2], op)?;
                w.set_ur(du(&o[1])?, v);
                let pd = dst_p(&o[0], op)?;
                for l in (0..32).filter(|l| mask >> l & 1 == 1) {
                    let x = self.u(w, l, &o[2], op)?;
                    w.set_p(pd, l, x != v);
                }
            }
            "UP2UR" => {
                // UP2UR[.Bn] URd, UPR, URs, mask: the uniform predicates UP0..UP6 as bits (byte
                // n), the other bits from URs — `P2R` on the uniform datapath. `UPR` comes out
                // of nvdisasm as an operand the parser does not name.
                let rest: Vec<&Opnd> = o.iter().filter(|x| !matches!(x, Opnd::Other(_))).collect();
                if rest.len() != 3 {
                    return Err(unsupported(op, "this UP2UR form"));
                }
                let byte =
                    op.mods.iter().find_map(|m| m.strip_prefix('B').and_then(|d| d.parse::<u32>().ok())).unwrap_or(0);
                let src = self.u(w, l0, rest[1], op)?;
                let m = self.u(w, l0, rest[2], op)? & 0x7f;
                let preds = (0..7).fold(0u32, |acc, i| acc | ((w.up[i] as u32) << i));
                let v = (src & !(m << (8 * byte))) | ((preds & m) << (8 * byte));
                w.set_ur(du(rest[0])?, v);
            }
            "UPRMT" => {
                if op.mods.iter().any(|m| m != "reuse") {
                    return Err(unsupported(op, "a UPRMT mode"));
                }
                let a = self.u(w, l0, &o[1], op)?;
                let sel = self.u(w, l0, &o[2], op)?;
                let b = self.u(w, l0, &o[3], op)?;
                w.set_ur(du(&o[0])?, prmt(a, sel, b));
            }
            "S2UR" | "UMOV" | "R2UR" => {
                let v = self.u(w, l0, &o[1], op)?;
                w.set_ur(du(&o[0])?, v);
            }
            "ULDC" => {
                let d = du(&o[0])?;
                let Opnd::C { bank, off, .. } = &o[1] else { return Err(unsupported(op, "this ULDC source")) };
                let n = if op.has("64") { 2 } else { 1 };
                for k in 0..n {
                    let v = self.cbank_u32(op, *bank, off + 4 * k as i64)?;
                    w.set_ur(d.saturating_add(k as u8), v);
                }
            }
            "UIADD3" if op.has("64") => {
                // 64-bit: URd:URd+1 = a + b + c (32-bit immediates sign-extended).
                let v64 = |x: &Opnd| -> R<u64> {
                    Ok(match x {
                        Opnd::Imm(b) => *b as u32 as i32 as i64 as u64,
                        other => self.u64(w, l0, other, op)?,
                    })
                };
                let sum = v64(&o[1])?.wrapping_add(v64(&o[2])?).wrapping_add(v64(&o[3])?);
                let d = du(&o[0])?;
                w.set_ur(d, sum as u32);
                w.set_ur(d.saturating_add(1), (sum >> 32) as u32);
            }
            "UIADD3" => {
                let outs: Vec<u8> = o[1..].iter().take_while(|x| is_p(x)).map(&dp).collect::<R<_>>()?;
                let s = 1 + outs.len();
                let term = |x: &Opnd| -> R<u64> {
                    let neg = matches!(x, Opnd::Ur { neg: true, .. });
                    let raw = match x {
                        Opnd::Ur { n, not, .. } => {
                            let r = if *n == 63 { 0 } else { w.ur[*n as usize] };
                            if *not {
                                !r
                            } else {
                                r
                            }
                        }
                        other => return Ok(self.u(w, l0, other, op)? as u64),
                    };
                    Ok(if neg { (!raw) as u64 + 1 } else { raw as u64 })
                };
                let mut sum = term(&o[s])? + term(&o[s + 1])? + term(&o[s + 2])?;
                if op.has("X") {
                    for pin in &o[s + 3..] {
                        sum += self.p(w, l0, pin, op)? as u64;
                    }
                }
                w.set_ur(du(&o[0])?, sum as u32);
                for (i, pd) in outs.iter().enumerate() {
                    w.set_up(*pd, (sum >> 32) >> i & 1 == 1);
                }
            }
            "UIMAD" => {
                let a = self.u(w, l0, &o[1], op)?;
                let b = self.u(w, l0, &o[2], op)?;
                let d = du(&o[0])?;
                if op.has("WIDE") {
                    let prod = if op.has("U32") {
                        (a as u64) * (b as u64)
                    } else {
                        (a as i32 as i64 * b as i32 as i64) as u64
                    };
                    let v = prod.wrapping_add(self.u64(w, l0, &o[3], op)?);
                    w.set_ur(d, v as u32);
                    w.set_ur(d.saturating_add(1), (v >> 32) as u32);
                } else {
                    let c = self.u(w, l0, &o[3], op)?;
                    w.set_ur(d, a.wrapping_mul(b).wrapping_add(c));
                }
            }
            "ULEA" => {
                let outs: Vec<u8> = o[1..].iter().take_while(|x| is_p(x)).map(&dp).collect::<R<_>>()?;
                let s = 1 + outs.len();
                let hi = op.has("HI");
                let sx = op.has("SX32");
                let a = self.u(w, l0, &o[s], op)?;
                let b = self.u(w, l0, &o[s + 1], op)?;
                let (c, at) = if hi && !sx { (self.u(w, l0, &o[s + 2], op)?, s + 3) } else { (0, s + 2) };
                let sh = self.u(w, l0, &o[at], op)? & 63;
                let cin = if op.has("X") {
                    o.get(at + 1).map(|p| self.p(w, l0, p, op)).transpose()?.unwrap_or(false) as u64
                } else {
                    0
                };
                let part = if hi {
                    let high = if sx { ((a as i32) >> 31) as u32 } else { c };
                    ((((high as u64) << 32 | a as u64) << sh) >> 32) as u32
                } else {
                    ((a as u64) << sh) as u32
                };
                let sum = part as u64 + b as u64 + cin;
                w.set_ur(du(&o[0])?, sum as u32);
                if let Some(pd) = outs.first() {
                    w.set_up(*pd, sum >> 32 & 1 == 1);
                }
            }
            "USHF" => {
                let lo = self.u(w, l0, &o[1], op)?;
                let s = self.u(w, l0, &o[2], op)?;
                let hi = self.u(w, l0, &o[3], op)?;
                let wide = op.has("U64") || op.has("S64");
                let max = if wide { 64 } else { 32 };
                let s = if op.has("W") { s & (max - 1) } else { s.min(max) };
                let v = (hi as u64) << 32 | lo as u64;
                let signed = op.has("S32") || op.has("S64");
                let r = if op.has("L") {
                    if s >= 64 {
                        0
                    } else {
                        v << s
                    }
                } else if signed {
                    ((v as i64) >> s.min(63)) as u64
                } else if s >= 64 {
                    0
                } else {
                    v >> s
                };
                w.set_ur(du(&o[0])?, if op.has("HI") { (r >> 32) as u32 } else { r as u32 });
            }
            "USEL" => {
                let v = if self.p(w, l0, &o[3], op)? { self.u(w, l0, &o[1], op)? } else { self.u(w, l0, &o[2], op)? };
                w.set_ur(du(&o[0])?, v);
            }
            "UISETP" => {
                let cmp = op.mods.first().cloned().unwrap_or_default();
                let bop = op
                    .mods
                    .iter()
                    .find(|m| matches!(m.as_str(), "AND" | "OR" | "XOR"))
                    .cloned()
                    .unwrap_or_else(|| "AND".into());
                let a = self.u(w, l0, &o[2], op)?;
                let b = self.u(w, l0, &o[3], op)?;
                let (a, b) = if op.has("U32") { (a as i64, b as i64) } else { (a as i32 as i64, b as i32 as i64) };
                let c = if op.has("EX") { icmp_ex(&cmp, a, b, self.p(w, l0, &o[5], op)?) } else { icmp(&cmp, a, b) }
                    .ok_or_else(|| unsupported(op, "this comparison"))?;
                let pc = self.p(w, l0, &o[4], op)?;
                w.set_up(dp(&o[0])?, combine(&bop, c, pc).ok_or_else(|| unsupported(op, "this combination"))?);
                w.set_up(dp(&o[1])?, combine(&bop, !c, pc).ok_or_else(|| unsupported(op, "this combination"))?);
            }
            "ULOP3" => {
                let v = lut3(
                    self.u(w, l0, &o[4], op)?,
                    self.u(w, l0, &o[1], op)?,
                    self.u(w, l0, &o[2], op)?,
                    self.u(w, l0, &o[3], op)?,
                );
                w.set_ur(du(&o[0])?, v);
            }
            "UPOPC" | "UBREV" | "UFLO" => {
                let a = self.u(w, l0, &o[o.len() - 1], op)?;
                w.set_ur(du(&o[0])?, bit_count_op(op, a));
            }
            "USGXT" => {
                let a = self.u(w, l0, &o[1], op)?;
                let bits = self.u(w, l0, &o[2], op)?.min(32);
                let v = if bits == 0 {
                    0
                } else if bits >= 32 {
                    a
                } else if op.has("U32") {
                    a & ((1u32 << bits) - 1)
                } else {
                    (((a << (32 - bits)) as i32) >> (32 - bits)) as u32
                };
                w.set_ur(du(&o[0])?, v);
            }
            "UPLOP3" => {
                let a = self.p(w, l0, &o[2], op)? as u32;
                let b = self.p(w, l0, &o[3], op)? as u32;
                let c = self.p(w, l0, &o[4], op)? as u32;
                let i = a << 2 | b << 1 | c;
                let lut = self.u(w, l0, &o[5], op)?;
                let lut2 = self.u(w, l0, &o[6], op)?;
                w.set_up(dp(&o[0])?, lut >> i & 1 == 1);
                w.set_up(dp(&o[1])?, lut2 >> i & 1 == 1);
            }
            _ => return Err(unsupported(op, "this uniform instruction")),
        }
        Ok(())
    }

    fn convert(&mut self, w: &mut Warp, op: &Op, mask: u32) -> R<Flow> {
        let o = &op.ops;
        let types: Vec<&str> = op
            .mods
            .iter()
            .map(String::as_str)
            .filter(|m| {
                matches!(
                    *m,
                    "F16" | "F32" | "F64" | "BF16" | "S8" | "U8" | "S16" | "U16" | "S32" | "U32" | "S64" | "U64"
                )
            })
            .collect();
        let dir = op.mods.iter().find_map(|m| match m.as_str() {
            "RM" => Some(-1i8),
            "RP" => Some(1),
            "RZ" => Some(0),
            _ => None,
        });
        if dir.is_some() && !matches!(op.root.as_str(), "F2I" | "I2F" | "I2FP") {
            return Err(unsupported(op, "directed rounding"));
        }
        let float = |t: &str| t.starts_with('F') || t == "BF16";
        let (dt, st) = match op.root.as_str() {
            "I2F" | "I2FP" => (
                types.iter().find(|t| float(t)).copied().unwrap_or("F32"),
                types.iter().find(|t| !float(t)).copied().unwrap_or("S32"),
            ),
            "F2I" => (
                types.iter().find(|t| !float(t)).copied().unwrap_or("S32"),
                types.iter().find(|t| float(t)).copied().unwrap_or("F32"),
            ),
            _ => (types.first().copied().unwrap_or("F32"), types.get(1).copied().unwrap_or("F32")),
        };
        let flush = op.has("FTZ");
        let trunc = op.has("TRUNC");
        let floor = op.has("FLOOR") || op.has("RM");
        let ceil = op.has("CEIL") || op.has("RP");
        for l in (0..32).filter(|l| mask >> l & 1 == 1) {
            // The source as f64 (floats) or i128 (integers).
            let src = &o[1];
            let fv: f64 = match st {
                // `.FTZ` flushes a subnormal f32 source (ptxas folds `cvt.*.ftz.f32.f32` into the
                // conversion that consumes it).
                "F32" if flush => ftz(self.f(w, l, src, op)?) as f64,
                "F32" => self.f(w, l, src, op)? as f64,
                "F64" => self.d(w, l, src, op)?,
                "F16" => f16::from_bits(self.raw(w, l, src, op)? as u16).to_f64(),
                "BF16" => bf16::from_bits(self.raw(w, l, src, op)? as u16).to_f64(),
                _ => f64::NAN,
            };
            let iv: i128 = match st {
                "S32" => self.u(w, l, src, op)? as i32 as i128,
                "U32" => self.u(w, l, src, op)? as i128,
                "S16" => self.u(w, l, src, op)? as i16 as i128,
                "U16" => self.u(w, l, src, op)? as u16 as i128,
                "S8" => self.u(w, l, src, op)? as i8 as i128,
                "U8" => self.u(w, l, src, op)? as u8 as i128,
                "S64" => self.u64(w, l, src, op)? as i64 as i128,
                "U64" => self.u64(w, l, src, op)? as i128,
                _ => 0,
            };
            let d = dst_r(&o[0], op)?;
            let out: u64 = if float(dt) {
                let v: f64 = if float(st) { fv } else { iv as f64 };
                match dt {
                    "F32" if !float(st) && dir.is_some() => int_to_f32_directed(iv, dir.unwrap_or(0)).to_bits() as u64,
                    // int → f32 rounds once (i64 as f32 is correctly rounded in Rust).
                    "F32" if !float(st) => {
                        if matches!(st, "S64") {
                            (iv as i64 as f32).to_bits() as u64
                        } else if st == "U64" {
                            (iv as u64 as f32).to_bits() as u64
                        } else {
                            (iv as f32).to_bits() as u64
                        }
                    }
                    "F32" if flush => ftz(v as f32).to_bits() as u64,
                    "F32" => (v as f32).to_bits() as u64,
                    "F64" => v.to_bits(),
                    "F16" => f16::from_f64(v).to_bits() as u64,
                    "BF16" => bf16::from_f64(v).to_bits() as u64,
                    _ => return Err(unsupported(op, "this conversion")),
                }
            } else {
                let v = if trunc {
                    fv.trunc()
                } else if floor {
                    fv.floor()
                } else if ceil {
                    fv.ceil()
                } else {
                    fv.round_ties_even()
                };
                let (lo, hi): (f64, f64) = match dt {
                    "S32" => (i32::MIN as f64, i32::MAX as f64),
                    "U32" => (0.0, u32::MAX as f64),
                    "S64" => (i64::MIN as f64, i64::MAX as f64),
                    "U64" => (0.0, u64::MAX as f64),
                    "S16" => (i16::MIN as f64, i16::MAX as f64),
                    "U16" => (0.0, u16::MAX as f64),
                    "S8" => (i8::MIN as f64, i8::MAX as f64),
                    "U8" => (0.0, u8::MAX as f64),
                    _ => return Err(unsupported(op, "this conversion")),
                };
                let c = if v.is_nan() { 0.0 } else { v.clamp(lo, hi) };
                if dt.starts_with('S') {
                    (c as i64) as u64
                } else {
                    c as u64
                }
            };
            w.set_r(d, l, out as u32);
            if dt.ends_with("64") {
                w.set_r(d.saturating_add(1), l, (out >> 32) as u32);
            }
        }
        Ok(Flow::Next)
    }

    fn shfl(&mut self, w: &mut Warp, op: &Op, mask: u32) -> R<()> {
        let o = &op.ops;
        let mode = op.mods.first().cloned().unwrap_or_default();
        let mut out = [0u32; 32];
        let mut ok = [false; 32];
        let src = match &o[2] {
            Opnd::R { n, .. } => *n,
            _ => return Err(unsupported(op, "this shuffle source")),
        };
        for l in (0..32).filter(|l| mask >> l & 1 == 1) {
            // The lane operand's low 5 bits (a register may hold any value).
            let b = self.u(w, l, &o[3], op)? & 0x1f;
            let c = self.u(w, l, &o[4], op)?;
            let clamp = c & 0x1f;
            let seg = (c >> 8) & 0x1f;
            let (min_lane, max_lane) = ((l as u32) & seg, ((l as u32) & seg) | (clamp & !seg));
            let (j, valid) = match mode.as_str() {
                "IDX" => {
                    let j = min_lane | (b & !seg);
                    (j, j <= max_lane)
                }
                "UP" => {
                    let j = (l as i32) - b as i32;
                    (j.max(0) as u32, j >= min_lane as i32)
                }
                "DOWN" => {
                    let j = l as u32 + b;
                    (j, j <= max_lane)
                }
                "BFLY" => {
                    let j = l as u32 ^ b;
                    (j, j <= max_lane)
                }
                _ => return Err(unsupported(op, "this shuffle mode")),
            };
            let j = if valid && j < 32 && mask >> j & 1 == 1 { j as usize } else { l };
            out[l] = if src == 255 { 0 } else { w.r[src as usize][j] };
            ok[l] = valid;
        }
        let d = dst_r(&o[1], op)?;
        let pd = dst_p(&o[0], op)?;
        for l in (0..32).filter(|l| mask >> l & 1 == 1) {
            w.set_r(d, l, out[l]);
            w.set_p(pd, l, ok[l]);
        }
        Ok(())
    }

    fn memory(&mut self, w: &mut Warp, op: &Op, mask: u32) -> R<()> {
        let o = &op.ops;
        let (n, signed) = width_of(op)?;
        let root = op.root.as_str();
        let load = root.starts_with("LD");
        for l in (0..32).filter(|l| mask >> l & 1 == 1) {
            let (addr_op, reg_op) = if load { (&o[1], &o[0]) } else { (&o[0], &o[1]) };
            let a = self.address(w, l, addr_op, op)?;
            let reg = dst_r(reg_op, op)?;
            let mut buf = [0u8; 16];
            if load {
                if root == "LDG" {
                    trident_emu::memory::check_align(a, n as u64).map_err(|m| self.mem_err(op, m))?;
                    self.mem.read(a, &mut buf[..n]).map_err(|f| self.mem_err(op, f.message))?;
                    self.traffic.touch(a, n as u64);
                } else if root == "LDL" {
                    let r = self.local_slice(w, l, a, n, op)?;
                    buf[..n].copy_from_slice(&w.local[l][r]);
                } else {
                    let r = self.shared_slice(a, n, op)?;
                    buf[..n].copy_from_slice(&self.shared[r]);
                    self.shared_access.push((a, n as u32));
                }
                let words = (n / 4).max(1);
                for k in 0..words {
                    let v = if n < 4 {
                        let x = u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]);
                        match (n, signed) {
                            (1, false) => x & 0xff,
                            (1, true) => x as u8 as i8 as i32 as u32,
                            (2, false) => x & 0xffff,
                            _ => x as u16 as i16 as i32 as u32,
                        }
                    } else {
                        u32::from_le_bytes(buf[4 * k..4 * k + 4].try_into().expect("4 bytes"))
                    };
                    w.set_r(reg.saturating_add(k as u8), l, v);
                }
            } else {
                let words = (n / 4).max(1);
                for k in 0..words {
                    let v = if reg == 255 { 0 } else { w.r[reg as usize + k][l] };
                    buf[4 * k..4 * k + 4].copy_from_slice(&v.to_le_bytes());
                }
                if root == "STG" {
                    trident_emu::memory::check_align(a, n as u64).map_err(|m| self.mem_err(op, m))?;
                    self.mem.write(a, &buf[..n]).map_err(|f| self.mem_err(op, f.message))?;
                    self.traffic.touch(a, n as u64);
                } else if root == "STL" {
                    let r = self.local_slice(w, l, a, n, op)?;
                    w.local[l][r].copy_from_slice(&buf[..n]);
                } else {
                    let r = self.shared_slice(a, n, op)?;
                    self.shared[r].copy_from_slice(&buf[..n]);
                    self.shared_access.push((a, n as u32));
                }
            }
        }
        Ok(())
    }
}

impl Ctx<'_> {
    /// `ATOMG.E.{ADD,MIN,MAX,EXCH,AND,OR,XOR,CAS}[.F32|.S32|.64]... [Pd,] Rd, [addr], Rb [, Rc]`
    /// and `RED.E.OP... [addr], Rb`: read-modify-write under the global memory's lock.
    fn atomic(&mut self, w: &mut Warp, op: &Op, mask: u32) -> R<()> {
        let o: Vec<&Opnd> = op.ops.iter().filter(|x| !matches!(x, Opnd::P { .. })).collect();
        let red = op.root != "ATOMG";
        let (dst, at) = if red { (None, 0) } else { (Some(dst_r(o[0], op)?), 1) };
        let addr = o.get(at).copied().ok_or_else(|| unsupported(op, "an atomic without an address"))?;
        let b = o.get(at + 1).copied().ok_or_else(|| unsupported(op, "an atomic without an operand"))?;
        let c = o.get(at + 2).copied();
        let wide = op.has("64") || op.has("U64") || op.has("S64") || op.has("F64");
        let n = if wide { 8 } else { 4 };
        let kind = ["ADD", "MIN", "MAX", "EXCH", "AND", "OR", "XOR", "CAS", "INC", "DEC"]
            .into_iter()
            .find(|k| op.has(k))
            .ok_or_else(|| unsupported(op, "this atomic operation"))?;
        let float = op.has("F32") || op.has("F64");
        let signed = op.has("S32") || op.has("S64");
        for l in (0..32).filter(|l| mask >> l & 1 == 1) {
            let a = self.address(w, l, addr, op)?;
            trident_emu::memory::check_align(a, n as u64).map_err(|m| self.mem_err(op, m))?;
            let v = if wide { self.u64(w, l, b, op)? } else { self.u(w, l, b, op)? as u64 };
            let cv = match c {
                Some(c) if wide => self.u64(w, l, c, op)?,
                Some(c) => self.u(w, l, c, op)? as u64,
                None => 0,
            };
            let f = |old: u64| -> u64 {
                let m = if wide { u64::MAX } else { u32::MAX as u64 };
                let (x, y) = (old & m, v & m);
                let r = match kind {
                    "ADD" if float && wide => (f64::from_bits(x) + f64::from_bits(y)).to_bits(),
                    "ADD" if float => (f32::from_bits(x as u32) + f32::from_bits(y as u32)).to_bits() as u64,
                    "ADD" => x.wrapping_add(y),
                    "MIN" | "MAX" => {
                        let less = if signed {
                            if wide {
                                (y as i64) < (x as i64)
                            } else {
                                (y as u32 as i32) < (x as u32 as i32)
                            }
                        } else {
                            y < x
                        };
                        if (kind == "MIN") == less {
                            y
                        } else {
                            x
                        }
                    }
                    "EXCH" => y,
                    "AND" => x & y,
                    "OR" => x | y,
                    "XOR" => x ^ y,
                    // CAS: compare with b, store c.
                    "CAS" => {
                        if x == y {
                            cv
                        } else {
                            x
                        }
                    }
                    "INC" => {
                        if x >= y {
                            0
                        } else {
                            x + 1
                        }
                    }
                    _ => {
                        if x == 0 || x > y {
                            y
                        } else {
                            x - 1
                        }
                    }
                };
                r & m
            };
            let old = self.mem.rmw(a, n, f).map_err(|e| self.mem_err(op, e.message))?;
            self.traffic.touch(a, n as u64);
            if let Some(d) = dst {
                w.set_r(d, l, old as u32);
                if wide {
                    w.set_r(d.saturating_add(1), l, (old >> 32) as u32);
                }
            }
        }
        Ok(())
    }
}

/// An integer rounded to f32 toward +∞ (`dir` 1), −∞ (-1) or zero (0).
fn int_to_f32_directed(i: i128, dir: i8) -> f32 {
    let f = i as f32;
    let exact = |x: f32| x as i128;
    let up = |x: f32| {
        if x == 0.0 {
            f32::from_bits(1)
        } else if x > 0.0 {
            f32::from_bits(x.to_bits() + 1)
        } else {
            f32::from_bits(x.to_bits() - 1)
        }
    };
    let down = |x: f32| -up(-x);
    let e = exact(f);
    match dir {
        1 if e < i => up(f),
        -1 if e > i => down(f),
        0 if e.abs() > i.abs() => {
            if f > 0.0 {
                down(f)
            } else {
                up(f)
            }
        }
        _ => f,
    }
}

fn strip_neg(o: &Opnd) -> Opnd {
    match o {
        Opnd::C { bank, off, reg, ureg, abs, .. } => {
            Opnd::C { bank: *bank, off: *off, reg: *reg, ureg: *ureg, neg: false, abs: *abs }
        }
        other => other.clone(),
    }
}

/// `POPC`, `BREV` and `FLO` (and their uniform twins `UPOPC`, `UBREV`, `UFLO`) of one value.
fn bit_count_op(op: &Op, a: u32) -> u32 {
    match op.root.trim_start_matches('U') {
        "POPC" => a.count_ones(),
        "BREV" => a.reverse_bits(),
        _ => {
            // FLO[.U32|.S32][.SH]: the position of the highest bit that differs from the sign
            // (.S32) or is set; 0xffffffff when there is none.
            let x = if op.has("U32") || a as i32 >= 0 { a } else { !a };
            match (x == 0, op.has("SH")) {
                (true, _) => u32::MAX,
                (false, false) => 31 - x.leading_zeros(),
                (false, true) => x.leading_zeros(),
            }
        }
    }
}
