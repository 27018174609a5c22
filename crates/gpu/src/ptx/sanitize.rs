//! Sanitize mode (`GpuOptions::sanitize`): every global load, store and atomic checks its
//! address against the extent of the buffer its pointer came from, suppresses the access
//! when it is outside, and records the first violation in a small global buffer.
//!
//! # Hidden parameters
//!
//! After the IR's parameters (and the profile buffer, when there is one): one `.param .u64`
//! per *pointer* parameter, in IR order — the extent of its buffer in bytes (0 for a null
//! pointer) — then one `.param .u64`, the address of the violation record, 32 bytes the
//! launcher fills with zeros and reads back after the launch ([`SanitizeInfo`] tells the
//! record's words and how to decode them).
//!
//! # Which extent
//!
//! A pointer's parameter is found at compile time ([`ProvenanceAnalysis`]). Unique: the
//! access must satisfy `0 <= addr - base && addr - base + bytes <= extent` of that
//! parameter. Not unique (a select between parameters, a loaded pointer, `int_to_ptr`):
//! the address must lie inside *some* pointer parameter's buffer, and a violation is
//! reported against the parameter whose base is nearest.
//!
//! # Which violation is "first"
//!
//! The one the interpreter reports: the lowest linear program id, then the first access
//! the program executes (a per-thread count of executed access sites: control flow is
//! uniform over a program, so every thread counts alike), then the lowest element index in
//! the op's value. That order is a 64-bit key, kept as `!key` by `atom.max` (the buffer
//! starts zeroed); the thread that lowered the key writes the rest, tagged with a hash of
//! its key, so that the host can tell when two violating threads' writes interleaved — each
//! word by a compare-and-swap that gives up once a better key is in the record, so a slower
//! earlier winner's write cannot land over the final winner's (several CTAs violating at once
//! on the emulator lost the details in 3 of 60 runs of `runtime/tests/sanitize.rs` before).
//!
//! # Cost
//!
//! Per vector access: a subtraction, a compare, two predicate ands and a uniform branch
//! around the recording code (one add per access op for the site count). The recording
//! runs only when a lane violates.

use super::emitter::{Emitter, Res};
use super::regs::{Reg, RegClass};
use crate::analysis::{Provenance, ProvenanceAnalysis};
use crate::layout::LinearLayout;
use std::collections::HashMap;
use std::fmt::Write;
use std::rc::Rc;
use trident_ir::{DType, Elem, Loc, Op, Value};

/// Bits of the key: program (28) | site count (20) | element (16).
pub const KEY_PROGRAM_SHIFT: u32 = 36;
pub const KEY_SEQ_SHIFT: u32 = 16;
pub const KEY_SEQ_MAX: u64 = (1 << 20) - 1;
pub const KEY_ELEM_MAX: u64 = (1 << 16) - 1;
/// The largest program id a key holds (`+ 1` would make the key all ones, the zero record).
pub const KEY_PROGRAM_MAX: u64 = (1 << 28) - 2;
/// The multiplier of the tag hash: `tag = (key * TAG_MUL) >> 40` (24 bits).
pub const TAG_MUL: u64 = 0x9E37_79B9_7F4A_7C15;
/// Bytes of the violation record.
pub const RECORD_BYTES: usize = 32;

/// What kind of access a site is (the interpreter's words).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum SiteAccess {
    Load,
    Store,
    Atomic,
}

impl SiteAccess {
    pub fn name(self) -> &'static str {
        match self {
            SiteAccess::Load => "load",
            SiteAccess::Store => "store",
            SiteAccess::Atomic => "atomic",
        }
    }

    pub fn parse(s: &str) -> Option<SiteAccess> {
        match s {
            "load" => Some(SiteAccess::Load),
            "store" => Some(SiteAccess::Store),
            "atomic" => Some(SiteAccess::Atomic),
            _ => None,
        }
    }
}

/// One checked access op (site ids are indices into [`SanitizeInfo::sites`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SanitizeSite {
    /// The op's source location (file index into the module's files, line, column).
    pub loc: Loc,
    pub access: SiteAccess,
    /// The parameter (IR index) the pointer came from; `None`: checked against all of them.
    pub param: Option<u32>,
    /// The element type accessed.
    pub dtype: DType,
    /// The shape of the op's value (empty for a scalar access): element indices are flat in it.
    pub shape: Vec<u32>,
}

/// What the launcher needs to run a sanitized kernel and decode its record.
///
/// Record words (little-endian u64s): `w0 = !key` (0: no violation), key = program
/// (`x + gx*(y + gy*z)`, saturated) << 36 | executed-site count << 16 | element; `w1 =
/// tag << 40 | param << 32 | site << 16 | thread`; `w2 = tag << 40 | byte offset from the
/// parameter's base (40-bit two's complement)`; `w3`: how many vector accesses violated.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct SanitizeInfo {
    pub sites: Vec<SanitizeSite>,
    /// IR indices of the pointer parameters, in the order their extents are passed.
    pub pointer_params: Vec<u32>,
}

/// A decoded violation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The program, linear (`x + gx*(y + gy*z)`).
    pub program: u64,
    /// The access site, the parameter (IR index) it is reported against, the thread: `None`
    /// when two violating threads' writes interleaved and the record's tags disagree (only
    /// possible on a GPU, where violating threads race).
    pub site: Option<u32>,
    pub param: Option<u32>,
    /// Flat element index in the op's value (`None` past the key's 16 bits).
    pub element: Option<u64>,
    /// Byte offset from the parameter's base (`None` as for `site`).
    pub offset: Option<i64>,
    /// `%tid.x` of the recording thread.
    pub thread: Option<u32>,
    /// Vector accesses that violated in the whole launch.
    pub count: u64,
}

/// The tag of a key (24 bits).
pub fn tag_of(key: u64) -> u64 {
    key.wrapping_mul(TAG_MUL) >> 40
}

impl SanitizeInfo {
    /// Decodes a violation record (the buffer as the launch left it); `None` when clean.
    pub fn decode(record: &[u8]) -> Option<Violation> {
        let w = |i: usize| -> u64 {
            record.get(8 * i..8 * i + 8).map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
        };
        if w(0) == 0 {
            return None;
        }
        let key = !w(0);
        let tag = tag_of(key);
        let (w1, w2) = (w(1), w(2));
        let elem = key & KEY_ELEM_MAX;
        let payload_ok = w1 >> 40 == tag;
        let offset_ok = w2 >> 40 == tag;
        Some(Violation {
            program: key >> KEY_PROGRAM_SHIFT,
            site: payload_ok.then_some(((w1 >> 16) & 0xFFFF) as u32),
            param: payload_ok.then_some(((w1 >> 32) & 0xFF) as u32),
            element: (elem < KEY_ELEM_MAX).then_some(elem),
            offset: (payload_ok && offset_ok).then_some(((w2 << 24) as i64) >> 24),
            thread: payload_ok.then_some((w1 & 0xFFFF) as u32),
            count: w(3),
        })
    }
}

/// The sanitizer's state during emission.
pub(crate) struct Sanitizer {
    prov: ProvenanceAnalysis,
    /// Per IR parameter: for pointers, the base and extent registers.
    ptrs: Vec<Option<(Reg, Reg)>>,
    record: Reg,
    program_key: Reg,
    seq: Reg,
    /// `extent - bytes + 1` clamped at 0 (the number of valid start offsets), per (param, bytes).
    limits: HashMap<(usize, u32), Reg>,
    pub info: SanitizeInfo,
}

/// A site being emitted.
#[derive(Clone)]
pub(crate) struct Site {
    id: u32,
    prov: Provenance,
    layout: Option<Rc<LinearLayout>>,
}

impl Sanitizer {
    /// `ptrs`: per IR parameter, for pointers the base and extent registers (loaded by the caller).
    pub fn new(
        f: &trident_ir::Function,
        ptrs: Vec<Option<(Reg, Reg)>>,
        record: Reg,
        program_key: Reg,
        seq: Reg,
    ) -> Self {
        let pointer_params = ptrs.iter().enumerate().filter(|(_, p)| p.is_some()).map(|(i, _)| i as u32).collect();
        Sanitizer {
            prov: ProvenanceAnalysis::run(f),
            ptrs,
            record,
            program_key,
            seq,
            limits: HashMap::new(),
            info: SanitizeInfo { sites: vec![], pointer_params },
        }
    }
}

impl Emitter<'_> {
    /// The prologue of a sanitized kernel: the program's part of the key and the site count.
    pub(crate) fn sanitize_prologue(&mut self) -> (Reg, Reg) {
        let key = self.new_reg(RegClass::B64);
        let seq = self.new_reg(RegClass::B32);
        let r: Vec<Reg> = (0..5).map(|_| self.new_reg(RegClass::B32)).collect();
        let w: Vec<Reg> = (0..3).map(|_| self.new_reg(RegClass::B64)).collect();
        let mut s = String::new();
        let _ = writeln!(
            s,
            "\tmov.u32 {}, %ctaid.x;\n\tmov.u32 {}, %ctaid.y;\n\tmov.u32 {}, %ctaid.z;\n\tmov.u32 {}, %nctaid.x;\n\tmov.u32 {}, %nctaid.y;",
            r[0], r[1], r[2], r[3], r[4]
        );
        // linear = x + gx * (y + gy * z), in 64 bits, saturated to the key's field.
        let _ = writeln!(s, "\tmul.wide.u32 {}, {}, {};", w[0], r[4], r[2]);
        let _ = writeln!(s, "\tcvt.u64.u32 {}, {};\n\tadd.s64 {}, {}, {};", w[1], r[1], w[0], w[0], w[1]);
        let _ = writeln!(s, "\tcvt.u64.u32 {}, {};\n\tmul.lo.u64 {}, {}, {};", w[1], r[3], w[0], w[0], w[1]);
        let _ = writeln!(s, "\tcvt.u64.u32 {}, {};\n\tadd.s64 {}, {}, {};", w[2], r[0], w[0], w[0], w[2]);
        let _ = writeln!(
            s,
            "\tmin.u64 {}, {}, {KEY_PROGRAM_MAX};\n\tshl.b64 {key}, {}, {KEY_PROGRAM_SHIFT};",
            w[0], w[0], w[0]
        );
        let _ = writeln!(s, "\tmov.u32 {seq}, 0;");
        self.push_prologue(&s);
        (key, seq)
    }

    /// Starts a checked access site for op `op` through pointer value `ptr` (its layout gives
    /// element indices); `None` when not sanitizing. Counts the site's execution.
    pub(crate) fn san_site(&mut self, op: Op, ptr: Value, access: SiteAccess) -> Res<Option<Site>> {
        if self.san.is_none() {
            return Ok(None);
        }
        let t = self.ty(ptr);
        let dtype = match t.elem() {
            Elem::Ptr { pointee, .. } => pointee,
            e => return Err(self.err(format!("internal: sanitizing an access through `{e}`, not a pointer"))),
        };
        let shape = t.shape().to_vec();
        let layout = self.ll(ptr)?;
        let loc = self.f.ops[op].loc;
        let Some(san) = self.san.as_mut() else { return Ok(None) };
        let prov = san.prov.of(ptr);
        let id = san.info.sites.len() as u32;
        if id > 0xFFFF {
            return Err(self.err("sanitize: more than 65536 memory access sites in one kernel"));
        }
        let param = match prov {
            Provenance::Param(i) => Some(i as u32),
            Provenance::Any => None,
        };
        san.info.sites.push(SanitizeSite { loc, access, param, dtype, shape });
        let seq = san.seq;
        self.ins(format!("add.u32 {seq}, {seq}, 1"));
        Ok(Some(Site { id, prov, layout }))
    }

    /// `max(extent - bytes + 1, 0)` for parameter `p` (prologue, once per width).
    fn san_limit(&mut self, p: usize, bytes: u32) -> Res<Reg> {
        let Some(san) = self.san.as_ref() else { return Err(self.err("internal: not sanitizing")) };
        if let Some(&r) = san.limits.get(&(p, bytes)) {
            return Ok(r);
        }
        let Some((_, ext)) = san.ptrs.get(p).copied().flatten() else {
            return Err(self.err(format!("internal: parameter {p} is not a pointer")));
        };
        let r = self.new_reg(RegClass::B64);
        let b1 = bytes as u64 - 1;
        self.push_prologue(&format!("\tmax.u64 {r}, {ext}, {b1};\n\tsub.s64 {r}, {r}, {b1};\n"));
        if let Some(san) = self.san.as_mut() {
            san.limits.insert((p, bytes), r);
        }
        Ok(r)
    }

    /// Guards one access of `elems` consecutive elements of `bytes` each at `addr` (a register,
    /// or `reg+imm`), held in register `reg_index` (and the following) of the site's layout,
    /// issued under `pred`: returns the predicate to issue it under (in bounds and `pred`),
    /// after the code that records a violation.
    pub(crate) fn san_guard(
        &mut self,
        site: &Site,
        addr: &str,
        reg_index: usize,
        elems: usize,
        bytes: u32,
        pred: Option<Reg>,
    ) -> Res<Reg> {
        let Some(san) = self.san.as_ref() else { return Err(self.err("internal: not sanitizing")) };
        let (record, program_key, seq) = (san.record, san.program_key, san.seq);
        let params: Vec<(usize, Reg, Reg)> =
            san.ptrs.iter().enumerate().filter_map(|(i, p)| p.map(|(b, e)| (i, b, e))).collect();
        let candidates: Vec<(usize, Reg, Reg)> = match site.prov {
            Provenance::Param(i) => params.iter().copied().filter(|p| p.0 == i).collect(),
            Provenance::Any => params.clone(),
        };
        if candidates.is_empty() {
            return Err(self.err("sanitize: an access through a pointer that comes from no pointer parameter"));
        }
        let (reg, imm) = match addr.split_once('+') {
            Some((r, i)) => (r.to_string(), Some(i.to_string())),
            None => (addr.to_string(), None),
        };
        let width = bytes * elems as u32;
        // In bounds of some candidate.
        let ok = self.new_reg(RegClass::Pred);
        let mut offs = vec![];
        for (k, &(p, base, _)) in candidates.iter().enumerate() {
            let off = self.new_reg(RegClass::B64);
            self.ins(format!("sub.s64 {off}, {reg}, {base}"));
            if let Some(i) = &imm {
                self.ins(format!("add.s64 {off}, {off}, {i}"));
            }
            let lim = self.san_limit(p, width)?;
            if k == 0 {
                self.ins(format!("setp.lt.u64 {ok}, {off}, {lim}"));
            } else {
                let t = self.new_reg(RegClass::Pred);
                self.ins(format!("setp.lt.u64 {t}, {off}, {lim}"));
                self.ins(format!("or.pred {ok}, {ok}, {t}"));
            }
            offs.push(off);
        }
        let (acc, viol) = (self.new_reg(RegClass::Pred), self.new_reg(RegClass::Pred));
        match pred {
            Some(p) => {
                self.ins(format!("and.pred {acc}, {p}, {ok}"));
                self.ins(format!("and.pred {viol}, {p}, !{ok}"));
            }
            None => {
                self.ins(format!("mov.pred {acc}, {ok}"));
                self.ins(format!("not.pred {viol}, {ok}"));
            }
        }
        let skip = self.new_label("san_ok");
        self.ins(format!("@!{viol} bra {skip}"));
        // ---- the recording code: runs only in violating lanes ----
        // The parameter to report against: the only candidate, or the one nearest in |offset|.
        let (mut off, mut ext) = (offs[0], candidates[0].2);
        let param = self.new_reg(RegClass::B32);
        self.ins(format!("mov.u32 {param}, {}", candidates[0].0));
        if candidates.len() > 1 {
            let (best, o2, e2) =
                (self.new_reg(RegClass::B64), self.new_reg(RegClass::B64), self.new_reg(RegClass::B64));
            self.ins(format!("abs.s64 {best}, {}", offs[0]));
            self.ins(format!("mov.b64 {o2}, {}", offs[0]));
            self.ins(format!("mov.b64 {e2}, {}", candidates[0].2));
            for (k, &(p, _, e)) in candidates.iter().enumerate().skip(1) {
                let (a, closer) = (self.new_reg(RegClass::B64), self.new_reg(RegClass::Pred));
                self.ins(format!("abs.s64 {a}, {}", offs[k]));
                self.ins(format!("setp.lt.u64 {closer}, {a}, {best}"));
                self.ins(format!("@{closer} mov.b64 {best}, {a}"));
                self.ins(format!("@{closer} mov.b64 {o2}, {}", offs[k]));
                self.ins(format!("@{closer} mov.b64 {e2}, {e}"));
                self.ins(format!("@{closer} mov.u32 {param}, {p}"));
            }
            off = o2;
            ext = e2;
        }
        // The element: the thread's coordinate bits XOR the register's, plus the first bad
        // element of a vector.
        let elem = self.new_reg(RegClass::B32);
        match &site.layout {
            Some(l) => {
                let bits = crate::layout::linear::shape_bits(&l.shape);
                let mask = if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
                let t = self.thread_bits(l, mask, 0);
                self.ins(format!("xor.b32 {elem}, {t}, {}", l.reg_part(reg_index as u64) as u32));
            }
            None => self.ins(format!("mov.u32 {elem}, 0")),
        }
        if elems > 1 {
            let (j, neg) = (self.new_reg(RegClass::B64), self.new_reg(RegClass::Pred));
            self.ins(format!("sub.s64 {j}, {ext}, {off}"));
            self.ins(format!("shr.s64 {j}, {j}, {}", bytes.trailing_zeros()));
            self.ins(format!("min.s64 {j}, {j}, {}", elems - 1));
            self.ins(format!("max.s64 {j}, {j}, 0"));
            self.ins(format!("setp.lt.s64 {neg}, {off}, 0"));
            self.ins(format!("@{neg} mov.b64 {j}, 0"));
            let (j32, moved) = (self.new_reg(RegClass::B32), self.new_reg(RegClass::B64));
            self.ins(format!("cvt.u32.u64 {j32}, {j}"));
            self.ins(format!("add.u32 {elem}, {elem}, {j32}"));
            self.ins(format!("shl.b64 {moved}, {j}, {}", bytes.trailing_zeros()));
            let o = self.new_reg(RegClass::B64);
            self.ins(format!("add.s64 {o}, {off}, {moved}"));
            off = o;
        }
        let r: Vec<Reg> = (0..8).map(|_| self.new_reg(RegClass::B64)).collect();
        let (ke, ks, key, inv, old, tag, w1, w2) = (r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]);
        let won = self.new_reg(RegClass::Pred);
        let t32 = self.new_reg(RegClass::B32);
        let t64 = self.new_reg(RegClass::B64);
        self.ins(format!("cvt.u64.u32 {ke}, {elem}"));
        self.ins(format!("min.u64 {ke}, {ke}, {KEY_ELEM_MAX}"));
        self.ins(format!("cvt.u64.u32 {ks}, {seq}"));
        self.ins(format!("min.u64 {ks}, {ks}, {KEY_SEQ_MAX}"));
        self.ins(format!("shl.b64 {ks}, {ks}, {KEY_SEQ_SHIFT}"));
        self.ins(format!("or.b64 {key}, {program_key}, {ks}"));
        self.ins(format!("or.b64 {key}, {key}, {ke}"));
        self.ins(format!("not.b64 {inv}, {key}"));
        self.ins(format!("atom.global.max.u64 {old}, [{record}], {inv}"));
        self.ins(format!("setp.lt.u64 {won}, {old}, {inv}"));
        self.ins(format!("mul.lo.u64 {tag}, {key}, {TAG_MUL}"));
        self.ins(format!("shr.u64 {tag}, {tag}, 40"));
        self.ins(format!("shl.b64 {tag}, {tag}, 40"));
        // w1 = tag | param << 32 | site << 16 | thread
        self.ins(format!("cvt.u64.u32 {w1}, {param}"));
        self.ins(format!("shl.b64 {w1}, {w1}, 32"));
        self.ins(format!("or.b64 {w1}, {w1}, {tag}"));
        self.ins(format!("and.b32 {t32}, {}, 65535", self.tid));
        self.ins(format!("cvt.u64.u32 {t64}, {t32}"));
        self.ins(format!("or.b64 {w1}, {w1}, {t64}"));
        self.ins(format!("or.b64 {w1}, {w1}, {}", (site.id as u64) << 16));
        // w2 = tag | offset (40 bits)
        self.ins(format!("and.b64 {w2}, {off}, 1099511627775"));
        self.ins(format!("or.b64 {w2}, {w2}, {tag}"));
        // The payload words: written by the thread whose key is the record's at the time of
        // writing, never by one a better key has since replaced (see `write_if_still_first`).
        let done = self.new_label("san_recorded");
        self.ins(format!("@!{won} bra {done}"));
        for (at, word) in [(8, w1), (16, w2)] {
            self.write_if_still_first(record, inv, at, word);
        }
        self.label(&done);
        let n = self.new_reg(RegClass::B64);
        self.ins(format!("atom.global.add.u64 {n}, [{record}+24], 1"));
        self.label(&skip);
        Ok(acc)
    }
}

impl Emitter<'_> {
    /// Writes `word` at `record + at` unless a better violation's key (`!key` larger than
    /// `inv`) has reached `record` by then. A plain store could land after the better
    /// violation's own payload (this thread's `atom.max` came first, its store last: several
    /// CTAs violating at once), leaving the record's words from two violations — which the
    /// host can tell by their tags, but not undo. So: read the word, then the key; stop if the
    /// key is no longer this thread's; else swap the word in only if it is still what was read
    /// (`atom.cas`), and try again if not. A better violation's `atom.max` after the key check
    /// writes after the read, so it either fails this swap or overwrites it.
    fn write_if_still_first(&mut self, record: Reg, inv: Reg, at: u32, word: Reg) {
        let (seen, key, got) = (self.new_reg(RegClass::B64), self.new_reg(RegClass::B64), self.new_reg(RegClass::B64));
        let (beaten, lost) = (self.new_reg(RegClass::Pred), self.new_reg(RegClass::Pred));
        let retry = self.new_label("san_write");
        let out = self.new_label("san_written");
        self.label(&retry);
        self.ins(format!("ld.volatile.global.u64 {seen}, [{record}+{at}]"));
        self.ins("membar.gl");
        self.ins(format!("ld.volatile.global.u64 {key}, [{record}]"));
        self.ins(format!("setp.ne.u64 {beaten}, {key}, {inv}"));
        self.ins(format!("@{beaten} bra {out}"));
        self.ins(format!("atom.global.cas.b64 {got}, [{record}+{at}], {seen}, {word}"));
        self.ins(format!("setp.ne.u64 {lost}, {got}, {seen}"));
        self.ins(format!("@{lost} bra {retry}"));
        self.label(&out);
    }
}

/// Loads the hidden parameters of a sanitized kernel (see the module docs) into `loads`:
/// returns each parameter's (base, extent) registers for pointers and the record's register.
pub(crate) fn load_hidden(
    e: &mut Emitter,
    entry: &str,
    first_hidden: usize,
    bases: &[Option<Reg>],
    param_text: &mut String,
    loads: &mut String,
) -> (Vec<Option<(Reg, Reg)>>, Reg) {
    let mut next = first_hidden;
    let mut ptrs = vec![];
    for base in bases {
        ptrs.push(base.map(|b| {
            let pname = format!("{entry}_param_{next}");
            next += 1;
            let _ = write!(param_text, "{}\t.param .u64 {pname}", if param_text.is_empty() { "" } else { ",\n" });
            let ext = e.new_reg(RegClass::B64);
            let _ = writeln!(loads, "\tld.param.u64 {ext}, [{pname}];");
            (b, ext)
        }));
    }
    let pname = format!("{entry}_param_{next}");
    let _ = write!(param_text, "{}\t.param .u64 {pname}", if param_text.is_empty() { "" } else { ",\n" });
    let record = e.new_reg(RegClass::B64);
    let _ = writeln!(loads, "\tld.param.u64 {record}, [{pname}];");
    (ptrs, record)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(key: u64, w1: u64, w2: u64, n: u64) -> Vec<u8> {
        [!key, w1, w2, n].iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn decodes_a_record_and_notices_interleaved_writes() {
        assert_eq!(SanitizeInfo::decode(&[0; RECORD_BYTES]), None);
        let key = (7u64 << KEY_PROGRAM_SHIFT) | (3 << KEY_SEQ_SHIFT) | 104;
        let tag = tag_of(key) << 40;
        let off = (-8i64) as u64 & 0xFF_FFFF_FFFF;
        let v = SanitizeInfo::decode(&record(key, tag | (2 << 32) | (5 << 16) | 33, tag | off, 4)).unwrap();
        assert_eq!(
            v,
            Violation {
                program: 7,
                site: Some(5),
                param: Some(2),
                element: Some(104),
                offset: Some(-8),
                thread: Some(33),
                count: 4
            }
        );
        // The offset written by another thread (another tag): not trusted.
        let other = tag_of(key + 1) << 40;
        let v = SanitizeInfo::decode(&record(key, tag | (2 << 32), other | off, 2)).unwrap();
        assert_eq!((v.offset, v.thread), (None, Some(0)));
    }
}
