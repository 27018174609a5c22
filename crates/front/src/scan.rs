//! `parse_file`: parse the module once, then walk its top-level statements to
//! learn what every module-level name is bound to (imports, constants,
//! `@triton.jit` functions) and what each jit function's decorators say.
//!
//! Module-level `if`s whose condition evaluates statically take one branch;
//! others are scanned on both sides and a name keeps its binding only where
//! every branch agrees. A `try` is taken to succeed (its body's bindings win),
//! which is what happens in any environment where Triton itself is installed.

use crate::globals::{Global, Globals};
use crate::hosteval::{HostEval, HostValue};
use crate::kernel::{
    dep_file_index, resolve_def, Autotune, FileShared, Heuristic, KernelFile, KernelInfo, ParamInfo, USER_FILE_INDEX,
};
use crate::language::dtypes::{sig_type, tl_dtype};
use crate::language::{prelude, Mod};
use crate::source::{LineIndex, SrcRef};
use crate::value::ConstValue;
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{Ranged, TextRange};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use trident_ir::Diagnostic;

/// Parses a Python source file and records its `@triton.jit` functions.
///
/// Fails only on syntax errors; problems in decorators are recorded on the
/// kernel they belong to and reported when it is used.
///
/// When `path` names a file on disk, imports of other files of the same project
/// (`from .utils import triton_tanh`, `from fla.ops.utils.op import exp`,
/// `import mypkg.kernels as K`) are followed: those files are parsed too (see
/// [`KernelFile::dependencies`]) and the imported names bind to what they bind
/// to there, `@triton.jit` helpers included. Absolute imports are looked up in
/// the file's directory and its ancestors, as Python finds a project's package
/// on `sys.path`. Files that cannot be read or parsed leave their names opaque.
pub fn parse_file(path: &str, text: &str) -> Result<KernelFile, Diagnostic> {
    let dir = std::path::Path::new(path)
        .canonicalize()
        .ok()
        .filter(|p| p.is_file())
        .and_then(|p| p.parent().map(|d| d.to_path_buf()));
    let mut loader = Loader::default();
    let mut file = scan_file(path, text, USER_FILE_INDEX, dir, &mut loader)?;
    file.deps = loader.deps.into_iter().map(|d| d.unwrap_or_else(|| empty_file("<unreadable>"))).collect();
    Ok(file)
}

/// Trident's prelude (`language/prelude.py`), parsed once per process.
///
/// The cached parse lives here, with the parser, rather than next to the source text in
/// `language` (which must stay below the scanner) or in `lower` (its only user today, but the
/// prelude is a file like any other, and what reads files is this module).
pub(crate) fn prelude() -> &'static KernelFile {
    static P: OnceLock<KernelFile> = OnceLock::new();
    P.get_or_init(|| match parse_file(prelude::PATH, prelude::SOURCE) {
        Ok(f) => f,
        // The prelude is part of the crate and tested to parse; fall back to an empty one regardless.
        Err(_) => parse_file(prelude::PATH, "").unwrap_or_else(|_| unreachable!("empty source always parses")),
    })
}

/// The most project files one kernel file may pull in through its imports.
const MAX_DEPS: usize = 64;

/// Project files reached through imports while scanning one kernel file, each parsed once.
#[derive(Default)]
struct Loader {
    /// `None` while a file is being scanned (an import cycle sees no names) or when it failed to parse.
    deps: Vec<Option<KernelFile>>,
    by_path: std::collections::HashMap<PathBuf, u32>,
}

fn empty_file(path: &str) -> KernelFile {
    let lines = LineIndex::new("");
    let shared = Arc::new(FileShared {
        path: path.to_string(),
        text: String::new(),
        lines,
        globals: Globals::new(),
        shown: None,
    });
    let module = ruff_python_parser::parse_module("").map(|p| p.into_syntax()).unwrap_or_else(|_| unreachable!());
    KernelFile { shared, module, fns: vec![], deps: vec![], live_root: None }
}

/// Parses and scans one file; `file_index` is its index among the compilation's source files.
fn scan_file(
    path: &str,
    text: &str,
    file_index: u32,
    dir: Option<PathBuf>,
    loader: &mut Loader,
) -> Result<KernelFile, Diagnostic> {
    let lines = LineIndex::new(text);
    let src = SrcRef { file: file_index, lines: &lines };
    // The parser recurses as deep as the source nests: a stack made for it, then the limits.
    let module = crate::checks::on_big_stack(|| {
        let parsed = ruff_python_parser::parse_module(text).map_err(|e| {
            let r = e.location;
            src.error(r, format!("syntax error: {}", e.error)).label("invalid syntax")
        })?;
        let module = parsed.into_syntax();
        crate::checks::check(&module, &src)?;
        Ok::<_, Diagnostic>(module)
    })?;
    let mut sc = Scanner { src, text, root: &module.body, fns: vec![], plain_defs: Default::default(), dir, loader };
    let mut globals = Globals::new();
    let mut path_stack = vec![];
    sc.suite(&module.body, &mut path_stack, &mut globals);
    let fns = sc.fns;
    let shared = Arc::new(FileShared {
        path: path.to_string(),
        text: text.to_string(),
        lines: lines.clone(),
        globals,
        shown: None,
    });
    let fns = fns
        .into_iter()
        .map(|mut k| {
            k.shared = Some(shared.clone());
            k
        })
        .collect();
    Ok(KernelFile { shared, module, fns, deps: vec![], live_root: None })
}

/// A binding of dependency `dep`, as seen from a file that imports it.
fn imported(dep: u32, g: &Global) -> Global {
    match g {
        Global::Jit(i) => Global::DepJit(dep, *i),
        Global::HostDef(_, Some(path)) => Global::DepDef(dep, path.clone()),
        Global::Ambiguous(m, alts) => {
            Global::Ambiguous(m.clone(), alts.iter().map(|a| a.as_ref().map(|x| imported(dep, x))).collect())
        }
        other => other.clone(),
    }
}

struct Scanner<'a, 'l> {
    src: SrcRef<'a>,
    text: &'a str,
    /// The module's statements (to find a plain `def` that is made a jit function later).
    root: &'a [Stmt],
    fns: Vec<KernelInfo>,
    /// Plain (undecorated) module-level `def`s: where they are.
    plain_defs: std::collections::HashMap<String, Vec<(u32, u32)>>,
    /// The directory of the file, when it is on disk (imports of project files resolve from here).
    dir: Option<PathBuf>,
    loader: &'l mut Loader,
}

/// What the decorators of a function say, as far as Trident cares.
#[derive(Default)]
struct JitOpts {
    is_jit: bool,
    dns: Vec<ConstValue>,
    dns_align: Vec<ConstValue>,
    debug: Option<bool>,
    noinline: bool,
    autotune: Option<Autotune>,
    heuristics: Vec<Heuristic>,
}

fn dotted(e: &Expr) -> Option<String> {
    match e {
        Expr::Name(n) => Some(n.id.to_string()),
        Expr::Attribute(a) => Some(format!("{}.{}", dotted(&a.value)?, a.attr.id)),
        _ => None,
    }
}

/// What a module path bound by `import` refers to.
fn import_target(path: &str) -> Global {
    match Mod::from_path(path) {
        Some(m) => Global::Module(m),
        None => Global::Opaque(path.to_string()),
    }
}

impl Scanner<'_, '_> {
    /// A module of the project: `(file, package directory)` for `module` imported at `level`
    /// (leading dots). A plain module is its `.py` file; a package its `__init__.py` (if any) and
    /// its directory, where submodules live.
    fn find_module(&self, module: &str, level: u32) -> Option<(Option<PathBuf>, Option<PathBuf>)> {
        let dir = self.dir.as_ref()?;
        let parts: Vec<&str> = module.split('.').filter(|p| !p.is_empty()).collect();
        let bases: Vec<PathBuf> = if level > 0 {
            let mut b = dir.clone();
            for _ in 1..level {
                b = b.parent()?.to_path_buf();
            }
            vec![b]
        } else {
            dir.ancestors().take(12).map(|p| p.to_path_buf()).collect()
        };
        for base in bases {
            let mut p = base.clone();
            for part in &parts {
                p.push(part);
            }
            if parts.is_empty() || p.is_dir() {
                let init = p.join("__init__.py");
                if parts.is_empty() || init.is_file() || level > 0 {
                    return Some((init.is_file().then_some(init), Some(p)));
                }
            }
            let file = p.with_extension("py");
            if !parts.is_empty() && file.is_file() {
                return Some((Some(file), None));
            }
        }
        None
    }

    /// Parses a project file (once) and returns its dependency index.
    fn load_dep(&mut self, path: &std::path::Path) -> Option<u32> {
        let canon = path.canonicalize().ok()?;
        if let Some(&id) = self.loader.by_path.get(&canon) {
            return Some(id);
        }
        if self.loader.deps.len() >= MAX_DEPS {
            return None;
        }
        let text = std::fs::read_to_string(&canon).ok()?;
        let id = self.loader.deps.len() as u32;
        self.loader.deps.push(None);
        self.loader.by_path.insert(canon.clone(), id);
        let dir = canon.parent().map(|d| d.to_path_buf());
        let shown = canon.display().to_string();
        let file = scan_file(&shown, &text, dep_file_index(id), dir, self.loader).ok();
        self.loader.deps[id as usize] = file;
        Some(id)
    }

    fn dep_global(&self, id: u32, name: &str) -> Option<Global> {
        let f = self.loader.deps.get(id as usize)?.as_ref()?;
        f.shared.globals.get(name).map(|g| imported(id, g))
    }

    /// `from MODULE import NAME` for a module of the project: what NAME binds to.
    fn import_from_project(&mut self, module: &str, level: u32, name: &str) -> Option<Global> {
        let (file, pkg) = self.find_module(module, level)?;
        if let Some(f) = &file {
            if let Some(id) = self.load_dep(f) {
                if let Some(g) = self.dep_global(id, name) {
                    return Some(g);
                }
            }
        }
        let pkg = pkg?;
        let sub = pkg.join(name);
        let sub_file = if sub.is_dir() { sub.join("__init__.py") } else { sub.with_extension("py") };
        if sub_file.is_file() {
            return self.load_dep(&sub_file).map(Global::DepModule);
        }
        None
    }

    /// `from MODULE import *` for a module of the project: its public names.
    fn import_star_from_project(&mut self, module: &str, level: u32, env: &mut Globals) {
        let Some((Some(file), _)) = self.find_module(module, level) else { return };
        let Some(id) = self.load_dep(&file) else { return };
        let Some(Some(f)) = self.loader.deps.get(id as usize) else { return };
        let names: Vec<(String, Global)> = f
            .shared
            .globals
            .iter()
            .filter(|(k, _)| !k.starts_with('_') && *k != "*")
            .map(|(k, g)| (k.clone(), imported(id, g)))
            .collect();
        env.extend(names);
    }

    fn suite(&mut self, body: &[Stmt], path: &mut Vec<(u32, u32)>, env: &mut Globals) {
        for (i, stmt) in body.iter().enumerate() {
            path.push((i as u32, 0));
            self.stmt(stmt, path, env);
            path.pop();
        }
    }

    /// Scans `suite` number `k` of the statement at the top of `path`.
    fn sub_suite(&mut self, body: &[Stmt], k: u32, path: &mut Vec<(u32, u32)>, env: &mut Globals) {
        if let Some(last) = path.last_mut() {
            last.1 = k;
        }
        self.suite(body, path, env);
    }

    fn bind(&self, env: &mut Globals, target: &Expr, value: Result<HostValue, String>) {
        match target {
            Expr::Name(n) => {
                let g = match value {
                    Ok(HostValue::Module(m)) => Global::Module(m),
                    Ok(HostValue::Func(m, a)) => Global::Attr(m, a),
                    Ok(v) => Global::Value(v),
                    Err(why) => Global::Opaque(why),
                };
                env.insert(n.id.to_string(), g);
            }
            Expr::Tuple(t) => {
                let items = match &value {
                    Ok(HostValue::List(v)) if v.len() == t.elts.len() => Some(v.clone()),
                    _ => None,
                };
                for (k, x) in t.elts.iter().enumerate() {
                    let v = match &items {
                        Some(v) => Ok(v[k].clone()),
                        None => Err("a value unpacked from an expression Trident cannot evaluate".to_string()),
                    };
                    self.bind(env, x, v);
                }
            }
            _ => {}
        }
    }

    fn eval(&self, env: &Globals, e: &Expr) -> Result<HostValue, String> {
        HostEval::new(env, self.src)
            .with_module(self.root, self.text)
            .eval(e)
            .map_err(|d| format!("a value Trident cannot evaluate ({})", d.message))
    }

    fn stmt(&mut self, stmt: &Stmt, path: &mut Vec<(u32, u32)>, env: &mut Globals) {
        match stmt {
            Stmt::Import(imp) => {
                for a in &imp.names {
                    let full = a.name.id.as_str();
                    match &a.asname {
                        Some(alias) => {
                            let mut g = import_target(full);
                            if matches!(g, Global::Opaque(_)) {
                                if let Some((Some(file), _)) = self.find_module(full, 0) {
                                    if let Some(id) = self.load_dep(&file) {
                                        g = Global::DepModule(id);
                                    }
                                }
                            }
                            env.insert(alias.id.to_string(), g);
                        }
                        None => {
                            // `import triton.language` binds `triton`.
                            let first = full.split('.').next().unwrap_or(full);
                            env.insert(first.to_string(), import_target(first));
                        }
                    }
                }
            }
            Stmt::ImportFrom(imp) => {
                let module = imp.module.as_ref().map(|m| m.id.to_string()).unwrap_or_default();
                let base = if imp.level > 0 { None } else { Mod::from_path(&module) };
                for a in &imp.names {
                    let name = a.name.id.as_str();
                    let bound = a.asname.as_ref().map(|x| x.id.as_str()).unwrap_or(name);
                    if name == "*" {
                        if base == Some(Mod::Language) {
                            env.insert("*".to_string(), Global::Module(Mod::Language));
                        } else if base.is_none() {
                            self.import_star_from_project(&module, imp.level, env);
                        }
                        continue;
                    }
                    let g = match base {
                        Some(m) => match m.submodule(name) {
                            Some(sub) => Global::Module(sub),
                            None => match Mod::from_path(&format!("{module}.{name}")) {
                                Some(sub) => Global::Module(sub),
                                None => Global::Attr(m, name.to_string()),
                            },
                        },
                        None => match Mod::from_path(&format!("{module}.{name}")) {
                            Some(sub) if imp.level == 0 => Global::Module(sub),
                            _ => match self.import_from_project(&module, imp.level, name) {
                                Some(g) => g,
                                None => Global::Opaque(format!("{}{module}.{name}", ".".repeat(imp.level as usize))),
                            },
                        },
                    };
                    env.insert(bound.to_string(), g);
                }
            }
            Stmt::FunctionDef(f) => {
                let name = f.name.id.to_string();
                match self.jit_def(f, path, env) {
                    Some(info) => {
                        let idx = self.fns.len();
                        self.fns.push(info);
                        env.insert(name, Global::Jit(idx));
                    }
                    None => {
                        self.plain_defs.insert(name.clone(), path.clone());
                        env.insert(
                            name.clone(),
                            Global::HostDef(format!("`{name}` is a plain Python function"), Some(path.clone())),
                        );
                    }
                }
            }
            Stmt::ClassDef(c) => {
                let name = c.name.id.to_string();
                env.insert(name.clone(), Global::HostDef(format!("`{name}` is a class"), None));
            }
            Stmt::Assign(a) => {
                if let [Expr::Name(t)] = &a.targets[..] {
                    if let Some(idx) = self.functional_deco(&a.value, env, t.id.as_str()) {
                        env.insert(t.id.to_string(), Global::Jit(idx));
                        return;
                    }
                }
                let v = self.eval(env, &a.value);
                for t in &a.targets {
                    self.bind(env, t, v.clone());
                }
            }
            Stmt::AnnAssign(a) => {
                if let Some(value) = &a.value {
                    let v = self.eval(env, value);
                    self.bind(env, &a.target, v);
                }
            }
            Stmt::AugAssign(a) => {
                let synthetic = Expr::BinOp(ast::ExprBinOp {
                    node_index: Default::default(),
                    range: a.range,
                    left: a.target.clone(),
                    op: a.op,
                    right: a.value.clone(),
                });
                let v = self.eval(env, &synthetic);
                self.bind(env, &a.target, v);
            }
            Stmt::Delete(d) => {
                for t in &d.targets {
                    if let Expr::Name(n) = t {
                        env.remove(n.id.as_str());
                    }
                }
            }
            Stmt::If(s) => {
                let mut clauses: Vec<(Option<&Expr>, &[Stmt])> = vec![(Some(&s.test), &s.body)];
                for c in &s.elif_else_clauses {
                    clauses.push((c.test.as_ref(), &c.body));
                }
                if !s.elif_else_clauses.iter().any(|c| c.test.is_none()) {
                    clauses.push((None, &[]));
                }
                // Take the first clause whose condition is known true, as long as the earlier ones are known false.
                let mut branches: Vec<(u32, &[Stmt])> = vec![];
                for (k, (test, body)) in clauses.iter().enumerate() {
                    let truth = match test {
                        None => Some(true),
                        Some(t) => HostEval::new(env, self.src)
                            .with_module(self.root, self.text)
                            .eval_const(t)
                            .ok()
                            .and_then(|c| c.truthy()),
                    };
                    match truth {
                        Some(false) => continue,
                        Some(true) => {
                            branches.push((k as u32, body));
                            break;
                        }
                        None => branches.push((k as u32, body)),
                    }
                }
                self.branches(&branches, path, env, s.range);
            }
            Stmt::Try(t) => {
                self.sub_suite(&t.body, 0, path, env);
                self.sub_suite(&t.orelse, 1, path, env);
                self.sub_suite(&t.finalbody, 2, path, env);
            }
            Stmt::With(w) => self.sub_suite(&w.body, 0, path, env),
            Stmt::For(_) | Stmt::While(_) => {
                let mut names = vec![];
                assigned_names(std::slice::from_ref(stmt), &mut names);
                for n in names {
                    env.insert(n, Global::Opaque("a value assigned in a module-level loop".into()));
                }
            }
            _ => {}
        }
    }

    /// Scans alternative branches on copies of `env` and keeps the bindings they agree on.
    fn branches(&mut self, branches: &[(u32, &[Stmt])], path: &mut Vec<(u32, u32)>, env: &mut Globals, r: TextRange) {
        if branches.len() == 1 {
            let (k, body) = branches[0];
            self.sub_suite(body, k, path, env);
            return;
        }
        let mut results: Vec<Globals> = vec![];
        for (k, body) in branches {
            let mut e = env.clone();
            self.sub_suite(body, *k, path, &mut e);
            results.push(e);
        }
        let (line, _) = self.src.lines.line_col(r.start().to_u32());
        let mut keys: Vec<String> = results.iter().flat_map(|e| e.keys().cloned()).collect();
        keys.sort();
        keys.dedup();
        for k in keys {
            let vals: Vec<Option<Global>> = results.iter().map(|e| e.get(&k).map(Global::canonical)).collect();
            if vals.windows(2).all(|w| w[0] == w[1]) {
                match &vals[0] {
                    Some(v) => env.insert(k, v.clone()),
                    None => env.remove(&k),
                };
            } else {
                env.insert(
                    k.clone(),
                    Global::Ambiguous(
                        format!("`{k}` is bound differently by the branches of the module-level `if` at line {line}"),
                        vals,
                    ),
                );
            }
        }
    }

    fn text(&self, r: TextRange) -> String {
        self.text.get(r.start().to_usize()..r.end().to_usize()).unwrap_or("").to_string()
    }

    /// What a module-level expression used as a decorator refers to, if it is a name or a dotted name.
    fn resolve_deco(e: &Expr, env: &Globals) -> Option<Global> {
        match e {
            Expr::Name(n) => env.get(n.id.as_str()).map(|g| g.settled().clone()),
            Expr::Attribute(a) => {
                let base = match &*a.value {
                    Expr::Name(n) => env.get(n.id.as_str()).map(|g| g.settled().clone()),
                    _ => dotted(&a.value).and_then(|p| Mod::from_path(&p)).map(Global::Module),
                };
                match base {
                    Some(Global::Module(m)) => Some(Global::Attr(m, a.attr.id.to_string())),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// Applies one decorator expression (`triton.jit`, `triton.jit(...)`, `triton.autotune(...)`,
    /// `triton.heuristics(...)`; anything else is ignored) to `opts`.
    fn apply_deco(&self, opts: &mut JitOpts, d: &Expr, env: &Globals) {
        let (func, call) = match d {
            Expr::Call(c) => (&*c.func, Some(c)),
            e => (e, None),
        };
        let g = Self::resolve_deco(func, env);
        let is_triton = |name: &str| matches!(&g, Some(Global::Attr(Mod::Triton | Mod::Language, n)) if n == name);
        if is_triton("jit") {
            opts.is_jit = true;
            if let Some(c) = call {
                self.jit_keywords(opts, c, env);
            }
        } else if is_triton("autotune") {
            if let Some(c) = call {
                opts.autotune = Some(self.autotune(c, env));
            }
        } else if is_triton("heuristics") {
            if let Some(c) = call {
                if let Some(arg) = c.arguments.args.first() {
                    opts.heuristics.extend(self.heuristics(arg, env));
                }
            }
        }
    }

    /// The keywords of a `@triton.jit(...)` call that change how the function compiles.
    fn jit_keywords(&self, opts: &mut JitOpts, c: &ast::ExprCall, env: &Globals) {
        for k in c.arguments.keywords.iter() {
            let Some(name) = &k.arg else { continue };
            let v = HostEval::new(env, self.src)
                .with_module(self.root, self.text)
                .eval(&k.value)
                .ok()
                .and_then(|v| v.into_const());
            match (name.id.as_str(), v) {
                ("do_not_specialize", Some(ConstValue::Tuple(v))) => opts.dns = v,
                ("do_not_specialize_on_alignment", Some(ConstValue::Tuple(v))) => opts.dns_align = v,
                ("debug", Some(c)) => opts.debug = c.truthy(),
                ("noinline", Some(c)) => opts.noinline = c.truthy().unwrap_or(false),
                _ => {}
            }
        }
    }

    /// `NAME = DECORATOR(FUNC)` at module level, where DECORATOR is one of Triton's
    /// (`triton.jit`, `triton.heuristics({...})`, `triton.autotune(...)`, `triton.jit(...)`) and
    /// FUNC a plain `def` or a jit function of this file: the functional spelling of decorators
    /// (unsloth writes `_kernel = triton.jit(_kernel)`). Returns the index of the jit function.
    fn functional_deco(&mut self, value: &Expr, env: &Globals, name: &str) -> Option<usize> {
        let Expr::Call(c) = value else { return None };
        let [Expr::Name(arg)] = &c.arguments.args[..] else { return None };
        if !c.arguments.keywords.is_empty() {
            return None;
        }
        let mut opts = JitOpts::default();
        self.apply_deco(&mut opts, &c.func, env);
        if !opts.is_jit && opts.autotune.is_none() && opts.heuristics.is_empty() {
            return None;
        }
        match env.get(arg.id.as_str()) {
            Some(Global::Jit(idx)) => {
                let idx = *idx;
                let info = &mut self.fns[idx];
                info.heuristics.extend(opts.heuristics);
                if opts.autotune.is_some() {
                    info.autotune = opts.autotune;
                }
                if opts.debug.is_some() {
                    info.debug = opts.debug;
                }
                Some(idx)
            }
            Some(Global::HostDef(..)) if opts.is_jit => {
                let path = self.plain_defs.get(arg.id.as_str())?.clone();
                let f = resolve_def(self.root, &path)?;
                let mut info = self.jit_info(f, &path, env, opts);
                info.name = name.to_string();
                self.fns.push(info);
                Some(self.fns.len() - 1)
            }
            _ => None,
        }
    }

    /// Reads the decorators of a `def`; returns its description if it is `@triton.jit`.
    fn jit_def(&mut self, f: &ast::StmtFunctionDef, path: &[(u32, u32)], env: &Globals) -> Option<KernelInfo> {
        let mut opts = JitOpts::default();
        // Decorators apply bottom-up; heuristics listed above others apply later.
        for d in f.decorator_list.iter().rev() {
            self.apply_deco(&mut opts, &d.expression, env);
        }
        if !opts.is_jit {
            return None;
        }
        Some(self.jit_info(f, path, env, opts))
    }

    /// The description of `f` as a jit function with these decorator options.
    fn jit_info(&self, f: &ast::StmtFunctionDef, path: &[(u32, u32)], env: &Globals, opts: JitOpts) -> KernelInfo {
        let JitOpts { dns, dns_align, debug, noinline, autotune, heuristics, .. } = opts;
        let params = &f.parameters;
        let all: Vec<&ast::ParameterWithDefault> =
            params.posonlyargs.iter().chain(params.args.iter()).chain(params.kwonlyargs.iter()).collect();
        let names: Vec<String> = all.iter().map(|p| p.parameter.name.id.to_string()).collect();
        let to_names = |v: &[ConstValue]| -> Vec<String> {
            v.iter()
                .filter_map(|x| match x {
                    ConstValue::Str(s) => Some(s.clone()),
                    ConstValue::Int(i) => names.get(*i as usize).cloned(),
                    _ => None,
                })
                .collect()
        };
        let dns = to_names(&dns);
        let dns_align = to_names(&dns_align);
        let mut infos = vec![];
        for p in all {
            let name = p.parameter.name.id.to_string();
            let annotation = p.parameter.annotation.as_deref().map(|a| self.text(a.range()));
            let annotated_type = p.parameter.annotation.as_deref().and_then(|a| annotation_type(a, env, self.src));
            let default = p.default.as_deref().and_then(|d| {
                HostEval::new(env, self.src)
                    .with_module(self.root, self.text)
                    .with_deps(&self.loader.deps)
                    .eval_const(d)
                    .ok()
            });
            infos.push(ParamInfo {
                is_constexpr: annotation.as_deref().is_some_and(|a| a.contains("constexpr")),
                do_not_specialize: dns.contains(&name),
                do_not_specialize_on_alignment: dns_align.contains(&name),
                annotation,
                annotated_type,
                has_default: p.default.is_some(),
                default,
                loc: self.src.loc(p.parameter.name.range.start()),
                name,
            });
        }
        KernelInfo {
            name: f.name.id.to_string(),
            loc: self.src.loc(f.name.range.start()),
            params: infos,
            do_not_specialize: dns,
            do_not_specialize_on_alignment: dns_align,
            debug,
            noinline,
            autotune,
            heuristics,
            path: path.to_vec(),
            shared: None,
        }
    }

    fn autotune(&self, c: &ast::ExprCall, env: &Globals) -> Autotune {
        let mut at = Autotune {
            configs: Ok(vec![]),
            key: vec![],
            prune_configs_by: None,
            reset_to_zero: vec![],
            restore_value: vec![],
            loc: self.src.loc(c.range().start()),
        };
        let strings = |e: &Expr| -> Vec<String> {
            match HostEval::new(env, self.src)
                .with_module(self.root, self.text)
                .with_deps(&self.loader.deps)
                .eval_const(e)
            {
                Ok(ConstValue::Tuple(v)) => {
                    v.into_iter().filter_map(|x| if let ConstValue::Str(s) = x { Some(s) } else { None }).collect()
                }
                Ok(ConstValue::Str(s)) => vec![s],
                _ => vec![],
            }
        };
        let mut configs_expr = c.arguments.args.first();
        if let Some(k) = c.arguments.args.get(1) {
            at.key = strings(k);
        }
        for k in c.arguments.keywords.iter() {
            let Some(name) = &k.arg else { continue };
            match name.id.as_str() {
                "configs" => configs_expr = Some(&k.value),
                "key" => at.key = strings(&k.value),
                "reset_to_zero" => at.reset_to_zero = strings(&k.value),
                "restore_value" => at.restore_value = strings(&k.value),
                "prune_configs_by" => at.prune_configs_by = Some(self.text(k.value.range())),
                _ => {}
            }
        }
        at.configs = match configs_expr {
            None => Ok(vec![]),
            Some(e) => match HostEval::new(env, self.src)
                .with_module(self.root, self.text)
                .with_deps(&self.loader.deps)
                .eval(e)
            {
                Ok(HostValue::List(items)) => items
                    .into_iter()
                    .map(|v| match v {
                        HostValue::Config(c) => Ok(*c),
                        _ => Err(self.src.error(e.range(), "autotune configs must be triton.Config objects")),
                    })
                    .collect(),
                Ok(_) => Err(self.src.error(e.range(), "autotune configs must be a list of triton.Config")),
                Err(d) => Err(d),
            },
        };
        at
    }

    fn heuristics(&self, arg: &Expr, env: &Globals) -> Vec<Heuristic> {
        let mut out = vec![];
        if let Expr::Dict(d) = arg {
            for item in &d.items {
                let Some(Expr::StringLiteral(k)) = &item.key else { continue };
                let r = item.value.range();
                out.push(Heuristic {
                    name: k.value.to_str().to_string(),
                    source: self.text(r),
                    loc: self.src.loc(r.start()),
                    range: r,
                });
            }
        } else if let Ok(HostValue::Dict(items)) =
            HostEval::new(env, self.src).with_module(self.root, self.text).with_deps(&self.loader.deps).eval(arg)
        {
            for (k, v) in items {
                if let (HostValue::Const(ConstValue::Str(k)), HostValue::Lambda(r)) = (k, v) {
                    out.push(Heuristic { name: k, source: self.text(r), loc: self.src.loc(r.start()), range: r });
                }
            }
        }
        out
    }
}

/// The description of a live function's `def` (see `crate::live`): its parameters as
/// [`parse_file`] records them, with the keywords of a `jit(...)` decorator in its source.
///
/// Python has already applied the decorators, so none is required and `@autotune` and
/// `@heuristics` are left to the caller (the Python side runs them itself). A decorator call
/// is read as `jit(...)` by its callee's last name (`triton.jit`, `trident.jit`, `jit`): the
/// description lists only the names the function's code uses, which may not include the
/// decorator's module.
pub(crate) fn live_def_info(
    src: SrcRef,
    text: &str,
    root: &[Stmt],
    env: &Globals,
    f: &ast::StmtFunctionDef,
    path: &[(u32, u32)],
) -> KernelInfo {
    let mut loader = Loader::default();
    let sc = Scanner { src, text, root, fns: vec![], plain_defs: Default::default(), dir: None, loader: &mut loader };
    let mut opts = JitOpts { is_jit: true, ..JitOpts::default() };
    for d in f.decorator_list.iter().rev() {
        if let Expr::Call(c) = &d.expression {
            let callee = dotted(&c.func);
            if callee.as_deref().and_then(|p| p.rsplit('.').next()) == Some("jit") {
                sc.jit_keywords(&mut opts, c, env);
            }
        }
    }
    sc.jit_info(f, path, env, opts)
}

/// The type an annotation pins, if any: `tl.int64`, `"i64"`, `"*fp16"`, `tl.pointer_type(tl.float16)`.
fn annotation_type(a: &Expr, env: &Globals, src: SrcRef) -> Option<trident_ir::Elem> {
    match a {
        Expr::StringLiteral(s) => sig_type(s.value.to_str()),
        Expr::Attribute(at) => tl_dtype(at.attr.id.as_str())
            .map(trident_ir::Elem::Num)
            .filter(|_| matches!(HostEval::new(env, src).eval(a), Ok(HostValue::Const(ConstValue::DType(_))))),
        _ => None,
    }
}

/// Names assigned anywhere in `body` (not descending into nested `def`s).
pub(crate) fn assigned_names(body: &[Stmt], out: &mut Vec<String>) {
    fn target(e: &Expr, out: &mut Vec<String>) {
        match e {
            Expr::Name(n) => out.push(n.id.to_string()),
            Expr::Tuple(t) => t.elts.iter().for_each(|x| target(x, out)),
            Expr::List(t) => t.elts.iter().for_each(|x| target(x, out)),
            Expr::Starred(s) => target(&s.value, out),
            _ => {}
        }
    }
    for s in body {
        match s {
            Stmt::Assign(a) => a.targets.iter().for_each(|t| target(t, out)),
            Stmt::AugAssign(a) => target(&a.target, out),
            Stmt::AnnAssign(a) => target(&a.target, out),
            Stmt::For(f) => {
                target(&f.target, out);
                assigned_names(&f.body, out);
                assigned_names(&f.orelse, out);
            }
            Stmt::While(w) => {
                assigned_names(&w.body, out);
                assigned_names(&w.orelse, out);
            }
            Stmt::If(i) => {
                assigned_names(&i.body, out);
                for c in &i.elif_else_clauses {
                    assigned_names(&c.body, out);
                }
            }
            Stmt::With(w) => {
                for it in &w.items {
                    if let Some(v) = &it.optional_vars {
                        target(v, out);
                    }
                }
                assigned_names(&w.body, out);
            }
            Stmt::Try(t) => {
                assigned_names(&t.body, out);
                assigned_names(&t.orelse, out);
                assigned_names(&t.finalbody, out);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::language::prelude;

    #[test]
    fn prelude_parses_and_defines_its_functions() {
        let f = super::parse_file(prelude::PATH, prelude::SOURCE).unwrap();
        for name in ["sum", "max", "argmax", "sort", "flip", "rand", "randn", "philox_impl", "softmax", "cdiv"] {
            assert!(f.kernel(name).is_some(), "prelude lacks {name}");
        }
        // Every `tl` function the lowering expands from the prelude is defined there.
        for name in prelude::TL_FUNCS {
            assert!(f.kernel(name).is_some(), "prelude lacks {name}");
        }
    }
}
