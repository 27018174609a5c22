//! Tokenizer for PTX text. Line-oriented directives that carry no semantics for the
//! emulator (`.loc`, `.file`, `.version`, performance hints, debug sections) are dropped here.

use crate::error::EmuError;

#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// Identifiers, directives (`.reg`), opcodes (`ld.global.v4.b32`), registers (`%r1`, `%tid.x`).
    Ident(String),
    /// Anything starting with a digit (`12`, `0x10`, `0f3F800000`, `1.5e3`).
    Num(String),
    Str(String),
    Punct(char),
    /// A `//@trident.mark N` comment: a zero-cost marker (see the crate README).
    Mark(u32),
}

#[derive(Clone, Debug)]
pub struct Token {
    pub tok: Tok,
    pub line: u32,
}

/// Directives that end at the end of their line and mean nothing to execution.
const LINE_DIRECTIVES: &[&str] = &[
    ".loc",
    ".file",
    ".version",
    ".target",
    ".address_size",
    ".maxntid",
    ".reqntid",
    ".minnctapersm",
    ".maxnctapersm",
    ".maxnreg",
    ".reqnctapercluster",
    ".maxclusterrank",
    ".explicitcluster",
    ".globl",
];

/// Prefix of a marker comment; `ptxas` ignores it like any comment.
pub const MARK: &str = "//@trident.mark";

/// The id of a marker comment after its prefix: blanks, a decimal u32, optional blanks.
fn parse_mark(rest: &str) -> Option<u32> {
    let blank = |c: char| c == ' ' || c == '\t';
    let rest = rest.trim_end_matches(['\r']);
    if !rest.starts_with(blank) {
        return None;
    }
    let digits = rest.trim_matches(blank);
    if digits.is_empty() || !digits.bytes().all(|d| d.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b'$' || c == b'%' || c == b'.'
}

fn is_ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c == b'.'
}

pub fn lex(text: &str) -> Result<Vec<Token>, EmuError> {
    let b = text.as_bytes();
    let mut i = 0;
    let mut line = 1u32;
    let mut out: Vec<Token> = Vec::new();
    let line_text = |n: u32| text.lines().nth(n as usize - 1).unwrap_or("").to_string();
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
            i += 1;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'/' && b.get(i + 1) == Some(&b'/') {
            let start = i;
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            let comment = &text[start..i];
            if let Some(rest) = comment.strip_prefix(MARK) {
                let id = parse_mark(rest).ok_or_else(|| {
                    EmuError::parse(line, &line_text(line), format!("malformed marker: `{MARK} <u32 id>` expected"))
                })?;
                out.push(Token { tok: Tok::Mark(id), line });
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let start = line;
            i += 2;
            loop {
                if i + 1 >= b.len() {
                    return Err(EmuError::parse(start, &line_text(start), "unterminated comment"));
                }
                if b[i] == b'*' && b[i + 1] == b'/' {
                    i += 2;
                    break;
                }
                if b[i] == b'\n' {
                    line += 1;
                }
                i += 1;
            }
        } else if c == b'"' {
            let start = i + 1;
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\n' {
                    return Err(EmuError::parse(line, &line_text(line), "unterminated string"));
                }
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            let s = text.get(start..i.min(b.len())).unwrap_or("").to_string();
            i += 1;
            out.push(Token { tok: Tok::Str(s), line });
        } else if c.is_ascii_digit() {
            let start = i;
            let hexish =
                b.get(i + 1).is_some_and(|&x| matches!(x, b'x' | b'X' | b'f' | b'F' | b'd' | b'D')) && c == b'0';
            while i < b.len() {
                let x = b[i];
                let exp_sign = !hexish && (x == b'+' || x == b'-') && matches!(b[i - 1], b'e' | b'E');
                if x.is_ascii_alphanumeric() || x == b'.' || x == b'_' || exp_sign {
                    i += 1;
                } else {
                    break;
                }
            }
            out.push(Token { tok: Tok::Num(text[start..i].to_string()), line });
        } else if is_ident_start(c) {
            let start = i;
            i += 1;
            // `::` belongs to the word (`.shared::cta`); a single `:` ends a label.
            while i < b.len() && (is_ident_char(b[i]) || (b[i] == b':' && b.get(i + 1) == Some(&b':'))) {
                i += if b[i] == b':' { 2 } else { 1 };
            }
            let word = &text[start..i];
            if LINE_DIRECTIVES.contains(&word) {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            } else if word == ".section" {
                // `.section .debug_x { ... }`: skip the name and a brace-balanced body.
                while i < b.len() && b[i] != b'{' && b[i] != b'\n' {
                    i += 1;
                }
                while i < b.len() && b[i].is_ascii_whitespace() {
                    if b[i] == b'\n' {
                        line += 1;
                    }
                    i += 1;
                }
                if i < b.len() && b[i] == b'{' {
                    let mut depth = 0;
                    while i < b.len() {
                        match b[i] {
                            b'{' => depth += 1,
                            b'}' => {
                                depth -= 1;
                                if depth == 0 {
                                    i += 1;
                                    break;
                                }
                            }
                            b'\n' => line += 1,
                            _ => {}
                        }
                        i += 1;
                    }
                }
            } else {
                out.push(Token { tok: Tok::Ident(word.to_string()), line });
            }
        } else if c.is_ascii() && b"{}[](),;:<>+-!@|=".contains(&c) {
            out.push(Token { tok: Tok::Punct(c as char), line });
            i += 1;
        } else {
            let shown = text.get(i..).and_then(|t| t.chars().next()).unwrap_or('?');
            return Err(EmuError::parse(line, &line_text(line), format!("unexpected character {shown:?}")));
        }
    }
    Ok(out)
}
