//! Launch grids that depend on the launch: `--grid 'cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)'`.
//!
//! An autotuned kernel's grid depends on the config the tuner picks (Triton's
//! `grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]), ...)`), so a fixed
//! `--grid` cannot describe it. A [`GridExpr`] is one to three integer
//! expressions separated by commas, evaluated once the constexprs are known,
//! over the launch's integer and bool scalar arguments and every constexpr
//! value (given, from the autotune config, or from `@triton.heuristics`).
//!
//! Syntax (a small subset of Python):
//!
//! ```text
//! grid  := ["lambda" NAME ":"] ["("] expr ("," expr)* [","] [")"]
//! expr  := term (("+" | "-") term)*
//! term  := unary (("*" | "//" | "/" | "%") unary)*       `/` is integer division here, as `//`
//! unary := "-" unary | atom
//! atom  := INT | NAME | NAME "[" STRING "]" | "(" expr ")" | func "(" expr ("," expr)* ")"
//! func  := cdiv | triton.cdiv | min | max
//! ```
//!
//! `meta["BLOCK_M"]` (any subscripted name) reads `BLOCK_M`, so Triton's lambdas
//! can be pasted as they are. Division rounds toward negative infinity, as in
//! Python; dividing by zero, overflow and unknown names are errors.

use std::fmt;

/// A parsed grid expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GridExpr {
    text: String,
    dims: Vec<Expr>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Expr {
    Int(i64),
    Name(String),
    Neg(Box<Expr>),
    Bin(Op, Box<Expr>, Box<Expr>),
    Call(Func, Vec<Expr>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Func {
    Cdiv,
    Min,
    Max,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Int(i64),
    Name(String),
    Str(String),
    Sym(&'static str),
}

fn tokenize(s: &str) -> Result<Vec<Tok>, String> {
    let b = s.as_bytes();
    let mut out = vec![];
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
                i += 1;
            }
            let digits = s[start..i].replace('_', "");
            out.push(Tok::Int(digits.parse().map_err(|_| format!("`{}` is too large", &s[start..i]))?));
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.') {
                i += 1;
            }
            out.push(Tok::Name(s[start..i].to_string()));
        } else if c == '"' || c == '\'' {
            let end = s[i + 1..].find(c).ok_or_else(|| format!("unterminated string at column {}", i + 1))?;
            out.push(Tok::Str(s[i + 1..i + 1 + end].to_string()));
            i += end + 2;
        } else {
            let two = s.get(i..i + 2);
            let sym: &'static str = match (two, c) {
                (Some("//"), _) => "//",
                (_, '+') => "+",
                (_, '-') => "-",
                (_, '*') => "*",
                (_, '/') => "/",
                (_, '%') => "%",
                (_, '(') => "(",
                (_, ')') => ")",
                (_, '[') => "[",
                (_, ']') => "]",
                (_, ',') => ",",
                (_, ':') => ":",
                _ => return Err(format!("unexpected `{c}` at column {}", i + 1)),
            };
            i += sym.len();
            out.push(Tok::Sym(sym));
        }
    }
    Ok(out)
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn eat(&mut self, sym: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Sym(s)) if *s == sym) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, sym: &str) -> Result<(), String> {
        if self.eat(sym) {
            Ok(())
        } else {
            Err(format!("expected `{sym}`{}", self.here()))
        }
    }

    fn here(&self) -> String {
        match self.peek() {
            None => " at the end".to_string(),
            Some(Tok::Int(v)) => format!(" before `{v}`"),
            Some(Tok::Name(n)) => format!(" before `{n}`"),
            Some(Tok::Str(s)) => format!(" before \"{s}\""),
            Some(Tok::Sym(s)) => format!(" before `{s}`"),
        }
    }

    fn expr(&mut self) -> Result<Expr, String> {
        let mut e = self.term()?;
        loop {
            let op = if self.eat("+") {
                Op::Add
            } else if self.eat("-") {
                Op::Sub
            } else {
                return Ok(e);
            };
            e = Expr::Bin(op, Box::new(e), Box::new(self.term()?));
        }
    }

    fn term(&mut self) -> Result<Expr, String> {
        let mut e = self.unary()?;
        loop {
            let op = if self.eat("*") {
                Op::Mul
            } else if self.eat("//") || self.eat("/") {
                Op::Div
            } else if self.eat("%") {
                Op::Mod
            } else {
                return Ok(e);
            };
            e = Expr::Bin(op, Box::new(e), Box::new(self.unary()?));
        }
    }

    fn unary(&mut self) -> Result<Expr, String> {
        if self.eat("-") {
            return Ok(Expr::Neg(Box::new(self.unary()?)));
        }
        self.atom()
    }

    fn atom(&mut self) -> Result<Expr, String> {
        match self.toks.get(self.pos).cloned() {
            Some(Tok::Int(v)) => {
                self.pos += 1;
                Ok(Expr::Int(v))
            }
            Some(Tok::Name(n)) => {
                self.pos += 1;
                if self.eat("(") {
                    let f = match n.as_str() {
                        "cdiv" | "triton.cdiv" | "tl.cdiv" => Func::Cdiv,
                        "min" => Func::Min,
                        "max" => Func::Max,
                        _ => return Err(format!("unknown function `{n}` (cdiv, min and max are known)")),
                    };
                    let mut args = vec![self.expr()?];
                    while self.eat(",") {
                        args.push(self.expr()?);
                    }
                    self.expect(")")?;
                    let ok = match f {
                        Func::Cdiv => args.len() == 2,
                        Func::Min | Func::Max => !args.is_empty(),
                    };
                    if !ok {
                        return Err(format!(
                            "`{n}` takes {}",
                            if f == Func::Cdiv { "two arguments" } else { "arguments" }
                        ));
                    }
                    return Ok(Expr::Call(f, args));
                }
                if self.eat("[") {
                    // `meta["BLOCK"]`: the dictionary Triton passes holds every argument by name.
                    let Some(Tok::Str(key)) = self.toks.get(self.pos).cloned() else {
                        return Err(format!("expected a quoted name in `{n}[...]`{}", self.here()));
                    };
                    self.pos += 1;
                    self.expect("]")?;
                    return Ok(Expr::Name(key));
                }
                Ok(Expr::Name(n))
            }
            Some(Tok::Sym("(")) => {
                self.pos += 1;
                let e = self.expr()?;
                self.expect(")")?;
                Ok(e)
            }
            _ => Err(format!("expected a number, a name or `(`{}", self.here())),
        }
    }
}

impl GridExpr {
    /// Parses a grid expression (see the module docs).
    pub fn parse(text: &str) -> Result<GridExpr, String> {
        let err = |m: String| format!("grid `{text}`: {m}");
        let mut p = Parser { toks: tokenize(text).map_err(err)?, pos: 0 };
        if matches!(p.peek(), Some(Tok::Name(n)) if n == "lambda") {
            p.pos += 1;
            if matches!(p.peek(), Some(Tok::Name(_))) {
                p.pos += 1;
            }
            p.expect(":").map_err(err)?;
        }
        // A parenthesised tuple `(a, b)` or a bare list `a, b`; `(a)` is just `a`.
        let mut dims = vec![];
        let wrapped = p.toks.len() > p.pos + 1
            && p.toks[p.pos] == Tok::Sym("(")
            && p.toks.last() == Some(&Tok::Sym(")"))
            && closes_at_end(&p.toks[p.pos..]);
        if wrapped {
            p.pos += 1;
            p.toks.pop();
        }
        loop {
            dims.push(p.expr().map_err(err)?);
            if !p.eat(",") || p.peek().is_none() {
                break;
            }
        }
        if p.peek().is_some() {
            return Err(err(format!("unexpected text{}", p.here())));
        }
        if dims.len() > 3 {
            return Err(err(format!("a grid has one to three dimensions, not {}", dims.len())));
        }
        Ok(GridExpr { text: text.trim().to_string(), dims })
    }

    /// The text it was parsed from.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The grid for these values (`lookup(name)` gives a name's integer value,
    /// `None` when it has none). Every dimension must come out at least 1.
    pub fn eval(&self, lookup: &dyn Fn(&str) -> Option<i64>) -> Result<[u32; 3], String> {
        let mut out = [1u32; 3];
        for (i, d) in self.dims.iter().enumerate() {
            let v = eval(d, lookup).map_err(|m| format!("grid `{}`: {m}", self.text))?;
            if v < 1 {
                return Err(format!("grid `{}`: dimension {i} is {v}; it must be at least 1", self.text));
            }
            out[i] = u32::try_from(v).map_err(|_| format!("grid `{}`: dimension {i} ({v}) is too large", self.text))?;
        }
        Ok(out)
    }

    /// The names it reads.
    pub fn names(&self) -> Vec<String> {
        fn walk(e: &Expr, out: &mut Vec<String>) {
            match e {
                Expr::Int(_) => {}
                Expr::Name(n) => {
                    if !out.contains(n) {
                        out.push(n.clone());
                    }
                }
                Expr::Neg(a) => walk(a, out),
                Expr::Bin(_, a, b) => {
                    walk(a, out);
                    walk(b, out);
                }
                Expr::Call(_, args) => args.iter().for_each(|a| walk(a, out)),
            }
        }
        let mut out = vec![];
        self.dims.iter().for_each(|d| walk(d, &mut out));
        out
    }
}

impl fmt::Display for GridExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Whether the `(` at the start of `toks` is closed by its last token.
fn closes_at_end(toks: &[Tok]) -> bool {
    let mut depth = 0i32;
    for (i, t) in toks.iter().enumerate() {
        match t {
            Tok::Sym("(") => depth += 1,
            Tok::Sym(")") => {
                depth -= 1;
                if depth == 0 {
                    return i == toks.len() - 1;
                }
            }
            _ => {}
        }
    }
    false
}

fn eval(e: &Expr, lookup: &dyn Fn(&str) -> Option<i64>) -> Result<i64, String> {
    let overflow = || "integer overflow".to_string();
    Ok(match e {
        Expr::Int(v) => *v,
        Expr::Name(n) => {
            lookup(n).ok_or_else(|| format!("`{n}` is not an integer argument or constexpr of this launch"))?
        }
        Expr::Neg(a) => eval(a, lookup)?.checked_neg().ok_or_else(overflow)?,
        Expr::Bin(op, a, b) => {
            let (x, y) = (eval(a, lookup)?, eval(b, lookup)?);
            match op {
                Op::Add => x.checked_add(y).ok_or_else(overflow)?,
                Op::Sub => x.checked_sub(y).ok_or_else(overflow)?,
                Op::Mul => x.checked_mul(y).ok_or_else(overflow)?,
                Op::Div | Op::Mod if y == 0 => return Err("division by zero".into()),
                Op::Div => x.checked_div_euclid(y).map(|_| floor_div(x, y)).ok_or_else(overflow)?,
                Op::Mod => x.checked_rem_euclid(y).map(|_| x - y * floor_div(x, y)).ok_or_else(overflow)?,
            }
        }
        Expr::Call(f, args) => {
            let vals = args.iter().map(|a| eval(a, lookup)).collect::<Result<Vec<i64>, String>>()?;
            match f {
                Func::Cdiv => {
                    let (x, y) = (vals[0], vals[1]);
                    if y == 0 {
                        return Err("cdiv by zero".into());
                    }
                    // Python: (x + y - 1) // y, which is -(-x // y).
                    -floor_div(x.checked_neg().ok_or_else(overflow)?, y)
                }
                Func::Min => vals.into_iter().min().unwrap_or(0),
                Func::Max => vals.into_iter().max().unwrap_or(0),
            }
        }
    })
}

/// Python's `//`: rounds toward negative infinity.
fn floor_div(x: i64, y: i64) -> i64 {
    let q = x / y;
    if (x % y != 0) && ((x < 0) != (y < 0)) {
        q - 1
    } else {
        q
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(text: &str, vars: &[(&str, i64)]) -> Result<[u32; 3], String> {
        let g = GridExpr::parse(text)?;
        g.eval(&|n| vars.iter().find(|(k, _)| *k == n).map(|(_, v)| *v))
    }

    #[test]
    fn evaluates_triton_style_grids() {
        let vars = [("M", 300), ("N", 130), ("BLOCK_M", 64), ("BLOCK_N", 32)];
        assert_eq!(grid("cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)", &vars).unwrap(), [5 * 5, 1, 1]);
        assert_eq!(grid("triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N)", &vars).unwrap(), [5, 5, 1]);
        assert_eq!(
            grid("lambda meta: (triton.cdiv(M, meta['BLOCK_M']), triton.cdiv(N, meta[\"BLOCK_N\"]),)", &vars).unwrap(),
            [5, 5, 1]
        );
        assert_eq!(grid("(M + BLOCK_M - 1) // BLOCK_M, 2, 3", &vars).unwrap(), [5, 2, 3]);
        assert_eq!(grid("(4)", &vars).unwrap(), [4, 1, 1]);
        assert_eq!(grid("max(1, N // 1000) + min(2, 3) - 1 % 7", &vars).unwrap(), [2, 1, 1]);
        assert_eq!(grid("1_0 * 2", &vars).unwrap(), [20, 1, 1]);
        assert_eq!(GridExpr::parse("cdiv(M, B), N").unwrap().names(), vec!["M", "B", "N"]);
    }

    #[test]
    fn python_rounding() {
        assert_eq!(floor_div(-7, 2), -4);
        assert_eq!(floor_div(7, -2), -4);
        assert_eq!(floor_div(7, 2), 3);
        assert_eq!(grid("-7 % 3 + 0 * cdiv(-7, 2) + cdiv(7, 2)", &[]).unwrap(), [2 + 4, 1, 1]);
    }

    #[test]
    fn errors_name_the_problem() {
        let e = |t: &str| grid(t, &[("N", 0)]).unwrap_err();
        assert!(e("cdiv(X, 2)").contains("`X` is not an integer argument"), "{}", e("cdiv(X, 2)"));
        assert!(e("4 // N").contains("division by zero"));
        assert!(e("N").contains("must be at least 1"));
        assert!(e("1, 2, 3, 4").contains("one to three"));
        assert!(e("foo(1)").contains("unknown function"));
        assert!(e("cdiv(1)").contains("two arguments"));
        assert!(e("2 +").contains("expected a number"));
        assert!(e("2 3").contains("unexpected text"));
        assert!(e("2 $ 3").contains("unexpected `$`"));
        assert!(e("9223372036854775807 * 2").contains("overflow"));
        assert!(e("99999999999999999999").contains("too large"));
        assert!(e("'abc").contains("unterminated"));
        assert!(e("4294967296").contains("too large"));
    }
}
