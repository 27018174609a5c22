//! Second pass: one raw statement → one decoded [`Instr`]. Opcode modifiers become
//! enums, names become register indices or addresses. Any opcode or modifier not
//! known here is rejected as unsupported rather than guessed at.

use std::collections::HashMap;

use super::literal::{lit_bits, parse_lit};
use super::raw::RawOp;
use super::Sym;
use crate::error::{EmuError, ErrorKind};
use crate::ir::*;
use crate::memory::PARAM_WINDOW;

pub struct Ctx<'a> {
    /// Register name → (first index, vector width).
    pub regs: &'a HashMap<String, (u32, u32)>,
    /// Indices of `.pred` registers (to tell `cp.async`'s ignore-src predicate from a src-size).
    pub pred_regs: &'a std::collections::HashSet<u32>,
    pub syms: &'a HashMap<String, Sym>,
    pub labels: &'a HashMap<String, u32>,
    pub is_entry: bool,
}

fn unsupported(opcode: &str, why: &str) -> EmuError {
    let mut msg = format!("unsupported instruction `{opcode}`");
    if !why.is_empty() {
        msg.push_str(" (");
        msg.push_str(why);
        msg.push(')');
    }
    EmuError::new(ErrorKind::Unsupported, msg)
}

fn perr(msg: impl Into<String>) -> EmuError {
    EmuError::new(ErrorKind::Parse, msg)
}

fn cmp_of(s: &str) -> Option<Cmp> {
    use Cmp::*;
    Some(match s {
        "eq" => Eq,
        "ne" => Ne,
        "lt" => Lt,
        "le" => Le,
        "gt" => Gt,
        "ge" => Ge,
        "lo" => Lo,
        "ls" => Ls,
        "hi" => Hi,
        "hs" => Hs,
        "equ" => Equ,
        "neu" => Neu,
        "ltu" => Ltu,
        "leu" => Leu,
        "gtu" => Gtu,
        "geu" => Geu,
        "num" => Num,
        "nan" => Nan,
        _ => return None,
    })
}

fn sreg_of(s: &str) -> Option<Sreg> {
    let dim = |d: &str| match d {
        "x" => Some(0u8),
        "y" => Some(1),
        "z" => Some(2),
        _ => None,
    };
    if let Some((base, d)) = s.split_once('.') {
        let d = dim(d)?;
        return Some(match base {
            "%tid" => Sreg::Tid(d),
            "%ntid" => Sreg::Ntid(d),
            "%ctaid" => Sreg::Ctaid(d),
            "%nctaid" => Sreg::Nctaid(d),
            "%cluster_ctaid" => Sreg::ClusterCtaid(d),
            "%cluster_nctaid" => Sreg::ClusterNctaid(d),
            "%clusterid" => Sreg::ClusterId(d),
            "%nclusterid" => Sreg::NClusterId(d),
            _ => return None,
        });
    }
    Some(match s {
        "%laneid" => Sreg::LaneId,
        "%warpid" => Sreg::WarpId,
        "%nwarpid" => Sreg::NWarpId,
        "%smid" => Sreg::SmId,
        "%nsmid" => Sreg::NSmId,
        "%gridid" => Sreg::GridId,
        "%clock" => Sreg::Clock,
        "%clock64" => Sreg::Clock64,
        "%globaltimer" => Sreg::GlobalTimer,
        "%dynamic_smem_size" => Sreg::DynSmem,
        "%total_smem_size" => Sreg::TotalSmem,
        "%lanemask_eq" => Sreg::LaneMaskEq,
        "%lanemask_lt" => Sreg::LaneMaskLt,
        "%lanemask_le" => Sreg::LaneMaskLe,
        "%lanemask_gt" => Sreg::LaneMaskGt,
        "%lanemask_ge" => Sreg::LaneMaskGe,
        "%cluster_ctarank" => Sreg::ClusterCtaRank,
        "%cluster_nctarank" => Sreg::ClusterNctaRank,
        "%is_explicit_cluster" => Sreg::IsExplicitCluster,
        _ => return None,
    })
}

impl Ctx<'_> {
    fn reg(&self, name: &str) -> Option<u32> {
        if let Some(&(i, _)) = self.regs.get(name) {
            return Some(i);
        }
        // `%v.x` element of a vector register.
        let (base, comp) = name.rsplit_once('.')?;
        let &(i, w) = self.regs.get(base)?;
        let k = match comp {
            "x" | "r" => 0,
            "y" | "g" => 1,
            "z" | "b" => 2,
            "w" | "a" => 3,
            _ => return None,
        };
        (k < w).then_some(i + k)
    }

    fn name(&self, n: &str, off: i64) -> Result<Operand, EmuError> {
        if n == "_" {
            return Ok(Operand::Sink);
        }
        if off == 0 {
            if let Some(r) = self.reg(n) {
                return Ok(Operand::Reg(r));
            }
            if let Some(s) = sreg_of(n) {
                return Ok(Operand::Sreg(s));
            }
            if let Some(&pc) = self.labels.get(n) {
                return Ok(Operand::Target(pc));
            }
        }
        match self.syms.get(n) {
            Some(Sym::Shared(a)) => Ok(Operand::Imm((*a as i64).wrapping_add(off) as u64)),
            Some(Sym::Global(a)) => Ok(Operand::Imm((*a as i64).wrapping_add(off) as u64)),
            Some(Sym::Local(a)) => Ok(Operand::Imm((*a as i64).wrapping_add(off) as u64)),
            Some(Sym::Func(i)) if off == 0 => Ok(Operand::Target(*i)),
            // The address of a kernel parameter (PTX ISA "Kernel Function Parameters"): in the
            // parameter window, usable with `ld.param`, as a generic address, or as a tensor map.
            Some(Sym::KParam(a)) => Ok(Operand::Imm(PARAM_WINDOW.wrapping_add((*a as i64).wrapping_add(off) as u64))),
            _ => Err(perr(format!("unknown name `{n}`"))),
        }
    }

    fn operand(&self, op: &RawOp, ty: Ty) -> Result<Operand, EmuError> {
        Ok(match op {
            RawOp::Name(n) => self.name(n, 0)?,
            RawOp::SymOff(n, off) => self.name(n, *off)?,
            RawOp::Num { text, neg } => {
                let lit = parse_lit(text, *neg).ok_or_else(|| perr(format!("bad number `{text}`")))?;
                Operand::Imm(lit_bits(lit, ty))
            }
            RawOp::Vec(items) => Operand::Vec(items.iter().map(|o| self.operand(o, ty)).collect::<Result<_, _>>()?),
            RawOp::Not(n) => Operand::NotReg(self.reg(n).ok_or_else(|| perr(format!("unknown register `{n}`")))?),
            RawOp::Pair(a, b) => Operand::Vec(vec![self.name(a, 0)?, self.name(b, 0)?]),
            RawOp::Addr { base, off } => match base {
                None => Operand::Addr(AddrBase::Abs(*off as u64), 0),
                Some(n) => {
                    if let Some(r) = self.reg(n) {
                        Operand::Addr(AddrBase::Reg(r), *off)
                    } else {
                        match self.syms.get(n.as_str()) {
                            Some(Sym::Shared(a)) => Operand::Addr(AddrBase::Abs(*a as u64), *off),
                            Some(Sym::Global(a)) => Operand::Addr(AddrBase::Abs(*a), *off),
                            Some(Sym::Local(a)) => Operand::Addr(AddrBase::Abs(*a as u64), *off),
                            Some(Sym::KParam(a)) => Operand::Addr(AddrBase::Abs(*a as u64), *off),
                            _ => return Err(perr(format!("unknown name `{n}` in address"))),
                        }
                    }
                }
            },
            RawOp::TensorAddr { .. } => {
                return Err(perr(
                    "a `[tensorMap, {coordinates}]` operand belongs to tensor copies (cp.async.bulk.tensor)",
                ))
            }
            RawOp::List(items) => {
                let mut refs = Vec::new();
                for i in items {
                    match i {
                        RawOp::Name(n) => match self.syms.get(n.as_str()) {
                            Some(Sym::Local(a)) => refs.push(ParamRef { offset: *a, size: 0 }),
                            _ => return Err(perr(format!("call argument `{n}` is not a .param variable"))),
                        },
                        _ => return Err(perr("call arguments must be .param variables")),
                    }
                }
                Operand::ParamList(refs)
            }
        })
    }

    /// What kind of symbol an address operand names (for `ld.param` and friends).
    fn addr_sym(&self, op: &RawOp) -> Option<Sym> {
        match op {
            RawOp::Addr { base: Some(n), .. } if self.reg(n).is_none() => self.syms.get(n.as_str()).copied(),
            _ => None,
        }
    }
}

/// Minimum operand count per kind (checked here so the executor can index freely).
fn min_ops(k: Kind) -> usize {
    use Kind::*;
    match k {
        Mad | Mad24 | Fma | Selp | Slct | Prmt | Bfe | Shf | Sad => 4,
        Bfi | Lop3 => 5,
        Add | Sub | Mul | Mul24 | Div | Rem | Min | Max | And | Or | Xor | Shl | Shr | Copysign | Setp | Set
        | CpAsync => 3,
        Abs | Neg | Popc | Clz | Brev | Bfind | Not | Cnot | Rcp | Sqrt | Rsqrt | Ex2 | Lg2 | Sin | Cos | Tanh
        | Testp | Cvt | Cvta | Mov | Ld | St | Ldmatrix | Stmatrix | Red => 2,
        Atom | Redux => 3,
        Vote => 2,
        Match => 3,
        Shfl => 4,
        Mma => 4,
        Wgmma => 7,
        WgmmaWait => 1,
        Activemask | Bra | CpAsyncWait | Nanosleep => 1,
        _ => 0,
    }
}

/// The type immediates in operand `idx` are read as.
fn imm_ty(k: Kind, tys: &[Ty], idx: usize) -> Ty {
    use Kind::*;
    let t0 = tys.first().copied().unwrap_or(Ty::B32);
    match k {
        Cvt if idx >= 1 => tys.get(1).copied().unwrap_or(t0),
        Setp | Set if idx >= 1 => *tys.last().unwrap_or(&t0),
        Shl | Shr if idx == 2 => Ty::U32,
        Shf if idx == 3 => Ty::U32,
        Bfe if idx >= 2 => Ty::U32,
        Bfi if idx >= 3 => Ty::U32,
        Selp if idx == 3 => Ty::Pred,
        Slct if idx == 3 => tys.get(1).copied().unwrap_or(Ty::S32),
        Mad if idx == 3 => t0,
        Shfl | Vote | Match | Bar | Redux | Activemask | Prmt | Lop3 => Ty::B32,
        Cvta => Ty::U64,
        Ld | St | Atom | Red | Mma | Ldmatrix | Stmatrix | CpAsync => t0,
        Wgmma | WgmmaWait => Ty::B32,
        _ => t0,
    }
}

pub fn decode(
    ctx: &Ctx,
    guard: Option<&(String, bool)>,
    opcode: &str,
    raw: &[RawOp],
    line: u32,
) -> Result<Instr, EmuError> {
    if opcode == super::raw::MARK_OPCODE {
        let id = match raw.first() {
            Some(RawOp::Num { text, .. }) => text.parse::<u32>().map_err(|_| perr("marker id must be a u32"))?,
            _ => return Err(perr("marker without an id")),
        };
        let mut ins = Instr {
            kind: Kind::Mark,
            guard: None,
            tys: vec![],
            m: Mods::default(),
            ops: vec![Operand::Imm(id as u64)],
            line,
            reconv: NO_PC,
            timing: Default::default(),
        };
        ins.timing = crate::timing::class::classify(&ins);
        return Ok(ins);
    }
    let parts: Vec<&str> = opcode.split('.').collect();
    if let Some(r) = decode_tensor(ctx, guard, opcode, &parts, raw, line) {
        return r;
    }
    if let Some(r) = decode_hopper(ctx, guard, opcode, &parts, raw, line) {
        return r;
    }
    let base = parts[0];
    let mut m = Mods { vec: 1, ..Mods::default() };
    let mut tys: Vec<Ty> = Vec::new();
    let mut rest: &[&str] = &parts[1..];
    let p1 = parts.get(1).copied().unwrap_or("");
    let kind = match base {
        "add" => Kind::Add,
        "sub" => Kind::Sub,
        "mul" => Kind::Mul,
        "mad" => Kind::Mad,
        "mul24" => Kind::Mul24,
        "mad24" => Kind::Mad24,
        "fma" => Kind::Fma,
        "div" => Kind::Div,
        "rem" => Kind::Rem,
        "abs" => Kind::Abs,
        "neg" => Kind::Neg,
        "min" => Kind::Min,
        "max" => Kind::Max,
        "sad" => Kind::Sad,
        "popc" => Kind::Popc,
        "clz" => Kind::Clz,
        "brev" => Kind::Brev,
        "bfind" => Kind::Bfind,
        "bfe" => Kind::Bfe,
        "bfi" => Kind::Bfi,
        "and" => Kind::And,
        "or" => Kind::Or,
        "xor" => Kind::Xor,
        "not" => Kind::Not,
        "cnot" => Kind::Cnot,
        "shl" => Kind::Shl,
        "shr" => Kind::Shr,
        "shf" => Kind::Shf,
        "lop3" => Kind::Lop3,
        "prmt" => Kind::Prmt,
        "rcp" => Kind::Rcp,
        "sqrt" => Kind::Sqrt,
        "rsqrt" => Kind::Rsqrt,
        "ex2" => Kind::Ex2,
        "lg2" => Kind::Lg2,
        "sin" => Kind::Sin,
        "cos" => Kind::Cos,
        "tanh" => Kind::Tanh,
        "copysign" => Kind::Copysign,
        "testp" => Kind::Testp,
        "setp" => Kind::Setp,
        "set" => Kind::Set,
        "selp" => Kind::Selp,
        "slct" => Kind::Slct,
        "cvt" => Kind::Cvt,
        "cvta" => Kind::Cvta,
        "mov" => Kind::Mov,
        "ld" | "ldu" => Kind::Ld,
        "st" => Kind::St,
        "atom" => Kind::Atom,
        "red" => Kind::Red,
        "cp" if p1 == "async" => {
            rest = &parts[2..];
            let k = match parts.get(2).copied() {
                Some("commit_group") => Kind::CpAsyncCommit,
                Some("wait_group") => Kind::CpAsyncWait,
                Some("wait_all") => Kind::CpAsyncWaitAll,
                Some("ca") | Some("cg") => Kind::CpAsync,
                _ => return Err(unsupported(opcode, "")),
            };
            if k != Kind::CpAsync {
                rest = &parts[3..];
            }
            k
        }
        "ldmatrix" => Kind::Ldmatrix,
        "stmatrix" => Kind::Stmatrix,
        "mma" => Kind::Mma,
        "wgmma" => {
            rest = parts.get(2..).unwrap_or(&[]);
            match p1 {
                "mma_async" => Kind::Wgmma,
                "fence" => Kind::WgmmaFence,
                "commit_group" => Kind::WgmmaCommit,
                "wait_group" => Kind::WgmmaWait,
                _ => return Err(unsupported(opcode, "")),
            }
        }
        "shfl" => Kind::Shfl,
        "vote" => Kind::Vote,
        "match" => Kind::Match,
        "activemask" => Kind::Activemask,
        "redux" => Kind::Redux,
        "bar" | "barrier" => {
            rest = parts.get(2..).unwrap_or(&[]);
            m.aligned = base == "bar" || parts.contains(&"aligned");
            match p1 {
                "sync" => Kind::Bar,
                "arrive" => {
                    m.arrive = true;
                    Kind::Bar
                }
                "red" => {
                    m.red = true;
                    Kind::Bar
                }
                "warp" if parts.get(2) == Some(&"sync") => {
                    rest = &parts[3..];
                    Kind::BarWarp
                }
                "" if base == "bar" => return Err(unsupported(opcode, "")),
                "" => Kind::Bar,
                "aligned" => Kind::Bar,
                _ => return Err(unsupported(opcode, "")),
            }
        }
        "fence" | "membar" | "griddepcontrol" => {
            rest = &[];
            Kind::Fence
        }
        "nanosleep" => Kind::Nanosleep,
        "prefetch" | "prefetchu" | "applypriority" | "discard" => {
            rest = &[];
            Kind::Prefetch
        }
        "createpolicy" => {
            // Cache policies only steer caches: the policy value is opaque, any value will do.
            let dst = raw.first().ok_or_else(|| perr("createpolicy needs a destination"))?;
            let ops = vec![ctx.operand(dst, Ty::B64)?, Operand::Imm(0)];
            return finish(Kind::Mov, guard, ctx, vec![Ty::B64], m, ops, line);
        }
        "bra" => Kind::Bra,
        "call" => Kind::Call,
        "ret" => Kind::Ret,
        "exit" => Kind::Exit,
        "trap" => Kind::Trap,
        _ => return Err(unsupported(opcode, "")),
    };
    let mut layouts = 0;
    for &p in rest {
        if let Some(t) = Ty::parse(p) {
            tys.push(t);
            continue;
        }
        let is_cmp_kind = matches!(kind, Kind::Setp | Kind::Set | Kind::Slct);
        let is_atom_kind = matches!(kind, Kind::Atom | Kind::Red | Kind::Redux);
        match p {
            "rn" => m.rnd = Rnd::Rn,
            "rz" => m.rnd = Rnd::Rz,
            "rm" => m.rnd = Rnd::Rm,
            "rp" => m.rnd = Rnd::Rp,
            "rna" => m.rnd = Rnd::Rna,
            "rni" => m.rnd = Rnd::Rni,
            "rzi" => m.rnd = Rnd::Rzi,
            "rmi" => m.rnd = Rnd::Rmi,
            "rpi" => m.rnd = Rnd::Rpi,
            "ftz" => m.ftz = true,
            "sat" => m.sat = true,
            "satfinite" => m.satfinite = true,
            "approx" => m.approx = true,
            "full" => m.full = true,
            "NaN" => m.nan = true,
            "relu" => m.relu = true,
            "uni" if kind != Kind::Vote => m.uni = true,
            "cc" => m.cc = true,
            "wide" => m.mul = MulMode::Wide,
            "lo" | "hi" if matches!(kind, Kind::Mul | Kind::Mad | Kind::Mul24 | Kind::Mad24) => {
                m.mul = if p == "hi" { MulMode::Hi } else { MulMode::Lo }
            }
            _ if is_cmp_kind && cmp_of(p).is_some() => m.cmp = cmp_of(p),
            "and" | "or" | "xor" if !is_atom_kind => {
                m.boolop = Some(match p {
                    "and" => BoolOp::And,
                    "or" => BoolOp::Or,
                    _ => BoolOp::Xor,
                })
            }
            "popc" if kind == Kind::Bar => m.boolop = None,
            "global" => m.space = Some(Space::Global),
            // A cluster of one CTA: its shared::cluster window is the CTA's own shared memory.
            "shared" | "shared::cta" | "shared::cluster" => m.space = Some(Space::Shared),
            "local" => m.space = Some(Space::Local),
            "const" => m.space = Some(Space::Const),
            "param" | "param::entry" | "param::func" => m.space = Some(Space::Param),
            "to" if kind == Kind::Cvta => m.to = true,
            "v2" => m.vec = 2,
            "v4" => m.vec = 4,
            "v8" => m.vec = 8,
            "add" | "min" | "max" | "exch" | "cas" | "inc" | "dec" | "and" | "or" | "xor" if is_atom_kind => {
                m.atom = Some(match p {
                    "add" => AtomOp::Add,
                    "min" => AtomOp::Min,
                    "max" => AtomOp::Max,
                    "exch" => AtomOp::Exch,
                    "cas" => AtomOp::Cas,
                    "inc" => AtomOp::Inc,
                    "dec" => AtomOp::Dec,
                    "and" => AtomOp::And,
                    "or" => AtomOp::Or,
                    _ => AtomOp::Xor,
                })
            }
            "up" | "down" | "bfly" | "idx" if kind == Kind::Shfl => {
                m.shfl = Some(match p {
                    "up" => ShflMode::Up,
                    "down" => ShflMode::Down,
                    "bfly" => ShflMode::Bfly,
                    _ => ShflMode::Idx,
                })
            }
            "all" | "any" | "uni" | "ballot" if kind == Kind::Vote => {
                m.vote = Some(match p {
                    "all" => VoteMode::All,
                    "any" => VoteMode::Any,
                    "uni" => VoteMode::Uni,
                    _ => VoteMode::Ballot,
                })
            }
            "all" | "any" if kind == Kind::Match => m.all = p == "all",
            "trans" => m.trans = true,
            "x1" => m.count = 1,
            "x2" => m.count = 2,
            "x4" => m.count = 4,
            "m8n8" => m.shape = (8, 8, 0),
            "row" | "col" if kind == Kind::Mma => {
                if layouts == 0 {
                    m.arow = p == "row";
                } else {
                    m.bcol = p == "col";
                }
                layouts += 1;
            }
            "l" | "r" if kind == Kind::Shf => m.left = p == "l",
            "wrap" | "clamp" if kind == Kind::Shf => m.clamp = p == "clamp",
            "sync" | "aligned" | "nc" | "ca" | "cg" | "cs" | "lu" | "cv" | "wb" | "wt" | "volatile" | "relaxed"
            | "acquire" | "release" | "acq_rel" | "weak" | "mmio" | "cta" | "gpu" | "sys" | "noftz" | "unified"
            | "async" => {}
            "L2::cache_hint" => m.cache_hint = true,
            "f4e" if kind == Kind::Prmt => m.count = 1,
            "b4e" if kind == Kind::Prmt => m.count = 2,
            "rc8" if kind == Kind::Prmt => m.count = 3,
            "ecl" if kind == Kind::Prmt => m.count = 4,
            "ecr" if kind == Kind::Prmt => m.count = 5,
            "rc16" if kind == Kind::Prmt => m.count = 6,
            "shiftamt" if kind == Kind::Bfind => m.count = 1,
            "finite" if kind == Kind::Testp => m.count = 1,
            "infinite" if kind == Kind::Testp => m.count = 2,
            "number" if kind == Kind::Testp => m.count = 3,
            "notanumber" if kind == Kind::Testp => m.count = 4,
            "normal" if kind == Kind::Testp => m.count = 5,
            "subnormal" if kind == Kind::Testp => m.count = 6,
            _ if p.starts_with("L1::") || p.starts_with("L2::") || p.starts_with("level::") => {}
            _ if matches!(kind, Kind::Mma | Kind::Wgmma) && p.starts_with('m') && parse_shape(p).is_some() => {
                m.shape = parse_shape(p).unwrap_or((0, 0, 0))
            }
            _ => return Err(unsupported(opcode, &format!("modifier `.{p}`"))),
        }
    }
    if matches!(kind, Kind::Shfl | Kind::Vote | Kind::Match) && !rest.contains(&"sync") {
        m.nosync = true;
    }
    if kind == Kind::Ldmatrix && m.count == 0 {
        return Err(unsupported(opcode, "ldmatrix needs .x1/.x2/.x4"));
    }
    if kind == Kind::Stmatrix && m.count == 0 {
        return Err(unsupported(opcode, "stmatrix needs .x1/.x2/.x4"));
    }
    if kind == Kind::Mma && !(m.arow && m.bcol) && m.shape != (0, 0, 0) {
        // Only the .row.col forms exist for the shapes we support (m16n8kX); reject others.
        return Err(unsupported(opcode, "only .row.col mma layouts are supported"));
    }

    // Operands.
    let mut ops = Vec::with_capacity(raw.len());
    if kind == Kind::Call {
        // call{.uni} (rets), func, (args){, proto};
        let mut rets = Operand::ParamList(Vec::new());
        let mut args = Operand::ParamList(Vec::new());
        let mut target = None;
        for r in raw {
            match r {
                RawOp::List(_) if target.is_none() => rets = ctx.operand(r, Ty::B32)?,
                RawOp::List(_) => args = ctx.operand(r, Ty::B32)?,
                RawOp::Name(n) if target.is_none() => match ctx.syms.get(n.as_str()) {
                    Some(Sym::Func(i)) => target = Some(Operand::Target(*i)),
                    _ => return Err(unsupported(opcode, "indirect calls")),
                },
                _ => {}
            }
        }
        let target = target.ok_or_else(|| perr("call without a target"))?;
        ops = vec![rets, target, args];
    } else {
        for (i, r) in raw.iter().enumerate() {
            ops.push(ctx.operand(r, imm_ty(kind, &tys, i))?);
        }
    }
    // `cp.async ..., cp-size, ignore-src` takes a predicate where the other form takes a size.
    if kind == Kind::CpAsync {
        if let Some(Operand::Reg(r)) = ops.get(3) {
            m.ignore_src = ctx.pred_regs.contains(r);
        }
    }
    // State spaces of parameters: entry params are the uniform kernel parameter buffer;
    // function and call parameters live in per-thread local memory.
    if matches!(kind, Kind::Ld | Kind::St) && m.space == Some(Space::Param) {
        let addr_raw = if kind == Kind::Ld { raw.get(1) } else { raw.first() };
        let reg_based = matches!(addr_raw, Some(RawOp::Addr { base: Some(n), .. }) if ctx.reg(n).is_some());
        match addr_raw.and_then(|a| ctx.addr_sym(a)) {
            Some(Sym::KParam(_)) if ctx.is_entry && kind == Kind::Ld => {}
            // A kernel parameter's address taken with `mov`/`cvta.param` (PARAM_WINDOW).
            None if reg_based && ctx.is_entry && kind == Kind::Ld => {}
            Some(Sym::Local(_)) => m.space = Some(Space::Local),
            _ => return Err(unsupported(opcode, "parameter access other than a named .param")),
        }
    } else if let Some(a) = raw.iter().find_map(|r| ctx.addr_sym(r)) {
        if matches!(a, Sym::KParam(_)) {
            return Err(unsupported(opcode, "kernel parameters are read with ld.param"));
        }
    }
    finish(kind, guard, ctx, tys, m, ops, line)
}

fn parse_shape(p: &str) -> Option<(u16, u16, u16)> {
    let p = p.strip_prefix('m')?;
    let (mm, rest) = p.split_once('n')?;
    let (nn, kk) = rest.split_once('k')?;
    Some((mm.parse().ok()?, nn.parse().ok()?, kk.parse().ok()?))
}

fn finish(
    kind: Kind,
    guard: Option<&(String, bool)>,
    ctx: &Ctx,
    tys: Vec<Ty>,
    m: Mods,
    ops: Vec<Operand>,
    line: u32,
) -> Result<Instr, EmuError> {
    if ops.len() < min_ops(kind) {
        return Err(perr(format!("{kind:?} needs at least {} operands, got {}", min_ops(kind), ops.len())));
    }
    let guard = match guard {
        None => None,
        Some((g, neg)) => Some((ctx.reg(g).ok_or_else(|| perr(format!("unknown predicate `{g}`")))?, *neg)),
    };
    let mut ins = Instr { kind, guard, tys, m, ops, line, reconv: NO_PC, timing: Default::default() };
    super::super::exec::validate(&ins).map_err(|e| match e.kind {
        ErrorKind::Unsupported => e,
        _ => e,
    })?;
    ins.timing = crate::timing::class::classify(&ins);
    Ok(ins)
}

/// Hopper's asynchronous machinery: `mbarrier.*`, bulk copies, `setmaxnreg`, `elect`,
/// cluster barriers and `mapa`. `None`: not one of these opcodes. Each family accepts
/// exactly the modifiers the PTX ISA lists for it; anything else is unsupported.
fn decode_hopper(
    ctx: &Ctx,
    guard: Option<&(String, bool)>,
    opcode: &str,
    parts: &[&str],
    raw: &[RawOp],
    line: u32,
) -> Option<Result<Instr, EmuError>> {
    let mut m = Mods { vec: 1, ..Mods::default() };
    let (kind, mods): (Kind, &[&str]) = match (parts[0], parts.get(1).copied().unwrap_or("")) {
        ("mbarrier", op) => {
            let (o, tx) = match op {
                "init" => (MbarOp::Init, false),
                "arrive" => (MbarOp::Arrive, false),
                "arrive_drop" => (MbarOp::ArriveDrop, false),
                "expect_tx" => (MbarOp::ExpectTx, false),
                "complete_tx" => (MbarOp::CompleteTx, false),
                "test_wait" => (MbarOp::TestWait, false),
                "try_wait" => (MbarOp::TryWait, false),
                "inval" => (MbarOp::Inval, false),
                "pending_count" => (MbarOp::PendingCount, false),
                _ => return Some(Err(unsupported(opcode, ""))),
            };
            m.mbar = Some(o);
            m.expect_tx = tx;
            (Kind::Mbar, &parts[2..])
        }
        ("cp", "async") if parts.get(2) == Some(&"bulk") => match parts.get(3).copied() {
            Some("commit_group") => (Kind::BulkCommit, &parts[4..]),
            Some("wait_group") => (Kind::BulkWait, &parts[4..]),
            Some("shared::cluster") | Some("shared::cta") if parts.get(4) == Some(&"global") => {
                (Kind::BulkLoad, &parts[5..])
            }
            Some("global") if matches!(parts.get(4).copied(), Some("shared::cta")) => (Kind::BulkStore, &parts[5..]),
            _ => return Some(Err(unsupported(opcode, ""))),
        },
        ("setmaxnreg", d) => {
            m.inc = d == "inc";
            if d != "inc" && d != "dec" {
                return Some(Err(unsupported(opcode, "needs .inc or .dec")));
            }
            (Kind::SetMaxNReg, &parts[2..])
        }
        ("elect", _) => (Kind::Elect, &parts[1..]),
        ("barrier", "cluster") => match parts.get(2).copied() {
            Some("arrive") => {
                m.arrive = true;
                (Kind::ClusterBar, &parts[3..])
            }
            Some("wait") => (Kind::ClusterBar, &parts[3..]),
            _ => return Some(Err(unsupported(opcode, ""))),
        },
        ("mapa", _) => (Kind::Mapa, &parts[1..]),
        _ => return None,
    };
    let mut tys = Vec::new();
    if matches!(kind, Kind::BulkLoad | Kind::BulkStore) {
        // Their shared operands (destination or source, and the mbarrier) are shared addresses.
        m.space = Some(Space::Shared);
    }
    for &p in mods {
        match p {
            "b64" | "u32" | "u64" | "b32" if kind != Kind::Elect => tys.push(Ty::parse(p).unwrap_or(Ty::B64)),
            "shared" | "shared::cta" | "shared::cluster" => m.space = Some(Space::Shared),
            "global" if kind == Kind::Mapa => m.space = Some(Space::Global),
            "expect_tx" if kind == Kind::Mbar => m.expect_tx = true,
            "parity" if kind == Kind::Mbar => m.parity = true,
            "release" | "acquire" | "relaxed" | "cta" | "cluster" if kind != Kind::SetMaxNReg => {}
            "sync" | "aligned" if matches!(kind, Kind::SetMaxNReg | Kind::Elect | Kind::ClusterBar) => {}
            "read" if kind == Kind::BulkWait => m.read = true,
            "bulk_group" if kind == Kind::BulkStore => {}
            "mbarrier::complete_tx::bytes" if kind == Kind::BulkLoad => {}
            "L2::cache_hint" if matches!(kind, Kind::BulkLoad | Kind::BulkStore) => m.cache_hint = true,
            _ => return Some(Err(unsupported(opcode, &format!("modifier `.{p}`")))),
        }
    }
    if kind == Kind::BulkLoad && parts.iter().any(|p| p.starts_with("multicast")) {
        return Some(Err(unsupported(opcode, "multicast needs a cluster of more than one CTA")));
    }
    if kind == Kind::BulkLoad && !parts.contains(&"mbarrier::complete_tx::bytes") {
        return Some(Err(unsupported(opcode, "a bulk load completes on an mbarrier (.mbarrier::complete_tx::bytes)")));
    }
    if kind == Kind::BulkStore && !parts.contains(&"bulk_group") {
        return Some(Err(unsupported(opcode, "a bulk store completes through a bulk group (.bulk_group)")));
    }
    let mut ops = Vec::with_capacity(raw.len());
    for r in raw {
        let o = match ctx.operand(r, Ty::B64) {
            Ok(o) => o,
            Err(e) => return Some(Err(e)),
        };
        ops.push(o);
    }
    // Shapes of the operand lists (so the executor can index freely).
    let n = ops.len();
    let ok = match kind {
        Kind::Mbar => match m.mbar {
            Some(MbarOp::Init) => n == 2,
            Some(MbarOp::Inval) => n == 1,
            Some(MbarOp::Arrive) | Some(MbarOp::ArriveDrop) => (2..=3).contains(&n),
            Some(MbarOp::ExpectTx) | Some(MbarOp::CompleteTx) => n == 2,
            Some(MbarOp::TestWait) => n == 3,
            Some(MbarOp::TryWait) => (3..=4).contains(&n),
            Some(MbarOp::PendingCount) => n == 2,
            None => false,
        },
        Kind::BulkLoad => n == 4 + m.cache_hint as usize,
        Kind::BulkStore => n == 3 + m.cache_hint as usize,
        Kind::BulkCommit => n == 0,
        Kind::BulkWait | Kind::SetMaxNReg => n == 1,
        Kind::Elect => n == 2,
        Kind::ClusterBar => n == 0,
        Kind::Mapa => n == 3,
        _ => false,
    };
    if !ok {
        return Some(Err(perr(format!("`{opcode}` has the wrong number of operands ({n})"))));
    }
    if m.mbar.is_some_and(|o| matches!(o, MbarOp::Arrive | MbarOp::ArriveDrop)) && m.expect_tx && n != 3 {
        return Some(Err(perr(format!("`{opcode}` needs a transaction count"))));
    }
    Some(finish(kind, guard, ctx, tys, m, ops, line))
}

/// Operand of a tensor map's address (`[map]`, or the map of `[map, {coords}]`): a register
/// holding a generic address, a kernel parameter (its address in the parameter window), or a
/// `.global`/`.const` variable.
fn map_operand(ctx: &Ctx, base: &Option<String>, off: i64) -> Result<Operand, EmuError> {
    Ok(match base {
        None => Operand::Addr(AddrBase::Abs(off as u64), 0),
        Some(n) => match ctx.reg(n) {
            Some(r) => Operand::Addr(AddrBase::Reg(r), off),
            None => match ctx.syms.get(n.as_str()) {
                Some(Sym::KParam(a)) => Operand::Addr(AddrBase::Abs(PARAM_WINDOW + *a as u64), off),
                Some(Sym::Global(a)) => Operand::Addr(AddrBase::Abs(*a), off),
                Some(_) => {
                    return Err(perr(format!(
                    "tensor map `{n}`: a tensor map lives in .param, .const or .global memory (PTX ISA \"Tensor-map\")"
                )))
                }
                None => return Err(perr(format!("unknown name `{n}` in address"))),
            },
        },
    })
}

/// Parses `.Nd` (1..=5).
fn dim_of(p: Option<&&str>) -> Option<u8> {
    match p.copied() {
        Some("1d") => Some(1),
        Some("2d") => Some(2),
        Some("3d") => Some(3),
        Some("4d") => Some(4),
        Some("5d") => Some(5),
        _ => None,
    }
}

/// Load modes and qualifiers of tensor copies the emulator refuses by name.
fn refused_tensor_mod(p: &str) -> Option<&'static str> {
    Some(match p {
        "im2col" | "im2col::w" | "im2col::w::128" | "im2col_no_offs" => "im2col load modes are not implemented",
        "tile::gather4" | "tile::scatter4" => "the gather4/scatter4 load modes (sm_100a) are not implemented",
        _ if p.starts_with("multicast") => "multicast needs a cluster of more than one CTA",
        _ if p.starts_with("cta_group") => "CTA pairs (.cta_group, sm_100a) are not implemented",
        _ => return None,
    })
}

/// Tensor-map instructions (see `exec::tma`): `cp.async.bulk.tensor`,
/// `cp.async.bulk.prefetch.tensor`, `prefetch.tensormap`, `tensormap.replace`,
/// `tensormap.cp_fenceproxy`, and the operand checks of `fence.proxy.tensormap::generic`.
/// `None`: not one of these.
fn decode_tensor(
    ctx: &Ctx,
    guard: Option<&(String, bool)>,
    opcode: &str,
    parts: &[&str],
    raw: &[RawOp],
    line: u32,
) -> Option<Result<Instr, EmuError>> {
    let r = (|| -> Result<Option<Instr>, EmuError> {
        let mut m = Mods { vec: 1, ..Mods::default() };
        let p = |i: usize| parts.get(i).copied().unwrap_or("");
        let wrong_ops = || perr(format!("`{opcode}` has the wrong operands"));
        let imm = |o: &RawOp, ty: Ty| -> Result<Option<u64>, EmuError> {
            Ok(match ctx.operand(o, ty)? {
                Operand::Imm(v) => Some(v),
                _ => None,
            })
        };
        let tensor_ref = |o: &RawOp, n: u8| -> Result<(Operand, Operand), EmuError> {
            let RawOp::TensorAddr { base, off, coords } = o else {
                return Err(perr(format!("`{opcode}` needs a `[tensorMap, {{coordinates}}]` operand")));
            };
            if coords.len() != n as usize {
                return Err(perr(format!("`{opcode}` takes {n} coordinates, got {}", coords.len())));
            }
            let cs = coords.iter().map(|c| ctx.operand(c, Ty::S32)).collect::<Result<Vec<_>, _>>()?;
            Ok((map_operand(ctx, base, *off)?, Operand::Vec(cs)))
        };
        let (kind, ops) = match (p(0), p(1)) {
            ("cp", "reduce") if parts.contains(&"tensor") => {
                return Err(unsupported(opcode, "tensor reductions (cp.reduce.async.bulk.tensor) are not implemented"))
            }
            ("cp", "async") if p(2) == "bulk" && p(3) == "prefetch" && p(4) == "tensor" => {
                let n = dim_of(parts.get(5)).ok_or_else(|| unsupported(opcode, "needs .1d to .5d"))?;
                for &q in &parts[6..] {
                    if let Some(why) = refused_tensor_mod(q) {
                        return Err(unsupported(opcode, why));
                    }
                    match q {
                        "L2" | "global" | "tile" => {}
                        "L2::cache_hint" => m.cache_hint = true,
                        _ => return Err(unsupported(opcode, &format!("modifier `.{q}`"))),
                    }
                }
                if raw.len() != 1 + m.cache_hint as usize {
                    return Err(wrong_ops());
                }
                let (map, coords) = tensor_ref(&raw[0], n)?;
                let mut ops = vec![map, coords];
                if m.cache_hint {
                    ops.push(ctx.operand(&raw[1], Ty::B64)?);
                }
                m.count = n;
                (Kind::TensorPrefetch, ops)
            }
            ("cp", "async") if p(2) == "bulk" && p(3) == "tensor" => {
                let n = dim_of(parts.get(4)).ok_or_else(|| unsupported(opcode, "needs .1d to .5d"))?;
                let rest = &parts[5..];
                let first_space = rest.iter().find(|q| q.starts_with("shared") || **q == "global").copied();
                let load = first_space.is_some_and(|q| q.starts_with("shared"));
                let (mut saw_global, mut saw_shared, mut saw_completion) = (false, false, false);
                for &q in rest {
                    if let Some(why) = refused_tensor_mod(q) {
                        return Err(unsupported(opcode, why));
                    }
                    match q {
                        "global" => saw_global = true,
                        "shared::cluster" | "shared::cta" if load => saw_shared = true,
                        "shared::cta" => saw_shared = true,
                        "tile" => {}
                        "mbarrier::complete_tx::bytes" if load => saw_completion = true,
                        "bulk_group" if !load => saw_completion = true,
                        "L2::cache_hint" => m.cache_hint = true,
                        _ => return Err(unsupported(opcode, &format!("modifier `.{q}`"))),
                    }
                }
                if !(saw_global && saw_shared && saw_completion) {
                    return Err(unsupported(
                        opcode,
                        "tensor copies are .shared::{cluster,cta}.global...mbarrier::complete_tx::bytes or .global.shared::cta...bulk_group",
                    ));
                }
                m.space = Some(Space::Shared);
                m.count = n;
                let extra = m.cache_hint as usize;
                let ops = if load {
                    if raw.len() != 3 + extra {
                        return Err(wrong_ops());
                    }
                    let (map, coords) = tensor_ref(&raw[1], n)?;
                    let mut ops = vec![ctx.operand(&raw[0], Ty::B64)?, map, coords, ctx.operand(&raw[2], Ty::B64)?];
                    if m.cache_hint {
                        ops.push(ctx.operand(&raw[3], Ty::B64)?);
                    }
                    ops
                } else {
                    if raw.len() != 2 + extra {
                        return Err(wrong_ops());
                    }
                    let (map, coords) = tensor_ref(&raw[0], n)?;
                    let mut ops = vec![map, coords, ctx.operand(&raw[1], Ty::B64)?];
                    if m.cache_hint {
                        ops.push(ctx.operand(&raw[2], Ty::B64)?);
                    }
                    ops
                };
                if !matches!(ops[0], Operand::Addr(..)) || !matches!(ops[if load { 3 } else { 2 }], Operand::Addr(..)) {
                    return Err(wrong_ops());
                }
                (if load { Kind::TensorLoad } else { Kind::TensorStore }, ops)
            }
            ("prefetch", _) if parts.contains(&"tensormap") => {
                m.space = Some(Space::Generic);
                for &q in &parts[1..] {
                    match q {
                        "tensormap" => {}
                        "param" | "param::entry" => m.space = Some(Space::Param),
                        "const" => m.space = Some(Space::Const),
                        _ => return Err(unsupported(opcode, &format!("modifier `.{q}`"))),
                    }
                }
                let [RawOp::Addr { base, off }] = raw else { return Err(wrong_ops()) };
                let op = match (m.space, base) {
                    // `[param]` in .param space: the parameter's offset (as `ld.param` reads it).
                    (Some(Space::Param), Some(n)) if ctx.reg(n).is_none() => ctx.operand(&raw[0], Ty::B64)?,
                    _ => map_operand(ctx, base, *off)?,
                };
                (Kind::TensorPrefetch, vec![op])
            }
            ("tensormap", "replace") => {
                if p(2) != "tile" {
                    return Err(unsupported(opcode, "only the .tile mode exists"));
                }
                let field = match p(3) {
                    "global_address" => TmapField::GlobalAddress,
                    "rank" => TmapField::Rank,
                    "box_dim" => TmapField::BoxDim,
                    "global_dim" => TmapField::GlobalDim,
                    "global_stride" => TmapField::GlobalStride,
                    "element_stride" => TmapField::ElementStride,
                    "elemtype" => TmapField::ElemType,
                    "interleave_layout" => TmapField::Interleave,
                    "swizzle_mode" => TmapField::SwizzleMode,
                    "swizzle_atomicity" => TmapField::SwizzleAtomicity,
                    "fill_mode" => TmapField::FillMode,
                    f => return Err(unsupported(opcode, &format!("field `.{f}`"))),
                };
                m.tmap = Some(field);
                m.space = Some(Space::Generic);
                let (mut b1024, mut ty) = (false, None);
                for &q in &parts[4..] {
                    match q {
                        "global" => m.space = Some(Space::Global),
                        "shared::cta" | "shared" => m.space = Some(Space::Shared),
                        "b1024" => b1024 = true,
                        "b32" => ty = Some(Ty::B32),
                        "b64" => ty = Some(Ty::B64),
                        _ => return Err(unsupported(opcode, &format!("modifier `.{q}`"))),
                    }
                }
                let want =
                    if matches!(field, TmapField::GlobalAddress | TmapField::GlobalStride) { Ty::B64 } else { Ty::B32 };
                if !b1024 || ty != Some(want) {
                    return Err(perr(format!(
                        "`{opcode}` needs .b1024 and .{} (new_val is .b64 for global_address and global_stride, .b32 otherwise)",
                        if want == Ty::B64 { "b64" } else { "b32" }
                    )));
                }
                let ordinal = matches!(
                    field,
                    TmapField::BoxDim | TmapField::GlobalDim | TmapField::GlobalStride | TmapField::ElementStride
                );
                if raw.len() != 2 + ordinal as usize {
                    return Err(wrong_ops());
                }
                let addr = ctx.operand(&raw[0], Ty::B64)?;
                if !matches!(addr, Operand::Addr(..)) {
                    return Err(wrong_ops());
                }
                let ord = if ordinal {
                    match imm(&raw[1], Ty::U32)? {
                        Some(k) if k <= 4 => k,
                        _ => return Err(perr(format!("`{opcode}`: the ordinal must be an immediate in 0..=4"))),
                    }
                } else {
                    0
                };
                let value = ctx.operand(&raw[raw.len() - 1], want)?;
                let limit = match field {
                    TmapField::ElemType => Some(15),
                    TmapField::Interleave => Some(2),
                    TmapField::SwizzleMode => Some(4),
                    TmapField::SwizzleAtomicity => Some(3),
                    TmapField::FillMode => Some(1),
                    _ => None,
                };
                if let Some(limit) = limit {
                    match value {
                        Operand::Imm(v) if v <= limit => {}
                        _ => {
                            return Err(perr(format!(
                                "`{opcode}`: new_val must be an immediate in 0..={limit} (PTX ISA \"Tensormap new_val validity\")"
                            )))
                        }
                    }
                }
                (Kind::TmapReplace, vec![addr, Operand::Imm(ord), value])
            }
            ("tensormap", "cp_fenceproxy") => {
                let need = ["global", "shared::cta", "tensormap::generic", "release", "sync", "aligned"];
                for &q in &parts[2..] {
                    if !need.contains(&q) && !matches!(q, "cta" | "cluster" | "gpu" | "sys") {
                        return Err(unsupported(opcode, &format!("modifier `.{q}`")));
                    }
                }
                if need.iter().any(|q| !parts.contains(q)) {
                    return Err(unsupported(
                        opcode,
                        "the form is tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.<scope>.sync.aligned",
                    ));
                }
                if raw.len() != 3 {
                    return Err(wrong_ops());
                }
                let ops = vec![ctx.operand(&raw[0], Ty::B64)?, ctx.operand(&raw[1], Ty::B64)?];
                if !ops.iter().all(|o| matches!(o, Operand::Addr(..))) || imm(&raw[2], Ty::U32)? != Some(128) {
                    return Err(perr(format!("`{opcode}` copies a 128-byte tensor map: [dst], [src], 128")));
                }
                m.aligned = true;
                (Kind::TmapCopy, ops)
            }
            ("fence", "proxy") if p(2) == "tensormap::generic" => {
                // Ordering only (the executor is sequentially consistent); check the operands.
                let acquire = parts.contains(&"acquire");
                let ok = if acquire {
                    raw.len() == 2 && matches!(raw[0], RawOp::Addr { .. }) && imm(&raw[1], Ty::U32)? == Some(128)
                } else {
                    raw.is_empty() && parts.contains(&"release")
                };
                if !ok {
                    return Err(perr(format!(
                        "`{opcode}`: fence.proxy.tensormap::generic is .release (no operands) or .acquire [addr], 128"
                    )));
                }
                return Ok(None);
            }
            _ => return Ok(None),
        };
        Ok(Some(finish(kind, guard, ctx, vec![], m, ops, line)?))
    })();
    match r {
        Ok(None) => None,
        Ok(Some(i)) => Some(Ok(i)),
        Err(e) => Some(Err(e)),
    }
}
