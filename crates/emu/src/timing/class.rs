//! What each decoded instruction asks of the machine, fixed at parse time and
//! independent of which machine: the unit it occupies, the latency class of its result,
//! how many SASS instructions it stands for, and the registers it reads and writes
//! (for the scoreboard).

use crate::ir::{AddrBase, Instr, Kind, Mods, Operand, Space, Ty};

/// Functional units of an SM sub-partition (the `Mio` unit is shared by the SM).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Pipe {
    /// No unit beyond the issue slot (moves, branches, waits, markers).
    None,
    Fp32,
    Int,
    Fp64,
    /// Special functions and conversions (MUFU/XU).
    Sfu,
    /// Warp-synchronous tensor core (`mma.sync`).
    Tensor,
    /// Memory instructions, shuffles: the SM's shared LSU/MIO path.
    Mio,
}

/// The latency class of an instruction's result.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Lat {
    Alu,
    Fp64,
    Sfu,
    Conv,
    /// Kernel parameters and constants (constant cache).
    Param,
    /// A memory access whose space (shared, local, global) shows when it runs.
    Memory,
    Atomic,
    Shfl,
    Mma,
    /// Results arrive asynchronously (`wgmma` at its wait); nothing to track.
    Async,
    None,
}

/// Timing facts of one instruction.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InstrTiming {
    pub pipe: Option<Pipe>,
    pub lat: Option<Lat>,
    /// SASS instructions this PTX instruction stands for (issue slots; > 1 for
    /// emulated operations like integer division, 64-bit integer arithmetic; 0 for
    /// register renames ptxas removes, which then cost nothing and wait for nothing:
    /// their destinations become ready when their sources are).
    pub slots: u8,
    /// Extra latency of multi-instruction sequences (their internal dependences).
    pub extra_lat: u16,
    /// Registers read (including address and guard registers) and written.
    pub srcs: Vec<u32>,
    pub dsts: Vec<u32>,
}

impl InstrTiming {
    pub fn pipe(&self) -> Pipe {
        self.pipe.unwrap_or(Pipe::None)
    }

    pub fn lat(&self) -> Lat {
        self.lat.unwrap_or(Lat::None)
    }
}

fn regs_of(op: &Operand, out: &mut Vec<u32>) {
    match op {
        Operand::Reg(r) | Operand::NotReg(r) => out.push(*r),
        Operand::Addr(AddrBase::Reg(r), _) => out.push(*r),
        Operand::Vec(v) => v.iter().for_each(|o| regs_of(o, out)),
        _ => {}
    }
}

/// Whether `ops[0]` is a destination.
fn writes_first(kind: Kind, m: &Mods) -> bool {
    use Kind::*;
    match kind {
        St | Red | Bra | Call | Ret | Exit | Trap | CpAsync | CpAsyncCommit | CpAsyncWait | CpAsyncWaitAll | Fence
        | Nanosleep | Prefetch | BarWarp | WgmmaFence | WgmmaCommit | WgmmaWait | Stmatrix | Mark => false,
        // wgmma's D registers are written when its group is waited for (see `sm`).
        Wgmma => false,
        Bar => m.red,
        Mbar => matches!(
            m.mbar,
            Some(
                crate::ir::MbarOp::Arrive
                    | crate::ir::MbarOp::ArriveDrop
                    | crate::ir::MbarOp::TestWait
                    | crate::ir::MbarOp::TryWait
                    | crate::ir::MbarOp::PendingCount
            )
        ),
        BulkLoad | BulkStore | BulkCommit | BulkWait | SetMaxNReg | ClusterBar => false,
        TensorLoad | TensorStore | TensorPrefetch | TmapReplace | TmapCopy => false,
        _ => true,
    }
}

fn is_wide(tys: &[Ty]) -> bool {
    tys.iter().any(|t| t.bits() == 64)
}

/// Classifies a decoded instruction.
pub fn classify(ins: &Instr) -> InstrTiming {
    use Kind::*;
    let mut t = InstrTiming { slots: 1, ..InstrTiming::default() };
    let mut srcs = Vec::new();
    let mut dsts = Vec::new();
    if let Some((p, _)) = ins.guard {
        srcs.push(p);
    }
    for (i, op) in ins.ops.iter().enumerate() {
        if i == 0 && writes_first(ins.kind, &ins.m) {
            regs_of(op, &mut dsts);
        } else if !(ins.kind == Wgmma && i == 0) {
            regs_of(op, &mut srcs);
        }
    }
    srcs.sort_unstable();
    srcs.dedup();
    t.srcs = srcs;
    t.dsts = dsts;

    let ty = ins.ty();
    let float = ty.is_float();
    let f64op = ins.tys.contains(&Ty::F64);
    let wide = is_wide(&ins.tys);
    let (pipe, lat, slots, extra): (Pipe, Lat, u8, u16) = match ins.kind {
        Add | Sub | Min | Max | Abs | Neg | Mul | Mad | Fma | Copysign | Testp if float => {
            if f64op {
                (Pipe::Fp64, Lat::Fp64, 1, 0)
            } else {
                (Pipe::Fp32, Lat::Alu, 1, 0)
            }
        }
        Fma | Copysign | Testp => (if f64op { Pipe::Fp64 } else { Pipe::Fp32 }, Lat::Alu, 1, 0),
        // Integer multiplies run on the IMAD path; 64-bit ones take several.
        Mul | Mad | Mul24 | Mad24 | Sad => {
            if wide && ins.m.mul != crate::ir::MulMode::Wide {
                (Pipe::Int, Lat::Alu, 3, 4)
            } else {
                (Pipe::Int, Lat::Alu, 1, 0)
            }
        }
        Add | Sub | Min | Max | Abs | Neg | And | Or | Xor | Not | Cnot | Shl | Shr | Shf | Lop3 | Prmt | Bfe | Bfi => {
            (Pipe::Int, Lat::Alu, if wide { 2 } else { 1 }, 0)
        }
        Popc | Clz | Brev | Bfind => (Pipe::Sfu, Lat::Conv, if wide { 2 } else { 1 }, 0),
        // Division and remainder are instruction sequences on every NVIDIA GPU.
        Div | Rem if float => {
            if f64op {
                (Pipe::Fp64, Lat::Fp64, 24, 80)
            } else if ins.m.approx {
                (Pipe::Sfu, Lat::Sfu, 2, 4)
            } else if ins.m.full {
                (Pipe::Sfu, Lat::Sfu, 4, 12)
            } else {
                (Pipe::Sfu, Lat::Sfu, 10, 30)
            }
        }
        Div | Rem => (Pipe::Int, Lat::Alu, if wide { 60 } else { 20 }, if wide { 200 } else { 60 }),
        Rcp | Sqrt | Rsqrt | Ex2 | Lg2 | Sin | Cos | Tanh => {
            if f64op {
                (Pipe::Fp64, Lat::Fp64, 16, 60)
            } else if ins.m.approx || !matches!(ins.kind, Rcp | Sqrt) {
                // ex2/lg2 without .ftz add a scaling step around MUFU.
                let slots = if matches!(ins.kind, Ex2 | Lg2 | Sin | Cos) && !ins.m.ftz { 2 } else { 1 };
                (Pipe::Sfu, Lat::Sfu, slots, 0)
            } else {
                (Pipe::Sfu, Lat::Sfu, 8, 24)
            }
        }
        Setp | Set | Selp | Slct => {
            if f64op {
                (Pipe::Fp64, Lat::Fp64, 1, 0)
            } else if float {
                (Pipe::Fp32, Lat::Alu, 1, 0)
            } else {
                (Pipe::Int, Lat::Alu, if wide { 2 } else { 1 }, 0)
            }
        }
        Cvt => {
            let (d, s) = (ins.tys.first().copied().unwrap_or(Ty::B32), ins.tys.get(1).copied().unwrap_or(Ty::B32));
            match (d.is_float(), s.is_float()) {
                (true, true) if d == Ty::F64 || s == Ty::F64 => (Pipe::Fp64, Lat::Fp64, 1, 0),
                // Rounding to an integral value in the same format (FRND) is an XU op.
                (true, true) if d == s => (Pipe::Sfu, Lat::Conv, 1, 0),
                (true, true) => (Pipe::Fp32, Lat::Alu, 1, 0),
                // Widening an integer is free (the high half is a zero or sign register).
                (false, false) if d.bits() > s.bits() && !ins.m.sat => (Pipe::None, Lat::None, 0, 0),
                (false, false) => (Pipe::Int, Lat::Alu, 1, 0),
                _ => (Pipe::Sfu, Lat::Conv, if wide { 2 } else { 1 }, 0),
            }
        }
        // Register moves and packs are renamed away by ptxas (phi copies of loop-carried
        // accumulators, for example); reading a special register is an S2R.
        Mov if !ins.ops.iter().any(|o| matches!(o, Operand::Sreg(_))) => (Pipe::None, Lat::None, 0, 0),
        Mov => (Pipe::None, Lat::Alu, 1, 0),
        Cvta => (Pipe::None, Lat::Alu, if wide { 2 } else { 1 }, 0),
        Ld | St => match ins.m.space {
            Some(Space::Param) | Some(Space::Const) if ins.kind == Ld => (Pipe::None, Lat::Param, 1, 0),
            _ => (Pipe::Mio, Lat::Memory, 1, 0),
        },
        Atom | Red => (Pipe::Mio, Lat::Atomic, 1, 0),
        CpAsync | Ldmatrix | Stmatrix | Prefetch => (Pipe::Mio, Lat::Memory, 1, 0),
        CpAsyncCommit | CpAsyncWait | CpAsyncWaitAll => (Pipe::None, Lat::None, 1, 0),
        Mma => (Pipe::Tensor, Lat::Mma, 1, 0),
        Wgmma => (Pipe::None, Lat::Async, 1, 0),
        WgmmaFence | WgmmaCommit | WgmmaWait => (Pipe::None, Lat::None, 1, 0),
        Shfl => (Pipe::Mio, Lat::Shfl, 1, 0),
        // match.any compares every lane with every other: a long sequence on hardware.
        Match => (Pipe::Int, Lat::Shfl, if ins.m.all { 4 } else { 16 }, 0),
        Vote | Activemask => (Pipe::Int, Lat::Alu, 1, 0),
        Redux => (Pipe::Int, Lat::Shfl, 1, 0),
        Bar | BarWarp | Fence | Nanosleep => (Pipe::None, Lat::None, 1, 0),
        Bra | Call | Ret | Exit | Trap => (Pipe::None, Lat::None, 1, 0),
        Mark => (Pipe::None, Lat::None, 0, 0),
        // mbarrier operations are shared-memory atomics in the hardware.
        Mbar => (Pipe::Mio, Lat::Shfl, 1, 0),
        BulkLoad | BulkStore => (Pipe::Mio, Lat::Memory, 1, 0),
        // Tensor copies are bulk copies with an address generator (timed like them).
        TensorLoad | TensorStore | TensorPrefetch | TmapReplace | TmapCopy => (Pipe::Mio, Lat::Memory, 1, 0),
        BulkCommit | BulkWait | SetMaxNReg | ClusterBar => (Pipe::None, Lat::None, 1, 0),
        Elect => (Pipe::Int, Lat::Alu, 1, 0),
        Mapa => (Pipe::Int, Lat::Alu, 1, 0),
    };
    t.pipe = Some(pipe);
    t.lat = Some(lat);
    t.slots = slots;
    t.extra_lat = extra;
    t
}

#[cfg(test)]
mod tests {
    use crate::parse::Module;

    fn timing_of(body: &str) -> Vec<super::InstrTiming> {
        let ptx = format!(
            ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u64 p)\n{{\n.reg .pred %p<4>;\n.reg .b32 %r<16>;\n.reg .b64 %rd<8>;\n.reg .f32 %f<8>;\n{body}\nret;\n}}"
        );
        let m = Module::parse(&ptx).unwrap();
        m.funcs[0].instrs.iter().map(|i| i.timing.clone()).collect()
    }

    #[test]
    fn sources_and_destinations() {
        let t = timing_of("fma.rn.f32 %f1, %f2, %f3, %f1;\nst.global.v2.f32 [%rd1+8], {%f1, %f2};\n@%p1 ld.global.u32 %r1, [%rd2];\nsetp.lt.u32 %p2|%p3, %r1, 4;");
        // Registers are numbered in declaration order: %p0.. then %r0.., %rd0.., %f0...
        let (p, r, rd, f) = (0u32, 4u32, 20u32, 28u32);
        assert_eq!(t[0].dsts, vec![f + 1]);
        assert_eq!(t[0].srcs, vec![f + 1, f + 2, f + 3]);
        assert!(t[1].dsts.is_empty());
        assert_eq!(t[1].srcs, vec![rd + 1, f + 1, f + 2]);
        assert_eq!(t[2].srcs, vec![p + 1, rd + 2]);
        assert_eq!(t[2].dsts, vec![r + 1]);
        assert_eq!(t[3].dsts, vec![p + 2, p + 3]);
    }
}
