//! Which functional unit ("pipe") of an SM sub-partition an instruction issues to, and for
//! how many cycles it holds that pipe — the issue rate per warp instruction. A warp (or a
//! sub-partition's next warp) cannot issue another instruction to a pipe that is still busy,
//! whatever the stall counts say: lowering `ptxas`'s stall between two `FFMA`s on sm_80
//! below 2 does not make them faster, and two warps of one sub-partition share its pipes.
//!
//! **Where the numbers come from.** As for the latency table ([`crate::latency`]): from what
//! `ptxas` 13.0 does. In a loop of eight independent chains of one operation, `ptxas` leaves
//! exactly the pipe's cycles between two instructions of that operation, and 1 between two
//! that go to different pipes; chains of two operations interleaved tell whether they share a
//! pipe (the experiment's generator is described in `crates/sass/README.md`, "Pipes";
//! 2026-11-29, sm_80 and sm_90a):
//!
//! | pipe | instructions | sm_80 | sm_90 |
//! |---|---|---:|---:|
//! | ALU | `IADD3`, `LOP3`, `SHF`, `IMNMX`/`VIMNMX`, `PRMT`, `FMNMX`, `ISETP`, `FSETP`, `SEL`, `FSEL`, `LEA`, `I2FP`, `MOV` | 2 | 2 |
//! | FMA | `FFMA`, `FADD`, `FMUL`; `IMAD`, `VIADD` | 2 (one pipe) | 2 each on two pipes: `FFMA`/`FADD`/`FMUL` take either, `IMAD`/`VIADD` only the first |
//! | FP16 | `HFMA2`, `HADD2`, `HMUL2` | 2 | (the first FMA pipe, 2) |
//! | XU | `MUFU`, `I2F`, `F2I`, `F2F`, `I2I`, `POPC`, `FLO`, `BREV`, `FRND`, `FCHK` | 8 | 8 |
//! | FP64 | `DFMA`, `DADD`, `DMUL`, `DSETP` | 4 | 2 |
//! | tensor | `HMMA.16816` / `HMMA.1688`; `HFMA2.MMA` | 8 / 4; 2 | 6 / 3; 2 |
//!
//! `ptxas` issues half-precision arithmetic at one instruction a cycle by alternating
//! `HFMA2` with `HFMA2.MMA`, the same operation on the tensor pipe (and uses `HFMA2.MMA` as a
//! constant move); in a kernel busy with `HMMA` it writes plain `HFMA2`s two cycles apart.
//! Pipe membership also agrees with NVIDIA's description on its developer forum ("Separate
//! CUDA core pipeline for FP16 and FP32", 2024: on GA100 one pipe for FP32 and `IMAD`, a
//! shared one for tensor, FP16 and FP64; on GH100 an FMA-heavy pipe for FP32 and `IMAD`, an
//! FMA-lite pipe for FP32) — except that its sharing of one dispatch port among tensor, FP16
//! and FP64 is not modelled: they are separate pipes here.
//!
//! They agree with the published per-SM rates (A100: 64 FP32 lanes, 16 special-function
//! lanes, 32 FP64 lanes, 1024 dense FP16 tensor FMAs a cycle; H100: 128 FP32, 64 INT32, 64
//! FP64), except the H100 `HMMA`: 6 cycles a warp instruction is two thirds of its tensor
//! cores' rate, as `mma.sync` is reported to reach on Hopper. `HMMA.1688` on sm_90 (3) is
//! scaled from the 16816 form, not observed: in the experiment `ptxas` 13.0 for sm_90a kept the
//! m16n8k8 chains apart by 16 cycles with moves between (sm_80's 4 is observed). Everything else — memory instructions (the
//! memory pipe is modelled apart), branches, the uniform datapath, `HGMMA`, conversions
//! between 64-bit types, forms not observed — is not assigned a pipe and issues at the issue
//! slot's rate. `HGMMA` holds the tensor pipe after it issues, not to issue (it is
//! asynchronous): the SASS emulator books N/2 cycles of it per `64xNxK` (`ptxas` gives no
//! spacing to read a rate from; H100's 2048 dense f16 multiply-adds a cycle per SM).

/// A functional unit of a sub-partition.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Pipe {
    Alu,
    /// The FMA pipe (on sm_90 the one of two that also takes `IMAD`).
    Fma,
    /// sm_90's second FMA pipe (floating point only).
    FmaLite,
    Fp16,
    Xu,
    Fp64,
    Tensor,
}

impl Pipe {
    /// All pipes, in the order [`Pipe::index`] numbers them.
    pub const ALL: [Pipe; 7] = [Pipe::Alu, Pipe::Fma, Pipe::FmaLite, Pipe::Fp16, Pipe::Xu, Pipe::Fp64, Pipe::Tensor];

    pub fn index(self) -> usize {
        self as usize
    }
}

/// What an instruction takes: one of `pipes` (the first free one) for `cycles` cycles.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PipeUse {
    pub pipes: &'static [Pipe],
    pub cycles: u8,
}

const fn on(pipes: &'static [Pipe], cycles: u8) -> Option<PipeUse> {
    Some(PipeUse { pipes, cycles })
}

/// The pipe instruction `opcode` (as `nvdisasm` prints it, with modifiers) takes on `sm`
/// (80, 90), if the model assigns one.
pub fn pipe(sm: u32, opcode: &str) -> Option<PipeUse> {
    use Pipe::*;
    let mut parts = opcode.split('.');
    let root = parts.next().unwrap_or(opcode);
    let wide = opcode.contains("64");
    let hopper = sm >= 90;
    match root {
        "IADD3" | "LOP3" | "SHF" | "IMNMX" | "VIMNMX" | "PRMT" | "FMNMX" | "ISETP" | "FSETP" | "SEL" | "FSEL"
        | "LEA" | "I2FP" | "MOV" => on(&[Alu], 2),
        "FFMA" | "FADD" | "FMUL" if hopper => on(&[Fma, FmaLite], 2),
        "FFMA" | "FADD" | "FMUL" | "IMAD" | "VIADD" => on(&[Fma], 2),
        // `ptxas` alternates `HFMA2` with `HFMA2.MMA` (the tensor pipe) to issue one a cycle.
        "HFMA2" | "HADD2" | "HMUL2" if opcode.contains(".MMA") => on(&[Tensor], 2),
        "HFMA2" | "HADD2" | "HMUL2" if hopper => on(&[Fma], 2),
        "HFMA2" | "HADD2" | "HMUL2" => on(&[Fp16], 2),
        "MUFU" | "POPC" | "FLO" | "BREV" | "FCHK" => on(&[Xu], 8),
        "I2F" | "F2I" | "F2F" | "I2I" | "FRND" if !wide => on(&[Xu], 8),
        "DFMA" | "DADD" | "DMUL" | "DSETP" => on(&[Fp64], if hopper { 2 } else { 4 }),
        "HMMA" => {
            let small = opcode.contains(".1688");
            let big = opcode.contains(".16816");
            match (hopper, small, big) {
                (false, _, true) => on(&[Tensor], 8),
                (false, true, _) => on(&[Tensor], 4),
                (true, _, true) => on(&[Tensor], 6),
                (true, true, _) => on(&[Tensor], 3),
                _ => None,
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipes_by_architecture() {
        assert_eq!(pipe(80, "FFMA"), on(&[Pipe::Fma], 2));
        assert_eq!(pipe(90, "FFMA.FTZ"), on(&[Pipe::Fma, Pipe::FmaLite], 2));
        assert_eq!(pipe(90, "IMAD.WIDE.U32"), on(&[Pipe::Fma], 2));
        assert_eq!(pipe(80, "HFMA2"), on(&[Pipe::Fp16], 2));
        assert_eq!(pipe(80, "HFMA2.MMA"), on(&[Pipe::Tensor], 2));
        assert_eq!(pipe(90, "HFMA2"), on(&[Pipe::Fma], 2));
        assert_eq!(pipe(80, "MUFU.EX2"), on(&[Pipe::Xu], 8));
        assert_eq!(pipe(80, "F2I.F64"), None, "64-bit conversions are not observed");
        assert_eq!(pipe(80, "DFMA"), on(&[Pipe::Fp64], 4));
        assert_eq!(pipe(90, "DFMA"), on(&[Pipe::Fp64], 2));
        assert_eq!(pipe(80, "HMMA.16816.F32"), on(&[Pipe::Tensor], 8));
        assert_eq!(pipe(90, "HMMA.16816.F32.BF16"), on(&[Pipe::Tensor], 6));
        assert_eq!(pipe(80, "HMMA.1688.F32"), on(&[Pipe::Tensor], 4));
        assert_eq!(pipe(90, "LDG.E"), None);
        assert_eq!(pipe(90, "HGMMA.64x128x16.F32"), None);
        for p in Pipe::ALL {
            assert_eq!(Pipe::ALL[p.index()], p);
        }
    }
}
