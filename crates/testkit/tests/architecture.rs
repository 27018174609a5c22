//! The invariants `ARCHITECTURE.md` states about the code's shape, checked: which crate may
//! depend on which (the ```` ```dependencies ```` block), which files may not name which
//! modules (the ```` ```imports ```` block), and that every crate is listed and has a README.
//! The rules live in the document, so changing a rule means changing what people read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The lines of the fenced block ```` ```NAME ```` in `text`, without comments and blank lines.
fn block<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
    let fence = format!("```{name}\n");
    let start = text.find(&fence).unwrap_or_else(|| panic!("ARCHITECTURE.md has no ```{name} block")) + fence.len();
    let body = &text[start..start + text[start..].find("```").expect("a closed block")];
    body.lines().map(|l| l.split('#').next().unwrap_or("").trim()).filter(|l| !l.is_empty()).collect()
}

struct Rules {
    /// Crate directory name → the Trident crates (directory names) its `[dependencies]` may name.
    deps: BTreeMap<String, BTreeSet<String>>,
    /// Trident crates no `[dev-dependencies]` of a crate below the runtime may name.
    dev_forbidden: BTreeSet<String>,
    /// Crates the `dev_forbidden` rule does not apply to (the runtime and what sits on it).
    dev_exempt: BTreeSet<String>,
    /// (path prefix, text): no source file under the prefix may contain the text.
    imports: Vec<(String, String)>,
}

fn rules() -> Rules {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let mut deps = BTreeMap::new();
    let mut dev_forbidden = BTreeSet::new();
    let mut dev_exempt = BTreeSet::new();
    for line in block(&text, "dependencies") {
        let (name, rest) = line.split_once(':').unwrap_or_else(|| panic!("`{line}`: expected `crate: deps`"));
        let words: BTreeSet<String> = rest.split_whitespace().filter(|w| *w != "-").map(String::from).collect();
        match name.trim() {
            "dev-dependencies below the runtime may not name" => dev_forbidden = words,
            "the dev-dependency rule exempts" => dev_exempt = words,
            c => {
                deps.insert(c.to_string(), words);
            }
        }
    }
    let imports = block(&text, "imports")
        .into_iter()
        .map(|l| {
            let (path, what) =
                l.split_once(char::is_whitespace).unwrap_or_else(|| panic!("`{l}`: expected `PATH TEXT`"));
            (path.trim().to_string(), what.trim().to_string())
        })
        .collect();
    Rules { deps, dev_forbidden, dev_exempt, imports }
}

/// The Trident crates (by directory name) a manifest table names.
fn trident_deps(manifest: &toml::Table, table: &str) -> BTreeSet<String> {
    let Some(t) = manifest.get(table).and_then(|v| v.as_table()) else { return BTreeSet::new() };
    t.keys().filter_map(|k| k.strip_prefix("trident-")).map(String::from).collect()
}

fn crates() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root().join("crates"))
        .expect("crates/")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("Cargo.toml").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn manifest(c: &str) -> toml::Table {
    let text = std::fs::read_to_string(root().join("crates").join(c).join("Cargo.toml")).expect("Cargo.toml");
    text.parse().unwrap_or_else(|e| panic!("crates/{c}/Cargo.toml: {e}"))
}

#[test]
fn every_crate_is_listed_and_has_a_readme() {
    let r = rules();
    for c in crates() {
        assert!(r.deps.contains_key(&c), "crates/{c} is not in ARCHITECTURE.md's ```dependencies block");
        assert!(root().join("crates").join(&c).join("README.md").exists(), "crates/{c} has no README.md");
        let name = manifest(&c)["package"]["name"].as_str().map(String::from);
        assert_eq!(name.as_deref(), Some(format!("trident-{c}").as_str()), "crates/{c}: package name");
    }
    for c in r.deps.keys() {
        assert!(root().join("crates").join(c).exists(), "ARCHITECTURE.md lists crates/{c}, which does not exist");
    }
}

#[test]
fn dependencies_follow_architecture_md() {
    let r = rules();
    let mut broken = vec![];
    for c in crates() {
        let m = manifest(&c);
        let allowed = &r.deps[&c];
        for table in ["dependencies", "build-dependencies"] {
            for d in trident_deps(&m, table) {
                if !allowed.contains(&d) {
                    broken.push(format!("crates/{c} [{table}] names trident-{d}; ARCHITECTURE.md allows {allowed:?}"));
                }
            }
        }
        if !r.dev_exempt.contains(&c) {
            for d in trident_deps(&m, "dev-dependencies").intersection(&r.dev_forbidden) {
                broken.push(format!("crates/{c} [dev-dependencies] names trident-{d}, which sits above it"));
            }
        }
        // A `[target.*.dependencies]` table would escape the check: there are none, keep it so.
        assert!(m.get("target").is_none(), "crates/{c}: target-specific dependencies are not checked; add them here");
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.filter_map(|e| e.ok()) {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn module_layering_follows_architecture_md() {
    let r = rules();
    assert!(!r.imports.is_empty());
    let mut broken = vec![];
    for (prefix, what) in &r.imports {
        let base = root().join(prefix);
        let mut files = vec![];
        if base.is_file() {
            files.push(base.clone());
        } else {
            assert!(base.is_dir(), "ARCHITECTURE.md's ```imports names `{prefix}`, which does not exist");
            sources(&base, &mut files);
        }
        for f in files {
            let text = std::fs::read_to_string(&f).expect("source");
            for (i, line) in text.lines().enumerate() {
                // Doc comments may mention other modules; code may not use them.
                if !line.trim_start().starts_with("//") && line.contains(what.as_str()) {
                    broken.push(format!("{}:{}: names `{what}`: {}", f.display(), i + 1, line.trim()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}
