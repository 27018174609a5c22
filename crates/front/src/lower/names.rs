//! Names of the `triton.language` API Trident knows, for lookups and "did you mean" hints.

/// Functions and classes of `triton.language` that Trident implements.
pub(crate) const TL_FUNCS: &[&str] = &[
    "program_id",
    "num_programs",
    "arange",
    "zeros",
    "zeros_like",
    "full",
    "cdiv",
    "load",
    "store",
    "make_block_ptr",
    "advance",
    "make_tensor_descriptor",
    "load_tensor_descriptor",
    "store_tensor_descriptor",
    "where",
    "dot",
    "cast",
    "reshape",
    "view",
    "trans",
    "permute",
    "broadcast_to",
    "broadcast",
    "expand_dims",
    "join",
    "split",
    "cat",
    "ravel",
    "interleave",
    "squeeze",
    "unsqueeze",
    "minimum",
    "maximum",
    "clamp",
    "fma",
    "umulhi",
    "fdiv",
    "div_rn",
    "abs",
    "exp",
    "exp2",
    "log",
    "log2",
    "sqrt",
    "sqrt_rn",
    "rsqrt",
    "sin",
    "cos",
    "erf",
    "floor",
    "ceil",
    "sigmoid",
    "softmax",
    "sum",
    "max",
    "min",
    "argmax",
    "argmin",
    "xor_sum",
    "reduce_or",
    "reduce",
    "associative_scan",
    "cumsum",
    "cumprod",
    "sort",
    "topk",
    "flip",
    "atomic_add",
    "atomic_max",
    "atomic_min",
    "atomic_and",
    "atomic_or",
    "atomic_xor",
    "atomic_xchg",
    "atomic_cas",
    "rand",
    "randn",
    "randint",
    "randint4x",
    "rand4x",
    "randn4x",
    "philox",
    "philox_impl",
    "uint_to_uniform_float",
    "pair_uniform_to_normal",
    "static_assert",
    "static_print",
    "device_assert",
    "device_print",
    "multiple_of",
    "max_contiguous",
    "max_constancy",
    "assume",
    "static_range",
    "range",
    "constexpr",
    "to_tensor",
    "item",
    "gather",
    "histogram",
    "swizzle2d",
    "debug_barrier",
    "add",
    "sub",
    "mul",
    "tensor",
    "dtype",
    "pointer_type",
    "PropagateNan",
    "condition",
    "_reduce_with_indices",
    "_log2",
    "_is_pow2",
    "_int_dtype",
];

/// `triton.language` names Trident knows but does not implement (so the error can say so).
pub(crate) const TL_UNSUPPORTED: &[&str] = &[
    "tensor_descriptor",
    "inline_asm_elementwise",
    "dot_scaled",
    "atomic_load",
    "atomic_store",
    "atomic_poll",
    "map_elementwise",
    "bitonic_merge",
    "expect_zero",
];

/// `triton.language.math` functions (the rest of `tl.math.*` falls back to libdevice's table).
pub(crate) const MATH_FUNCS: &[&str] = &[
    "umulhi", "exp", "exp2", "log", "log2", "cos", "sin", "sqrt", "sqrt_rn", "rsqrt", "abs", "fdiv", "div_rn", "erf",
    "floor", "ceil", "fma", "cdiv", "sigmoid", "softmax", "maximum", "minimum", "clamp",
];

/// Edit distance between two short names.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The candidate closest to `name`, if it is close enough to be a plausible typo.
pub(crate) fn closest<'s>(name: &str, candidates: impl Iterator<Item = &'s str>) -> Option<&'s str> {
    let lname = name.to_ascii_lowercase();
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        if c.starts_with('%') {
            continue;
        }
        let d = distance(&lname, &c.to_ascii_lowercase());
        let limit = (name.len().max(c.len()) / 3).max(1);
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_names_only() {
        assert_eq!(closest("arang", TL_FUNCS.iter().copied()), Some("arange"));
        assert_eq!(closest("progam_id", TL_FUNCS.iter().copied()), Some("program_id"));
        assert_eq!(closest("atomic_ad", TL_FUNCS.iter().copied()), Some("atomic_add"));
        assert_eq!(closest("frobnicate", TL_FUNCS.iter().copied()), None);
    }
}
