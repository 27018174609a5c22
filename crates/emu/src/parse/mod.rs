//! PTX text → [`Module`]: lexing, a raw statement tree, memory layout of the
//! module's variables, then per-instruction decoding into [`crate::ir`].

mod decode;
mod lexer;
pub(crate) mod literal;
mod raw;

use std::collections::HashMap;

use crate::error::EmuError;
use crate::ir::{Function, GlobalVar, ParamDecl, Space, Ty};
use crate::memory::module_global_base;
use raw::{RawFunc, RawOp, RawStmt, RawVar};

/// A parsed, pre-decoded PTX module, ready to [`launch`](crate::launch).
#[derive(Clone, Debug)]
pub struct Module {
    pub(crate) funcs: Vec<Function>,
    pub(crate) globals: Vec<GlobalVar>,
    /// Bytes of statically declared shared memory.
    pub(crate) shared_static: u32,
    /// Where `.extern .shared` (dynamic) arrays start.
    pub(crate) dyn_shared_base: u32,
    /// Bytes of local memory per thread (`.local` variables and call parameters).
    pub(crate) local_size: u32,
    pub(crate) lines: Vec<String>,
}

/// Where a name in a function body points.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) enum Sym {
    Shared(u32),
    Global(u64),
    Local(u32),
    /// An entry's kernel parameter (offset in the parameter buffer).
    KParam(u32),
    Func(u32),
}

/// Registers one function may declare (real kernels use a few thousand at most).
const MAX_REGS: u32 = 1 << 15;
/// Local memory per thread (`.local` variables and call parameters).
const MAX_LOCAL: u64 = 1 << 16;

fn align_up(x: u64, a: u64) -> u64 {
    let a = a.clamp(1, 1 << 20);
    x.div_ceil(a).saturating_mul(a)
}

fn var_size(v: &RawVar) -> u64 {
    (v.ty.bytes() as u64).saturating_mul(v.vec as u64).saturating_mul(v.elems.unwrap_or(1))
}

fn var_align(v: &RawVar) -> u64 {
    if v.align > 0 {
        v.align as u64
    } else {
        (v.ty.bytes() * v.vec) as u64
    }
}

impl Module {
    /// Parses PTX text. Errors name the offending line.
    pub fn parse(text: &str) -> Result<Module, EmuError> {
        let lines: Vec<&str> = text.lines().collect();
        let toks = lexer::lex(text)?;
        let mut cur = raw::Cursor::new(&toks, &lines);
        let rm = raw::parse_module(&mut cur)?;
        let line_text = |l: u32| lines.get((l as usize).wrapping_sub(1)).copied().unwrap_or("");

        // Module-scope variables: shared layout, global/const data, module-scope locals.
        let mut syms: HashMap<String, Sym> = HashMap::new();
        let mut shared_top: u64 = 0;
        let mut dyn_align: u64 = 16;
        let mut extern_shared: Vec<String> = Vec::new();
        let mut globals = Vec::new();
        let mut local_top: u64 = 0;
        let mut place_shared = |v: &RawVar, syms: &mut HashMap<String, Sym>, shared_top: &mut u64| {
            if v.external || v.elems == Some(0) {
                dyn_align = dyn_align.max(var_align(v));
                extern_shared.push(v.name.clone());
            } else {
                let at = align_up(*shared_top, var_align(v));
                syms.insert(v.name.clone(), Sym::Shared(at as u32));
                *shared_top = at.saturating_add(var_size(v));
            }
        };
        for v in &rm.vars {
            match v.space {
                Some(Space::Shared) => place_shared(v, &mut syms, &mut shared_top),
                Some(Space::Global) | Some(Space::Const) => {
                    let data = init_bytes(v).map_err(|m| EmuError::parse(v.line, line_text(v.line), m))?;
                    let idx = globals.len();
                    syms.insert(v.name.clone(), Sym::Global(module_global_base(idx)));
                    globals.push(GlobalVar { name: v.name.clone(), space: v.space.unwrap_or(Space::Global), data });
                }
                Some(Space::Local) => {
                    let at = align_up(local_top, var_align(v));
                    syms.insert(v.name.clone(), Sym::Local(at as u32));
                    local_top = at.saturating_add(var_size(v));
                }
                _ => return Err(EmuError::parse(v.line, line_text(v.line), "unsupported module-scope declaration")),
            }
        }
        // Function-scope shared variables join the CTA's static layout too.
        for f in &rm.funcs {
            for s in f.body.iter().flatten() {
                if let RawStmt::Var(v) = s {
                    if v.space == Some(Space::Shared) {
                        place_shared(v, &mut syms, &mut shared_top);
                    }
                }
            }
        }
        let dyn_base = align_up(shared_top, dyn_align);
        for n in extern_shared {
            syms.insert(n, Sym::Shared(dyn_base as u32));
        }
        for (i, f) in rm.funcs.iter().enumerate() {
            // A definition wins over a prototype of the same name.
            if f.body.is_some() || !syms.contains_key(&f.name) {
                syms.insert(f.name.clone(), Sym::Func(i as u32));
            }
        }
        if shared_top > u32::MAX as u64 / 2 {
            return Err(EmuError::parse(1, line_text(1), "shared memory declarations too large"));
        }

        let mut funcs = Vec::new();
        for f in &rm.funcs {
            let func = build_function(f, &syms, &mut local_top, &lines)?;
            funcs.push(func);
        }
        if local_top > MAX_LOCAL {
            return Err(EmuError::parse(1, line_text(1), "local memory declarations exceed 64 KiB per thread"));
        }
        // Resolve same-named definitions: a body wins over an extern declaration.
        Ok(Module {
            funcs,
            globals,
            shared_static: shared_top as u32,
            dyn_shared_base: dyn_base as u32,
            local_size: local_top as u32,
            lines: lines.iter().map(|s| s.to_string()).collect(),
        })
    }

    /// The parameter types of an entry, in order, so a caller can encode scalars.
    pub fn entry_params(&self, entry: &str) -> Result<Vec<ParamType>, EmuError> {
        let f = self.entry(entry)?;
        Ok(f.params
            .iter()
            .map(|p| ParamType { ty: p.ty, bytes: p.size, offset: p.offset, is_pointer: p.is_ptr })
            .collect())
    }

    /// Bytes of statically declared shared memory (what a driver reports as the kernel's
    /// static shared size; dynamic `.extern` arrays start after it, aligned).
    pub fn static_shared_bytes(&self) -> u32 {
        self.shared_static
    }

    /// Names of the module's `.entry` functions.
    pub fn entries(&self) -> Vec<&str> {
        self.funcs.iter().filter(|f| f.is_entry && !f.external).map(|f| f.name.as_str()).collect()
    }

    pub(crate) fn entry(&self, entry: &str) -> Result<&Function, EmuError> {
        self.funcs.iter().find(|f| f.is_entry && !f.external && f.name == entry).ok_or_else(|| {
            EmuError::launch(format!("no entry `{entry}` in module (entries: {})", self.entries().join(", ")))
        })
    }

    pub(crate) fn line_text(&self, line: u32) -> &str {
        self.lines.get((line as usize).wrapping_sub(1)).map(|s| s.as_str()).unwrap_or("")
    }
}

/// The type of one kernel parameter.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ParamType {
    /// The declared PTX type (`.u64`, `.f32`, `.b8` for byte arrays, ...).
    pub ty: Ty,
    /// Size in bytes (arrays and structs: the whole parameter).
    pub bytes: u32,
    /// Offset in the parameter space (aligned as declared: `.align 64` for a tensor map).
    pub offset: u32,
    /// Declared with `.ptr` (a pointer to global memory, as Triton marks its pointer arguments).
    pub is_pointer: bool,
}

impl ParamType {
    /// A short name: `u32`, `s64`, `f32`, `b64`, `ptr`, or `b8[16]` for byte arrays.
    pub fn name(&self) -> String {
        if self.is_pointer {
            return "ptr".into();
        }
        let t = format!("{:?}", self.ty).to_ascii_lowercase();
        if self.bytes != self.ty.bytes() {
            format!("{t}[{}]", self.bytes / self.ty.bytes().max(1))
        } else {
            t
        }
    }

    pub fn is_float(&self) -> bool {
        self.ty.is_float()
    }

    pub fn is_signed(&self) -> bool {
        self.ty.is_signed()
    }
}

fn init_bytes(v: &RawVar) -> Result<Vec<u8>, String> {
    let size = var_size(v);
    let n_elems = v.elems.unwrap_or(1).saturating_mul(v.vec as u64);
    let mut n_elems = n_elems;
    if v.elems == Some(0) {
        // `x[] = {...}`: the initializer gives the length.
        n_elems = v.init.len() as u64;
    }
    let esz = v.ty.bytes() as u64;
    let total = if v.elems == Some(0) { n_elems.saturating_mul(esz) } else { size };
    if total > (1 << 28) {
        return Err("global variable too large".into());
    }
    let mut data = vec![0u8; total as usize];
    if v.init.len() as u64 > n_elems {
        return Err("too many initializers".into());
    }
    for (i, op) in v.init.iter().enumerate() {
        let bits = match op {
            RawOp::Num { text, neg } => {
                let lit = literal::parse_lit(text, *neg).ok_or_else(|| format!("bad literal `{text}`"))?;
                literal::lit_bits(lit, v.ty)
            }
            _ => return Err("unsupported initializer (only numbers are supported)".into()),
        };
        let at = i * esz as usize;
        let n = (esz as usize).min(8);
        data[at..at + n].copy_from_slice(&bits.to_le_bytes()[..n]);
    }
    Ok(data)
}

fn build_function(
    f: &RawFunc,
    msyms: &HashMap<String, Sym>,
    local_top: &mut u64,
    lines: &[&str],
) -> Result<Function, EmuError> {
    let line_text = |l: u32| lines.get((l as usize).wrapping_sub(1)).copied().unwrap_or("");
    let mut syms = msyms.clone();
    let mut params = Vec::new();
    let mut rets = Vec::new();
    let mut poff: u64 = 0;
    for p in &f.params {
        let size = var_size(p);
        let align = var_align(p).max(1);
        let offset = if f.is_entry {
            let at = align_up(poff, align);
            poff = at.saturating_add(size);
            syms.insert(p.name.clone(), Sym::KParam(at as u32));
            at
        } else {
            let at = align_up(*local_top, align.max(8));
            *local_top = at.saturating_add(size);
            syms.insert(p.name.clone(), Sym::Local(at as u32));
            at
        };
        params.push(ParamDecl {
            name: p.name.clone(),
            ty: p.ty,
            size: size as u32,
            align: align as u32,
            is_ptr: p.is_ptr,
            offset: offset as u32,
        });
    }
    for p in &f.rets {
        let size = var_size(p);
        let at = align_up(*local_top, var_align(p).max(8));
        *local_top = at.saturating_add(size);
        syms.insert(p.name.clone(), Sym::Local(at as u32));
        rets.push(ParamDecl {
            name: p.name.clone(),
            ty: p.ty,
            size: size as u32,
            align: var_align(p) as u32,
            is_ptr: false,
            offset: at as u32,
        });
    }
    if poff > 32 * 1024 || params.iter().chain(&rets).any(|p| p.size > 32 * 1024) {
        return Err(EmuError::parse(f.line, line_text(f.line), "parameters larger than 32 KiB"));
    }
    let Some(body) = &f.body else {
        return Ok(Function {
            name: f.name.clone(),
            is_entry: f.is_entry,
            params,
            rets,
            nregs: 0,
            instrs: Vec::new(),
            line: f.line,
            external: true,
        });
    };
    // Registers, body variables and labels first, so uses may precede declarations.
    let mut regs: HashMap<String, (u32, u32)> = HashMap::new();
    let mut nregs: u32 = 0;
    let mut pred_regs: std::collections::HashSet<u32> = std::collections::HashSet::new();
    let mut labels: HashMap<String, u32> = HashMap::new();
    let mut n_instr = 0u32;
    for s in body {
        match s {
            RawStmt::Var(v) if v.is_reg => {
                let per = v.vec.max(1);
                if nregs as u64 + v.range.unwrap_or(1) as u64 * per as u64 > MAX_REGS as u64 {
                    return Err(EmuError::parse(v.line, line_text(v.line), "too many registers"));
                }
                let is_pred = v.ty == Ty::Pred;
                if let Some(n) = v.range {
                    for i in 0..n {
                        regs.insert(format!("{}{}", v.name, i), (nregs, per));
                        if is_pred {
                            pred_regs.insert(nregs);
                        }
                        nregs = nregs.saturating_add(per);
                    }
                } else {
                    regs.insert(v.name.clone(), (nregs, per));
                    if is_pred {
                        pred_regs.insert(nregs);
                    }
                    nregs = nregs.saturating_add(per);
                }
            }
            RawStmt::Var(v) => match v.space {
                Some(Space::Local) | Some(Space::Param) => {
                    let at = align_up(*local_top, var_align(v).max(1));
                    *local_top = at.saturating_add(var_size(v));
                    syms.insert(v.name.clone(), Sym::Local(at as u32));
                }
                Some(Space::Shared) => {}
                _ => {
                    return Err(EmuError::parse(v.line, line_text(v.line), "unsupported declaration in function body"))
                }
            },
            RawStmt::Label(name) => {
                labels.insert(name.clone(), n_instr);
            }
            RawStmt::Instr { .. } => n_instr += 1,
        }
    }
    let ctx = decode::Ctx { regs: &regs, pred_regs: &pred_regs, syms: &syms, labels: &labels, is_entry: f.is_entry };
    let mut instrs = Vec::with_capacity(n_instr as usize);
    for s in body {
        if let RawStmt::Instr { guard, opcode, ops, line } = s {
            let ins = decode::decode(&ctx, guard.as_ref(), opcode, ops, *line).map_err(|e| {
                if e.line.is_none() {
                    e.at_line(*line, line_text(*line))
                } else {
                    e
                }
            })?;
            instrs.push(ins);
        }
    }
    crate::cfg::assign_reconvergence(&mut instrs);
    Ok(Function {
        name: f.name.clone(),
        is_entry: f.is_entry,
        params,
        rets,
        nregs,
        instrs,
        line: f.line,
        external: false,
    })
}
