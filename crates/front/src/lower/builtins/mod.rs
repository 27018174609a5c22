//! `triton.language` functions, by family. Functions that Triton writes in
//! Triton itself (random numbers, sort, softmax, the reductions' combine
//! functions) live in Trident's prelude and are expanded from there.

mod asm;
mod atomic;
mod blockptr;
mod create;
mod debug;
mod dot;
mod libdevice;
mod math;
mod memory;
mod reduce;
mod shape;

use super::call::Args;
use super::{FnLowering, Val, R};
use crate::language::{prelude, Mod};
use crate::value::ConstValue;

impl<'c, 'a> FnLowering<'c, 'a> {
    pub(crate) fn call_builtin(&mut self, m: Mod, name: &str, args: Args) -> R<Val> {
        match m {
            Mod::Libdevice => return self.libdevice(name, args),
            Mod::PyMath => return self.py_math(name, args),
            Mod::ProfilerLanguage => return self.profiler_call(name, args),
            Mod::Triton => {
                return match name {
                    "cdiv" => self.call_prelude("cdiv", args),
                    "next_power_of_2" => {
                        let b = self.bind(&args, &["n"])?;
                        let Some(n) = b.val(0).as_const().and_then(|c| c.as_int()) else {
                            return Err(self.err(b.range(0), "triton.next_power_of_2 needs a compile-time integer"));
                        };
                        let mut p: i128 = 1;
                        while p < n {
                            p <<= 1;
                        }
                        Ok(Val::int(p))
                    }
                    "constexpr" => self.bind(&args, &["value"]).map(|b| b.val(0)),
                    _ => Err(self.err(args.r, format!("`triton.{name}` cannot be called inside a kernel"))),
                };
            }
            _ => {}
        }
        if prelude::TL_FUNCS.contains(&name) {
            return self.call_prelude(name, args);
        }
        match name {
            "program_id" | "num_programs" => self.program_id(name == "program_id", args),
            "arange" => self.arange(args),
            "full" => self.full(args),
            "zeros" => self.zeros(args),
            "cast" => self.cast_builtin(args),
            "item" => {
                // A one-element tensor as a scalar (Triton's `unsplat`).
                let b = self.bind(&args, &["input"])?;
                let x = self.tensor_of(&b.val(0), b.range(0))?;
                if !self.is_block(x) {
                    return Ok(Val::T(x));
                }
                let n: u64 = self.shape(x).iter().map(|&d| d as u64).product();
                if n != 1 {
                    return Err(self.err(
                        b.range(0),
                        format!("item() needs a tensor of one element, got {}", super::emit::type_str(self.ty(x))),
                    ));
                }
                Ok(Val::T(self.unsplat(x)?))
            }
            "to_tensor" => {
                let b = self.bind(&args, &["x"])?;
                Ok(Val::T(self.tensor_of(&b.val(0), b.range(0))?))
            }
            "constexpr" => self.bind(&args, &["value"]).map(|b| b.val(0)),
            "reshape" | "view" => self.reshape(args, name == "view"),
            "trans" | "permute" => self.permute(args, name == "trans"),
            "broadcast_to" => self.broadcast_to_builtin(args),
            "broadcast" => {
                let b = self.bind(&args, &["input", "other"])?;
                let x = self.tensor_of(&b.val(0), b.range(0))?;
                let y = self.tensor_of(&b.val(1), b.range(1))?;
                let (x, y) = self.broadcast_pair(x, y, args.r)?;
                Ok(Val::Tuple(vec![Val::T(x), Val::T(y)]))
            }
            "expand_dims" => self.expand_dims_builtin(args),
            "join" => self.join(args),
            "gather" => self.gather(args),
            "inline_asm_elementwise" => self.inline_asm(args),
            "split" => self.split(args),
            "cat" => self.cat(args),
            "where" => {
                let b = self.bind(&args, &["condition", "x", "y"])?;
                self.select(&b.val(0), &b.val(1), &b.val(2), args.r)
            }
            "minimum" | "maximum" => self.min_max_builtin(name == "maximum", args),
            "clamp" => self.clamp(args),
            "fma" => self.fma(args),
            "umulhi" => self.umulhi(args),
            "fdiv" | "div_rn" => self.fdiv(args, name == "div_rn"),
            "abs" => self.abs(args),
            "exp" | "exp2" | "log" | "log2" | "cos" | "sin" | "sqrt" | "sqrt_rn" | "rsqrt" | "erf" | "floor"
            | "ceil" => self.unary_math(name, args),
            "add" | "sub" | "mul" => {
                let b = self.bind(&args, &["x", "y", "sanitize_overflow="])?;
                let op = match name {
                    "add" => crate::value::PyBinOp::Add,
                    "sub" => crate::value::PyBinOp::Sub,
                    _ => crate::value::PyBinOp::Mul,
                };
                self.arith(op, &b.val(0), &b.val(1), args.r)
            }
            "logical_and" | "logical_or" => {
                let b = self.bind(&args, &["input", "other"])?;
                self.logical(name == "logical_and", &b.val(0), &b.val(1), args.r)
            }
            "dot" => self.dot(args),
            "load" => self.load(args),
            "make_block_ptr" => self.make_block_ptr(args),
            "advance" => self.advance(args),
            "make_tensor_descriptor" => self.make_tensor_descriptor(args),
            "load_tensor_descriptor" => self.descriptor_load(args),
            "store_tensor_descriptor" => self.descriptor_store(args),
            "store" => self.store(args),
            "atomic_cas" => self.atomic_cas(args),
            n if n.starts_with("atomic_") => self.atomic_rmw(n, args),
            "reduce" => self.reduce_builtin(args),
            "associative_scan" => self.scan_builtin(args),
            "_reduce_with_indices" => self.reduce_with_indices(args),
            "static_assert" => self.static_assert(args),
            "static_print" => self.static_print(args),
            "device_print" => {
                let b = self.bind(&args, &["prefix", "*args", "*", "hex="])?;
                let hex = b.val(2).as_const().and_then(|c| c.truthy()).unwrap_or(false);
                self.device_print(b.val(0), b.rest.clone(), hex, args.r)
            }
            "device_assert" => {
                let b = self.bind(&args, &["cond", "msg=", "mask="])?;
                let msg = b.get(1).map(|a| a.v.clone()).unwrap_or(Val::C(ConstValue::Str(String::new())));
                self.device_assert(b.val(0), msg, b.opt(2).map(|a| a.v.clone()), args.r)?;
                Ok(Val::none())
            }
            "multiple_of" | "max_contiguous" | "max_constancy" => self.hint(name, args),
            "assume" => self.assume(args),
            "debug_barrier" => {
                // A CTA-wide barrier: kernels rely on it to read back what other threads of the
                // same program stored (Liger's cross entropy). The interpreter has nothing to do.
                self.bind(&args, &[])?;
                self.emit(trident_ir::OpKind::Barrier, &[], &[]);
                Ok(Val::none())
            }
            "static_range" | "range" => {
                let b = self.bind(
                    &args,
                    &[
                        "arg1",
                        "arg2=",
                        "step=",
                        "num_stages=",
                        "loop_unroll_factor=",
                        "disallow_acc_multi_buffer=",
                        "flatten=",
                        "warp_specialize=",
                        "disable_licm=",
                    ],
                )?;
                Ok(Val::Range(super::call::range_of(&b, name == "static_range")))
            }
            "condition" => self.bind(&args, &["arg1", "disable_licm="]).map(|b| b.val(0)),
            "_log2" | "_is_pow2" => {
                let b = self.bind(&args, &["n"])?;
                let n = const_int(self, &b.val(0), b.range(0), "n")?;
                Ok(if name == "_log2" {
                    let mut k = 0;
                    let mut m = n;
                    while m > 1 {
                        m >>= 1;
                        k += 1;
                    }
                    Val::int(k)
                } else {
                    Val::C(ConstValue::Bool(n > 0 && n & (n - 1) == 0))
                })
            }
            "_int_dtype" => {
                let b = self.bind(&args, &["bitwidth", "signed"])?;
                let bits = const_int(self, &b.val(0), b.range(0), "bitwidth")?;
                let signed = b.val(1).as_const().and_then(|c| c.truthy()).unwrap_or(true);
                match trident_core::DType::int(bits as u32, signed) {
                    Some(d) => Ok(Val::C(ConstValue::dtype(d))),
                    None => Err(self.err(args.r, format!("no {bits}-bit integer type"))),
                }
            }
            "pointer_type" => {
                let b = self.bind(&args, &["element_ty", "address_space=", "const="])?;
                match super::call::dtype_of(&b.val(0)) {
                    Some(trident_ir::Elem::Num(d)) => Ok(Val::C(ConstValue::DType(trident_ir::Elem::ptr(d)))),
                    _ => Err(self.err(b.range(0), "tl.pointer_type needs a number dtype")),
                }
            }
            "tensor" | "dtype" | "PropagateNan" | "tensor_descriptor" => {
                Err(self.err(args.r, format!("`tl.{name}` cannot be called here")))
            }
            _ => Err(self.err(args.r, format!("`{}` is not supported by Trident yet", args.name))),
        }
    }

    /// Python's `math` functions on compile-time numbers.
    fn py_math(&mut self, name: &str, args: Args) -> R<Val> {
        let b = self.bind(&args, &["x", "y="])?;
        let x = b.val(0).as_const().and_then(|c| c.as_f64());
        let Some(x) = x else {
            return Err(self.err(args.r, format!("math.{name}() needs compile-time numbers; use tl.{name} on tensors")));
        };
        let y = b.get(1).and_then(|a| a.v.as_const()).and_then(|c| c.as_f64());
        let f = |v: f64| Ok(Val::C(ConstValue::Float(v)));
        match name {
            "sqrt" => f(x.sqrt()),
            "exp" => f(x.exp()),
            "exp2" => f(x.exp2()),
            "log" => match y {
                Some(base) => f(x.ln() / base.ln()),
                None => f(x.ln()),
            },
            "log2" => f(x.log2()),
            "log10" => f(x.log10()),
            "sin" => f(x.sin()),
            "cos" => f(x.cos()),
            "tan" => f(x.tan()),
            "fabs" => f(x.abs()),
            "pow" => f(x.powf(y.unwrap_or(1.0))),
            "floor" => Ok(Val::int(x.floor() as i128)),
            "ceil" => Ok(Val::int(x.ceil() as i128)),
            "isnan" => Ok(Val::C(ConstValue::Bool(x.is_nan()))),
            "isinf" => Ok(Val::C(ConstValue::Bool(x.is_infinite()))),
            _ => Err(self.err(args.r, format!("`math.{name}` is not supported in kernels"))),
        }
    }
}

/// A constant integer argument (tl.constexpr), or an error naming what is wrong.
pub(crate) fn const_int(l: &FnLowering, v: &Val, r: ruff_text_size::TextRange, what: &str) -> R<i128> {
    match v {
        Val::C(c) if c.as_int().is_some() && !matches!(c, ConstValue::Bool(_)) => Ok(c.as_int().unwrap_or(0)),
        Val::T(_) => {
            let mut d = l.err(r, format!("{what} must be a compile-time constant (tl.constexpr), not a tensor"));
            d.notes.push(
                "variables assigned a plain number are 0-d tensors in Triton; declare it `NAME: tl.constexpr = ...` \
                 or pass it as a tl.constexpr parameter"
                    .into(),
            );
            Err(d)
        }
        other => Err(l.err(r, format!("{what} must be an integer constant, not {}", other.kind_name()))),
    }
}

/// A shape argument: an int or a tuple of ints (each a power of two).
pub(crate) fn const_shape(l: &FnLowering, v: &Val, r: ruff_text_size::TextRange) -> R<Vec<u32>> {
    let items = match v {
        Val::Tuple(t) => t.clone(),
        other => vec![other.clone()],
    };
    let mut out = vec![];
    let mut numel: u64 = 1;
    for (i, it) in items.iter().enumerate() {
        let d = const_int(l, it, r, &format!("shape element {i}"))?;
        if d <= 0 || d & (d - 1) != 0 || d > (1 << 20) {
            return Err(l.err(r, format!("shape element {i} must be a power of 2, got {d}")));
        }
        numel = numel.saturating_mul(d as u64);
        out.push(d as u32);
    }
    if numel > 1 << 20 {
        return Err(l.err(r, format!("a block of {numel} elements exceeds Triton's limit of 1048576")));
    }
    Ok(out)
}
