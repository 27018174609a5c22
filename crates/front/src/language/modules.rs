//! The Triton modules (and Python's `math`) a kernel may name, by every import path that reaches them.

/// A module a kernel may refer to. Every spelling of the same Triton module
/// (`triton.language`, `from triton import language`) maps to one variant;
/// the CUDA and HIP `libdevice` modules are both [`Mod::Libdevice`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Mod {
    /// `triton` (and `triton.runtime`, which re-exports `jit`, `autotune`, `Config`).
    Triton,
    /// `triton.language` (and its submodules `core`, `standard`, `random`).
    Language,
    /// `triton.language.math`.
    Math,
    /// `triton.language.extra`.
    Extra,
    /// `triton.language.extra.cuda` / `.hip`.
    ExtraVendor,
    /// `libdevice` from `triton.language.extra[.cuda|.hip]`.
    Libdevice,
    /// Python's `math` module: usable on compile-time constants.
    PyMath,
    /// `triton.profiler` (Proton): host-side profiling; kernels only reach `language` through it.
    Profiler,
    /// `triton.profiler.language` (Proton's in-kernel API, usually imported as `pl`):
    /// `enter_scope`, `exit_scope`, `scope`.
    ProfilerLanguage,
}

impl Mod {
    /// The module a dotted import path names, if it is one a kernel can use.
    pub(crate) fn from_path(path: &str) -> Option<Mod> {
        Some(match path {
            "triton" | "triton.runtime" | "triton.runtime.jit" | "triton.runtime.autotuner" => Mod::Triton,
            "triton.language" | "triton.language.core" | "triton.language.standard" | "triton.language.random" => {
                Mod::Language
            }
            "triton.language.math" => Mod::Math,
            "triton.language.extra" => Mod::Extra,
            "triton.language.extra.cuda" | "triton.language.extra.hip" => Mod::ExtraVendor,
            "triton.language.extra.libdevice"
            | "triton.language.extra.cuda.libdevice"
            | "triton.language.extra.hip.libdevice"
            | "triton.language.libdevice"
            | "triton.language.math.libdevice" => Mod::Libdevice,
            "math" => Mod::PyMath,
            "triton.profiler" => Mod::Profiler,
            "triton.profiler.language" => Mod::ProfilerLanguage,
            _ => return None,
        })
    }

    /// The submodule `attr` of this module, if that attribute is a module.
    pub(crate) fn submodule(self, attr: &str) -> Option<Mod> {
        Some(match (self, attr) {
            (Mod::Triton, "language") => Mod::Language,
            (Mod::Triton, "profiler") => Mod::Profiler,
            (Mod::Profiler, "language") => Mod::ProfilerLanguage,
            (Mod::Language, "math") => Mod::Math,
            (Mod::Language, "extra") => Mod::Extra,
            (Mod::Language, "core" | "standard" | "random") => Mod::Language,
            (Mod::Extra, "cuda" | "hip") => Mod::ExtraVendor,
            (Mod::Extra | Mod::ExtraVendor | Mod::Language, "libdevice") => Mod::Libdevice,
            _ => return None,
        })
    }

    /// The module's canonical import path (the first of [`Mod::from_path`]'s spellings, which
    /// reads it back as this module): how a live function's description names it.
    pub(crate) fn path(self) -> &'static str {
        match self {
            Mod::Triton => "triton",
            Mod::Language => "triton.language",
            Mod::Math => "triton.language.math",
            Mod::Extra => "triton.language.extra",
            Mod::ExtraVendor => "triton.language.extra.cuda",
            Mod::Libdevice => "triton.language.extra.libdevice",
            Mod::PyMath => "math",
            Mod::Profiler => "triton.profiler",
            Mod::ProfilerLanguage => "triton.profiler.language",
        }
    }

    /// How users spell the module, for messages.
    pub(crate) fn display(self) -> &'static str {
        match self {
            Mod::Triton => "triton",
            Mod::Language => "tl",
            Mod::Math => "tl.math",
            Mod::Extra => "tl.extra",
            Mod::ExtraVendor => "tl.extra.cuda",
            Mod::Libdevice => "libdevice",
            Mod::PyMath => "math",
            Mod::Profiler => "triton.profiler",
            Mod::ProfilerLanguage => "pl",
        }
    }
}
