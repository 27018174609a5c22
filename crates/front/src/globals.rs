//! What module-level names are bound to, as far as a kernel can see them.

use crate::hosteval::HostValue;
use crate::language::{functions, libdevice, Mod};
use std::collections::HashMap;

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
    /// A `@triton.jit` function of the kernel's own file, named from another file: only a live
    /// function's helpers do that (a helper in another module that calls back into the kernel's
    /// module); parsed files never import from the file that imports them.
    UserJit(usize),
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
            Global::Attr(Mod::Math, a) if !functions::MATH_FUNCS.contains(&a.as_str()) && libdevice::is_known(a) => {
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
