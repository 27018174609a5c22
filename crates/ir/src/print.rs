//! The text form of tile IR: printing.
//!
//! ```text
//! kernel @add(%x: ptr<f32> {divisibility = 16}, %n: i32) {
//!   %0 = program_id [axis = 0] : i32
//!   %1, %2 = for %lb, %ub, %st, %a, %b {
//!   ^(%3: i32, %4: f32, %5: f32):
//!     yield %4, %5
//!   } : f32, f32
//!   return
//! }
//! ```
//!
//! Parameters print with their source names, every other value as `%N` numbered
//! in print order. Operand types are not printed (they follow from the
//! definitions); result types follow a `:`. Attributes come from
//! [`OpKind::attrs`], so the printer knows nothing about individual ops;
//! discardable attributes ([`crate::AttrMap`]) follow them in braces
//! (`%3 = convert_layout %2 {smem_offset = 0, smem_size = 512} : ...`), and a
//! function's follow its signature (`kernel @k(...) attributes {smem_total = 512} {`). The
//! grammar is documented in `parse.rs`, which reads this form back.
//!
//! The printer never panics, even on IR that fails verification: dangling
//! references print as `%!vN`, which the parser rejects.

use crate::attr::Attr;
use crate::func::{Block, Function, Module, Op, Value};
use crate::layout::Layout;
use crate::loc::Loc;
use std::collections::HashSet;
use std::fmt::{self, Write};

/// How to print.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct PrintOptions {
    /// Append ` loc(LINE:COL)` (file 0) or ` loc(FILE:LINE:COL)` to every op with a known location,
    /// and list the module's source files in a comment header.
    pub locs: bool,
}

impl PrintOptions {
    pub fn with_locs() -> PrintOptions {
        PrintOptions { locs: true }
    }
}

/// Prints every function of a module, separated by blank lines.
pub fn print_module(m: &Module, opts: &PrintOptions) -> String {
    let mut out = String::new();
    if opts.locs {
        for (i, file) in m.files.iter().enumerate() {
            let _ = writeln!(out, "// file {i}: {}", file.path);
        }
    }
    for (i, f) in m.funcs.iter().enumerate() {
        if i > 0 || (opts.locs && !m.files.is_empty()) {
            out.push('\n');
        }
        out.push_str(&print_function(f, opts));
    }
    out
}

pub fn print_function(f: &Function, opts: &PrintOptions) -> String {
    let names = Names::new(f);
    let mut p = Printer { f, names: &names, opts: *opts, out: String::new(), visited: HashSet::new() };
    p.function();
    p.out
}

/// Prints one op (with its regions) using the value names of a whole-function print,
/// so that the text matches what a dump of the function shows.
pub fn print_op(f: &Function, op: Op, opts: &PrintOptions) -> String {
    let names = Names::new(f);
    print_op_named(f, &names, op, opts)
}

/// [`print_op`] with names computed once (for printing many ops of one function).
pub fn print_op_named(f: &Function, names: &Names, op: Op, opts: &PrintOptions) -> String {
    let mut p = Printer { f, names, opts: *opts, out: String::new(), visited: HashSet::new() };
    p.op(op, 0);
    p.out
}

impl fmt::Display for Module {
    /// The module without locations (see [`print_module`] for options).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&print_module(self, &PrintOptions::default()))
    }
}

impl fmt::Display for Function {
    /// The function without locations (see [`print_function`] for options).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&print_function(self, &PrintOptions::default()))
    }
}

/// Whether `s` can be printed bare after `%` or `@`: letters, digits, `_`, `.`, `$`.
pub(crate) fn is_bare_name(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'$')
}

/// The printed name of every value of a function: parameters by source name, the rest numbered
/// in print order.
pub struct Names {
    names: cranelift_entity::SecondaryMap<Value, Option<String>>,
}

impl Names {
    pub fn new(f: &Function) -> Names {
        let mut n = Names { names: cranelift_entity::SecondaryMap::new() };
        let mut taken: HashSet<String> = HashSet::new();
        for (i, p) in f.params.iter().enumerate() {
            if !f.values.is_valid(p.value) || n.names[p.value].is_some() {
                continue;
            }
            // Source names are kept unless they would read as a number or clash.
            let ok = is_bare_name(&p.name) && !p.name.bytes().all(|b| b.is_ascii_digit()) && !taken.contains(&p.name);
            let mut name = if ok { p.name.clone() } else { format!("arg{i}") };
            while taken.contains(&name) {
                name.push('_');
            }
            taken.insert(name.clone());
            n.names[p.value] = Some(name);
        }
        let mut next = 0u32;
        let mut seen = HashSet::new();
        if f.blocks.is_valid(f.body) {
            // Body arguments that are not parameters (invalid IR) still get names.
            for &a in &f.blocks[f.body].args {
                n.assign(f, a, &mut next);
            }
            n.walk(f, f.body, &mut next, &mut seen);
        }
        n
    }

    fn assign(&mut self, f: &Function, v: Value, next: &mut u32) {
        if f.values.is_valid(v) && self.names[v].is_none() {
            self.names[v] = Some(next.to_string());
            *next += 1;
        }
    }

    fn walk(&mut self, f: &Function, b: Block, next: &mut u32, seen: &mut HashSet<Block>) {
        if !seen.insert(b) {
            return;
        }
        for &op in &f.blocks[b].ops {
            let Some(data) = f.ops.get(op) else { continue };
            for &r in &data.results {
                self.assign(f, r, next);
            }
            for &r in &data.regions {
                if f.blocks.is_valid(r) {
                    for &a in &f.blocks[r].args {
                        self.assign(f, a, next);
                    }
                    self.walk(f, r, next, seen);
                }
            }
        }
    }

    /// `%name` of a value, or `%!vN` for one that is not part of the function's printed form.
    pub fn get(&self, v: Value) -> String {
        match self.names.get(v).and_then(|n| n.as_ref()) {
            Some(n) => format!("%{n}"),
            None => format!("%!{v}"),
        }
    }
}

struct Printer<'a> {
    f: &'a Function,
    names: &'a Names,
    opts: PrintOptions,
    out: String,
    /// Blocks already printed: malformed IR may nest a block in itself.
    visited: HashSet<Block>,
}

fn indent(out: &mut String, n: usize) {
    for _ in 0..n {
        out.push(' ');
    }
}

/// Writes a layout definition's right-hand side: `blocked [size_per_thread = [1, 4], ...]`.
pub(crate) fn write_layout(out: &mut String, l: &Layout) {
    fn dims(d: &[u32]) -> String {
        Attr::Ints(d.iter().map(|&x| x as i64).collect()).to_string()
    }
    let _ = match l {
        Layout::Blocked { size_per_thread, threads_per_warp, warps_per_cta, order } => write!(
            out,
            "blocked [size_per_thread = {}, threads_per_warp = {}, warps_per_cta = {}, order = {}]",
            dims(size_per_thread),
            dims(threads_per_warp),
            dims(warps_per_cta),
            dims(order)
        ),
        Layout::Slice { dim, parent } => write!(out, "slice [dim = {dim}, parent = {parent}]"),
        Layout::Mma { version, warps_per_cta, instr_shape } => write!(
            out,
            "mma [version = {version}, warps_per_cta = {}, instr_shape = {}]",
            dims(warps_per_cta),
            dims(instr_shape)
        ),
        Layout::DotOperand { op_idx, parent, k_width } => {
            write!(out, "dot_operand [op_idx = {op_idx}, parent = {parent}, k_width = {k_width}]")
        }
        Layout::Shared { vec, per_phase, max_phase, order } => write!(
            out,
            "shared [vec = {vec}, per_phase = {per_phase}, max_phase = {max_phase}, order = {}]",
            dims(order)
        ),
        Layout::Linear { shape, reg, lane, warp } => {
            let bases = |b: &[u64]| Attr::Ints(b.iter().map(|&x| x as i64).collect()).to_string();
            write!(
                out,
                "linear [shape = {}, reg = {}, lane = {}, warp = {}]",
                dims(shape),
                bases(reg),
                bases(lane),
                bases(warp)
            )
        }
    };
}

impl Printer<'_> {
    fn loc(&mut self, loc: Loc) {
        if self.opts.locs && !loc.is_unknown() {
            if loc.file == 0 {
                let _ = write!(self.out, " loc({}:{})", loc.line, loc.col);
            } else {
                let _ = write!(self.out, " loc({}:{}:{})", loc.file, loc.line, loc.col);
            }
        }
    }

    fn value(&mut self, v: Value) {
        let n = self.names.get(v);
        self.out.push_str(&n);
    }

    fn ty_of(&mut self, v: Value) {
        match self.f.values.get(v) {
            Some(d) => {
                let _ = write!(self.out, "{}", d.ty);
            }
            None => self.out.push_str("<invalid>"),
        }
    }

    fn function(&mut self) {
        let f = self.f;
        self.out.push_str(if f.kernel { "kernel @" } else { "func @" });
        if is_bare_name(&f.name) {
            self.out.push_str(&f.name);
        } else {
            let _ = write!(self.out, "{:?}", f.name);
        }
        self.out.push('(');
        for (i, p) in f.params.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.value(p.value);
            self.out.push_str(": ");
            self.ty_of(p.value);
            if let Some(d) = p.attrs.divisibility {
                let _ = write!(self.out, " {{divisibility = {d}}}");
            }
        }
        self.out.push(')');
        if !f.result_types.is_empty() {
            self.out.push_str(" -> (");
            for (i, t) in f.result_types.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                let _ = write!(self.out, "{t}");
            }
            self.out.push(')');
        }
        if !f.attrs.is_empty() {
            let _ = write!(self.out, " attributes {}", f.attrs);
        }
        self.loc(f.loc);
        self.out.push_str(" {\n");
        for (id, l) in f.layouts.iter() {
            let _ = write!(self.out, "  {id} = ");
            write_layout(&mut self.out, l);
            self.out.push('\n');
        }
        if f.blocks.is_valid(f.body) {
            self.visited.insert(f.body);
            let ops = f.blocks[f.body].ops.clone();
            for op in ops {
                self.op(op, 2);
            }
        }
        self.out.push_str("}\n");
    }

    /// One op at indentation `ind`, ending with a newline.
    fn op(&mut self, op: Op, ind: usize) {
        indent(&mut self.out, ind);
        let Some(data) = self.f.ops.get(op) else {
            let _ = writeln!(self.out, "<invalid {op}>");
            return;
        };
        if !data.results.is_empty() {
            for (i, &r) in data.results.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.value(r);
            }
            self.out.push_str(" = ");
        }
        self.out.push_str(data.kind.name());
        for (i, &o) in data.operands.iter().enumerate() {
            self.out.push_str(if i > 0 { ", " } else { " " });
            self.value(o);
        }
        let attrs = data.kind.attrs();
        if !attrs.is_empty() {
            self.out.push_str(" [");
            for (i, (k, v)) in attrs.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                let _ = write!(self.out, "{k} = {v}");
            }
            self.out.push(']');
        }
        if !data.attrs.is_empty() {
            let _ = write!(self.out, " {}", data.attrs);
        }
        for &r in &data.regions {
            self.out.push_str(" {\n");
            self.region(r, ind);
            indent(&mut self.out, ind);
            self.out.push('}');
        }
        if !data.results.is_empty() {
            self.out.push_str(" : ");
            for (i, &r) in data.results.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.ty_of(r);
            }
        }
        self.loc(data.loc);
        self.out.push('\n');
    }

    /// The inside of a region: `^(args):` at the op's indentation, ops indented by two more.
    fn region(&mut self, b: Block, ind: usize) {
        if !self.f.blocks.is_valid(b) || !self.visited.insert(b) {
            indent(&mut self.out, ind + 2);
            let _ = writeln!(self.out, "<invalid or repeated block {b}>");
            return;
        }
        let args = self.f.blocks[b].args.clone();
        if !args.is_empty() {
            indent(&mut self.out, ind);
            self.out.push_str("^(");
            for (i, &a) in args.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.value(a);
                self.out.push_str(": ");
                self.ty_of(a);
            }
            self.out.push_str("):\n");
        }
        let ops = self.f.blocks[b].ops.clone();
        for op in ops {
            self.op(op, ind + 2);
        }
    }
}
