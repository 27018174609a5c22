//! First pass: tokens to a raw tree of declarations and statements (names not yet resolved).

use super::lexer::{Tok, Token};
use crate::error::EmuError;
use crate::ir::{Space, Ty};

#[derive(Clone, Debug, PartialEq)]
pub enum RawOp {
    Name(String),
    Num {
        text: String,
        neg: bool,
    },
    Vec(Vec<RawOp>),
    /// `[base + off]`: base name (register or symbol), literal offsets summed.
    Addr {
        base: Option<String>,
        off: i64,
    },
    List(Vec<RawOp>),
    Not(String),
    /// `%p|%q`: setp's second destination.
    Pair(String, String),
    /// `sym+off` outside brackets.
    SymOff(String, i64),
    /// `[base + off, {coordinates}]`: a tensor map and the coordinates of a box (tensor copies).
    TensorAddr {
        base: Option<String>,
        off: i64,
        coords: Vec<RawOp>,
    },
}

/// A variable declaration (`.reg`, `.shared`, `.local`, `.param`, `.global`, `.const`).
#[derive(Clone, Debug)]
pub struct RawVar {
    pub space: Option<Space>,
    pub is_reg: bool,
    pub ty: Ty,
    /// `.v2`/`.v4` of a register declaration.
    pub vec: u32,
    pub align: u32,
    pub name: String,
    /// `%r<N>`: N registers named `%r0..%r{N-1}`.
    pub range: Option<u32>,
    /// Array dimensions multiplied (`x[4][2]` → 8); `Some(0)` for `x[]`.
    pub elems: Option<u64>,
    pub init: Vec<RawOp>,
    pub external: bool,
    pub line: u32,
    pub is_ptr: bool,
}

#[derive(Clone, Debug)]
pub enum RawStmt {
    Label(String),
    Instr { guard: Option<(String, bool)>, opcode: String, ops: Vec<RawOp>, line: u32 },
    Var(RawVar),
}

#[derive(Clone, Debug)]
pub struct RawFunc {
    pub name: String,
    pub is_entry: bool,
    pub rets: Vec<RawVar>,
    pub params: Vec<RawVar>,
    pub body: Option<Vec<RawStmt>>,
    pub line: u32,
}

#[derive(Default)]
pub struct RawModule {
    pub funcs: Vec<RawFunc>,
    pub vars: Vec<RawVar>,
}

pub struct Cursor<'a> {
    toks: &'a [Token],
    pos: usize,
    lines: &'a [&'a str],
}

impl<'a> Cursor<'a> {
    pub fn new(toks: &'a [Token], lines: &'a [&'a str]) -> Self {
        Cursor { toks, pos: 0, lines }
    }

    fn peek(&self) -> Option<&'a Tok> {
        self.toks.get(self.pos).map(|t| &t.tok)
    }

    fn peek_at(&self, k: usize) -> Option<&'a Tok> {
        self.toks.get(self.pos + k).map(|t| &t.tok)
    }

    fn line(&self) -> u32 {
        self.toks.get(self.pos).or(self.toks.last()).map(|t| t.line).unwrap_or(1)
    }

    fn err(&self, msg: impl Into<String>) -> EmuError {
        let l = self.line();
        EmuError::parse(l, self.lines.get(l as usize - 1).copied().unwrap_or(""), msg)
    }

    fn next(&mut self) -> Result<&'a Tok, EmuError> {
        let t = self.toks.get(self.pos).map(|t| &t.tok).ok_or_else(|| self.err("unexpected end of input"))?;
        self.pos += 1;
        Ok(t)
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(&Tok::Punct(c)) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: char) -> Result<(), EmuError> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.err(format!("expected `{c}`, found {}", self.describe())))
        }
    }

    fn describe(&self) -> String {
        match self.peek() {
            None => "end of input".into(),
            Some(Tok::Ident(s)) | Some(Tok::Num(s)) => format!("`{s}`"),
            Some(Tok::Str(s)) => format!("\"{s}\""),
            Some(Tok::Punct(c)) => format!("`{c}`"),
            Some(Tok::Mark(id)) => format!("marker {id}"),
        }
    }

    fn ident(&mut self) -> Result<&'a str, EmuError> {
        match self.peek() {
            Some(Tok::Ident(s)) => {
                self.pos += 1;
                Ok(s)
            }
            _ => Err(self.err(format!("expected a name, found {}", self.describe()))),
        }
    }

    fn number(&mut self) -> Result<u64, EmuError> {
        match self.peek() {
            Some(Tok::Num(s)) => {
                self.pos += 1;
                match super::literal::parse_lit(s, false) {
                    Some(super::literal::Lit::Int(v)) => Ok(v),
                    _ => Err(self.err(format!("expected an integer, found `{s}`"))),
                }
            }
            _ => Err(self.err(format!("expected an integer, found {}", self.describe()))),
        }
    }

    fn skip_to_semicolon(&mut self) {
        while let Some(t) = self.peek() {
            self.pos += 1;
            if t == &Tok::Punct(';') {
                break;
            }
        }
    }
}

fn space_of(s: &str) -> Option<Space> {
    Some(match s {
        ".global" => Space::Global,
        ".shared" | ".shared::cta" => Space::Shared,
        ".local" => Space::Local,
        ".const" => Space::Const,
        ".param" => Space::Param,
        _ => return None,
    })
}

pub fn parse_module(c: &mut Cursor) -> Result<RawModule, EmuError> {
    let mut m = RawModule::default();
    while let Some(t) = c.peek() {
        let line = c.line();
        match t {
            Tok::Ident(s) if s == ".visible" || s == ".weak" || s == ".common" => {
                c.pos += 1;
            }
            Tok::Ident(s) if s == ".pragma" => c.skip_to_semicolon(),
            // A marker outside a function body marks nothing.
            Tok::Mark(_) => c.pos += 1,
            Tok::Ident(s) if s == ".extern" => {
                c.pos += 1;
                match c.peek() {
                    Some(Tok::Ident(n)) if n == ".func" || n == ".entry" => {
                        let mut f = parse_func(c, line)?;
                        f.body = None;
                        m.funcs.push(f);
                    }
                    _ => {
                        for mut v in parse_var(c, false)? {
                            v.external = true;
                            m.vars.push(v);
                        }
                    }
                }
            }
            Tok::Ident(s) if s == ".entry" || s == ".func" => {
                let f = parse_func(c, line)?;
                m.funcs.push(f);
            }
            Tok::Ident(s) if space_of(s).is_some() => {
                m.vars.extend(parse_var(c, false)?);
            }
            _ => return Err(c.err(format!("unexpected {} at module level", c.describe()))),
        }
    }
    Ok(m)
}

fn parse_param_list(c: &mut Cursor) -> Result<Vec<RawVar>, EmuError> {
    let mut out = Vec::new();
    c.expect('(')?;
    if c.eat(')') {
        return Ok(out);
    }
    loop {
        out.extend(parse_var(c, true)?);
        if c.eat(')') {
            break;
        }
        c.expect(',')?;
    }
    Ok(out)
}

fn parse_func(c: &mut Cursor, line: u32) -> Result<RawFunc, EmuError> {
    let is_entry = c.ident()? == ".entry";
    let mut rets = Vec::new();
    if !is_entry && c.peek() == Some(&Tok::Punct('(')) {
        rets = parse_param_list(c)?;
    }
    let name = c.ident()?.to_string();
    let params = if c.peek() == Some(&Tok::Punct('(')) { parse_param_list(c)? } else { Vec::new() };
    // Performance directives other than the line-based ones (`.noreturn`, `.attribute(...)`).
    loop {
        match c.peek() {
            Some(Tok::Ident(s)) if s == ".noreturn" => c.pos += 1,
            Some(Tok::Ident(s)) if s == ".attribute" => {
                c.pos += 1;
                c.expect('(')?;
                while !c.eat(')') {
                    c.next()?;
                }
            }
            _ => break,
        }
    }
    if c.eat(';') {
        return Ok(RawFunc { name, is_entry, rets, params, body: None, line });
    }
    c.expect('{')?;
    let body = parse_body(c)?;
    Ok(RawFunc { name, is_entry, rets, params, body: Some(body), line })
}

/// A variable declaration, starting at its state space (`.reg`, `.shared`, `.param`, ...).
/// `in_list`: a parameter in a signature (no trailing `;`).
fn parse_var(c: &mut Cursor, in_list: bool) -> Result<Vec<RawVar>, EmuError> {
    let line = c.line();
    let first = c.ident()?;
    let (space, is_reg) = if first == ".reg" {
        (None, true)
    } else {
        (Some(space_of(first).ok_or_else(|| c.err(format!("unknown state space `{first}`")))?), false)
    };
    let mut v = RawVar {
        space,
        is_reg,
        ty: Ty::B8,
        vec: 1,
        align: 0,
        name: String::new(),
        range: None,
        elems: None,
        init: Vec::new(),
        external: false,
        line,
        is_ptr: false,
    };
    let mut have_ty = false;
    loop {
        let w = c.ident()?;
        if let Some(t) = w.strip_prefix('.') {
            match t {
                "align" => v.align = c.number()? as u32,
                "v2" => v.vec = 2,
                "v4" => v.vec = 4,
                "v8" => v.vec = 8,
                "ptr" => v.is_ptr = true,
                "global" | "shared" | "local" | "const" => {}
                _ => {
                    v.ty = Ty::parse(t).ok_or_else(|| c.err(format!("unknown type or attribute `{w}`")))?;
                    have_ty = true;
                }
            }
            continue;
        }
        if !have_ty {
            return Err(c.err(format!("declaration of `{w}` has no type")));
        }
        let mut var = v.clone();
        var.name = w.to_string();
        if c.eat('<') {
            var.range = Some(c.number()? as u32);
            c.expect('>')?;
        }
        while c.eat('[') {
            let n = if c.peek() == Some(&Tok::Punct(']')) { 0 } else { c.number()? };
            c.expect(']')?;
            var.elems = Some(var.elems.unwrap_or(1).saturating_mul(n));
        }
        if c.eat('=') {
            var.init = if c.peek() == Some(&Tok::Punct('{')) {
                match parse_operand(c)? {
                    RawOp::Vec(items) => flatten(items),
                    o => vec![o],
                }
            } else {
                vec![parse_operand(c)?]
            };
        }
        if in_list {
            return Ok(vec![var]);
        }
        // `.reg .b32 %a, %b<4>;` declares several names with one type.
        let mut all = vec![var];
        while c.eat(',') {
            let mut x = v.clone();
            x.name = c.ident()?.to_string();
            if c.eat('<') {
                x.range = Some(c.number()? as u32);
                c.expect('>')?;
            }
            all.push(x);
        }
        c.expect(';')?;
        return Ok(all);
    }
}

/// The opcode a marker comment becomes (not valid PTX, so no instruction can spell it).
pub const MARK_OPCODE: &str = "//@trident.mark";

fn flatten(items: Vec<RawOp>) -> Vec<RawOp> {
    let mut out = Vec::new();
    for i in items {
        match i {
            RawOp::Vec(v) => out.extend(flatten(v)),
            o => out.push(o),
        }
    }
    out
}

fn parse_body(c: &mut Cursor) -> Result<Vec<RawStmt>, EmuError> {
    let mut out = Vec::new();
    let mut depth = 1;
    while depth > 0 {
        let line = c.line();
        match c.peek() {
            None => return Err(c.err("unterminated function body")),
            Some(Tok::Punct('{')) => {
                c.pos += 1;
                depth += 1;
            }
            Some(Tok::Punct('}')) => {
                c.pos += 1;
                depth -= 1;
            }
            Some(Tok::Punct(';')) => c.pos += 1,
            Some(Tok::Mark(id)) => {
                c.pos += 1;
                out.push(RawStmt::Instr {
                    guard: None,
                    opcode: MARK_OPCODE.into(),
                    ops: vec![RawOp::Num { text: id.to_string(), neg: false }],
                    line,
                });
            }
            Some(Tok::Ident(s)) if s == ".pragma" => c.skip_to_semicolon(),
            Some(Tok::Ident(s)) if s == ".reg" || space_of(s).is_some() => {
                out.extend(parse_var(c, false)?.into_iter().map(RawStmt::Var));
            }
            Some(Tok::Ident(s)) if c.peek_at(1) == Some(&Tok::Punct(':')) => {
                out.push(RawStmt::Label(s.clone()));
                c.pos += 2;
            }
            Some(Tok::Punct('@')) => {
                c.pos += 1;
                let neg = c.eat('!');
                let g = c.ident()?.to_string();
                let opcode = c.ident()?.to_string();
                let ops = parse_operands(c)?;
                out.push(RawStmt::Instr { guard: Some((g, neg)), opcode, ops, line });
            }
            Some(Tok::Ident(s)) => {
                c.pos += 1;
                let opcode = s.clone();
                let ops = parse_operands(c)?;
                out.push(RawStmt::Instr { guard: None, opcode, ops, line });
            }
            Some(_) => return Err(c.err(format!("unexpected {} in function body", c.describe()))),
        }
    }
    Ok(out)
}

fn parse_operands(c: &mut Cursor) -> Result<Vec<RawOp>, EmuError> {
    let mut ops = Vec::new();
    if c.eat(';') {
        return Ok(ops);
    }
    loop {
        ops.push(parse_operand(c)?);
        if c.eat(';') {
            return Ok(ops);
        }
        if !c.eat(',') {
            return Err(c.err(format!("expected `,` or `;` between operands, found {}", c.describe())));
        }
    }
}

fn parse_operand(c: &mut Cursor) -> Result<RawOp, EmuError> {
    parse_operand_at(c, 0)
}

fn parse_operand_at(c: &mut Cursor, depth: u32) -> Result<RawOp, EmuError> {
    if depth > 8 {
        return Err(c.err("operands nested too deeply"));
    }
    match c.next()? {
        Tok::Punct('{') => {
            let mut items = Vec::new();
            if c.eat('}') {
                return Ok(RawOp::Vec(items));
            }
            loop {
                items.push(parse_operand_at(c, depth + 1)?);
                if c.eat('}') {
                    return Ok(RawOp::Vec(items));
                }
                c.expect(',')?;
            }
        }
        Tok::Punct('(') => {
            let mut items = Vec::new();
            if c.eat(')') {
                return Ok(RawOp::List(items));
            }
            loop {
                items.push(parse_operand_at(c, depth + 1)?);
                if c.eat(')') {
                    return Ok(RawOp::List(items));
                }
                c.expect(',')?;
            }
        }
        Tok::Punct('[') => {
            let mut base = None;
            let mut off: i64 = 0;
            let mut sign = 1i64;
            loop {
                match c.next()? {
                    Tok::Ident(s) if base.is_none() => base = Some(s.clone()),
                    Tok::Num(s) => {
                        let v = match super::literal::parse_lit(s, false) {
                            Some(super::literal::Lit::Int(v)) => v as i64,
                            _ => return Err(c.err(format!("bad address offset `{s}`"))),
                        };
                        off = off.wrapping_add(sign.wrapping_mul(v));
                        sign = 1;
                    }
                    Tok::Punct('+') => {}
                    Tok::Punct('-') => sign = -sign,
                    Tok::Punct(']') => break,
                    Tok::Punct(',') => {
                        // `[tensorMap, {c0, ...}]`
                        let coords = match parse_operand_at(c, depth + 1)? {
                            RawOp::Vec(items) => items,
                            _ => return Err(c.err("expected `{coordinates}` after the tensor map in `[map, {...}]`")),
                        };
                        c.expect(']')?;
                        return Ok(RawOp::TensorAddr { base, off, coords });
                    }
                    _ => return Err(c.err("malformed address")),
                }
            }
            Ok(RawOp::Addr { base, off })
        }
        Tok::Punct('!') => Ok(RawOp::Not(c.ident()?.to_string())),
        Tok::Punct('-') => match c.next()? {
            Tok::Num(s) => Ok(RawOp::Num { text: s.clone(), neg: true }),
            _ => Err(c.err("expected a number after `-`")),
        },
        Tok::Num(s) => Ok(RawOp::Num { text: s.clone(), neg: false }),
        Tok::Ident(s) => {
            if c.eat('|') {
                let q = c.ident()?;
                return Ok(RawOp::Pair(s.clone(), q.to_string()));
            }
            if c.peek() == Some(&Tok::Punct('+')) {
                if let Some(Tok::Num(n)) = c.peek_at(1) {
                    if let Some(super::literal::Lit::Int(v)) = super::literal::parse_lit(n, false) {
                        c.pos += 2;
                        return Ok(RawOp::SymOff(s.clone(), v as i64));
                    }
                }
            }
            Ok(RawOp::Name(s.clone()))
        }
        _ => {
            c.pos -= 1;
            Err(c.err(format!("unexpected {} in operand", c.describe())))
        }
    }
}
