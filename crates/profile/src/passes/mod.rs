//! The profiling passes over tile IR and GPU IR, in `trident-opt`'s pass framework.
//!
//! * [`Instrument`] (`profile-instrument{kernel,loops,dots,loads}`): the compiler's own
//!   regions, as `record` ops — the whole kernel, every loop body per iteration, every
//!   `dot`, every global `load` — in any combination.
//! * [`Strip`] (`profile-strip`): removes every record (profiling off).
//!
//! The GPU pipeline runs them at its one declared place; tests and tools name them in a
//! pipeline string ([`parse_pipeline`]), where they mix with `trident-opt`'s passes:
//! `"inline, canonicalize, profile-instrument{loops,dots}, dce"`.

mod instrument;
mod strip;

pub use instrument::{Instrument, Regions};
pub use strip::Strip;

use trident_opt::{Pass, PassManager};

/// The names of this crate's passes (options go in braces: `profile-instrument{kernel,loads}`).
pub const PASS_NAMES: &[&str] = &["profile-instrument", "profile-strip"];

/// One of this crate's passes from its spelling in a pipeline (`profile-strip`,
/// `profile-instrument{loops,dots}`); `Ok(None)` when the name is not one of them.
pub fn create_pass(spec: &str) -> Result<Option<Box<dyn Pass>>, String> {
    let spec = spec.trim();
    let (name, opts) = match spec.split_once('{') {
        Some((n, rest)) => {
            let Some(o) = rest.strip_suffix('}') else {
                return Err(format!("`{spec}`: options must be closed with `}}`"));
            };
            (n.trim(), Some(o))
        }
        None => (spec, None),
    };
    match (name, opts) {
        ("profile-instrument", Some(o)) => Ok(Some(Box::new(Instrument::new(Regions::parse(o)?)))),
        ("profile-instrument", None) => {
            Err("`profile-instrument` needs the regions to mark: `profile-instrument{kernel,loops,dots,loads}`".into())
        }
        ("profile-strip", None) => Ok(Some(Box::new(Strip))),
        ("profile-strip", Some(_)) => Err("`profile-strip` takes no options".into()),
        _ => Ok(None),
    }
}

/// Splits a pipeline at the commas that separate passes (not those inside `{...}`).
fn split_pipeline(text: &str) -> Result<Vec<&str>, String> {
    let mut out = vec![];
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        if !(0..=1).contains(&depth) {
            return Err(format!("unbalanced or nested braces in the pipeline `{text}`"));
        }
    }
    if depth != 0 {
        return Err(format!("unclosed `{{` in the pipeline `{text}`"));
    }
    out.push(&text[start..]);
    Ok(out.into_iter().map(str::trim).filter(|s| !s.is_empty()).collect())
}

/// Appends the passes of a comma-separated pipeline to `pm`: this crate's passes (with
/// their options) and `trident-opt`'s, by name.
pub fn add_pipeline(pm: &mut PassManager, pipeline: &str) -> Result<(), String> {
    for spec in split_pipeline(pipeline)? {
        match create_pass(spec)? {
            Some(p) => {
                pm.add(p);
            }
            None => match trident_opt::create_pass(spec) {
                Some(p) => {
                    pm.add(p);
                }
                None => {
                    return Err(format!(
                        "unknown pass `{spec}` (known: {}, {})",
                        trident_opt::PASS_NAMES.join(", "),
                        PASS_NAMES.join(", ")
                    ))
                }
            },
        }
    }
    Ok(())
}

/// A pass manager holding `pipeline` (see [`add_pipeline`]).
pub fn parse_pipeline(pipeline: &str) -> Result<PassManager, String> {
    let mut pm = PassManager::new();
    add_pipeline(&mut pm, pipeline)?;
    Ok(pm)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn region_lists() {
        let r = Regions::parse("scopes|loops + dots").unwrap();
        assert_eq!(r, Regions { scopes: true, loops: true, dots: true, ..Default::default() });
        assert!(r.instruments());
        let s = Regions::parse("scopes").unwrap();
        assert!(!s.instruments() && !s.is_empty());
        assert!(Regions::parse(" , ").is_err());
        for words in ["scopes,loops,dots", "kernel", "scopes,kernel,loops,dots,loads"] {
            assert_eq!(Regions::parse(words).unwrap().words(), words);
        }
        assert_eq!(Regions::parse("loads|kernel").unwrap().words(), "kernel,loads");
    }

    #[test]
    fn pipelines_with_options() {
        let pm = parse_pipeline("inline, profile-instrument{kernel, loops}, cse,profile-strip").unwrap();
        assert_eq!(pm.pass_names(), ["inline", "profile-instrument", "cse", "profile-strip"]);
        for bad in [
            "profile-instrument",
            "profile-instrument{}",
            "profile-instrument{warps}",
            "profile-instrument{scopes,warps}",
            "profile-instrument{kernel",
            "profile-instrument{kernel}}",
            "profile-strip{x}",
            "frobnicate",
            "profile-instrument{{kernel}}",
        ] {
            assert!(parse_pipeline(bad).is_err(), "{bad}");
        }
    }
}
