//! What module-level names are bound to, as far as a kernel can see them.

use crate::hosteval::HostValue;
use std::collections::HashMap;

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
            _ => return None,
        })
    }

    /// The submodule `attr` of this module, if that attribute is a module.
    pub(crate) fn submodule(self, attr: &str) -> Option<Mod> {
        Some(match (self, attr) {
            (Mod::Triton, "language") => Mod::Language,
            (Mod::Language, "math") => Mod::Math,
            (Mod::Language, "extra") => Mod::Extra,
            (Mod::Language, "core" | "standard" | "random") => Mod::Language,
            (Mod::Extra, "cuda" | "hip") => Mod::ExtraVendor,
            (Mod::Extra | Mod::ExtraVendor | Mod::Language, "libdevice") => Mod::Libdevice,
            _ => return None,
        })
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
        }
    }
}

/// What a module-level name is bound to.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Global {
    Module(Mod),
    /// An attribute of a known module imported by name (`from triton.language import program_id`).
    Attr(Mod, String),
    /// A `@triton.jit` function: index into the file's function list.
    Jit(usize),
    /// A `@triton.jit` function of another file of the project: (dependency, function index).
    DepJit(u32, usize),
    /// Another Python file of the project, imported as a module (dependency index).
    DepModule(u32),
    /// A plain module-level `def` of another file of the project: (dependency, where it is).
    DepDef(u32, Vec<(u32, u32)>),
    /// A module-level constant (or list/dict/config, for decorators).
    Value(HostValue),
    /// A plain Python function or class: host code, not callable from a kernel. For a
    /// module-level `def`, where it is (module-level code such as autotune config filters may call it).
    HostDef(String, Option<Vec<(u32, u32)>>),
    /// Something Trident cannot see into (a non-Triton import, a computed value); the text says what.
    Opaque(String),
    /// Bound differently on different paths through module-level `if`s whose
    /// conditions Trident cannot evaluate (typically version or platform checks):
    /// the message, and each path's binding (`None`: left unbound on that path).
    /// A kernel using the name gets the one binding that works in a Triton 3
    /// environment, if exactly one does (see `FnLowering::global`).
    Ambiguous(String, Vec<Option<Global>>),
}

impl Global {
    /// The same binding with equivalent spellings made equal: `tl.math.NAME` for a
    /// function Triton 3 only has in libdevice is that libdevice function (how the
    /// lowering resolves it), so `from triton.language.math import tanh` on one path
    /// and `from triton.language.extra.libdevice import tanh` on another agree.
    pub(crate) fn canonical(&self) -> Global {
        match self {
            Global::Attr(Mod::Math, a)
                if !crate::lower::names::MATH_FUNCS.contains(&a.as_str())
                    && crate::lower::builtins_libdevice_known(a) =>
            {
                Global::Attr(Mod::Libdevice, a.clone())
            }
            Global::Value(HostValue::Func(m, a)) => Global::Attr(*m, a.clone()).canonical(),
            Global::Value(HostValue::Module(m)) => Global::Module(*m),
            g => g.clone(),
        }
    }

    /// The binding host code sees: for one that differs between the branches of
    /// module-level `if`s, the only alternative that is something Triton code can use
    /// (a module, a Triton function, a constant, a jit function), when exactly one is;
    /// otherwise the binding itself. (`if HAS_TRITON: import triton ... else: triton =
    /// Placeholder()`, as vLLM writes, binds `triton` to the module.)
    pub(crate) fn settled(&self) -> &Global {
        let Global::Ambiguous(_, alts) = self else { return self };
        let usable: Vec<&Global> = alts
            .iter()
            .flatten()
            .filter(|g| {
                !matches!(
                    g,
                    Global::Opaque(_)
                        | Global::HostDef(..)
                        | Global::DepDef(..)
                        | Global::Ambiguous(..)
                        | Global::Value(HostValue::Foreign(_))
                )
            })
            .collect();
        match usable[..] {
            [one] => one,
            _ => self,
        }
    }
}

pub(crate) type Globals = HashMap<String, Global>;
