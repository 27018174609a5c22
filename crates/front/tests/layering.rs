//! The front end's modules form layers (listed in the crate docs at the top of `src/lib.rs`): a
//! module may use its own layer and the ones below, never one above. This test reads the sources
//! and fails on any path that reaches up — `crate::lower::…` from the scanner, say — so the list
//! in the docs stays the truth. It works on the text (comments dropped), not on resolved names:
//! every path to another module starts with `crate::` or, from a module's top file, `super::`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The layers from the `//! N. `module`, `module` — ...` list of the crate docs: module → rank.
fn layers(lib: &str) -> HashMap<String, usize> {
    let mut out = HashMap::new();
    for line in lib.lines().filter_map(|l| l.strip_prefix("//! ")) {
        let Some((num, rest)) = line.split_once(". ") else { continue };
        let Ok(rank) = num.parse::<usize>() else { continue };
        let names = rest.split(" — ").next().unwrap_or("");
        for name in names.split('`').skip(1).step_by(2) {
            out.insert(name.to_string(), rank);
        }
    }
    out
}

/// The modules `lib.rs` declares (`mod x;`), leaving out test-only ones.
fn declared_modules(lib: &str) -> Vec<String> {
    let mut out = vec![];
    let mut test_only = false;
    for line in lib.lines().map(str::trim) {
        if line.starts_with("#[cfg(test)]") {
            test_only = true;
            continue;
        }
        let decl = line.strip_prefix("pub ").or_else(|| line.strip_prefix("pub(crate) ")).unwrap_or(line);
        if let Some(name) = decl.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
            if !test_only {
                out.push(name.to_string());
            }
        }
        test_only = false;
    }
    out
}

/// The data types `lib.rs` itself defines (`pub struct X`, `pub enum X`): usable from any layer.
fn root_types(lib: &str) -> Vec<String> {
    lib.lines()
        .filter_map(|l| l.strip_prefix("pub struct ").or_else(|| l.strip_prefix("pub enum ")))
        .map(|r| r.split(|c: char| !c.is_alphanumeric() && c != '_').next().unwrap_or("").to_string())
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Source without `//` comments (doc links and prose may name any module).
fn strip_comments(text: &str) -> String {
    text.lines().map(|l| l.find("//").map_or(l, |i| &l[..i])).collect::<Vec<_>>().join("\n")
}

fn ident(s: &str) -> &str {
    let end = s.find(|c: char| !c.is_alphanumeric() && c != '_').unwrap_or(s.len());
    &s[..end]
}

/// The first names of the paths that start at `at` (just after `crate::` or the last `super::`):
/// `lower` for `lower::x`, each item of `{a::b, c}`.
fn first_names(at: &str) -> Vec<String> {
    let Some(group) = at.strip_prefix('{') else { return vec![ident(at).to_string()] };
    let mut names = vec![];
    let (mut depth, mut start) = (0, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                names.push(ident(group[start..].trim_start()).to_string());
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                names.push(ident(group[start..].trim_start()).to_string());
                start = i + 1;
            }
            _ => {}
        }
    }
    names.retain(|n| !n.is_empty());
    names
}

/// Every crate-level name a file's code refers to: after `crate::`, and after `super::` chains
/// that climb to the crate root from the file's module (`depth`: how deep the file's module is;
/// code after `#[cfg(test)]` is left out for `super::`, as inline test modules shift it).
fn crate_level_names(code: &str, depth: usize) -> Vec<String> {
    let mut out = vec![];
    let bytes = code.as_bytes();
    let starts_path =
        |i: usize| i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_' || bytes[i - 1] == b':');
    for (i, _) in code.match_indices("crate::") {
        if starts_path(i) {
            out.extend(first_names(&code[i + "crate::".len()..]));
        }
    }
    let non_test = code.split("#[cfg(test)]").next().unwrap_or("");
    for (i, _) in non_test.match_indices("super::") {
        if !starts_path(i) {
            continue;
        }
        let mut rest = &non_test[i..];
        let mut ups = 0;
        while let Some(r) = rest.strip_prefix("super::") {
            ups += 1;
            rest = r;
        }
        if ups >= depth {
            out.extend(first_names(rest));
        }
    }
    out
}

#[test]
fn no_module_uses_a_layer_above_its_own() {
    let src = src_dir();
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let rank = layers(&lib);
    let modules = declared_modules(&lib);
    assert!(rank.len() >= 5, "could not read the layer list from lib.rs: {rank:?}");
    for m in &modules {
        assert!(rank.contains_key(m), "module `{m}` is not in the layer list of lib.rs's docs");
    }
    let root_types = root_types(&lib);
    let mut files = vec![];
    rust_files(&src, &mut files);
    let mut violations = vec![];
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        let parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
        if parts == ["lib.rs"] {
            continue;
        }
        let top = parts[0].trim_end_matches(".rs").to_string();
        let Some(&own) = rank.get(&top) else { panic!("{} belongs to no declared module", rel.display()) };
        // src/x.rs and src/x/mod.rs are module `x` (depth 1); src/x/y.rs is `x::y` (depth 2).
        let depth = parts.len() - usize::from(parts.last().is_some_and(|p| p == "mod.rs"));
        let code = strip_comments(&std::fs::read_to_string(f).unwrap());
        for name in crate_level_names(&code, depth) {
            match rank.get(&name) {
                Some(&r) if r > own => {
                    violations.push(format!("{}: uses `{name}` (layer {r}) from `{top}` (layer {own})", rel.display()))
                }
                Some(_) => {}
                None if root_types.contains(&name) || name == "*" => {}
                None => violations.push(format!(
                    "{}: uses `crate::{name}`: name it through the module that defines it",
                    rel.display()
                )),
            }
        }
    }
    assert!(violations.is_empty(), "layering violations:\n{}", violations.join("\n"));
}

/// The checker itself finds what it should: a scanner that reached into the lowering, grouped
/// and `super::` imports, and a root function used from below.
#[test]
fn the_checker_sees_upward_paths() {
    assert_eq!(crate_level_names("use crate::lower::names::TL;", 1), ["lower"]);
    assert_eq!(crate_level_names("use crate::{kernel::K, lower, ArgInfo};", 1), ["kernel", "lower", "ArgInfo"]);
    assert_eq!(crate_level_names("x(crate::lower::f())", 1), ["lower"]);
    assert_eq!(crate_level_names("use super::lower::x;", 1), ["lower"]);
    assert_eq!(crate_level_names("use super::super::scan::x;", 2), ["scan"]);
    assert!(crate_level_names("use super::call::Args;", 2).is_empty());
    assert!(crate_level_names("use trident_crate::x;", 1).is_empty());
    let lib =
        "//! 1. `a`, `b` — low.\n//! 2. `c` — high; `d` is not a layer.\nmod a;\n#[cfg(test)]\nmod t;\npub struct S;\n";
    let r = layers(lib);
    assert_eq!((r["a"], r["b"], r["c"], r.get("d")), (1, 1, 2, None));
    assert_eq!(declared_modules(lib), ["a"]);
    assert_eq!(root_types(lib), ["S"]);
}
