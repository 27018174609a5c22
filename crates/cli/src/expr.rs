//! A tiny arithmetic evaluator for `--flops`/`--bytes` expressions over a launch's
//! arguments: numbers, scalar argument names, `numel(T)` and `nbytes(T)` of tensor
//! arguments, `+ - * /`, parentheses. Written here because it is thirty lines and no
//! crate fits better than that.

use trident_runtime::{Arg, ArgValue};

pub fn eval(text: &str, args: &[Arg]) -> Result<f64, String> {
    let toks = lex(text)?;
    let mut p = P { toks, i: 0, args };
    let v = p.sum()?;
    if p.i != p.toks.len() {
        return Err(format!("unexpected `{}` in `{text}`", p.toks[p.i]));
    }
    Ok(v)
}

fn lex(s: &str) -> Result<Vec<String>, String> {
    let mut out = vec![];
    let cs: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        if c.is_whitespace() {
            i += 1;
        } else if "+-*/()".contains(c) {
            out.push(c.to_string());
            i += 1;
        } else if c.is_alphanumeric() || c == '_' || c == '.' {
            let st = i;
            while i < cs.len() && (cs[i].is_alphanumeric() || cs[i] == '_' || cs[i] == '.') {
                // exponents like 1e-5
                if (cs[i] == 'e' || cs[i] == 'E') && cs[st].is_ascii_digit() && i + 1 < cs.len() && cs[i + 1] == '-' {
                    i += 1;
                }
                i += 1;
            }
            out.push(cs[st..i].iter().collect());
        } else {
            return Err(format!("unexpected character `{c}` in `{s}`"));
        }
    }
    Ok(out)
}

struct P<'a> {
    toks: Vec<String>,
    i: usize,
    args: &'a [Arg],
}

impl P<'_> {
    fn peek(&self) -> Option<&str> {
        self.toks.get(self.i).map(String::as_str)
    }

    fn sum(&mut self) -> Result<f64, String> {
        let mut v = self.product()?;
        while let Some(op) = self.peek().filter(|t| *t == "+" || *t == "-").map(str::to_string) {
            self.i += 1;
            let r = self.product()?;
            v = if op == "+" { v + r } else { v - r };
        }
        Ok(v)
    }

    fn product(&mut self) -> Result<f64, String> {
        let mut v = self.atom()?;
        while let Some(op) = self.peek().filter(|t| *t == "*" || *t == "/").map(str::to_string) {
            self.i += 1;
            let r = self.atom()?;
            v = if op == "*" { v * r } else { v / r };
        }
        Ok(v)
    }

    fn atom(&mut self) -> Result<f64, String> {
        let t = self.peek().ok_or("expression ends early")?.to_string();
        self.i += 1;
        if t == "(" {
            let v = self.sum()?;
            return self.expect(")").map(|_| v);
        }
        if t == "-" {
            return Ok(-self.atom()?);
        }
        if let Ok(v) = t.parse::<f64>() {
            return Ok(v);
        }
        if t == "numel" || t == "nbytes" {
            self.expect("(")?;
            let name = self.peek().ok_or("expected a tensor name")?.to_string();
            self.i += 1;
            self.expect(")")?;
            let tensor = self
                .args
                .iter()
                .find(|a| a.name == name)
                .and_then(|a| a.value.as_tensor())
                .ok_or_else(|| format!("`{name}` is not a tensor argument"))?;
            return Ok(if t == "numel" { tensor.numel() as f64 } else { tensor.size_bytes() as f64 });
        }
        match self.args.iter().find(|a| a.name == t).map(|a| &a.value) {
            Some(ArgValue::Int(v)) => Ok(*v as f64),
            Some(ArgValue::Float(v)) => Ok(*v),
            Some(ArgValue::Bool(b)) => Ok(*b as u8 as f64),
            Some(ArgValue::Tensor(_) | ArgValue::Device(_) | ArgValue::Descriptor(_)) => {
                Err(format!("`{t}` is a tensor: use numel({t}) or nbytes({t})"))
            }
            Some(ArgValue::Str(_) | ArgValue::DType(_) | ArgValue::None | ArgValue::Tuple(_)) => {
                Err(format!("`{t}` is not a number"))
            }
            None => Err(format!("unknown name `{t}`")),
        }
    }

    fn expect(&mut self, t: &str) -> Result<(), String> {
        if self.peek() == Some(t) {
            self.i += 1;
            Ok(())
        } else {
            Err(format!("expected `{t}`"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trident_runtime::args::parse_and_materialize;

    #[test]
    fn evaluates_over_arguments() {
        let args: Vec<Arg> =
            ["M=64", "N=32", "x=zeros:f16:4x8"].iter().map(|a| parse_and_materialize(a, 0).unwrap()).collect();
        assert_eq!(eval("2*M*N*(1+1)", &args).unwrap(), 8192.0);
        assert_eq!(eval("nbytes(x) + numel(x) / 4 - 1e-1*0", &args).unwrap(), 72.0);
        assert!(eval("M*", &args).is_err());
        assert!(eval("numel(M)", &args).is_err());
        assert!(eval("Q", &args).is_err());
    }
}
