//! Structured control flow as branches. Conditions and bounds are scalars, the same
//! in every thread, so every branch is uniform (`bra.uni`). Loop-carried values live
//! in dedicated registers that `yield` copies into (as a parallel copy).

use super::emitter::{Emitter, Res};
use super::regs::Reg;
use trident_ir::{Block, Op, OpKind, Value};

impl Emitter<'_> {
    /// Operand registers of a block's terminator, flattened per operand.
    fn terminator_regs(&mut self, b: Block) -> Res<Vec<Vec<Reg>>> {
        let Some(t) = self.f.terminator(b) else { return Ok(vec![]) };
        self.f.ops[t].operands.clone().iter().map(|&v| self.regs(v)).collect()
    }

    /// Copies `srcs` into `dsts` as if all at once (a source may be another destination).
    /// A value already in its destination (an accumulator a wgmma updated in place) is left
    /// alone: the MMA may still be writing it.
    pub fn parallel_copy(&mut self, dsts: &[Vec<Reg>], srcs: &[Vec<Reg>]) {
        let pairs: Vec<(Reg, Reg)> =
            dsts.iter().flatten().copied().zip(srcs.iter().flatten().copied()).filter(|(d, s)| d != s).collect();
        let conflict =
            pairs.iter().enumerate().any(|(i, (_, s))| pairs.iter().enumerate().any(|(j, (d, _))| d == s && i != j));
        if conflict {
            let tmps: Vec<Reg> = pairs
                .iter()
                .map(|&(_, s)| {
                    let t = self.new_reg(s.class);
                    self.mov(t, s);
                    t
                })
                .collect();
            for (&(d, _), t) in pairs.iter().zip(tmps) {
                self.mov(d, t);
            }
        } else {
            for &(d, s) in &pairs {
                self.mov(d, s);
            }
        }
    }

    pub(crate) fn emit_for(&mut self, op: Op) -> Res<()> {
        let f = self.f;
        let d = &f.ops[op];
        let body = d.regions[0];
        let args = f.blocks[body].args.clone();
        let lb = self.reg1(d.operands[0])?;
        let ub = self.reg1(d.operands[1])?;
        let step = self.reg1(d.operands[2])?;
        let ity = f.ty(d.operands[0]).elem().num().ok_or_else(|| self.err("loop bounds must be integers"))?;
        let it = super::regs::int_ty(ity);
        let iv = self.new_reg(lb.class);
        self.mov(iv, lb);
        let mut iters = vec![];
        for (i, &a) in args[1..].iter().enumerate() {
            let regs = self.fresh_for(f.ty(a))?;
            let init = self.regs(d.operands[3 + i])?;
            if init.len() != regs.len() {
                return Err(self.err(format!("internal: loop value {i} changes register count")));
            }
            for (&r, &s) in regs.iter().zip(&init) {
                self.mov(r, s);
            }
            iters.push(regs);
        }
        self.set(args[0], vec![iv]);
        for (a, r) in args[1..].iter().zip(&iters) {
            self.set(*a, r.clone());
        }
        let head = self.new_label("for_head");
        let end = self.new_label("for_end");
        self.label(&head);
        let p = self.new_reg(super::regs::RegClass::Pred);
        self.ins(format!("setp.ge.{it} {p}, {iv}, {ub}"));
        self.ins(format!("@{p} bra.uni {end}"));
        // Accumulators that dots of the body update in place may still be written by the
        // previous iteration's MMA when the body starts: pending there.
        let carried: Vec<Value> = f.blocks[body]
            .ops
            .iter()
            .filter(|&&o| matches!(f.ops[o].kind, OpKind::Dot { .. }))
            .filter(|&&o| self.accumulates_in_place(o))
            .map(|&o| f.ops[o].operands[2])
            .collect();
        for &a in &carried {
            self.carried_wgmma.insert(a);
            self.pending_wgmma.push(a);
        }
        self.block(body)?;
        let ys = self.terminator_regs(body)?;
        self.parallel_copy(&iters, &ys);
        self.ins(format!("add.{it} {iv}, {iv}, {step}"));
        self.ins(format!("bra.uni {head}"));
        self.label(&end);
        for (r, regs) in d.results.iter().zip(iters) {
            self.set(*r, regs);
        }
        // An MMA still running on a carried accumulator is now the loop's result's (and the
        // carried values are the loop's no more).
        self.pending_wgmma.retain(|v| !carried.contains(v));
        if let Some(y) = f.terminator(body) {
            for (i, &v) in f.ops[y].operands.iter().enumerate() {
                if let Some(p) = self.pending_wgmma.iter_mut().find(|p| **p == v) {
                    *p = d.results[i];
                }
            }
        }
        Ok(())
    }

    pub(crate) fn emit_if(&mut self, op: Op) -> Res<()> {
        let f = self.f;
        let d = &f.ops[op];
        let cond = self.reg1(d.operands[0])?;
        let results: Vec<Vec<Reg>> = d.results.iter().map(|&r| self.fresh_for(f.ty(r))).collect::<Res<_>>()?;
        let else_l = self.new_label("else");
        let end = self.new_label("endif");
        self.ins(format!("@!{cond} bra.uni {else_l}"));
        self.block(d.regions[0])?;
        let ys = self.terminator_regs(d.regions[0])?;
        self.parallel_copy(&results, &ys);
        self.ins(format!("bra.uni {end}"));
        self.label(&else_l);
        if let Some(&r) = d.regions.get(1) {
            self.block(r)?;
            let ys = self.terminator_regs(r)?;
            self.parallel_copy(&results, &ys);
        }
        self.label(&end);
        for (r, regs) in d.results.iter().zip(results) {
            self.set(*r, regs);
        }
        Ok(())
    }

    pub(crate) fn emit_while(&mut self, op: Op) -> Res<()> {
        let f = self.f;
        let d = &f.ops[op];
        let (before, after) = (d.regions[0], d.regions[1]);
        let bargs = f.blocks[before].args.clone();
        let aargs = f.blocks[after].args.clone();
        let mut bregs = vec![];
        for (i, &a) in bargs.iter().enumerate() {
            let regs = self.fresh_for(f.ty(a))?;
            let init = self.regs(d.operands[i])?;
            for (&r, &s) in regs.iter().zip(&init) {
                self.mov(r, s);
            }
            self.set(a, regs.clone());
            bregs.push(regs);
        }
        let aregs: Vec<Vec<Reg>> = aargs.iter().map(|&a| self.fresh_for(f.ty(a))).collect::<Res<_>>()?;
        for (a, r) in aargs.iter().zip(&aregs) {
            self.set(*a, r.clone());
        }
        let head = self.new_label("while_head");
        let end = self.new_label("while_end");
        self.label(&head);
        self.block(before)?;
        let cond_ops = self.terminator_regs(before)?;
        let cond =
            cond_ops.first().and_then(|c| c.first()).copied().ok_or_else(|| self.err("while without a condition"))?;
        self.parallel_copy(&aregs, &cond_ops[1..]);
        self.ins(format!("@!{cond} bra.uni {end}"));
        self.block(after)?;
        let ys = self.terminator_regs(after)?;
        self.parallel_copy(&bregs, &ys);
        self.ins(format!("bra.uni {head}"));
        self.label(&end);
        for (r, regs) in d.results.iter().zip(aregs) {
            self.set(*r, regs);
        }
        Ok(())
    }
}
