//! The text form of tile IR: parsing what `print.rs` writes (and what people write by hand).
//!
//! Grammar (`//` starts a comment to the end of the line; whitespace is free except
//! that an op's operands start on the line of its name):
//!
//! ```text
//! module    := function*
//! function  := ("kernel" | "func") "@" fname "(" [param ("," param)*] ")"
//!              ["->" "(" [type ("," type)*] ")"] ["attributes" attr-dict] [loc]
//!              "{" layout_def* op* "}"
//! fname     := bare-name | string
//! param     := value ":" type ["{" "divisibility" "=" int "}"]
//! value     := "%" bare-name                       bare-name: [A-Za-z0-9_.$]+
//! op        := [value ("," value)* "="] op-name [value ("," value)*]
//!              ["[" [attr ("," attr)*] "]"] [attr-dict] region* [":" type ("," type)*] [loc]
//! attr-dict := "{" [attr ("," attr)*] "}"          discardable attributes (see `AttrMap`);
//!              after an op's `[...]`, a `{` starts a dict when a word and `=` follow it
//! region    := "{" ["^" "(" [value ":" type ("," value ":" type)*] ")" ":"] op* "}"
//! attr      := key "=" attr-value
//! attr-value:= int | float | "true" | "false" | string | word | "[" [int ("," int)*] "]"
//!              float: 1.0, -2.5e-3, inf, -inf, nan, or 0x<16 hex digits> (the bits of an f64)
//! type      := dtype | "ptr" "<" dtype ["," ("global" | "shared")] ">"
//!            | "tensor" "<" (dim "x")* elem ["," layout-ref] ">"
//! elem      := dtype | "ptr" "<" ... ">"
//! dtype     := i1 | i8 | i16 | i32 | i64 | u8 | u16 | u32 | u64 | f8e4m3 | f8e5m2 | f16 | bf16 | f32 | f64
//! loc       := "loc" "(" line ":" col ")" | "loc" "(" file ":" line ":" col ")"
//! layout_def:= layout-ref "=" layout                layout-ref: "#L" int, defined in order from #L0
//! layout    := "blocked" "[" "size_per_thread" "=" ints "," "threads_per_warp" "=" ints ","
//!                            "warps_per_cta" "=" ints "," "order" "=" ints "]"
//!            | "slice" "[" "dim" "=" int "," "parent" "=" layout-ref "]"
//!            | "mma" "[" "version" "=" int "," "warps_per_cta" "=" ints "," "instr_shape" "=" ints "]"
//!            | "dot_operand" "[" "op_idx" "=" int "," "parent" "=" layout-ref "," "k_width" "=" int "]"
//!            | "shared" "[" "vec" "=" int "," "per_phase" "=" int "," "max_phase" "=" int "," "order" "=" ints "]"
//! ```
//!
//! Op names and attributes are those of [`OpKind::name`]/[`OpKind::attrs`]. Value names
//! are local to a function and defined once; a name maps to a fresh value, so numbering
//! need not be dense or ordered. Operand types come from the definitions. The parser
//! only checks what it needs to build the IR (names, counts of result names and types,
//! attributes); everything else is the verifier's job.
//!
//! Errors are [`Diagnostic`]s pointing into the text (file [`ParseOptions::file`]). The
//! parser never panics, whatever the input.

use crate::attr::{Attr, AttrMap};
use crate::diag::Diagnostic;
use crate::func::{Block, Function, Module, Value};
use crate::layout::{Dims, Layout, LayoutId};
use crate::loc::{FileId, Loc};
use crate::ops::OpKind;
use crate::types::{AddrSpace, Elem, Type};
use std::collections::HashMap;
use trident_core::DType;

/// How to parse.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ParseOptions {
    /// The file id that parse errors (and `text_locs`) refer to.
    pub file: FileId,
    /// Give ops without an explicit `loc(...)` their position in the IR text, so that
    /// verifier errors on hand-written IR point at the text.
    pub text_locs: bool,
}

impl Default for ParseOptions {
    fn default() -> ParseOptions {
        ParseOptions { file: FileId(0), text_locs: false }
    }
}

/// Parses a module (any number of functions).
pub fn parse_module(text: &str) -> Result<Module, Diagnostic> {
    parse_module_with(text, &ParseOptions::default())
}

pub fn parse_module_with(text: &str, opts: &ParseOptions) -> Result<Module, Diagnostic> {
    let mut p = Parser::new(text, *opts);
    let mut m = Module::default();
    loop {
        p.skip_ws();
        if p.at_end() {
            break;
        }
        m.funcs.push(p.function()?);
    }
    Ok(m)
}

/// Parses text holding exactly one function.
pub fn parse_function(text: &str) -> Result<Function, Diagnostic> {
    let mut p = Parser::new(text, ParseOptions::default());
    p.skip_ws();
    let f = p.function()?;
    p.skip_ws();
    if !p.at_end() {
        return Err(p.err_here("expected the end of the text after the function"));
    }
    Ok(f)
}

/// Parses a type such as `tensor<64x64xf16>` (layout references are not checked).
pub fn parse_type(text: &str) -> Result<Type, Diagnostic> {
    let mut p = Parser::new(text, ParseOptions::default());
    p.skip_ws();
    let t = p.ty()?;
    p.skip_ws();
    if !p.at_end() {
        return Err(p.err_here("expected the end of the type"));
    }
    Ok(t)
}

/// Deepest region nesting accepted (deeper input is an error rather than a stack overflow).
const MAX_DEPTH: usize = 200;

type PResult<T> = Result<T, Diagnostic>;

struct Parser<'a> {
    src: &'a str,
    bytes: &'a [u8],
    pos: usize,
    line_starts: Vec<usize>,
    opts: ParseOptions,
    depth: usize,
}

/// Per-function parsing state.
struct FnState {
    f: Function,
    names: HashMap<String, Value>,
    /// Layout references seen in types, checked once the table is known: (id, text position).
    layout_refs: Vec<(u32, usize)>,
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'$'
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Attributes an op accepts besides those its kind prints (the ones left out when at their default).
fn optional_attr_keys(op: &str) -> &'static [&'static str] {
    match op {
        "reshape" => &["can_reorder"],
        "cast" => &["kind", "rounding"],
        "load" => &["cache", "evict", "volatile"],
        "store" => &["cache", "evict"],
        "atomic_rmw" | "atomic_cas" => &["sem", "scope"],
        "dot" => &["precision", "max_num_imprecise_acc"],
        "scan" => &["reverse"],
        "print" => &["hex"],
        _ => &[],
    }
}

fn dtype_named(s: &str) -> Option<DType> {
    DType::ALL.iter().copied().find(|d| d.name() == s)
}

enum LayoutVal {
    Int(i64),
    Ints(Vec<i64>),
    Ref(u32),
}

impl<'a> Parser<'a> {
    fn new(src: &'a str, opts: ParseOptions) -> Parser<'a> {
        let mut line_starts = vec![0];
        for (i, b) in src.bytes().enumerate() {
            if b == b'\n' {
                line_starts.push(i + 1);
            }
        }
        Parser { src, bytes: src.as_bytes(), pos: 0, line_starts, opts, depth: 0 }
    }

    // ---- positions and errors ----

    fn loc_at(&self, pos: usize) -> Loc {
        let line = self.line_starts.partition_point(|&s| s <= pos).max(1);
        let col = pos - self.line_starts[line - 1] + 1;
        Loc { file: self.opts.file.0, line: line as u32, col: col as u32 }
    }

    fn err(&self, pos: usize, len: usize, msg: impl Into<String>) -> Diagnostic {
        Diagnostic::error(msg).at(self.loc_at(pos), len.max(1) as u32)
    }

    fn err_here(&self, msg: impl Into<String>) -> Diagnostic {
        let len = self.token_len();
        let found = if self.at_end() {
            "the end of the text".to_string()
        } else {
            format!("`{}`", &self.src[self.pos..self.pos + len])
        };
        self.err(self.pos, len, format!("{}, found {found}", msg.into()))
    }

    /// Length of the token at the current position, for carets.
    fn token_len(&self) -> usize {
        let rest = &self.bytes[self.pos.min(self.bytes.len())..];
        if rest.is_empty() {
            return 1;
        }
        let n = rest.iter().take_while(|&&b| is_name_byte(b)).count();
        if n > 0 {
            n
        } else {
            // One character, however many bytes it takes.
            self.src[self.pos..].chars().next().map_or(1, char::len_utf8)
        }
    }

    // ---- characters ----

    fn at_end(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn peek_at(&self, off: usize) -> Option<u8> {
        self.bytes.get(self.pos + off).copied()
    }

    fn skip_ws(&mut self) {
        loop {
            match self.peek() {
                Some(b' ' | b'\t' | b'\r' | b'\n') => self.pos += 1,
                Some(b'/') if self.peek_at(1) == Some(b'/') => {
                    while let Some(b) = self.peek() {
                        if b == b'\n' {
                            break;
                        }
                        self.pos += 1;
                    }
                }
                _ => break,
            }
        }
    }

    /// Skips spaces and tabs only, and says what comes next on this line.
    fn peek_same_line(&mut self) -> Option<u8> {
        while let Some(b' ' | b'\t') = self.peek() {
            self.pos += 1;
        }
        self.peek()
    }

    fn eat(&mut self, c: u8) -> bool {
        self.skip_ws();
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: u8) -> PResult<()> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.err_here(format!("expected `{}`", c as char)))
        }
    }

    fn eat_str(&mut self, s: &str) -> bool {
        self.skip_ws();
        if self.src[self.pos..].starts_with(s) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    /// Whether the next word (not a prefix of a longer word) is `w`.
    fn at_word(&mut self, w: &str) -> bool {
        self.skip_ws();
        self.src[self.pos..].starts_with(w) && !self.peek_at(w.len()).is_some_and(is_ident_byte)
    }

    // ---- tokens ----

    /// `[A-Za-z_][A-Za-z0-9_]*`
    fn ident(&mut self, what: &str) -> PResult<(String, usize)> {
        self.skip_ws();
        let start = self.pos;
        match self.peek() {
            Some(b) if b.is_ascii_alphabetic() || b == b'_' => {}
            _ => return Err(self.err_here(format!("expected {what}"))),
        }
        while self.peek().is_some_and(is_ident_byte) {
            self.pos += 1;
        }
        Ok((self.src[start..self.pos].to_string(), start))
    }

    /// `%name`; returns the name without `%` and its position.
    fn value_name(&mut self) -> PResult<(String, usize)> {
        self.skip_ws();
        let start = self.pos;
        if self.peek() != Some(b'%') {
            return Err(self.err_here("expected a value (`%name`)"));
        }
        self.pos += 1;
        let s = self.pos;
        while self.peek().is_some_and(is_name_byte) {
            self.pos += 1;
        }
        if self.pos == s {
            return Err(self.err(start, 1, "expected a value name after `%`"));
        }
        Ok((self.src[s..self.pos].to_string(), start))
    }

    /// Decimal digits as a u32.
    fn uint(&mut self, what: &str) -> PResult<u32> {
        self.skip_ws();
        let start = self.pos;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.pos += 1;
        }
        if start == self.pos {
            return Err(self.err_here(format!("expected {what}")));
        }
        self.src[start..self.pos]
            .parse::<u32>()
            .map_err(|_| self.err(start, self.pos - start, format!("{what} out of range")))
    }

    /// A signed integer (also accepting unsigned 64-bit values, stored wrapped).
    fn int(&mut self, what: &str) -> PResult<i64> {
        self.skip_ws();
        let start = self.pos;
        match self.number()? {
            Attr::Int(v) => Ok(v),
            _ => Err(self.err(start, self.pos - start, format!("expected {what} (an integer)"))),
        }
    }

    /// A number: an integer, or a float (with `.` or an exponent, `inf`, `nan`, or `0x` + f64 bits).
    fn number(&mut self) -> PResult<Attr> {
        self.skip_ws();
        let start = self.pos;
        let neg = self.peek() == Some(b'-');
        if neg {
            self.pos += 1;
        }
        let rest = &self.src[self.pos..];
        let word_end = |n: usize| !rest.as_bytes().get(n).is_some_and(|&b| is_ident_byte(b));
        if rest.starts_with("inf") && word_end(3) {
            self.pos += 3;
            return Ok(Attr::Float(if neg { f64::NEG_INFINITY } else { f64::INFINITY }));
        }
        if rest.starts_with("nan") && word_end(3) {
            self.pos += 3;
            return Ok(Attr::Float(if neg { -f64::NAN } else { f64::NAN }));
        }
        if !neg && (rest.starts_with("0x") || rest.starts_with("0X")) {
            self.pos += 2;
            let h = self.pos;
            while self.peek().is_some_and(|b| b.is_ascii_hexdigit()) {
                self.pos += 1;
            }
            let bits = u64::from_str_radix(&self.src[h..self.pos], 16)
                .map_err(|_| self.err(start, self.pos - start, "bad hexadecimal float bits"))?;
            return Ok(Attr::Float(f64::from_bits(bits)));
        }
        let digits = |p: &mut Parser| {
            let s = p.pos;
            while p.peek().is_some_and(|b| b.is_ascii_digit()) {
                p.pos += 1;
            }
            p.pos - s
        };
        if digits(self) == 0 {
            self.pos = start;
            return Err(self.err_here("expected a number"));
        }
        let mut float = false;
        if self.peek() == Some(b'.') && self.peek_at(1).is_some_and(|b| b.is_ascii_digit()) {
            self.pos += 1;
            digits(self);
            float = true;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            let save = self.pos;
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if digits(self) == 0 {
                self.pos = save;
            } else {
                float = true;
            }
        }
        if self.peek().is_some_and(is_ident_byte) {
            return Err(self.err(start, self.pos + 1 - start, "malformed number"));
        }
        let text = &self.src[start..self.pos];
        if float {
            text.parse::<f64>().map(Attr::Float).map_err(|_| self.err(start, text.len(), "malformed float"))
        } else if let Ok(v) = text.parse::<i64>() {
            Ok(Attr::Int(v))
        } else if let Ok(v) = text.parse::<u64>() {
            Ok(Attr::Int(v as i64))
        } else {
            Err(self.err(start, text.len(), "integer out of range"))
        }
    }

    /// A string in Rust's escaped form (what `{:?}` writes).
    fn string(&mut self) -> PResult<String> {
        self.skip_ws();
        let start = self.pos;
        if self.peek() != Some(b'"') {
            return Err(self.err_here("expected a string"));
        }
        self.pos += 1;
        let mut out = String::new();
        loop {
            let Some(c) = self.src[self.pos..].chars().next() else {
                return Err(self.err(start, 1, "unterminated string"));
            };
            self.pos += c.len_utf8();
            match c {
                '"' => return Ok(out),
                '\\' => {
                    let esc_pos = self.pos - 1;
                    let Some(e) = self.src[self.pos..].chars().next() else {
                        return Err(self.err(start, 1, "unterminated string"));
                    };
                    self.pos += e.len_utf8();
                    match e {
                        'n' => out.push('\n'),
                        'r' => out.push('\r'),
                        't' => out.push('\t'),
                        '0' => out.push('\0'),
                        '\\' => out.push('\\'),
                        '"' => out.push('"'),
                        '\'' => out.push('\''),
                        'u' => {
                            if self.peek() != Some(b'{') {
                                return Err(self.err(esc_pos, 2, "expected `{` after `\\u`"));
                            }
                            self.pos += 1;
                            let h = self.pos;
                            while self.peek().is_some_and(|b| b.is_ascii_hexdigit()) {
                                self.pos += 1;
                            }
                            let code = u32::from_str_radix(&self.src[h..self.pos], 16).ok().and_then(char::from_u32);
                            if self.peek() != Some(b'}') {
                                return Err(self.err(esc_pos, self.pos - esc_pos, "unterminated `\\u{...}` escape"));
                            }
                            self.pos += 1;
                            match code {
                                Some(ch) => out.push(ch),
                                None => return Err(self.err(esc_pos, self.pos - esc_pos, "invalid unicode escape")),
                            }
                        }
                        _ => return Err(self.err(esc_pos, 2, format!("unknown escape `\\{e}`"))),
                    }
                }
                c => out.push(c),
            }
        }
    }

    fn attr_value(&mut self) -> PResult<Attr> {
        self.skip_ws();
        match self.peek() {
            Some(b'"') => Ok(Attr::Str(self.string()?)),
            Some(b'[') => {
                self.pos += 1;
                let mut v = vec![];
                if !self.eat(b']') {
                    loop {
                        v.push(self.int("a list element")?);
                        if self.eat(b']') {
                            break;
                        }
                        self.expect(b',')?;
                    }
                }
                Ok(Attr::Ints(v))
            }
            Some(b) if b.is_ascii_digit() || b == b'-' => self.number(),
            Some(b) if b.is_ascii_alphabetic() || b == b'_' => {
                if self.at_word("inf") || self.at_word("nan") {
                    return self.number();
                }
                let (w, _) = self.ident("an attribute value")?;
                Ok(match w.as_str() {
                    "true" => Attr::Bool(true),
                    "false" => Attr::Bool(false),
                    _ => Attr::Ident(w),
                })
            }
            _ => Err(self.err_here("expected an attribute value")),
        }
    }

    fn loc(&mut self) -> PResult<Loc> {
        // Caller has checked for the `loc` word.
        self.pos += 3;
        self.expect(b'(')?;
        let mut nums = vec![self.uint("a line number")?];
        while self.eat(b':') {
            nums.push(self.uint("a number")?);
            if nums.len() > 3 {
                return Err(self.err_here("expected `)`: a location is `line:col` or `file:line:col`"));
            }
        }
        self.expect(b')')?;
        match nums[..] {
            [line, col] => Ok(Loc { file: 0, line, col }),
            [file, line, col] => Ok(Loc { file, line, col }),
            _ => Err(self.err_here("a location is `line:col` or `file:line:col`")),
        }
    }

    fn opt_loc(&mut self) -> PResult<Option<Loc>> {
        if !self.at_word("loc") {
            return Ok(None);
        }
        let save = self.pos;
        self.pos += 3;
        let paren = self.eat(b'(');
        self.pos = save;
        if paren {
            Ok(Some(self.loc()?))
        } else {
            Ok(None)
        }
    }

    // ---- types ----

    fn dtype(&mut self) -> PResult<DType> {
        let (w, p) = self.ident("an element type")?;
        dtype_named(&w).ok_or_else(|| self.err(p, w.len(), format!("unknown element type `{w}`")))
    }

    fn elem(&mut self) -> PResult<Elem> {
        self.skip_ws();
        if self.at_word("ptr") {
            self.pos += 3;
            self.expect(b'<')?;
            let pointee = self.dtype()?;
            let mut space = AddrSpace::Global;
            if self.eat(b',') {
                let (w, p) = self.ident("an address space")?;
                space = match w.as_str() {
                    "global" => AddrSpace::Global,
                    "shared" => AddrSpace::Shared,
                    _ => return Err(self.err(p, w.len(), format!("unknown address space `{w}`"))),
                };
            }
            self.expect(b'>')?;
            return Ok(Elem::Ptr { pointee, space });
        }
        Ok(Elem::Num(self.dtype()?))
    }

    fn ty(&mut self) -> PResult<Type> {
        self.ty_refs(&mut vec![])
    }

    fn layout_ref(&mut self) -> PResult<(u32, usize)> {
        self.skip_ws();
        let p = self.pos;
        if !self.src[self.pos..].starts_with("#L") {
            return Err(self.err_here("expected a layout (`#L<n>`)"));
        }
        self.pos += 2;
        Ok((self.uint("a layout number")?, p))
    }

    /// A type; layout references are pushed to `refs` for checking against the function's table.
    fn ty_refs(&mut self, refs: &mut Vec<(u32, usize)>) -> PResult<Type> {
        self.skip_ws();
        if !self.at_word("tensor") {
            return Ok(Type::Scalar(self.elem()?));
        }
        self.pos += 6;
        self.expect(b'<')?;
        self.skip_ws();
        let mut shape = crate::types::Shape::new();
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            shape.push(self.uint("a dimension")?);
            if self.peek() != Some(b'x') {
                return Err(self.err_here("expected `x` after a tensor dimension"));
            }
            self.pos += 1;
        }
        let elem = self.elem()?;
        let mut layout = None;
        if self.eat(b',') {
            let (id, p) = self.layout_ref()?;
            refs.push((id, p));
            layout = Some(LayoutId::from_u32(id));
        }
        self.expect(b'>')?;
        Ok(Type::Tensor { shape, elem, layout })
    }

    // ---- layouts ----

    fn layout_def(&mut self, st: &mut FnState) -> PResult<()> {
        let (id, p) = self.layout_ref()?;
        if id as usize != st.f.layouts.len() {
            return Err(self.err(p, 2, format!("layouts must be defined in order: expected #L{}", st.f.layouts.len())));
        }
        self.expect(b'=')?;
        let (kind, kp) = self.ident("a layout kind")?;
        self.expect(b'[')?;
        let mut vals: Vec<(String, usize, LayoutVal)> = vec![];
        if !self.eat(b']') {
            loop {
                let (key, keyp) = self.ident("a layout parameter")?;
                self.expect(b'=')?;
                self.skip_ws();
                let v = if self.peek() == Some(b'#') {
                    let (r, rp) = self.layout_ref()?;
                    if r >= id {
                        return Err(self.err(rp, 2, "a layout may only refer to layouts defined before it"));
                    }
                    LayoutVal::Ref(r)
                } else {
                    match self.attr_value()? {
                        Attr::Int(v) => LayoutVal::Int(v),
                        Attr::Ints(v) => LayoutVal::Ints(v),
                        _ => return Err(self.err(keyp, key.len(), format!("bad value for layout parameter `{key}`"))),
                    }
                };
                vals.push((key, keyp, v));
                if self.eat(b']') {
                    break;
                }
                self.expect(b',')?;
            }
        }
        let missing = |k: &str| self.err(kp, kind.len(), format!("layout `{kind}` needs parameter `{k}`"));
        let find = |k: &str| vals.iter().find(|(n, _, _)| n == k).map(|(_, p, v)| (*p, v));
        let int = |k: &str, max: i64| -> PResult<u32> {
            match find(k) {
                None => Err(missing(k)),
                Some((_, LayoutVal::Int(v))) if (0..=max).contains(v) => Ok(*v as u32),
                Some((p, _)) => Err(self.err(p, k.len(), format!("`{k}` must be an integer in 0..={max}"))),
            }
        };
        let dims = |k: &str| -> PResult<Dims> {
            match find(k) {
                None => Err(missing(k)),
                Some((p, LayoutVal::Ints(v))) => v
                    .iter()
                    .map(|&x| u32::try_from(x).map_err(|_| self.err(p, k.len(), format!("`{k}`: {x} out of range"))))
                    .collect(),
                Some((p, _)) => Err(self.err(p, k.len(), format!("`{k}` must be a list of integers"))),
            }
        };
        let parent = |k: &str| -> PResult<LayoutId> {
            match find(k) {
                None => Err(missing(k)),
                Some((_, LayoutVal::Ref(r))) => Ok(LayoutId::from_u32(*r)),
                Some((p, _)) => Err(self.err(p, k.len(), format!("`{k}` must be a layout (`#L<n>`)"))),
            }
        };
        let (layout, keys): (Layout, &[&str]) = match kind.as_str() {
            "blocked" => (
                Layout::Blocked {
                    size_per_thread: dims("size_per_thread")?,
                    threads_per_warp: dims("threads_per_warp")?,
                    warps_per_cta: dims("warps_per_cta")?,
                    order: dims("order")?,
                },
                &["size_per_thread", "threads_per_warp", "warps_per_cta", "order"],
            ),
            "slice" => {
                (Layout::Slice { dim: int("dim", u32::MAX as i64)?, parent: parent("parent")? }, &["dim", "parent"])
            }
            "mma" => (
                Layout::Mma {
                    version: int("version", u8::MAX as i64)? as u8,
                    warps_per_cta: dims("warps_per_cta")?,
                    instr_shape: dims("instr_shape")?,
                },
                &["version", "warps_per_cta", "instr_shape"],
            ),
            "dot_operand" => (
                Layout::DotOperand {
                    op_idx: int("op_idx", 1)? as u8,
                    parent: parent("parent")?,
                    k_width: int("k_width", u32::MAX as i64)?,
                },
                &["op_idx", "parent", "k_width"],
            ),
            "linear" => {
                let bases = |k: &str| -> PResult<Vec<u64>> {
                    match find(k) {
                        None => Err(missing(k)),
                        Some((p, LayoutVal::Ints(v))) => v
                            .iter()
                            .map(|&x| {
                                u64::try_from(x).map_err(|_| self.err(p, k.len(), format!("`{k}`: {x} is negative")))
                            })
                            .collect(),
                        Some((p, _)) => Err(self.err(p, k.len(), format!("`{k}` must be a list of integers"))),
                    }
                };
                (
                    Layout::Linear {
                        shape: dims("shape")?,
                        reg: bases("reg")?,
                        lane: bases("lane")?,
                        warp: bases("warp")?,
                    },
                    &["shape", "reg", "lane", "warp"],
                )
            }
            "shared" => (
                Layout::Shared {
                    vec: int("vec", u32::MAX as i64)?,
                    per_phase: int("per_phase", u32::MAX as i64)?,
                    max_phase: int("max_phase", u32::MAX as i64)?,
                    order: dims("order")?,
                },
                &["vec", "per_phase", "max_phase", "order"],
            ),
            _ => return Err(self.err(kp, kind.len(), format!("unknown layout kind `{kind}`"))),
        };
        for (i, (k, p, _)) in vals.iter().enumerate() {
            if !keys.contains(&k.as_str()) {
                return Err(self.err(*p, k.len(), format!("layout `{kind}` has no parameter `{k}`")));
            }
            if vals[..i].iter().any(|(k2, _, _)| k2 == k) {
                return Err(self.err(*p, k.len(), format!("parameter `{k}` given twice")));
            }
        }
        st.f.layouts.push(layout);
        Ok(())
    }

    // ---- functions, regions, ops ----

    fn function(&mut self) -> PResult<Function> {
        let (kw, kwp) = self.ident("`kernel` or `func`")?;
        let kernel = match kw.as_str() {
            "kernel" => true,
            "func" => false,
            _ => return Err(self.err(kwp, kw.len(), format!("expected `kernel` or `func`, found `{kw}`"))),
        };
        self.expect(b'@')?;
        let name = if self.peek() == Some(b'"') {
            self.string()?
        } else {
            let s = self.pos;
            while self.peek().is_some_and(is_name_byte) {
                self.pos += 1;
            }
            if s == self.pos {
                return Err(self.err_here("expected a function name"));
            }
            self.src[s..self.pos].to_string()
        };
        let mut refs = vec![];
        let mut params: Vec<(String, usize, Type, Option<u32>)> = vec![];
        self.expect(b'(')?;
        if !self.eat(b')') {
            loop {
                let (n, p) = self.value_name()?;
                self.expect(b':')?;
                let t = self.ty_refs(&mut refs)?;
                let mut div = None;
                if self.eat(b'{') {
                    let (k, kp) = self.ident("`divisibility`")?;
                    if k != "divisibility" {
                        return Err(self.err(kp, k.len(), format!("unknown parameter attribute `{k}`")));
                    }
                    self.expect(b'=')?;
                    self.skip_ws();
                    let dp = self.pos;
                    div = Some(self.uint("a divisibility")?);
                    if div == Some(0) {
                        return Err(self.err(dp, 1, "divisibility must be positive"));
                    }
                    self.expect(b'}')?;
                }
                params.push((n, p, t, div));
                if self.eat(b')') {
                    break;
                }
                self.expect(b',')?;
            }
        }
        let mut results = vec![];
        if self.eat_str("->") {
            self.expect(b'(')?;
            if !self.eat(b')') {
                loop {
                    results.push(self.ty_refs(&mut refs)?);
                    if self.eat(b')') {
                        break;
                    }
                    self.expect(b',')?;
                }
            }
        }
        let mut fattrs = AttrMap::default();
        if self.at_word("attributes") {
            self.pos += "attributes".len();
            self.expect(b'{')?;
            fattrs = self.attr_dict()?;
        }
        let floc = self.opt_loc()?;
        let sig: Vec<(&str, Type)> = params.iter().map(|(n, _, t, _)| (n.as_str(), t.clone())).collect();
        let mut f = Function::new(&name, &sig, results, kernel);
        f.loc = floc.unwrap_or(Loc::UNKNOWN);
        f.attrs = fattrs;
        let mut st = FnState { f, names: HashMap::new(), layout_refs: refs };
        for (i, (n, p, _, div)) in params.iter().enumerate() {
            let v = st.f.params[i].value;
            st.f.params[i].attrs.divisibility = *div;
            self.define(&mut st, n, *p, v)?;
        }
        self.expect(b'{')?;
        self.skip_ws();
        while self.peek() == Some(b'#') {
            self.layout_def(&mut st)?;
            self.skip_ws();
        }
        let body = st.f.body;
        self.ops_until_close(&mut st, body)?;
        for &(id, p) in &st.layout_refs {
            if id as usize >= st.f.layouts.len() {
                return Err(self.err(p, 2, format!("layout #L{id} is not defined in this function")));
            }
        }
        Ok(st.f)
    }

    fn define(&self, st: &mut FnState, name: &str, pos: usize, v: Value) -> PResult<()> {
        if st.names.insert(name.to_string(), v).is_some() {
            return Err(self.err(pos, name.len() + 1, format!("value `%{name}` is defined twice")));
        }
        Ok(())
    }

    /// Ops up to and including the closing `}`.
    fn ops_until_close(&mut self, st: &mut FnState, block: Block) -> PResult<()> {
        loop {
            self.skip_ws();
            match self.peek() {
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(());
                }
                None => return Err(self.err_here("expected `}`")),
                _ => self.op(st, block)?,
            }
        }
    }

    fn region(&mut self, st: &mut FnState) -> PResult<Block> {
        let open = self.pos;
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err(open, 1, format!("regions nested more than {MAX_DEPTH} deep")));
        }
        // Caller consumed `{`.
        let mut args: Vec<(String, usize, Type)> = vec![];
        if self.eat(b'^') {
            self.expect(b'(')?;
            if !self.eat(b')') {
                loop {
                    let (n, p) = self.value_name()?;
                    self.expect(b':')?;
                    let t = self.ty_refs(&mut st.layout_refs)?;
                    args.push((n, p, t));
                    if self.eat(b')') {
                        break;
                    }
                    self.expect(b',')?;
                }
            }
            self.expect(b':')?;
        }
        let types: Vec<Type> = args.iter().map(|(_, _, t)| t.clone()).collect();
        let b = st.f.new_block(&types);
        for (i, (n, p, _)) in args.iter().enumerate() {
            let v = st.f.blocks[b].args[i];
            self.define(st, n, *p, v)?;
        }
        self.ops_until_close(st, b)?;
        self.depth -= 1;
        Ok(b)
    }

    /// Whether a `{` here opens a dict of discardable attributes (`{word =`) rather than a
    /// region (which starts with `^(`, an op or `}`; no op starts with a word and `=`).
    fn at_attr_dict(&mut self) -> bool {
        let save = self.pos;
        let mut yes = false;
        if self.eat(b'{') && self.ident("").is_ok() {
            yes = self.eat(b'=');
        }
        self.pos = save;
        yes
    }

    /// `attr ("," attr)* "}"` after the opening `{` (possibly empty).
    fn attr_dict(&mut self) -> PResult<AttrMap> {
        let mut map = AttrMap::default();
        if self.eat(b'}') {
            return Ok(map);
        }
        loop {
            let (k, kp) = self.ident("an attribute name")?;
            if map.get(&k).is_some() {
                return Err(self.err(kp, k.len(), format!("attribute `{k}` given twice")));
            }
            self.expect(b'=')?;
            let v = self.attr_value()?;
            map.set(&k, v);
            if self.eat(b'}') {
                return Ok(map);
            }
            if !self.eat(b',') {
                return Err(self.err_here("expected `,` or `}` after an attribute"));
            }
        }
    }

    fn op(&mut self, st: &mut FnState, block: Block) -> PResult<()> {
        self.skip_ws();
        let start = self.pos;
        let mut result_names = vec![];
        if self.peek() == Some(b'%') {
            loop {
                result_names.push(self.value_name()?);
                if !self.eat(b',') {
                    break;
                }
            }
            self.expect(b'=')?;
        }
        let (name, name_pos) = self.ident("an op name")?;
        let mut operands = vec![];
        if self.peek_same_line() == Some(b'%') {
            loop {
                let (n, p) = self.value_name()?;
                match st.names.get(&n) {
                    Some(&v) => operands.push(v),
                    None => return Err(self.err(p, n.len() + 1, format!("use of undefined value `%{n}`"))),
                }
                if !self.eat(b',') {
                    break;
                }
            }
        }
        let mut attrs: Vec<(String, Attr)> = vec![];
        let mut attr_pos = vec![];
        if self.eat(b'[') && !self.eat(b']') {
            loop {
                let (k, kp) = self.ident("an attribute name")?;
                if attrs.iter().any(|(k2, _)| *k2 == k) {
                    return Err(self.err(kp, k.len(), format!("attribute `{k}` given twice")));
                }
                self.expect(b'=')?;
                let v = self.attr_value()?;
                attrs.push((k, v));
                attr_pos.push(kp);
                if self.eat(b']') {
                    break;
                }
                if !self.eat(b',') {
                    return Err(self.err_here("expected `,` or `]` after an attribute"));
                }
            }
        }
        let kind = OpKind::from_parts(&name, &attrs).map_err(|e| self.err(name_pos, name.len(), e))?;
        let printed: Vec<&str> = kind.attrs().iter().map(|(k, _)| *k).collect();
        let optional = optional_attr_keys(&name);
        for ((k, _), &kp) in attrs.iter().zip(&attr_pos) {
            if !printed.contains(&k.as_str()) && !optional.contains(&k.as_str()) {
                return Err(self.err(kp, k.len(), format!("op `{name}` has no attribute `{k}`")));
            }
        }
        let mut discardable = AttrMap::default();
        if self.at_attr_dict() {
            self.expect(b'{')?;
            discardable = self.attr_dict()?;
        }
        let mut regions = vec![];
        while self.eat(b'{') {
            regions.push(self.region(st)?);
        }
        let mut types = vec![];
        if self.eat(b':') {
            loop {
                types.push(self.ty_refs(&mut st.layout_refs)?);
                if !self.eat(b',') {
                    break;
                }
            }
        }
        if types.len() != result_names.len() {
            return Err(self.err(
                start,
                name_pos + name.len() - start,
                format!("op `{name}` names {} result(s) but gives {} result type(s)", result_names.len(), types.len()),
            ));
        }
        let loc = match self.opt_loc()? {
            Some(l) => l,
            None if self.opts.text_locs => self.loc_at(start),
            None => Loc::UNKNOWN,
        };
        let op = st.f.new_op(kind, &operands, &types, loc);
        st.f.ops[op].attrs = discardable;
        for r in regions {
            st.f.add_region(op, r);
        }
        for (i, (n, p)) in result_names.iter().enumerate() {
            let v = st.f.ops[op].results[i];
            self.define(st, n, *p, v)?;
        }
        st.f.append_op(block, op);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        let mut p =
            Parser::new("12 -3 1.5 -0.0 1e-5 inf -inf nan 18446744073709551615 0x7FF8000000000001", Default::default());
        assert_eq!(p.number().unwrap(), Attr::Int(12));
        assert_eq!(p.number().unwrap(), Attr::Int(-3));
        assert_eq!(p.number().unwrap(), Attr::Float(1.5));
        match p.number().unwrap() {
            Attr::Float(v) => assert_eq!(v.to_bits(), (-0.0f64).to_bits()),
            a => panic!("{a:?}"),
        }
        assert_eq!(p.number().unwrap(), Attr::Float(1e-5));
        assert_eq!(p.number().unwrap(), Attr::Float(f64::INFINITY));
        assert_eq!(p.number().unwrap(), Attr::Float(f64::NEG_INFINITY));
        assert!(matches!(p.number().unwrap(), Attr::Float(v) if v.is_nan()));
        assert_eq!(p.number().unwrap(), Attr::Int(-1));
        assert!(matches!(p.number().unwrap(), Attr::Float(v) if v.to_bits() == 0x7FF8000000000001));
        let mut p = Parser::new("12abc", Default::default());
        assert!(p.number().is_err());
    }

    #[test]
    fn types() {
        for s in [
            "i1",
            "u64",
            "ptr<f16>",
            "ptr<bf16, shared>",
            "tensor<128x64xf16>",
            "tensor<64xptr<f32>>",
            "tensor<4x2xi8, #L3>",
        ] {
            assert_eq!(parse_type(s).unwrap().to_string(), s);
        }
        assert!(parse_type("tensor<4xf17>").is_err());
        assert!(parse_type("tensor<4f32>").is_err());
        assert!(parse_type("tensor<99999999999xf32>").is_err());
    }
}
