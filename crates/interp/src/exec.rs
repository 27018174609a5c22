//! The executor: runs one program of the grid through a function body, op by op.
//!
//! Values live in a per-call environment indexed by SSA value number, as
//! reference-counted block values (shape ops that only relabel a value still
//! copy it; elementwise ops allocate their result). Structured control flow runs
//! its regions with block arguments bound; terminators hand their operands back.

use crate::dot;
use crate::elementwise as ew;
use crate::error::{ErrorKind, Fault, InterpError, Stop};
use crate::memops;
use crate::memory::Memory;
use crate::print;
use crate::reduce;
use crate::shape;
use crate::value::{class_of, unravel, Data, Tensor};
use crate::InterpOptions;
use smallvec::SmallVec;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use trident_ir::func::EntityRef;
use trident_ir::{BinaryOp, Block, Diagnostic, Function, Loc, Module, Op, OpKind, SourceFile, Type, Value};

type V = Rc<Tensor>;

/// What every program of a launch shares.
pub(crate) struct Shared<'a> {
    pub module: &'a Module,
    pub mem: &'a Memory,
    pub opts: &'a InterpOptions,
    pub grid: [u32; 3],
    /// Linear index of the lowest program that failed so far (`u64::MAX`: none).
    pub failed_at: &'a AtomicU64,
    /// Set when `opts.deadline` passed: every program stops.
    pub timed_out: &'a std::sync::atomic::AtomicBool,
}

/// Loop iterations between two looks at the clock for the time limit.
const DEADLINE_EVERY: u64 = 4096;

/// Calls nested deeper than this are reported as runaway recursion.
const MAX_CALL_DEPTH: usize = 64;

pub(crate) struct Program<'a> {
    sh: &'a Shared<'a>,
    pid: [u32; 3],
    linear: u64,
    depth: usize,
    /// `while` iterations run after another program faulted (see [`SPINS_AFTER_FAULT`]).
    spins_after_fault: u64,
    /// `while` iterations run, for the time limit's checks.
    iterations: u64,
    /// `device_print` output of this program.
    pub out: String,
}

/// How many `while` iterations a program may run after another program faulted before it
/// is stopped: enough for any loop that ends on its own, few enough that programs spinning
/// on a lock the faulted program held stop within milliseconds.
const SPINS_AFTER_FAULT: u64 = 1 << 20;

struct Frame<'f> {
    f: &'f Function,
    env: Vec<Option<V>>,
}

impl Frame<'_> {
    fn get(&self, v: Value) -> Result<V, Fault> {
        self.env
            .get(v.index())
            .and_then(|x| x.clone())
            .ok_or_else(|| Fault::internal(format!("value {v} used before it is defined")))
    }

    fn set(&mut self, v: Value, t: Tensor) {
        self.env[v.index()] = Some(Rc::new(t));
    }
}

/// Length of the token at `loc` (identifier characters and dots), for the caret.
fn span_len(files: &[SourceFile], loc: Loc) -> u32 {
    let Some(file) = files.get(loc.file as usize) else { return 1 };
    let Some(line) = file.text.lines().nth(loc.line.saturating_sub(1) as usize) else { return 1 };
    let rest = line.get(loc.col.saturating_sub(1) as usize..).unwrap_or("");
    let n = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '.').count();
    n.max(1) as u32
}

/// Turns an op's fault into a diagnostic at the op's source location.
pub(crate) fn locate(module: &Module, pid: [u32; 3], loc: Loc, f: Fault) -> InterpError {
    let mut msg = format!("{}, program ({}, {}, {})", f.msg, pid[0], pid[1], pid[2]);
    if let Some((flat, shape)) = &f.element {
        if !shape.is_empty() {
            let idx: Vec<String> = unravel(*flat, shape).iter().map(|i| i.to_string()).collect();
            msg.push_str(&format!(", element [{}]", idx.join(", ")));
        }
    }
    let mut diag = Diagnostic::error(msg);
    if !loc.is_unknown() {
        diag = diag.at(loc, span_len(&module.files, loc));
    }
    InterpError { kind: f.kind, diag: Box::new(diag) }
}

/// The single binary op of a combine region `(a, b) -> op(a, b)`, if that is all it does.
fn fast_combine(f: &Function, region: Block) -> Option<BinaryOp> {
    let b = &f.blocks[region];
    if b.args.len() != 2 || b.ops.len() != 2 {
        return None;
    }
    let (op, y) = (&f.ops[b.ops[0]], &f.ops[b.ops[1]]);
    let OpKind::Binary(bop) = op.kind else { return None };
    let commutative = matches!(
        bop,
        BinaryOp::Add
            | BinaryOp::Mul
            | BinaryOp::Max
            | BinaryOp::Min
            | BinaryOp::MaxNan
            | BinaryOp::MinNan
            | BinaryOp::And
            | BinaryOp::Or
            | BinaryOp::Xor
    );
    let args_in_order = op.operands.as_slice() == [b.args[0], b.args[1]]
        || (commutative && op.operands.as_slice() == [b.args[1], b.args[0]]);
    let yields_it = y.kind == OpKind::Yield && y.operands.as_slice() == [op.results[0]];
    let same_types = f.ty(b.args[0]).elem() == f.ty(op.results[0]).elem();
    (args_in_order && yields_it && same_types).then_some(bop)
}

/// Whether a region only holds elementwise ops, so it can run on whole vectors at once.
fn elementwise_region(f: &Function, region: Block) -> bool {
    f.blocks[region].ops.iter().all(|&op| {
        let k = &f.ops[op].kind;
        k.is_elementwise()
            || matches!(
                k,
                OpKind::Constant(_)
                    | OpKind::Yield
                    | OpKind::MultipleOf { .. }
                    | OpKind::MaxContiguous { .. }
                    | OpKind::MaxConstancy { .. }
            )
    })
}

fn unwrap_rc(v: V) -> Tensor {
    Rc::try_unwrap(v).unwrap_or_else(|rc| (*rc).clone())
}

/// Element `i` of `t` as a scalar.
fn element(t: &Tensor, i: usize) -> Tensor {
    let data = match &t.data {
        Data::I(v) => Data::I(vec![v[i]]),
        Data::F(v) => Data::F(vec![v[i]]),
        Data::D(v) => Data::D(vec![v[i]]),
    };
    Tensor::new(t.elem, &[], data)
}

fn int_range(t: &Tensor) -> Result<i128, Fault> {
    let v = t.int0()?;
    Ok(match t.elem.num() {
        Some(d) if d.is_unsigned_int() => v as u64 as i128,
        _ => v as i128,
    })
}

impl<'a> Program<'a> {
    pub fn new(sh: &'a Shared<'a>, linear: u64) -> Program<'a> {
        let [gx, gy, _] = sh.grid;
        let (gx, gy) = (gx as u64, gy as u64);
        let pid = [(linear % gx) as u32, ((linear / gx) % gy) as u32, (linear / (gx * gy)) as u32];
        Program { sh, pid, linear, depth: 0, spins_after_fault: 0, iterations: 0, out: String::new() }
    }

    pub fn pid(&self) -> [u32; 3] {
        self.pid
    }

    fn div0(&self) -> ew::DivZero {
        if self.sh.opts.div_by_zero_is_error {
            ew::DivZero::Error
        } else {
            ew::DivZero::Gpu
        }
    }

    /// Runs `f` with its parameters bound to `args`; returns the values of its `return`.
    pub fn call(&mut self, f: &Function, args: Vec<V>) -> Result<Vec<V>, Stop> {
        if self.depth >= MAX_CALL_DEPTH {
            return Err(Fault::internal(format!("calls nested more than {MAX_CALL_DEPTH} deep")).into());
        }
        self.depth += 1;
        let mut fr = Frame { f, env: vec![None; f.values.len()] };
        let r = self.run_region(&mut fr, f.body, args);
        self.depth -= 1;
        r
    }

    fn run_region(&mut self, fr: &mut Frame, block: Block, args: Vec<V>) -> Result<Vec<V>, Stop> {
        let f = fr.f;
        let bd = &f.blocks[block];
        if bd.args.len() != args.len() {
            return Err(
                Fault::internal(format!("region expects {} arguments, got {}", bd.args.len(), args.len())).into()
            );
        }
        for (&a, v) in bd.args.iter().zip(args) {
            fr.env[a.index()] = Some(v);
        }
        for &op in &bd.ops {
            let od = &f.ops[op];
            if od.kind.is_terminator() {
                return od.operands.iter().map(|&v| fr.get(v).map_err(|e| self.stop_at(od.loc, e))).collect();
            }
            if self.sh.failed_at.load(Ordering::Relaxed) < self.linear {
                return Err(Stop::Abort);
            }
            self.exec(fr, op).map_err(|e| match e {
                Stop::Fault(flt) => self.stop_at(od.loc, flt),
                other => other,
            })?;
        }
        Ok(vec![])
    }

    fn stop_at(&self, loc: Loc, f: Fault) -> Stop {
        Stop::Located(Box::new(locate(self.sh.module, self.pid, loc, f)))
    }

    fn exec(&mut self, fr: &mut Frame, op: Op) -> Result<(), Stop> {
        let f = fr.f;
        let od = &f.ops[op];
        let res_ty = |i: usize| -> Result<&Type, Fault> {
            od.results
                .get(i)
                .map(|&r| f.ty(r))
                .ok_or_else(|| Fault::internal(format!("`{}` lacks a result", od.kind.name())))
        };
        let arg = |fr: &Frame, i: usize| -> Result<V, Fault> {
            let v = od.operands.get(i).ok_or_else(|| {
                Fault::internal(format!("`{}` needs operand {i} (has {})", od.kind.name(), od.operands.len()))
            })?;
            fr.get(*v)
        };
        let opt = |fr: &Frame, i: usize| -> Result<Option<V>, Fault> {
            if i < od.operands.len() {
                arg(fr, i).map(Some)
            } else {
                Ok(None)
            }
        };
        let mem: &Memory = self.sh.mem;
        let single = |t: Tensor| -> Result<SmallVec<[Tensor; 2]>, Stop> { Ok(smallvec::smallvec![t]) };

        let results: SmallVec<[Tensor; 2]> = match &od.kind {
            OpKind::Constant(c) => single(ew::constant(*c, res_ty(0)?)?)?,
            OpKind::Arange { start, end } => {
                let ty = res_ty(0)?;
                let v: Vec<i64> = (*start as i64..*end as i64).collect();
                if v.len() as u64 != ty.numel() {
                    return Err(Fault::internal(format!("arange {start}..{end} into {ty}")).into());
                }
                single(Tensor::new(ty.elem(), ty.shape(), Data::I(v)))?
            }
            OpKind::ProgramId { axis } | OpKind::NumPrograms { axis } => {
                let a = *axis as usize;
                if a > 2 {
                    return Err(Fault::internal(format!("program axis {a}")).into());
                }
                let v = if matches!(od.kind, OpKind::ProgramId { .. }) { self.pid[a] } else { self.sh.grid[a] };
                single(Tensor::scalar_int(res_ty(0)?.elem(), v as i64))?
            }
            OpKind::Splat => single(shape::splat(&*arg(fr, 0)?, res_ty(0)?)?)?,
            OpKind::Broadcast => single(shape::broadcast(&*arg(fr, 0)?, res_ty(0)?)?)?,
            OpKind::ExpandDims { .. } | OpKind::Reshape { .. } => single(shape::reshape(&*arg(fr, 0)?, res_ty(0)?)?)?,
            OpKind::Trans { perm } => single(shape::trans(&*arg(fr, 0)?, perm, res_ty(0)?)?)?,
            OpKind::Join => single(shape::join(&*arg(fr, 0)?, &*arg(fr, 1)?, res_ty(0)?)?)?,
            OpKind::Split => {
                let (a, b) = shape::split(&*arg(fr, 0)?, res_ty(0)?)?;
                smallvec::smallvec![a, b]
            }
            OpKind::Cat => single(shape::cat(&*arg(fr, 0)?, &*arg(fr, 1)?, res_ty(0)?)?)?,
            OpKind::Gather { axis } => single(shape::gather(&*arg(fr, 0)?, &*arg(fr, 1)?, *axis, res_ty(0)?)?)?,
            OpKind::Binary(b) => single(ew::binary(*b, &*arg(fr, 0)?, &*arg(fr, 1)?, res_ty(0)?.elem(), self.div0())?)?,
            OpKind::Unary(u) => single(ew::unary(*u, &*arg(fr, 0)?, res_ty(0)?.elem())?)?,
            OpKind::Cmp(p) => single(ew::cmp(*p, &*arg(fr, 0)?, &*arg(fr, 1)?, res_ty(0)?.elem())?)?,
            OpKind::Select => single(ew::select(&*arg(fr, 0)?, &*arg(fr, 1)?, &*arg(fr, 2)?, res_ty(0)?.elem())?)?,
            OpKind::Fma => single(ew::fma(&*arg(fr, 0)?, &*arg(fr, 1)?, &*arg(fr, 2)?, res_ty(0)?.elem())?)?,
            OpKind::Cast { kind, rounding } => single(ew::cast(*kind, *rounding, &*arg(fr, 0)?, res_ty(0)?.elem())?)?,
            OpKind::AddPtr => single(ew::addptr(&*arg(fr, 0)?, &*arg(fr, 1)?, res_ty(0)?.elem())?)?,
            // A descriptor load is its pointer/mask load (the window operands are for TMA).
            OpKind::Load { .. } | OpKind::DescLoad { .. } => {
                let (p, m, o) = (arg(fr, 0)?, opt(fr, 1)?, opt(fr, 2)?);
                single(memops::load(mem, &p, m.as_deref(), o.as_deref(), res_ty(0)?.shape())?)?
            }
            // A descriptor store is its pointer/value/mask store (the window is for TMA).
            OpKind::Store { .. } | OpKind::DescStore { .. } => {
                memops::store(mem, &*arg(fr, 0)?, &*arg(fr, 1)?, opt(fr, 2)?.as_deref())?;
                SmallVec::new()
            }
            OpKind::AtomicRmw { op: rmw, .. } => {
                single(memops::atomic_rmw(mem, *rmw, &*arg(fr, 0)?, &*arg(fr, 1)?, opt(fr, 2)?.as_deref())?)?
            }
            OpKind::AtomicCas { .. } => single(memops::atomic_cas(mem, &*arg(fr, 0)?, &*arg(fr, 1)?, &*arg(fr, 2)?)?)?,
            OpKind::Dot { precision, .. } => {
                single(dot::dot(&*arg(fr, 0)?, &*arg(fr, 1)?, &*arg(fr, 2)?, *precision, res_ty(0)?)?)?
            }
            OpKind::Reduce { axis } => {
                let xs: Vec<V> = (0..od.operands.len()).map(|i| arg(fr, i)).collect::<Result<_, _>>()?;
                let refs: Vec<&Tensor> = xs.iter().map(|x| &**x).collect();
                let tys: Vec<Type> = od.results.iter().map(|&r| f.ty(r).clone()).collect();
                let region = *od.regions.first().ok_or_else(|| Fault::internal("reduce without a region".into()))?;
                let fast = match (fast_combine(f, region), refs.as_slice(), tys.as_slice()) {
                    (Some(op), [x], [t]) => reduce::reduce_fast(x, *axis, t, op)?,
                    _ => None,
                };
                match fast {
                    Some(t) => smallvec::smallvec![t],
                    None => {
                        let mut comb = self.combiner(fr, region);
                        reduce::reduce(&refs, *axis, &tys, &mut comb)?.into_iter().collect()
                    }
                }
            }
            OpKind::Scan { axis, reverse } => {
                let xs: Vec<V> = (0..od.operands.len()).map(|i| arg(fr, i)).collect::<Result<_, _>>()?;
                let refs: Vec<&Tensor> = xs.iter().map(|x| &**x).collect();
                let region = *od.regions.first().ok_or_else(|| Fault::internal("scan without a region".into()))?;
                let mut comb = self.combiner(fr, region);
                reduce::scan(&refs, *axis, *reverse, &mut comb)?.into_iter().collect()
            }
            OpKind::MultipleOf { .. } | OpKind::MaxContiguous { .. } | OpKind::MaxConstancy { .. } => {
                let v = arg(fr, 0)?;
                if let Some(&r) = od.results.first() {
                    fr.env[r.index()] = Some(v);
                }
                return Ok(());
            }
            // A barrier (`tl.debug_barrier`) orders the threads of one program; the interpreter runs
            // each program's ops one after another, so every store is visible to later loads anyway.
            OpKind::Assume | OpKind::Barrier => SmallVec::new(),
            // A profiling marker measures time on the GPU; it computes nothing, so here it does nothing.
            OpKind::Record { .. } => SmallVec::new(),
            OpKind::Print { prefix, hex } => {
                let vals: Vec<V> = (0..od.operands.len()).map(|i| arg(fr, i)).collect::<Result<_, _>>()?;
                let refs: Vec<&Tensor> = vals.iter().map(|x| &**x).collect();
                print::print(&mut self.out, self.pid, prefix, *hex, &refs);
                SmallVec::new()
            }
            OpKind::Assert { msg } => {
                if self.sh.opts.debug {
                    let c = arg(fr, 0)?;
                    if let Some(i) = (0..c.len()).find(|&i| !c.truth(i)) {
                        return Err(Fault::new(ErrorKind::AssertFailed, format!("device assertion failed: {msg}"))
                            .at_element(i, &c.shape)
                            .into());
                    }
                }
                SmallVec::new()
            }
            OpKind::For => return self.exec_for(fr, op),
            OpKind::If => {
                let c = arg(fr, 0)?;
                let region = if c.truth(0) { od.regions.first() } else { od.regions.get(1) };
                let vals = match region {
                    Some(&r) => self.run_region(fr, r, vec![])?,
                    None => vec![],
                };
                return self.bind_results(fr, op, vals);
            }
            OpKind::While => return self.exec_while(fr, op),
            OpKind::Call { callee } => {
                let g = self
                    .sh
                    .module
                    .func(callee)
                    .ok_or_else(|| Fault::internal(format!("call of unknown function `{callee}`")))?;
                let args: Vec<V> = (0..od.operands.len()).map(|i| arg(fr, i)).collect::<Result<_, _>>()?;
                let vals = self.call(g, args)?;
                return self.bind_results(fr, op, vals);
            }
            OpKind::Yield | OpKind::Condition | OpKind::Return => {
                return Err(Fault::internal(format!("`{}` in the middle of a block", od.kind.name())).into())
            }
            // PTX text: only a GPU, or the PTX emulator, runs it (Triton's interpreter cannot
            // either).
            OpKind::InlineAsm { .. } => {
                return Err(Fault::new(
                    ErrorKind::Unsupported,
                    "`tl.inline_asm_elementwise` runs PTX, which the interpreter cannot: run the kernel on the \
                     PTX emulator (`--backend emu`, `TRIDENT_BACKEND=emu`, `backend=\"emu\"`) or a GPU"
                        .to_string(),
                )
                .into())
            }
            // GPU-IR ops (layouts, shared memory, ...) and anything added to the IR later.
            #[allow(unreachable_patterns)]
            other => {
                return Err(Fault::internal(format!(
                    "`{}` is not a tile-IR op the interpreter runs (GPU IR must not reach it)",
                    other.name()
                ))
                .into())
            }
        };
        if results.len() != od.results.len() {
            return Err(Fault::internal(format!(
                "`{}` produced {} values for {} results",
                od.kind.name(),
                results.len(),
                od.results.len()
            ))
            .into());
        }
        for (&r, t) in od.results.iter().zip(results) {
            // Ill-typed IR (e.g. an `add` of floats declared to give integers) must not
            // leave a value whose storage disagrees with its type.
            if class_of(f.ty(r).elem()) != t.data.class() || class_of(t.elem) != t.data.class() {
                let what = match t.data.class() {
                    crate::value::Class::I => "integer",
                    crate::value::Class::F => "float",
                    crate::value::Class::D => "f64",
                };
                return Err(Fault::internal(format!(
                    "`{}` computed {what} values for a result of type {} (ill-typed IR)",
                    od.kind.name(),
                    f.ty(r)
                ))
                .into());
            }
            fr.set(r, t);
        }
        Ok(())
    }

    fn bind_results(&mut self, fr: &mut Frame, op: Op, vals: Vec<V>) -> Result<(), Stop> {
        let od = &fr.f.ops[op];
        if vals.len() != od.results.len() {
            return Err(Fault::internal(format!(
                "`{}` region yields {} values for {} results",
                od.kind.name(),
                vals.len(),
                od.results.len()
            ))
            .into());
        }
        for (&r, v) in od.results.iter().zip(vals) {
            fr.env[r.index()] = Some(v);
        }
        Ok(())
    }

    /// `for iv in lb..ub step s`: bounds and step are signed or unsigned by their type;
    /// no iterations when `lb >= ub`; a step <= 0 with `lb < ub` is an error (it would not end).
    fn exec_for(&mut self, fr: &mut Frame, op: Op) -> Result<(), Stop> {
        let f = fr.f;
        let od = &f.ops[op];
        if od.operands.len() < 3 || od.regions.len() != 1 {
            return Err(Fault::internal("`for` needs lb, ub, step and one region".into()).into());
        }
        let lb_t = fr.get(od.operands[0])?;
        let (lb, ub, step) =
            (int_range(&lb_t)?, int_range(&*fr.get(od.operands[1])?)?, int_range(&*fr.get(od.operands[2])?)?);
        let iv_elem = lb_t.elem;
        let dt = lb_t.dtype()?;
        let mut iters: Vec<V> = od.operands[3..].iter().map(|&v| fr.get(v)).collect::<Result<_, _>>()?;
        if lb < ub && step <= 0 {
            return Err(Fault::new(
                ErrorKind::Unsupported,
                format!("`for` loop from {lb} to {ub} with step {step}: the step must be positive"),
            )
            .into());
        }
        let mut iv = lb;
        let mut n = 0u64;
        while iv < ub {
            n += 1;
            if n.is_multiple_of(DEADLINE_EVERY) {
                self.check_deadline()?;
            }
            let mut args = Vec::with_capacity(iters.len() + 1);
            args.push(Rc::new(Tensor::scalar_int(iv_elem, crate::value::wrap(iv as i64, dt))));
            args.extend(iters);
            iters = self.run_region(fr, od.regions[0], args)?;
            iv += step;
        }
        self.bind_results(fr, op, iters)
    }

    /// Stops this program (and, through the shared flag, all) once the time limit passed.
    fn check_deadline(&self) -> Result<(), Stop> {
        if self.sh.timed_out.load(Ordering::Relaxed)
            || self.sh.opts.deadline.is_some_and(|d| std::time::Instant::now() >= d)
        {
            self.sh.timed_out.store(true, Ordering::Relaxed);
            return Err(Stop::Abort);
        }
        Ok(())
    }

    fn exec_while(&mut self, fr: &mut Frame, op: Op) -> Result<(), Stop> {
        let od = &fr.f.ops[op];
        if od.regions.len() != 2 {
            return Err(Fault::internal("`while` needs two regions".into()).into());
        }
        let (before, after) = (od.regions[0], od.regions[1]);
        let mut vals: Vec<V> = od.operands.iter().map(|&v| fr.get(v)).collect::<Result<_, _>>()?;
        loop {
            let mut c = self.run_region(fr, before, vals)?;
            if c.is_empty() {
                return Err(Fault::internal("`while` before-region must end in `condition`".into()).into());
            }
            let cond = c.remove(0);
            if !cond.truth(0) {
                return self.bind_results(fr, op, c);
            }
            vals = self.run_region(fr, after, c)?;
            self.iterations += 1;
            if self.iterations.is_multiple_of(DEADLINE_EVERY) {
                self.check_deadline()?;
            }
            let failed = self.sh.failed_at.load(Ordering::Relaxed);
            if failed < self.linear {
                return Err(Stop::Abort);
            }
            // A program before the faulting one keeps running (the lowest fault is the one
            // reported), unless it waits on the faulted one — a spin lock the faulting
            // program held: a bounded number of iterations after any fault, then it stops.
            if failed != u64::MAX {
                self.spins_after_fault += 1;
                if self.spins_after_fault > SPINS_AFTER_FAULT {
                    return Err(Stop::Abort);
                }
            }
        }
    }

    /// The combine function of a reduce/scan region: one binary op directly, a region of
    /// elementwise ops evaluated on whole vectors, or anything else element by element.
    fn combiner<'s, 'f>(
        &'s mut self,
        fr: &'s mut Frame<'f>,
        region: Block,
    ) -> impl FnMut(Vec<Tensor>, Vec<Tensor>) -> Result<Vec<Tensor>, Stop> + use<'s, 'f, 'a> {
        let fast = fast_combine(fr.f, region);
        let vectorized = elementwise_region(fr.f, region);
        let div0 = self.div0();
        move |acc: Vec<Tensor>, new: Vec<Tensor>| {
            if let (Some(op), [a], [b]) = (fast, acc.as_slice(), new.as_slice()) {
                return Ok(vec![ew::binary(op, a, b, a.elem, div0)?]);
            }
            if vectorized {
                let args: Vec<V> = acc.into_iter().chain(new).map(Rc::new).collect();
                return Ok(self.run_region(fr, region, args)?.into_iter().map(unwrap_rc).collect());
            }
            // General region (control flow, calls...): one element at a time.
            let n = acc.first().map_or(0, |t| t.len());
            let mut outs: Vec<Option<Tensor>> = vec![None; acc.len()];
            for i in 0..n {
                let args: Vec<V> = acc.iter().chain(&new).map(|t| Rc::new(element(t, i))).collect();
                let r = self.run_region(fr, region, args)?;
                if r.len() != outs.len() {
                    return Err(Fault::internal("combine region yields the wrong number of values".into()).into());
                }
                for (o, v) in outs.iter_mut().zip(r) {
                    match o {
                        None => {
                            let mut d = v.data.empty_like(n);
                            d.extend_from(&v.data, 0..1);
                            *o = Some(Tensor::new(v.elem, &[], d));
                        }
                        Some(t) => {
                            if t.data.class() != v.data.class() {
                                return Err(Fault::internal("combine region yields mixed types".into()).into());
                            }
                            t.data.extend_from(&v.data, 0..1)
                        }
                    }
                }
            }
            Ok(outs
                .into_iter()
                .map(|o| {
                    let mut t = o.unwrap_or_else(|| {
                        Tensor::new(trident_ir::Elem::Num(trident_core::DType::I32), &[], Data::I(vec![]))
                    });
                    t.shape = smallvec::smallvec![t.len() as u32];
                    t
                })
                .collect())
        }
    }
}
