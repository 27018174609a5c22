//! [`describe_file`]: the description Python's `trident._live.describe` gives of a kernel, made
//! from a parsed file instead of a live function — for tests that check the two paths compile
//! alike, and for tools that want a file's kernel in the live form.

use super::{triton_dtype_name, LiveFunction, LiveValue};
use crate::globals::Global;
use crate::hosteval::HostValue;
use crate::kernel::{resolve_def, KernelFile};
use crate::value::ConstValue;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The live description of `kernel` (a `@triton.jit` function of `file`): its source and
/// position, the whole file, and the values the file's model binds the names its code (body,
/// signature and decorators) uses to, with jitted helpers described the same way (each once;
/// later uses refer to its `key`). Names bound through `from triton.language import *` are left
/// out. `None` if the file has no such function.
pub fn describe_file(file: &KernelFile, kernel: &str) -> Option<LiveFunction> {
    let idx = file.fns.iter().rposition(|k| k.name == kernel)?;
    Describer { user: file, keys: HashMap::new() }.function(None, idx)
}

struct Describer<'a> {
    user: &'a KernelFile,
    /// (dependency or the file itself, function index) → key of its description.
    keys: HashMap<(Option<u32>, usize), String>,
}

impl<'a> Describer<'a> {
    fn file(&self, dep: Option<u32>) -> Option<&'a KernelFile> {
        match dep {
            None => Some(self.user),
            Some(d) => self.user.deps.get(d as usize),
        }
    }

    fn function(&mut self, dep: Option<u32>, idx: usize) -> Option<LiveFunction> {
        let file = self.file(dep)?;
        let info = file.fns.get(idx)?;
        let def = resolve_def(&file.module.body, &info.path)?;
        let text = file.text();
        // Whole lines, as `inspect.getsource` gives them: from the first decorator's line to the
        // end of the body's last line.
        let start = text[..def.range.start().to_usize()].rfind('\n').map_or(0, |i| i + 1);
        let end = def.range.end().to_usize();
        let end = text[end..].find('\n').map_or(text.len(), |i| end + i + 1);
        let first_line = text[..start].matches('\n').count() as u32 + 1;
        let key = self.keys.len().to_string();
        self.keys.insert((dep, idx), key.clone());
        let mut names = Names::default();
        for d in &def.decorator_list {
            names.visit_expr(&d.expression);
        }
        names.visit_parameters(&def.parameters);
        names.visit_body(&def.body);
        let mut globals = BTreeMap::new();
        for (name, attrs) in names.used {
            let Some(g) = file.shared.globals.get(&name) else { continue };
            globals.insert(name, self.value(dep, g, &attrs));
        }
        Some(LiveFunction {
            name: info.name.clone(),
            path: file.path().to_string(),
            source: text[start..end].to_string(),
            first_line,
            file_text: Some(text.to_string()),
            globals,
            key: Some(key),
            options: None,
            defaults: BTreeMap::new(),
        })
    }

    /// The value of binding `g` of file `dep`; `attrs`: the attributes the code takes of it.
    fn value(&mut self, dep: Option<u32>, g: &Global, attrs: &BTreeSet<String>) -> LiveValue {
        let opaque = |what: &str| LiveValue::Opaque { value: what.to_string() };
        match g.settled() {
            Global::Module(m) => LiveValue::Module { value: m.path().to_string(), attrs: BTreeMap::new() },
            Global::Attr(m, a) => LiveValue::Builtin { value: format!("{}.{a}", m.path()) },
            Global::Jit(i) => self.jit(dep, *i),
            Global::DepJit(d, i) => self.jit(Some(*d), *i),
            Global::UserJit(i) => self.jit(None, *i),
            Global::DepModule(d) => {
                let Some(f) = self.user.deps.get(*d as usize) else { return opaque("a module that did not load") };
                let mut out = BTreeMap::new();
                for a in attrs {
                    if let Some(g) = f.shared.globals.get(a) {
                        out.insert(a.clone(), self.value(Some(*d), g, &BTreeSet::new()));
                    }
                }
                LiveValue::Module { value: f.path().to_string(), attrs: out }
            }
            Global::Value(h) => host(h),
            Global::HostDef(what, _) | Global::Opaque(what) | Global::Ambiguous(what, _) => opaque(what),
            Global::DepDef(..) => opaque("a plain Python function"),
        }
    }

    fn jit(&mut self, dep: Option<u32>, idx: usize) -> LiveValue {
        if let Some(k) = self.keys.get(&(dep, idx)) {
            return LiveValue::Jit { value: None, reference: Some(k.clone()) };
        }
        match self.function(dep, idx) {
            Some(f) => LiveValue::Jit { value: Some(Box::new(f)), reference: None },
            None => LiveValue::Opaque { value: "a jitted function that did not load".to_string() },
        }
    }
}

fn host(h: &HostValue) -> LiveValue {
    match h {
        HostValue::Const(c) => konst(c),
        HostValue::List(items) => LiveValue::Tuple { value: items.iter().map(host).collect() },
        HostValue::Module(m) => LiveValue::Module { value: m.path().to_string(), attrs: BTreeMap::new() },
        HostValue::Func(m, a) => LiveValue::Builtin { value: format!("{}.{a}", m.path()) },
        other => LiveValue::Opaque { value: format!("{other:?}") },
    }
}

fn konst(c: &ConstValue) -> LiveValue {
    match c {
        ConstValue::None => LiveValue::None,
        ConstValue::Bool(b) => LiveValue::Bool { value: *b },
        ConstValue::Int(i) => LiveValue::Int { value: i.to_string() },
        ConstValue::Float(f) => LiveValue::Float { value: float_repr(*f) },
        ConstValue::Str(s) => LiveValue::Str { value: s.clone() },
        ConstValue::DType(e) => LiveValue::Dtype { value: triton_dtype_name(*e) },
        ConstValue::Tuple(items) => LiveValue::Tuple { value: items.iter().map(konst).collect() },
    }
}

/// A float as Python's `repr` spells the special values (digits as Rust prints them: both read
/// back to the same value).
fn float_repr(f: f64) -> String {
    if f.is_nan() {
        "nan".to_string()
    } else if f.is_infinite() {
        if f > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        format!("{f:?}")
    }
}

/// The names an expression tree uses, with the attributes taken of each (`mod.NAME`): what
/// Python's `co_names` lists.
#[derive(Default)]
struct Names {
    used: BTreeMap<String, BTreeSet<String>>,
}

impl<'a> Visitor<'a> for Names {
    fn visit_expr(&mut self, e: &'a Expr) {
        match e {
            Expr::Name(n) => {
                self.used.entry(n.id.to_string()).or_default();
            }
            Expr::Attribute(ast::ExprAttribute { value, attr, .. }) => {
                if let Expr::Name(n) = &**value {
                    self.used.entry(n.id.to_string()).or_default().insert(attr.id.to_string());
                }
            }
            _ => {}
        }
        visitor::walk_expr(self, e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_keep_their_value() {
        for f in [0.1, 1e-5, -2.5e300, 0.0, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(super::super::py_float(&float_repr(f)), Some(f));
        }
        assert_eq!(float_repr(f64::NAN), "nan");
    }
}
