//! Live functions: a kernel handed over by Python as the function object itself.
//!
//! From Python, the kernel's module has been imported by Python: module-level code (version
//! checks, `try` imports, `exec`, patched source) has run, and every global the kernel uses is
//! a value. `trident._live.describe(fn)` writes the function down as a [`LiveFunction`] (JSON):
//! its source text, where that text sits in its file, and the values of exactly the names its
//! code uses, jitted helpers described the same way. [`parse_live`] turns the description into
//! the same model [`crate::parse_file`] builds from a file, so a live kernel lowers exactly like
//! a file-based one; nothing of the file outside the functions is read or evaluated.
//!
//! # The model built
//!
//! * **Files.** Functions are grouped by source file: the kernel and the helpers from its file
//!   form the kernel's file (source index 0), every other file's helpers a dependency (index
//!   2 + d, after the prelude), as with the project files `parse_file` follows. The text parsed
//!   for a file holds each function's source at its own lines (everything else blank), so every
//!   location is the real `file:line:col`; diagnostics render against the whole `file_text`
//!   when Python had it. An indented function (defined inside another function, as closures
//!   are) gets an `if 1:` on the line above it to parse at its own columns.
//! * **Globals** become the scanner's [`Global`]s: constants and dtypes [`Global::Value`],
//!   modules [`Global::Module`] (attribute chains are resolved lazily by the lowering, as for
//!   files), functions of Triton's modules [`Global::Attr`] (`rsqrt` bound by a module-level
//!   `if` is simply `triton.language.extra.libdevice.rsqrt`), jitted helpers [`Global::Jit`] /
//!   [`Global::DepJit`] / [`Global::UserJit`], other modules with the attributes the code uses
//!   a dependency without source ([`Global::DepModule`]), anything else [`Global::Opaque`]:
//!   an error only where a kernel uses it, naming it.
//! * **Decorators** in the source are not applied: Python ran them (`@autotune` and
//!   `@heuristics` are the caller's business). The keywords of a `jit(...)` decorator are read
//!   unless the description's `options` give them.
//! * **Cache keys.** The parsed text ends with a comment recording the resolved globals,
//!   options and defaults of its functions, so everything that hashes a file's text (the
//!   runtime's cache key and source id) covers them: a changed global constant recompiles.

mod describe;

pub use describe::describe_file;

use crate::globals::{Global, Globals};
use crate::hosteval::HostValue;
use crate::kernel::{dep_file_index, FileShared, KernelFile, KernelInfo, USER_FILE_INDEX};
use crate::language::Mod;
use crate::scan::live_def_info;
use crate::source::{LineIndex, SrcRef};
use crate::value::ConstValue;
use ruff_python_ast::{self as ast, Stmt};
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::Arc;
use trident_core::DType;
use trident_ir::{Diagnostic, Elem, SourceFile};

/// One Python function as `trident._live.describe(fn)` writes it (the JSON schema: field names
/// are the JSON keys).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LiveFunction {
    /// `fn.__name__`: the name the kernel is compiled and looked up by.
    pub name: String,
    /// The source file (`fn.__code__.co_filename`), or `"<string>"`.
    pub path: String,
    /// The function's source as written, decorators included (`inspect.getsource`).
    pub source: String,
    /// 1-based line of the source's first line in the file.
    pub first_line: u32,
    /// The whole file, when Python has it: diagnostics show its lines.
    #[serde(default)]
    pub file_text: Option<String>,
    /// The values of the names the function's code uses (globals and closure cells).
    #[serde(default, deserialize_with = "lenient_values")]
    pub globals: BTreeMap<String, LiveValue>,
    /// Names this function within one description, for [`LiveValue::Jit`] references to it
    /// (recursion, and helpers used from several places, are described once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The jit options of the function object, when Python has one (a `JITFunction`); they
    /// replace what a `jit(...)` decorator in the source says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<LiveOptions>,
    /// Parameter defaults as Python evaluated them (`fn.__defaults__`); they replace the
    /// source's default expressions, which may name things the description does not hold.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty", deserialize_with = "lenient_values")]
    pub defaults: BTreeMap<String, LiveValue>,
}

/// A value of a global, tagged by `kind` (`{"kind": "int", "value": "42"}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum LiveValue {
    None,
    Bool {
        value: bool,
    },
    /// A Python int, in decimal (Python ints are unbounded; Trident takes 128 bits).
    Int {
        value: String,
    },
    /// A Python float as `repr` writes it (`0.1`, `1e-05`, `inf`, `-inf`, `nan`).
    Float {
        value: String,
    },
    Str {
        value: String,
    },
    /// A Triton dtype by its name (`fp16`, `int32`, `bf16`); pointer types as `*fp16`.
    Dtype {
        value: String,
    },
    /// A module by its qualified name (`triton.language`, `math`). For a module Trident does not
    /// know (a module of the user's project), `attrs` gives the values of the attributes the
    /// code may use.
    Module {
        value: String,
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty", deserialize_with = "lenient_values")]
        attrs: BTreeMap<String, LiveValue>,
    },
    /// A function or class of a known module by its qualified name
    /// (`triton.language.math.rsqrt`, `triton.language.extra.cuda.libdevice.rsqrt`).
    Builtin {
        value: String,
    },
    /// A jitted helper: its description, or `ref`, the `key` of one described elsewhere in the
    /// same description.
    Jit {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        value: Option<Box<LiveFunction>>,
        #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
        reference: Option<String>,
    },
    /// `tl.constexpr(value)`.
    Constexpr {
        value: Box<LiveValue>,
    },
    Tuple {
        value: Vec<LiveValue>,
    },
    /// Anything else, by its `repr`: an error only if the kernel uses it.
    Opaque {
        value: String,
    },
    /// Not written by Python: a value whose description could not be read (an unknown kind, a
    /// missing field), with the reason. Like [`LiveValue::Opaque`], an error only where used.
    Invalid {
        value: String,
    },
}

/// The options of a jitted function object (Triton's `JITFunction` attributes).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LiveOptions {
    /// Parameters (names or positions) not specialized on their value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub do_not_specialize: Option<Vec<ParamRef>>,
    /// Parameters (names or positions) not specialized on their alignment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub do_not_specialize_on_alignment: Option<Vec<ParamRef>>,
    /// `debug=` (`None`: the launch's setting).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debug: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noinline: Option<bool>,
}

/// A parameter named by position or by name (Triton keeps `do_not_specialize` as positions).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ParamRef {
    Index(u32),
    Name(String),
}

/// Reads a map of values one entry at a time, so that one bad entry (an unknown kind, a missing
/// field) costs only that name: it becomes [`LiveValue::Invalid`], reported if the kernel uses it.
fn lenient_values<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, LiveValue>, D::Error> {
    let raw = BTreeMap::<String, serde_json::Value>::deserialize(d)?;
    Ok(raw
        .into_iter()
        .map(|(k, v)| {
            let v = serde_json::from_value(v).unwrap_or_else(|e| LiveValue::Invalid { value: e.to_string() });
            (k, v)
        })
        .collect())
}

/// A description that cannot be made into a kernel file: the diagnostic and the files it may
/// point into (render with [`LiveError::render`]).
#[derive(Clone, Debug)]
pub struct LiveError {
    pub diagnostic: Box<Diagnostic>,
    pub files: Vec<SourceFile>,
}

impl LiveError {
    fn msg(text: impl Into<String>) -> LiveError {
        LiveError { diagnostic: Box::new(Diagnostic::error(text)), files: vec![] }
    }

    /// The diagnostic with its source line and caret.
    pub fn render(&self) -> String {
        self.diagnostic.render(&self.files)
    }
}

impl std::fmt::Display for LiveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.render().trim_end())
    }
}

impl std::error::Error for LiveError {}

impl LiveFunction {
    /// Reads a description from JSON. Malformed JSON, or a function without its required fields,
    /// is an error naming the function where it can; a malformed global only makes that global
    /// unusable ([`LiveValue::Invalid`]).
    pub fn from_json(json: &str) -> Result<LiveFunction, LiveError> {
        let value: serde_json::Value = serde_json::from_str(json)
            .map_err(|e| LiveError::msg(format!("malformed live-function description (not JSON): {e}")))?;
        let name = value.get("name").and_then(|n| n.as_str()).map(str::to_string);
        serde_json::from_value(value).map_err(|e| {
            LiveError::msg(match name {
                Some(n) => format!("malformed description of live function `{n}`: {e}"),
                None => format!("malformed live-function description: {e}"),
            })
        })
    }

    /// The description as JSON (what [`LiveFunction::from_json`] reads back).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Two descriptions of one function (their `key`s aside).
fn same_function(a: &LiveFunction, b: &LiveFunction) -> bool {
    a.name == b.name
        && a.path == b.path
        && a.first_line == b.first_line
        && a.source == b.source
        && a.file_text == b.file_text
        && a.globals == b.globals
        && a.options == b.options
        && a.defaults == b.defaults
}

/// The most lines a description may place a function at (a bound on the text built for it).
const MAX_LINES: usize = 1 << 20;
/// How deep module attributes may nest (`pkg.sub.mod.NAME`).
const MAX_MODULE_DEPTH: u32 = 8;

/// Builds the model of a live function's kernel: a [`KernelFile`] whose [`KernelFile::live_kernel`]
/// is the described function, compiled with [`crate::compile`] like a parsed file's kernel.
pub fn parse_live(f: &LiveFunction) -> Result<KernelFile, LiveError> {
    let mut b = Builder::default();
    b.collect(f);
    let members: Vec<Member> = b.fns.iter().map(|f| Member::new(f)).collect::<Result<_, _>>()?;
    b.group(&members);
    b.convert_globals();
    b.build(&members)
}

/// One distinct function of a description, its source split into lines and placed.
struct Member<'a> {
    f: &'a LiveFunction,
    /// The source's lines (no terminators), dedented when they could not keep their columns.
    lines: Vec<String>,
    /// 0-based line of the first source line.
    start: usize,
    /// The first line is indented: it parses only inside a block (an `if 1:` on the line above).
    indented: bool,
    /// The file text, when its lines at `start` are the source's (else diagnostics show the source).
    shown: Option<&'a str>,
}

impl<'a> Member<'a> {
    fn new(f: &'a LiveFunction) -> Result<Member<'a>, LiveError> {
        let mut lines: Vec<String> = f.source.lines().map(str::to_string).collect();
        if lines.iter().all(|l| l.trim().is_empty()) {
            return Err(LiveError::msg(format!("the description of `{}` has no source text", f.name)));
        }
        if f.first_line == 0 || f.first_line as usize + lines.len() > MAX_LINES {
            return Err(LiveError::msg(format!(
                "the description of `{}` places its source at line {}, which is out of range",
                f.name, f.first_line
            )));
        }
        let start = f.first_line as usize - 1;
        let shown = f.file_text.as_deref().filter(|t| t.lines().skip(start).take(lines.len()).eq(f.source.lines()));
        let first = lines.iter().find(|l| !l.trim().is_empty()).map_or("", |l| l.as_str());
        let mut indented = first.starts_with([' ', '\t']);
        if indented && start == 0 {
            // No line above for the `if 1:`: only a source that is not a real file's can be indented
            // on line 1. Dedent it; its columns shift, and diagnostics show the dedented text.
            dedent(&mut lines);
            indented = false;
            return Ok(Member { f, lines, start, indented, shown: None });
        }
        Ok(Member { f, lines, start, indented, shown })
    }

    /// The lines it occupies, the `if 1:` above it included.
    fn span(&self) -> (usize, usize) {
        (self.start - usize::from(self.indented), self.start + self.lines.len())
    }
}

/// Removes the leading whitespace every non-blank line shares (Python's `textwrap.dedent`).
fn dedent(lines: &mut [String]) {
    let indent = |l: &str| l.len() - l.trim_start_matches([' ', '\t']).len();
    let Some(first) = lines.iter().find(|l| !l.trim().is_empty()) else { return };
    let mut common = first[..indent(first)].to_string();
    for l in lines.iter().filter(|l| !l.trim().is_empty()) {
        let n = common.bytes().zip(l.bytes()).take_while(|(a, b)| a == b).count();
        common.truncate(n.min(indent(l)));
    }
    for l in lines.iter_mut() {
        if let Some(rest) = l.strip_prefix(common.as_str()) {
            *l = rest.to_string();
        } else {
            *l = l.trim_start().to_string();
        }
    }
}

/// One source file of the model: the kernel's (group 0) or a dependency.
struct Group<'a> {
    path: &'a str,
    /// The file text diagnostics render against, when Python had it.
    shown: Option<&'a str>,
    /// Indices into the builder's functions, in the order they joined.
    members: Vec<usize>,
    /// The union of the members' globals (they share them: functions of one module share its
    /// globals; a member whose values differ, a closure over other values, goes elsewhere).
    values: BTreeMap<&'a str, &'a LiveValue>,
    /// For a module Trident does not know (`LiveValue::Module` with `attrs`): its name.
    module: Option<&'a str>,
    /// How many such modules lead to this one.
    depth: u32,
    globals: Globals,
}

#[derive(Default)]
struct Builder<'a> {
    /// Distinct functions, the described one first.
    fns: Vec<&'a LiveFunction>,
    by_key: HashMap<&'a str, usize>,
    by_addr: HashMap<*const LiveFunction, usize>,
    groups: Vec<Group<'a>>,
    /// Function index → (group, index among the group's functions).
    place: Vec<(usize, usize)>,
}

impl<'a> Builder<'a> {
    /// Gathers the distinct functions of a description: each key once, and equal descriptions
    /// (without keys) once.
    fn collect(&mut self, f: &'a LiveFunction) -> usize {
        if let Some(&i) = f.key.as_deref().and_then(|k| self.by_key.get(k)) {
            self.by_addr.insert(f, i);
            return i;
        }
        if let Some(i) = self.fns.iter().position(|g| same_function(g, f)) {
            self.by_addr.insert(f, i);
            if let Some(k) = &f.key {
                self.by_key.insert(k, i);
            }
            return i;
        }
        let i = self.fns.len();
        self.fns.push(f);
        self.by_addr.insert(f, i);
        if let Some(k) = &f.key {
            self.by_key.insert(k, i);
        }
        for v in f.globals.values().chain(f.defaults.values()) {
            self.collect_value(v);
        }
        i
    }

    fn collect_value(&mut self, v: &'a LiveValue) {
        match v {
            LiveValue::Jit { value: Some(f), .. } => {
                self.collect(f);
            }
            LiveValue::Module { attrs, .. } => attrs.values().for_each(|v| self.collect_value(v)),
            LiveValue::Tuple { value } => value.iter().for_each(|v| self.collect_value(v)),
            LiveValue::Constexpr { value } => self.collect_value(value),
            _ => {}
        }
    }

    /// The function a jit value names, if the description holds it.
    fn jit_target(&self, v: &LiveValue) -> Option<usize> {
        match v {
            LiveValue::Jit { value: Some(f), .. } => self.by_addr.get(&(&**f as *const LiveFunction)).copied(),
            LiveValue::Jit { value: None, reference: Some(k) } => self.by_key.get(k.as_str()).copied(),
            _ => None,
        }
    }

    /// Two values of one name agree (jit helpers by identity, not by how they were written down).
    fn same_value(&self, a: &LiveValue, b: &LiveValue) -> bool {
        match (a, b) {
            (LiveValue::Jit { .. }, LiveValue::Jit { .. }) => match (self.jit_target(a), self.jit_target(b)) {
                (Some(x), Some(y)) => x == y,
                _ => a == b,
            },
            _ => a == b,
        }
    }

    /// Puts every function into a file: the first group of the same file whose lines it does
    /// not overlap and whose globals agree with its own, else a new one.
    fn group(&mut self, members: &[Member<'a>]) {
        self.place = vec![(0, 0); members.len()];
        for (i, m) in members.iter().enumerate() {
            let fits = |g: &Group| {
                g.module.is_none()
                    && g.path == m.f.path
                    && g.shown == m.shown
                    && g.members.iter().all(|&o| {
                        let (a, b) = (members[o].span(), m.span());
                        a.1 <= b.0 || b.1 <= a.0
                    })
                    && m.f.globals.iter().all(|(k, v)| g.values.get(k.as_str()).is_none_or(|w| self.same_value(v, w)))
            };
            // The described function founds the kernel's file.
            let gi = match (i > 0).then(|| self.groups.iter().position(fits)).flatten() {
                Some(gi) => gi,
                None => {
                    self.groups.push(Group {
                        path: &m.f.path,
                        shown: m.shown,
                        members: vec![],
                        values: BTreeMap::new(),
                        module: None,
                        depth: 0,
                        globals: Globals::new(),
                    });
                    self.groups.len() - 1
                }
            };
            let g = &mut self.groups[gi];
            self.place[i] = (gi, g.members.len());
            g.members.push(i);
            for (k, v) in &m.f.globals {
                g.values.entry(k.as_str()).or_insert(v);
            }
        }
    }

    /// Resolves every group's values to the scanner's bindings (adding a dependency per module
    /// of the user's project that the code reaches into).
    fn convert_globals(&mut self) {
        let mut gi = 0;
        while gi < self.groups.len() {
            let values: Vec<(&'a str, &'a LiveValue)> = self.groups[gi].values.iter().map(|(k, v)| (*k, *v)).collect();
            let depth = self.groups[gi].depth;
            let mut globals = Globals::new();
            for (name, v) in values {
                if let Some(g) = self.global(name, v, gi, depth) {
                    globals.insert(name.to_string(), g);
                }
            }
            self.groups[gi].globals = globals;
            gi += 1;
        }
    }

    /// The binding of `name` to `v` in group `gi`; `None` to leave the name unbound (a Python
    /// builtin, which the lowering knows by name).
    fn global(&mut self, name: &str, v: &'a LiveValue, gi: usize, depth: u32) -> Option<Global> {
        let opaque = |what: String| Some(Global::Opaque(what));
        match v {
            LiveValue::Module { value, attrs } => {
                let path = triton_path(value);
                if let Some(m) = Mod::from_path(&path) {
                    return Some(Global::Module(m));
                }
                if attrs.is_empty() || depth >= MAX_MODULE_DEPTH {
                    return opaque(format!("module `{value}`"));
                }
                // A module of the user's project: a dependency without functions of its own whose
                // names are the attributes the code uses (a jitted one lives in its own file).
                self.groups.push(Group {
                    path: value,
                    shown: None,
                    members: vec![],
                    values: attrs.iter().map(|(k, v)| (k.as_str(), v)).collect(),
                    module: Some(value),
                    depth: depth + 1,
                    globals: Globals::new(),
                });
                Some(Global::DepModule(self.groups.len() as u32 - 2))
            }
            LiveValue::Builtin { value } => {
                if value.strip_prefix("builtins.") == Some(name) {
                    return None;
                }
                let path = triton_path(value);
                if let Some(m) = Mod::from_path(&path) {
                    return Some(Global::Module(m));
                }
                match path.rsplit_once('.').and_then(|(m, a)| Some((Mod::from_path(m)?, a))) {
                    Some((m, a)) => Some(Global::Attr(m, a.to_string())),
                    None => opaque(format!("`{value}`, a Python function kernels cannot call")),
                }
            }
            LiveValue::Jit { .. } => match self.jit_target(v) {
                Some(t) => {
                    let (tg, idx) = self.place[t];
                    Some(if tg == gi {
                        Global::Jit(idx)
                    } else if tg == 0 {
                        Global::UserJit(idx)
                    } else {
                        Global::DepJit(tg as u32 - 1, idx)
                    })
                }
                None => match v {
                    LiveValue::Jit { reference: Some(k), .. } => {
                        opaque(format!("a reference to jitted function `{k}`, which the description does not hold"))
                    }
                    _ => opaque("a jitted function without a description".to_string()),
                },
            },
            LiveValue::Opaque { value } => opaque(format!("the Python value `{value}`")),
            LiveValue::Invalid { value } => opaque(format!("its description is malformed: {value}")),
            other => match host_value(other) {
                Ok(HostValue::Module(m)) => Some(Global::Module(m)),
                Ok(HostValue::Func(m, a)) => Some(Global::Attr(m, a)),
                Ok(h) => Some(Global::Value(h)),
                Err(what) => opaque(what),
            },
        }
    }

    fn build(mut self, members: &[Member<'a>]) -> Result<KernelFile, LiveError> {
        let index = |gi: usize| if gi == 0 { USER_FILE_INDEX } else { dep_file_index(gi as u32 - 1) };
        // Every file first: a syntax error in any function renders against all of them.
        let texts: Vec<(String, String)> = self.groups.iter().map(|g| self.texts(g, members)).collect();
        let mut files: Vec<SourceFile> = self
            .groups
            .iter()
            .zip(&texts)
            .map(|(g, (_, shown))| SourceFile { path: g.path.to_string(), text: shown.clone() })
            .collect();
        files.insert(1, crate::language::prelude::source_file());
        let mut built = vec![];
        for (gi, (g, (text, shown))) in self.groups.iter_mut().zip(texts).enumerate() {
            let lines = LineIndex::new(&text);
            let src = SrcRef { file: index(gi), lines: &lines };
            let module = crate::checks::on_big_stack(|| {
                let module = ruff_python_parser::parse_module(&text)
                    .map_err(|e| src.error(e.location, format!("syntax error: {}", e.error)).label("invalid syntax"))?
                    .into_syntax();
                crate::checks::check(&module, &src)?;
                Ok(module)
            })
            .map_err(|d| LiveError { diagnostic: Box::new(d), files: files.clone() })?;
            let shared = Arc::new(FileShared {
                path: g.path.to_string(),
                text,
                lines: lines.clone(),
                globals: std::mem::take(&mut g.globals),
                shown: Some(shown),
            });
            let mut fns = vec![];
            for &i in &g.members {
                let m = &members[i];
                let (def, path) = find_def(&module.body, &shared.lines, m).ok_or_else(|| LiveError {
                    diagnostic: Box::new(Diagnostic::error(format!(
                        "the source of `{}` holds no function definition",
                        m.f.name
                    ))),
                    files: files.clone(),
                })?;
                let src = shared.src(index(gi));
                let mut info = live_def_info(src, &shared.text, &module.body, &shared.globals, def, &path);
                info.name = m.f.name.clone();
                apply_options(&mut info, m.f);
                info.shared = Some(shared.clone());
                fns.push(info);
            }
            built.push(KernelFile { shared, module, fns, deps: vec![], live_root: None });
        }
        let mut it = built.into_iter();
        let mut user = it.next().ok_or_else(|| LiveError::msg("empty live-function description"))?;
        user.deps = it.collect();
        user.live_root = Some(self.place[0].1);
        Ok(user)
    }

    /// The parsed text and the shown text of a group.
    fn texts(&self, g: &Group, members: &[Member]) -> (String, String) {
        let end = g.members.iter().map(|&i| members[i].span().1).max().unwrap_or(0);
        let mut parsed = vec![""; end];
        let mut shown = vec![""; end];
        for &i in &g.members {
            let m = &members[i];
            if m.indented {
                parsed[m.start - 1] = "if 1:";
            }
            for (k, l) in m.lines.iter().enumerate() {
                parsed[m.start + k] = l;
                shown[m.start + k] = l;
            }
        }
        let mut text = parsed.join("\n");
        text.push('\n');
        // The record of what the functions saw: hashed with the text, never parsed into anything.
        let _ = writeln!(text, "# trident-live: {}", g.module.unwrap_or("functions"));
        for &i in &g.members {
            let f = members[i].f;
            let _ = writeln!(text, "# def {} at line {}: options {:?}", f.name, f.first_line, f.options);
            for (k, v) in &f.defaults {
                let _ = writeln!(text, "#   default {k} = {:?}", host_value(v).ok().and_then(HostValue::into_const));
            }
        }
        let mut names: Vec<(&String, &Global)> = g.globals.iter().collect();
        names.sort_by(|a, b| a.0.cmp(b.0));
        for (k, v) in names {
            let _ = writeln!(text, "# global {k} = {v:?}");
        }
        let shown = match g.shown {
            Some(t) => t.to_string(),
            None => {
                let mut s = shown.join("\n");
                s.push('\n');
                s
            }
        };
        (text, shown)
    }
}

/// The `def` of member `m` among a parsed group's statements, and its path (see
/// `KernelInfo::path`): the one whose name lies on `m`'s lines, preferring its name.
fn find_def<'m>(
    body: &'m [Stmt],
    lines: &LineIndex,
    m: &Member,
) -> Option<(&'m ast::StmtFunctionDef, Vec<(u32, u32)>)> {
    let mut found: Vec<(&ast::StmtFunctionDef, Vec<(u32, u32)>)> = vec![];
    for (i, s) in body.iter().enumerate() {
        let (f, path) = match s {
            Stmt::FunctionDef(f) => (f, vec![(i as u32, 0)]),
            Stmt::If(s) => match s.body.first() {
                Some(Stmt::FunctionDef(f)) => (f, vec![(i as u32, 0), (0, 0)]),
                _ => continue,
            },
            _ => continue,
        };
        let (line, _) = lines.line_col(f.name.range.start().to_u32());
        let line = line as usize - 1;
        if (m.start..m.start + m.lines.len()).contains(&line) {
            found.push((f, path));
        }
    }
    let named = found.iter().position(|(f, _)| f.name.id.as_str() == m.f.name);
    let k = named.unwrap_or(0);
    (k < found.len()).then(|| found.swap_remove(k))
}

/// Replaces what the source's decorator and defaults say with what Python knows.
fn apply_options(info: &mut KernelInfo, f: &LiveFunction) {
    let params: Vec<String> = info.params.iter().map(|p| p.name.clone()).collect();
    let names = |refs: &[ParamRef]| -> Vec<String> {
        refs.iter()
            .filter_map(|r| match r {
                ParamRef::Index(i) => params.get(*i as usize).cloned(),
                ParamRef::Name(n) => params.iter().find(|p| *p == n).cloned(),
            })
            .collect()
    };
    if let Some(o) = &f.options {
        if let Some(v) = &o.do_not_specialize {
            info.do_not_specialize = names(v);
        }
        if let Some(v) = &o.do_not_specialize_on_alignment {
            info.do_not_specialize_on_alignment = names(v);
        }
        if o.debug.is_some() {
            info.debug = o.debug;
        }
        if let Some(n) = o.noinline {
            info.noinline = n;
        }
        for p in &mut info.params {
            p.do_not_specialize = info.do_not_specialize.contains(&p.name);
            p.do_not_specialize_on_alignment = info.do_not_specialize_on_alignment.contains(&p.name);
        }
    }
    for (name, v) in &f.defaults {
        let Some(p) = info.params.iter_mut().find(|p| p.name == *name) else { continue };
        p.has_default = true;
        if let Some(c) = host_value(v).ok().and_then(HostValue::into_const) {
            p.default = Some(c);
        }
    }
}

/// A Trident module path for a Python one: the `trident` package mirrors `triton`'s names.
fn triton_path(path: &str) -> String {
    match path.strip_prefix("trident") {
        Some(rest) if rest.is_empty() || rest.starts_with('.') => format!("triton{rest}"),
        _ => path.to_string(),
    }
}

/// A value as the host evaluator holds it (constants, tuples, dtypes, modules and functions of
/// known modules), or what it is when it is none of those.
fn host_value(v: &LiveValue) -> Result<HostValue, String> {
    let c = |c: ConstValue| Ok(HostValue::Const(c));
    match v {
        LiveValue::None => c(ConstValue::None),
        LiveValue::Bool { value } => c(ConstValue::Bool(*value)),
        LiveValue::Int { value } => match value.trim().parse::<i128>() {
            Ok(i) => c(ConstValue::Int(i)),
            Err(_) if !value.is_empty() && value.trim_start_matches('-').bytes().all(|b| b.is_ascii_digit()) => {
                Err(format!("the int {value}, which does not fit in 128 bits"))
            }
            Err(_) => Err(format!("its description is malformed: `{value}` is not a decimal int")),
        },
        LiveValue::Float { value } => match py_float(value) {
            Some(f) => c(ConstValue::Float(f)),
            None => Err(format!("its description is malformed: `{value}` is not a float")),
        },
        LiveValue::Str { value } => c(ConstValue::Str(value.clone())),
        LiveValue::Dtype { value } => match dtype(value) {
            Some(e) => c(ConstValue::DType(e)),
            None => Err(format!("the dtype `{value}`, which Trident does not support")),
        },
        LiveValue::Constexpr { value } => host_value(value),
        LiveValue::Tuple { value } => {
            let items = value.iter().map(host_value).collect::<Result<Vec<_>, _>>()?;
            Ok(HostValue::List(items.clone()).into_const().map_or(HostValue::List(items), HostValue::Const))
        }
        LiveValue::Module { value, .. } => {
            Mod::from_path(&triton_path(value)).map(HostValue::Module).ok_or_else(|| format!("module `{value}`"))
        }
        LiveValue::Builtin { value } => {
            let path = triton_path(value);
            path.rsplit_once('.')
                .and_then(|(m, a)| Some(HostValue::Func(Mod::from_path(m)?, a.to_string())))
                .ok_or_else(|| format!("`{value}`, a Python function kernels cannot call"))
        }
        LiveValue::Jit { .. } => Err("a jitted function".to_string()),
        LiveValue::Opaque { value } => Err(format!("the Python value `{value}`")),
        LiveValue::Invalid { value } => Err(format!("its description is malformed: {value}")),
    }
}

/// Python's `repr` of a float read back (`inf`, `-inf`, `nan` included).
fn py_float(s: &str) -> Option<f64> {
    let s = s.trim();
    if s.is_empty() || s.contains('_') {
        return None;
    }
    s.parse::<f64>().ok()
}

/// A Triton dtype name (`fp16`, `int32`, `*fp16`, `pointer<fp16>`).
fn dtype(name: &str) -> Option<Elem> {
    let name = name.trim();
    let pointee = name.strip_prefix('*').or_else(|| name.strip_prefix("pointer<")?.strip_suffix('>'));
    match pointee {
        Some(p) => dtype(p)?.num().map(Elem::ptr),
        None => DType::parse(name).map(Elem::Num),
    }
}

/// Triton's name of a dtype (`tl.float16.name`): what Python's `describe` writes.
pub(crate) fn triton_dtype_name(e: Elem) -> String {
    let num = |d: DType| match d {
        DType::I1 => "int1",
        DType::I8 => "int8",
        DType::I16 => "int16",
        DType::I32 => "int32",
        DType::I64 => "int64",
        DType::U8 => "uint8",
        DType::U16 => "uint16",
        DType::U32 => "uint32",
        DType::U64 => "uint64",
        DType::F8E4M3 => "fp8e4nv",
        DType::F8E5M2 => "fp8e5",
        DType::F16 => "fp16",
        DType::BF16 => "bf16",
        DType::F32 => "fp32",
        DType::F64 => "fp64",
    };
    match e {
        Elem::Num(d) => num(d).to_string(),
        Elem::Ptr { pointee, .. } => format!("*{}", num(pointee)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtype_names_read_back() {
        for d in [DType::I1, DType::U16, DType::F8E4M3, DType::F8E5M2, DType::BF16, DType::F64] {
            assert_eq!(dtype(&triton_dtype_name(Elem::Num(d))), Some(Elem::Num(d)));
            assert_eq!(dtype(&triton_dtype_name(Elem::ptr(d))), Some(Elem::ptr(d)));
        }
        assert_eq!(dtype("pointer<fp16>"), Some(Elem::ptr(DType::F16)));
        assert_eq!(dtype("fp8e4b15"), None);
        assert_eq!(dtype("**fp16"), None);
    }

    #[test]
    fn python_float_reprs_read_back() {
        assert_eq!(py_float("1e-05"), Some(1e-5));
        assert_eq!(py_float("inf"), Some(f64::INFINITY));
        assert_eq!(py_float("-inf"), Some(f64::NEG_INFINITY));
        assert!(py_float("nan").is_some_and(f64::is_nan));
        assert_eq!(py_float("0.1"), Some(0.1));
        assert_eq!(py_float("1_0.0"), None);
        assert_eq!(py_float(""), None);
    }

    #[test]
    fn trident_paths_are_tritons() {
        assert_eq!(triton_path("trident.language"), "triton.language");
        assert_eq!(triton_path("trident"), "triton");
        assert_eq!(triton_path("tridentx.y"), "tridentx.y");
        assert_eq!(triton_path("math"), "math");
    }

    #[test]
    fn dedent_keeps_relative_indentation() {
        let mut l: Vec<String> =
            ["    @jit", "    def k(x):", "        return x", "", "  # c"].map(String::from).into();
        dedent(&mut l);
        assert_eq!(l, ["  @jit", "  def k(x):", "      return x", "", "# c"]);
    }
}
