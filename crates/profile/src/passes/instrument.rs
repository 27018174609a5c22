//! `profile-instrument{kernel,loops,dots,loads}`: marks the compiler's own regions with
//! `record` ops.
//!
//! * `kernel` — one region around each kernel's body: the start is its first op, the end
//!   sits right before its `return` (a structured function has exactly one, at the end
//!   of the body). Named `kernel`, at the function's location.
//! * `loops` — every `for` and `while` body, per iteration: the start is the first op of
//!   the body (a `while`'s after region: its condition region is not part of an
//!   iteration's region), the end sits right before the body's `yield`. Named
//!   `loop@FILE:LINE` after the loop's source line, at the loop's location.
//! * `dots` — every `dot`: start right before it, end right after. `dot@FILE:LINE`.
//! * `loads` — every `load` through global pointers: likewise. `load@FILE:LINE`. In GPU
//!   IR after `gpu-pipeline` a pipelined loop's loads are gone: each iteration waits for
//!   its tiles with `async_wait`, a `barrier` and the `local_load`s after them (the
//!   `async_copy`s only issue the prefetch). That run of ops — what the loop really
//!   waits on — is wrapped as one region, named after the wait's location (which the
//!   pipeliner gives the loop's line).
//!
//! In a warp-specialized kernel both roles' code is marked: the producer's regions are
//! named with ` (producer)` after the site (`loop@matmul.py:43 (producer)`), and its
//! `loads` region is its wait for a free slot and the copies it then issues.
//!
//! `FILE` is the file name without its directory. Names are unique per function and
//! kind: a second region on the same line gets `#2`, and so on, numbered in program
//! order (the order the printer shows), so they are stable from one compilation to the
//! next. Every record carries its kind and the location of the op it instruments.
//!
//! The regions nest properly: dots and loads are wrapped first, then loop bodies
//! (outside them, in the same blocks), then the kernel (outermost); user scopes already
//! in the IR are balanced within their blocks, so they nest too. Ops inside a
//! reduction's combine region are never instrumented (records may not sit there).
//! A kind already present in a function is left alone, so running the pass twice
//! changes nothing.

use std::collections::{HashMap, HashSet};
use trident_ir::{AddrSpace, Block, Diagnostic, Elem, Function, Loc, Module, Op, OpKind, RegionKind, SourceFile};
use trident_opt::Pass;

/// Which regions to profile: the CLI's `--regions scopes|kernel|loops|dots|loads`.
/// [`Instrument`] marks `kernel`, `loops`, `dots` and `loads`; `scopes` (the user's
/// `pl.scope`s) is the front end's business (`CompileOptions::profile_scopes`), carried
/// here so that one list says everything and the pass ignores it.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Regions {
    pub scopes: bool,
    pub kernel: bool,
    pub loops: bool,
    pub dots: bool,
    pub loads: bool,
}

impl Regions {
    /// Parses a list such as `kernel,loops` or `scopes|dots` (commas, `|` or `+` between the words).
    pub fn parse(list: &str) -> Result<Regions, String> {
        let mut r = Regions::default();
        for w in list.split([',', '|', '+']).map(str::trim) {
            match w {
                "scopes" => r.scopes = true,
                "kernel" => r.kernel = true,
                "loops" => r.loops = true,
                "dots" => r.dots = true,
                "loads" => r.loads = true,
                "" => {}
                other => {
                    return Err(format!("unknown region kind `{other}` (known: scopes, kernel, loops, dots, loads)"));
                }
            }
        }
        if r.is_empty() {
            return Err("no regions to mark: name some of scopes, kernel, loops, dots, loads".into());
        }
        Ok(r)
    }

    /// Nothing at all to profile.
    pub fn is_empty(&self) -> bool {
        !(self.scopes || self.instruments())
    }

    /// Whether [`Instrument`] has anything to add (everything but `scopes`).
    pub fn instruments(&self) -> bool {
        self.kernel || self.loops || self.dots || self.loads
    }

    /// The kinds chosen, in the order [`Regions::parse`] reads them, as `scopes,kernel,...`
    /// (parses back to the same value; cache keys and meta use it).
    pub fn words(&self) -> String {
        let all = [
            (self.scopes, "scopes"),
            (self.kernel, "kernel"),
            (self.loops, "loops"),
            (self.dots, "dots"),
            (self.loads, "loads"),
        ];
        all.iter().filter(|(on, _)| *on).map(|(_, w)| *w).collect::<Vec<_>>().join(",")
    }
}

/// The instrumentation pass (`profile-instrument{...}`).
pub struct Instrument {
    regions: Regions,
}

impl Instrument {
    pub fn new(regions: Regions) -> Instrument {
        Instrument { regions }
    }
}

impl Pass for Instrument {
    fn name(&self) -> &'static str {
        "profile-instrument"
    }

    /// Needs the module's file names for region names, so it works on the module.
    fn run_on_module(&self, m: &mut Module) -> Result<bool, Diagnostic> {
        let mut changed = false;
        for f in &mut m.funcs {
            changed |= instrument(f, &m.files, self.regions);
        }
        Ok(changed)
    }
}

/// Instruments one function; returns whether it changed.
pub fn instrument(f: &mut Function, files: &[SourceFile], regions: Regions) -> bool {
    let present: HashSet<RegionKind> = f
        .all_ops()
        .into_iter()
        .filter_map(|op| match &f.ops[op].kind {
            OpKind::Record { kind, .. } => Some(*kind),
            _ => None,
        })
        .collect();
    let want = |k: RegionKind, on: bool| on && !present.contains(&k);
    let mut names = Names { files, used: HashMap::new() };
    let mut changed = false;

    // Ops wrapped one by one (or a pipelined loop's wait) come first, so that loop and
    // kernel records end up outside them.
    let (dots, loads) = (want(RegionKind::Dot, regions.dots), want(RegionKind::Load, regions.loads));
    if dots || loads {
        let mut targets = vec![];
        for op in f.all_ops() {
            let (kind, last) = match &f.ops[op].kind {
                OpKind::Dot { .. } if dots => (RegionKind::Dot, op),
                OpKind::Load { .. } if loads && loads_global(f, op) => (RegionKind::Load, op),
                OpKind::AsyncWait { .. } | OpKind::MbarrierWait if loads => match pipelined_wait_end(f, op) {
                    Some(last) => (RegionKind::Load, last),
                    None => continue,
                },
                _ => continue,
            };
            if may_hold_records(f, f.ops[op].parent) {
                let name = names.name(kind, f.ops[op].loc, in_producer(f, op));
                targets.push(Target { first: op, last, name, kind });
            }
        }
        changed |= !targets.is_empty();
        wrap_ops(f, &targets);
    }
    if want(RegionKind::Loop, regions.loops) {
        for op in f.all_ops() {
            let body = match f.ops[op].kind {
                OpKind::For => f.ops[op].regions.first().copied(),
                OpKind::While => f.ops[op].regions.get(1).copied(),
                _ => continue,
            };
            let Some(body) = body.filter(|&b| may_hold_records(f, Some(b))) else { continue };
            let loc = f.ops[op].loc;
            let name = names.name(RegionKind::Loop, loc, in_producer(f, op));
            wrap_block(f, body, &name, RegionKind::Loop, loc);
            changed = true;
        }
    }
    if f.kernel && want(RegionKind::Kernel, regions.kernel) {
        let (body, loc) = (f.body, f.loc);
        wrap_block(f, body, "kernel", RegionKind::Kernel, loc);
        changed = true;
    }
    changed
}

/// The last op of a pipelined loop's wait for its tiles: `wait` is an `async_wait` or an
/// `mbarrier_wait` (a TMA ring's slot) followed in its block by `barrier`s,
/// `memdesc_index`es and at least one `local_load` (the pipeliner's protocol); the drain
/// after the loop (no `local_load`) is not one. In a warp-specialized kernel's producer, an
/// `mbarrier_wait` is the wait for a free slot, and the region runs from it to the slot's
/// last `tma_copy`: how long the producer waited for the consumers, and issued.
fn pipelined_wait_end(f: &Function, wait: Op) -> Option<Op> {
    let block = f.ops[wait].parent?;
    let ops = &f.blocks[block].ops;
    let at = ops.iter().position(|&o| o == wait)?;
    if matches!(f.ops[wait].kind, OpKind::MbarrierWait) && in_producer(f, wait) {
        return ops[at + 1..].iter().copied().take_while(|&o| !f.ops[o].kind.is_terminator()).fold(None, |last, o| {
            if matches!(f.ops[o].kind, OpKind::TmaCopy) {
                Some(o)
            } else {
                last
            }
        });
    }
    let mut last = None;
    for &o in &ops[at + 1..] {
        match f.ops[o].kind {
            OpKind::LocalLoad => last = Some(o),
            OpKind::Barrier | OpKind::MemDescIndex | OpKind::MemDescTrans { .. } => {}
            _ => break,
        }
    }
    last
}

/// A `load` through global pointers (GPU IR may also load through shared ones).
fn loads_global(f: &Function, op: Op) -> bool {
    f.ops[op].operands.first().is_some_and(|&p| matches!(f.ty(p).elem(), Elem::Ptr { space: AddrSpace::Global, .. }))
}

/// Whether records may sit in `block`: it and every block around it are a function body
/// or a region of `for`/`if`/`while`/`warp_specialize` (the verifier's rule).
pub(crate) fn may_hold_records(f: &Function, block: Option<Block>) -> bool {
    let mut b = block;
    while let Some(blk) = b {
        match f.blocks[blk].parent {
            None => return true,
            Some(p)
                if matches!(
                    f.ops[p].kind,
                    OpKind::For | OpKind::If | OpKind::While | OpKind::WarpSpecialize { .. }
                ) =>
            {
                b = f.ops[p].parent
            }
            Some(_) => return false,
        }
    }
    false
}

/// Whether `op` is code of a warp-specialized kernel's producer warps (the second region
/// of a `warp_specialize`): its regions are named apart from the consumers' (the same
/// source line runs in both roles).
fn in_producer(f: &Function, op: Op) -> bool {
    matches!(f.warp_role(op), Some((_, 1)))
}

fn record(f: &mut Function, name: &str, end: bool, kind: RegionKind, loc: Loc, block: Block) -> Op {
    let op = f.new_op(OpKind::Record { name: name.to_string(), end, kind }, &[], &[], loc);
    f.ops[op].parent = Some(block);
    op
}

/// What [`wrap_ops`] wraps: the ops from `first` to `last` of one block (one op, or a
/// pipelined wait with its loads).
struct Target {
    first: Op,
    last: Op,
    name: String,
    kind: RegionKind,
}

/// Puts a start record before each target's first op and an end record after its last,
/// rebuilding each block's op list once (inserting one by one would rescan the block per op).
fn wrap_ops(f: &mut Function, targets: &[Target]) {
    let mut blocks: Vec<Block> = vec![];
    let (mut starts, mut ends): (HashMap<Op, usize>, HashMap<Op, usize>) = (HashMap::new(), HashMap::new());
    for (i, t) in targets.iter().enumerate() {
        let Some(b) = f.ops[t.first].parent else { continue };
        if !blocks.contains(&b) {
            blocks.push(b);
        }
        starts.insert(t.first, i);
        ends.insert(t.last, i);
    }
    for b in blocks {
        let old = std::mem::take(&mut f.blocks[b].ops);
        let mut new = Vec::with_capacity(old.len() + 2 * starts.len().min(old.len()));
        for op in old {
            if let Some(&i) = starts.get(&op) {
                let t = &targets[i];
                let loc = f.ops[t.first].loc;
                new.push(record(f, &t.name, false, t.kind, loc, b));
            }
            new.push(op);
            if let Some(&i) = ends.get(&op) {
                let t = &targets[i];
                let loc = f.ops[t.first].loc;
                new.push(record(f, &t.name, true, t.kind, loc, b));
            }
        }
        f.blocks[b].ops = new;
    }
}

/// A start record as the first op of `block` and an end record right before its terminator.
fn wrap_block(f: &mut Function, block: Block, name: &str, kind: RegionKind, loc: Loc) {
    let start = record(f, name, false, kind, loc, block);
    let end = record(f, name, true, kind, loc, block);
    let ops = &mut f.blocks[block].ops;
    ops.insert(0, start);
    // Valid IR ends every block in its terminator; if not, the end goes last.
    let last_is_term = ops.last().is_some_and(|&o| f.ops[o].kind.is_terminator());
    let at = if last_is_term { ops.len() - 1 } else { ops.len() };
    ops.insert(at, end);
}

/// Region names: `loop@FILE:LINE`, unique per kind within a function.
struct Names<'a> {
    files: &'a [SourceFile],
    used: HashMap<String, u32>,
}

impl Names<'_> {
    fn name(&mut self, kind: RegionKind, loc: Loc, producer: bool) -> String {
        let site = if loc.is_unknown() {
            "?".to_string()
        } else {
            match self.files.get(loc.file as usize) {
                Some(file) => {
                    let base = std::path::Path::new(&file.path)
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_else(|| file.path.clone());
                    format!("{base}:{}", loc.line)
                }
                None => format!("{}", loc.line),
            }
        };
        let role = if producer { " (producer)" } else { "" };
        let base = format!("{}@{site}{role}", kind.name());
        let n = self.used.entry(base.clone()).or_insert(0);
        *n += 1;
        if *n == 1 {
            base
        } else {
            format!("{base}#{n}")
        }
    }
}
