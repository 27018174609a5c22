//! Shared-memory addresses of the form `addr + (thread ^ o) * bytes`, `thread` the
//! thread's offset in a (swizzled) tile and `o` a constant per register or group.
//!
//! Let `T` be the offset bits any thread can have (the OR of its lane and warp bases).
//! Splitting `o` into `h = o & T` and `r = o & !T` gives `thread ^ o = (thread ^ h) + r`:
//! the XOR with `h` is a thread-only value computed once in the prologue (a handful of
//! distinct `h` per tile: the swizzle bits), and `r` becomes the immediate of `[base+imm]`.
//! So a loop reading a tile spends one `add` per distinct `h`, not an `xor` and a `mad`
//! per access.

use super::emitter::Emitter;
use super::regs::{Reg, RegClass};
use crate::layout::LinearLayout;
use std::collections::HashMap;
use std::fmt::Write;
use std::rc::Rc;

/// Address generator for one tile access (see the module docs).
#[derive(Clone, Debug)]
pub struct TileAddr {
    /// Lane and warp bases of the thread's offset (no register bases).
    thread: Rc<LinearLayout>,
    /// The offset bits a thread's part can have.
    t_bits: u64,
    bytes: u32,
    addr: Reg,
    /// Constant byte offset added to every address.
    extra: u64,
    /// `addr + (thread ^ h) * bytes` per `h` used so far.
    bases: HashMap<u64, Reg>,
}

impl Emitter<'_> {
    /// Addresses `addr + extra + (thread ^ o) * bytes` for the thread offsets of `thread`
    /// (a layout whose lane and warp bases are element offsets; its register bases are ignored).
    pub(crate) fn tile_addr(&mut self, thread: &LinearLayout, bytes: u32, addr: Reg, extra: u64) -> TileAddr {
        let thread = Rc::new(LinearLayout {
            shape: thread.shape.clone(),
            reg: vec![],
            lane: thread.lane.clone(),
            warp: thread.warp.clone(),
        });
        let t_bits = thread.lane.iter().chain(&thread.warp).fold(0, |a, &b| a | b);
        TileAddr { thread, t_bits, bytes, addr, extra, bases: HashMap::new() }
    }

    /// The address expression (`reg` or `reg+imm`) of offset `o` (in elements).
    pub(crate) fn tile_elem_addr(&mut self, ta: &mut TileAddr, o: u64) -> String {
        let h = o & ta.t_bits;
        let r = o & !ta.t_bits;
        let base = match ta.bases.get(&h) {
            Some(&b) => b,
            None => {
                let p = self.thread_offset_bytes(&ta.thread, h, ta.bytes);
                let b = self.new_reg(RegClass::B32);
                self.ins(format!("add.u32 {b}, {p}, {}", ta.addr));
                ta.bases.insert(h, b);
                b
            }
        };
        let imm = r * ta.bytes as u64 + ta.extra;
        if imm == 0 {
            base.to_string()
        } else {
            format!("{base}+{imm}")
        }
    }

    /// `(thread ^ h) * bytes`, computed once in the prologue.
    fn thread_offset_bytes(&mut self, thread: &Rc<LinearLayout>, h: u64, bytes: u32) -> Reg {
        let t = self.thread_flat(thread);
        let key = (t, h, bytes);
        if let Some(&r) = self.scaled_offsets.get(&key) {
            return r;
        }
        let r = self.new_reg(RegClass::B32);
        let mut code = String::new();
        let src = if h != 0 {
            let _ = writeln!(code, "\txor.b32 {r}, {t}, {h};");
            r
        } else {
            t
        };
        if bytes.is_power_of_two() {
            let _ = writeln!(code, "\tshl.b32 {r}, {src}, {};", bytes.trailing_zeros());
        } else {
            let _ = writeln!(code, "\tmul.lo.u32 {r}, {src}, {bytes};");
        }
        self.push_prologue(&code);
        self.scaled_offsets.insert(key, r);
        r
    }
}
