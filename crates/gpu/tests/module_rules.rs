//! The dependency rules between the GPU crate's modules, checked on the source text so that
//! they stay true:
//!
//! * `passes/` decide and never reach into `ptx/` (what both need is a fact in `machine/`);
//! * `ptx/` emits what the GPU IR states and never runs or imports a pass (nor the pipeline
//!   or the pass manager);
//! * `machine/` holds facts below both and names neither.
//!
//! A module is "named" when its name appears as an identifier in code (comments and string
//! literals do not count): that covers `use crate::ptx::..`, `crate::{ptx, ..}`,
//! `super::super::ptx` and full paths alike.

use std::path::{Path, PathBuf};

/// Identifiers a directory under `src/` must not use, and why.
const RULES: &[(&str, &[&str], &str)] = &[
    ("passes", &["ptx"], "passes must not depend on PTX emission; move the fact to machine/"),
    (
        "ptx",
        &["passes", "pipeline", "trident_opt", "PassManager"],
        "emission must not run passes; record the decision in the GPU IR and read it",
    ),
    ("machine", &["ptx", "passes", "pipeline", "trident_opt"], "machine/ holds facts below passes and emission"),
];

/// The identifiers of Rust source, without comments, string and character literals.
fn identifiers(src: &str) -> Vec<String> {
    let b = src.as_bytes();
    let mut out = vec![];
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == b'r' && matches!(b.get(i + 1), Some(b'"') | Some(b'#')) {
            // Raw string r#"..."#: skip to the quote followed by as many hashes.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                out.push("r".to_string());
                i += 1;
                continue;
            }
            j += 1;
            let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
            while j < b.len() && !b[j..].starts_with(&close) {
                j += 1;
            }
            i = j + close.len();
        } else if c == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c == b'\'' {
            // A char literal ('x', '\n', '\'') or a lifetime ('a).
            if b.get(i + 1) == Some(&b'\\') {
                i += 2;
                while i < b.len() && b[i] != b'\'' {
                    i += 1;
                }
                i += 1;
            } else if b.get(i + 2) == Some(&b'\'') {
                i += 3;
            } else {
                i += 1;
            }
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(src[s..i].to_string());
        } else {
            i += 1;
        }
    }
    out
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = vec![];
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.expect("directory entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

/// Every breach of [`RULES`] under `src`, one line each.
fn breaches(src: &Path) -> Vec<String> {
    let mut out = vec![];
    for &(dir, banned, why) in RULES {
        let files = rust_files(&src.join(dir));
        assert!(!files.is_empty(), "no sources under src/{dir}");
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let ids = identifiers(&text);
            for b in banned {
                if ids.iter().any(|id| id == b) {
                    out.push(format!("{} names `{b}`: {why}", file.display()));
                }
            }
        }
    }
    out
}

#[test]
fn passes_emission_and_machine_facts_keep_their_places() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = breaches(&src);
    assert!(found.is_empty(), "module rules broken:\n{}", found.join("\n"));
}

#[test]
fn the_checker_sees_paths_and_ignores_comments_and_strings() {
    let ids = |s: &str| identifiers(s);
    assert!(ids("use crate::ptx::regs::Reg;").contains(&"ptx".to_string()));
    assert!(ids("use crate::{layout, ptx};").contains(&"ptx".to_string()));
    assert!(ids("let x = super::super::passes::alloc_shared::plan(f);").contains(&"passes".to_string()));
    for quiet in [
        "// see crate::ptx::dot\nfn f() {}",
        "/* crate::ptx /* nested */ ptx */ fn f() {}",
        "let s = \"run the ptx passes \\\" ptx\";",
        "let s = r#\"crate::ptx \"quoted\" \"#;",
        "let c = '\\''; let d = 'p'; fn g<'ptxlife>() {}",
    ] {
        let got = ids(quiet);
        assert!(!got.iter().any(|i| i == "ptx" || i == "passes"), "{quiet:?} gave {got:?}");
    }
    // A lifetime does not swallow what follows it.
    assert!(ids("fn g<'a>(x: &'a ptx::Reg) {}").contains(&"ptx".to_string()));
}
