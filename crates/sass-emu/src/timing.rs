//! Issue timing and hazards, per warp, from the control bits — what the hardware does with
//! them, so a schedule that reads a value before it is ready fails here instead of giving
//! wrong numbers on a GPU.
//!
//! * A warp issues an instruction when its clock reaches the cycle the previous
//!   instruction's stall count allowed; first it waits for the scoreboards in its wait mask
//!   (and `DEPBAR.LE SBn, k`: all but the `k` youngest on SB*n*) — the clock moves to when
//!   their results arrive.
//! * A fixed-latency result may be read `latency::needed` cycles after its producer issued
//!   (the SASS toolkit's table); earlier is a hazard.
//! * A variable-latency result (write scoreboard, or a variable-latency opcode) may be read
//!   only once its scoreboard was waited for, or a younger result of the same in-order queue
//!   was; a register still being read by an instruction holding a read scoreboard may not be
//!   overwritten before that scoreboard is waited for.
//! * All of this per lane: lanes of a warp that branched apart write the same register on
//!   their own paths (`ptxas` relies on it), so a pending result conflicts only with an
//!   instruction run by some of the same lanes. Uniform registers belong to the whole warp.
//!
//! The cycle estimate is the warp's clock: stalls plus the waits for results in flight. The
//! latencies of variable-latency results are the PTX emulator's machine model's
//! (`trident_emu::MachineModel`: A100 for sm_80, H100 for sm_90), which was calibrated
//! against H100 measurements (bench/EMU_MODEL.md); a global load is taken as an L2 hit. Not
//! yet calibrated on a GPU at the SASS level (no bandwidth, no sharing of an SM between warps).

use std::sync::LazyLock;

use trident_emu::{EmuError, ErrorKind, MachineModel};
use trident_sass::latency::{self, Queue};
use trident_sass::operands::{Operands, Reg};
use trident_sass::Control;

use crate::decode::Op;

static A100: LazyLock<MachineModel> = LazyLock::new(MachineModel::a100_sxm);
static H100: LazyLock<MachineModel> = LazyLock::new(MachineModel::h100_sxm);

/// Modelled cycles until a variable-latency result arrives on `sm` (80, 90).
fn arrival(sm: u32, op: &Op) -> u64 {
    let m: &MachineModel = if sm >= 90 { &H100 } else { &A100 };
    (match op.root.as_str() {
        "LDG" | "LD" | "ATOMG" | "ATOM" | "RED" => m.lat_l2_hit,
        "LDL" => m.lat_local,
        "LDS" | "LDSM" => m.lat_shared,
        "ATOMS" => m.lat_shared_atomic,
        "SHFL" => m.lat_shfl,
        "LDC" | "S2R" | "S2UR" | "CS2R" => m.lat_param,
        "MUFU" => m.lat_sfu,
        "I2F" | "F2I" | "F2F" | "I2I" | "FRND" => m.lat_conv,
        "DADD" | "DMUL" | "DFMA" | "DSETP" => m.lat_fp64,
        "HMMA" => m.lat_mma,
        _ => m.lat_alu.max(m.lat_conv),
    }) as u64
}

/// Modelled cycles from a copy's issue until its data is in shared memory (`UTMALDG`,
/// `UBLKCP`): a global load's, as an L2 hit.
pub fn copy_latency(sm: u32) -> u64 {
    let m: &MachineModel = if sm >= 90 { &H100 } else { &A100 };
    m.lat_l2_hit as u64
}

#[derive(Clone, Debug)]
struct InFlight {
    producer: usize,
    regs: Vec<Reg>,
    sb: Option<u8>,
    queue: Queue,
    seq: u64,
    arrives: u64,
    reading: bool,
    /// The lanes that issued it.
    lanes: u32,
}

/// Whether register `r`, pending for `lanes`, matters to an instruction run by `active`.
fn overlaps(r: &Reg, lanes: u32, active: u32) -> bool {
    matches!(r, Reg::Ur(_) | Reg::Up(_)) || lanes & active != 0
}

/// One warp's issue clock and what is in flight.
#[derive(Clone, Debug, Default)]
pub struct WarpTiming {
    pub clock: u64,
    seq: u64,
    /// Fixed-latency results: register → (producer, issue cycle, lanes).
    fixed: Vec<(Reg, usize, u64, u32)>,
    flight: Vec<InFlight>,
    /// Instructions issued.
    pub issued: u64,
}

fn hazard(msg: String) -> EmuError {
    EmuError::new(ErrorKind::Hazard, msg)
}

impl WarpTiming {
    fn drain(&mut self, sb: u8, keep: usize) {
        let mut on: Vec<u64> = self.flight.iter().filter(|f| f.sb == Some(sb)).map(|f| f.seq).collect();
        on.sort_unstable();
        let cut = on.len().saturating_sub(keep);
        let Some(&last_done) = on.get(cut.wrapping_sub(1)) else { return };
        if cut == 0 {
            return;
        }
        let mut arrived = self.clock;
        let mut done_queues = vec![];
        let mut written = vec![];
        self.flight.retain(|f| {
            if f.sb == Some(sb) && f.seq <= last_done {
                arrived = arrived.max(f.arrives);
                if !f.reading {
                    written.push(f.producer);
                    if f.queue != Queue::None {
                        done_queues.push((f.queue, f.seq));
                    }
                }
                false
            } else {
                true
            }
        });
        // A result written back means its instruction has long read its operands.
        self.flight.retain(|f| !(f.reading && written.contains(&f.producer)));
        for (q, seq) in done_queues {
            self.flight.retain(|f| f.reading || f.queue != q || f.seq > seq);
        }
        self.clock = arrived;
    }

    /// Issues instruction `at` for the lanes `active` (its decoded form, registers, control
    /// bits, and the producers' opcodes looked up through `opcode_of`); an error names a
    /// hazard.
    #[allow(clippy::too_many_arguments)]
    pub fn issue(
        &mut self,
        sm: u32,
        at: usize,
        active: u32,
        op: &Op,
        regs: &Operands,
        c: Control,
        name_of: &dyn Fn(usize) -> String,
    ) -> Result<(), EmuError> {
        for k in 0..6 {
            if c.wait >> k & 1 == 1 {
                self.drain(k, 0);
            }
        }
        if op.root == "DEPBAR" {
            if let Some(crate::decode::Opnd::Other(sb)) = op.ops.first() {
                let k: Option<u8> = sb.strip_prefix("SB").and_then(|d| d.parse().ok());
                let n = match op.ops.get(1) {
                    Some(crate::decode::Opnd::Imm(n)) => *n as usize,
                    _ => 0,
                };
                if let Some(k) = k {
                    self.drain(k, n);
                }
            }
        }
        let opcode = op_text(op);
        // sm_90a's `IMAD.WIDE` reads its 64-bit addend's high register late (the SASS
        // toolkit's evidence).
        let late = latency::wide_addend_high_late(sm, &opcode);
        let late_reg = match op.ops.last() {
            Some(crate::decode::Opnd::R { n, .. }) if late > 0 && *n != 255 => Some(Reg::R(*n as u16 + 1)),
            _ => None,
        };
        for r in regs.uses.iter().filter(|r| !regs.kept.contains(r)) {
            if let Some(&(_, p, t, _)) = self.fixed.iter().find(|(x, _, _, m)| x == r && overlaps(r, *m, active)) {
                let pred = matches!(r, Reg::P(_) | Reg::Up(_));
                if let Some(need) = latency::needed(sm, &name_of(p), &opcode, pred) {
                    let need = if late_reg == Some(*r) { need.saturating_sub(late) } else { need };
                    let got = self.clock - t;
                    if got < need as u64 {
                        return Err(hazard(format!(
                            "hazard: {:#06x} `{}` reads {r} {got} cycles after {:#06x} `{}` issued (needs {need})",
                            16 * at,
                            op.text,
                            16 * p,
                            name_of(p)
                        )));
                    }
                }
            }
            if let Some(f) =
                self.flight.iter().find(|f| !f.reading && f.regs.contains(r) && overlaps(r, f.lanes, active))
            {
                return Err(hazard(format!(
                    "hazard: {:#06x} `{}` reads {r} before {:#06x} `{}`'s result was waited for{}",
                    16 * at,
                    op.text,
                    16 * f.producer,
                    name_of(f.producer),
                    f.sb.map_or(String::new(), |k| format!(" (SB{k})"))
                )));
            }
        }
        for r in &regs.defs {
            // A shared-memory load passes the memory pipe after an earlier store read its
            // registers: no wait for the store's read scoreboard is needed.
            // Nor does a result of the same in-order queue: it is written back after the
            // pending one (an `I2F` then an `FRND` into the same register).
            let queue = latency::queue(&opcode);
            let ordered = |f: &&InFlight| {
                (f.reading && latency::mio_ordered(&name_of(f.producer), &opcode))
                    || (!f.reading && f.queue != Queue::None && f.queue == queue)
            };
            if let Some(f) =
                self.flight.iter().find(|f| f.regs.contains(r) && overlaps(r, f.lanes, active) && !ordered(f))
            {
                let what = if f.reading { "still reads it" } else { "still writes it" };
                return Err(hazard(format!(
                    "hazard: {:#06x} `{}` overwrites {r} while {:#06x} `{}` {what}{}",
                    16 * at,
                    op.text,
                    16 * f.producer,
                    name_of(f.producer),
                    f.sb.map_or(String::new(), |k| format!(" (no wait for SB{k})"))
                )));
            }
        }
        // A result rewritten by these lanes is theirs now; other lanes' pending one stays.
        self.fixed.retain_mut(|(r, _, _, m)| {
            if regs.defs.contains(r) && !matches!(r, Reg::Ur(_) | Reg::Up(_)) {
                *m &= !active;
                *m != 0
            } else {
                !regs.defs.contains(r)
            }
        });
        let variable = c.write_sb.is_some() || latency::variable(&opcode);
        self.seq += 1;
        if !regs.defs.is_empty() {
            if variable {
                self.flight.push(InFlight {
                    producer: at,
                    regs: regs.defs.clone(),
                    sb: c.write_sb,
                    queue: latency::queue(&opcode),
                    seq: self.seq,
                    arrives: self.clock + arrival(sm, op),
                    reading: false,
                    lanes: active,
                });
            } else {
                for r in &regs.defs {
                    self.fixed.push((*r, at, self.clock, active));
                }
            }
        }
        if let Some(k) = c.read_sb {
            let regs: Vec<Reg> =
                regs.uses.iter().filter(|r| !regs.kept.contains(r) && matches!(r, Reg::R(_))).copied().collect();
            self.flight.push(InFlight {
                producer: at,
                regs,
                sb: Some(k),
                queue: Queue::None,
                seq: self.seq,
                arrives: self.clock + 20,
                reading: true,
                lanes: active,
            });
        }
        // Forget what is long ready, so the lists stay short.
        let now = self.clock;
        self.fixed.retain(|(_, _, t, _)| now - t < 64);
        self.clock += c.stall.max(1) as u64;
        self.issued += 1;
        Ok(())
    }
}

/// `IMAD.WIDE.U32`: the opcode as `nvdisasm` prints it.
pub fn op_text(op: &Op) -> String {
    let mut s = op.root.clone();
    for m in &op.mods {
        s.push('.');
        s.push_str(m);
    }
    s
}
