//! Trident's prelude: `prelude.py`, parsed once per process.

use crate::kernel::KernelFile;
use crate::scan::parse_file;
use std::sync::OnceLock;

pub(crate) const PRELUDE_PATH: &str = "<trident-prelude>";
const SOURCE: &str = include_str!("prelude.py");

pub(crate) fn prelude() -> &'static KernelFile {
    static P: OnceLock<KernelFile> = OnceLock::new();
    P.get_or_init(|| match parse_file(PRELUDE_PATH, SOURCE) {
        Ok(f) => f,
        // The prelude is part of the crate and tested to parse; fall back to an empty one regardless.
        Err(_) => parse_file(PRELUDE_PATH, "").unwrap_or_else(|_| unreachable!("empty source always parses")),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn prelude_parses_and_defines_its_functions() {
        let f = crate::scan::parse_file(super::PRELUDE_PATH, super::SOURCE).unwrap();
        for name in ["sum", "max", "argmax", "sort", "flip", "rand", "randn", "philox_impl", "softmax", "cdiv"] {
            assert!(f.kernel(name).is_some(), "prelude lacks {name}");
        }
    }
}
