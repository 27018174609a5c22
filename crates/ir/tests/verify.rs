//! The verifier: valid IR passes; every rule has a case that breaks it.

use trident_ir::*;

const SAMPLE: &str = include_str!("data/all_ops.tir");

/// Parameters every case may use.
const HEADER: &str =
    "kernel @k(%i: i32, %f: f32, %h: f16, %b: i1, %p: ptr<f32>, %ti: tensor<4xi32>, %tf: tensor<4xf32>, \
%tb: tensor<4xi1>, %tp: tensor<4xptr<f32>>, %m: tensor<4x8xf32>, %sq: tensor<8x8xf32>, %sqh: tensor<8x8xf16>, \
%sqi: tensor<8x8xi8>) {\n";

const HELPER: &str = "func @h(%a: f32) -> (f32) {\n  return %a\n}\n";

fn module_with(body: &str) -> String {
    format!("{HEADER}{body}\n  return\n}}\n{HELPER}")
}

/// Parses (which must succeed) and verifies; returns the error messages.
fn errors_of(text: &str) -> Vec<String> {
    let m = parse_module_with(text, &ParseOptions { text_locs: true, ..Default::default() })
        .unwrap_or_else(|d| panic!("does not parse: {d}\n{text}"));
    match verify_module(&m) {
        Ok(()) => vec![],
        Err(e) => e.iter().map(|d| d.message.clone()).collect(),
    }
}

#[track_caller]
fn assert_error(body: &str, fragment: &str) {
    let text = module_with(body);
    let errs = errors_of(&text);
    assert!(
        errs.iter().any(|e| e.contains(fragment)),
        "expected an error containing {fragment:?} for\n{body}\ngot {errs:#?}"
    );
}

#[test]
fn valid_ir_passes() {
    let m = parse_module(SAMPLE).unwrap();
    verify_module(&m).unwrap();
    for f in &m.funcs {
        verify_function(f).unwrap();
    }
    assert!(errors_of(&module_with("  %0 = add %i, %i : i32")).is_empty());
}

#[test]
fn constants() {
    assert_error("  %0 = constant [value = 1] : f32", "integer value for a `f32` constant");
    assert_error("  %0 = constant [value = 256] : u8", "256 is out of range for `u8`");
    assert_error("  %0 = constant [value = -1] : u32", "out of range for `u32`");
    assert_error("  %0 = constant [value = 128] : i8", "out of range for `i8`");
    assert_error("  %0 = constant [value = true] : i32", "boolean value for a `i32`");
    assert_error("  %0 = constant [value = 1] : i1", "i1 constant needs `true` or `false`");
    assert_error("  %0 = constant [value = 1.0] : i32", "float value for a `i32`");
    assert_error("  %0, %1 = constant [value = 1.0] : f32, f32", "has 2 result(s), expected 1");
}

#[test]
fn sources_of_values() {
    assert_error("  %0 = arange [start = 0, end = 8] : tensor<4xi32>", "result must be `tensor<8xi32>`");
    assert_error("  %0 = arange [start = 8, end = 8] : tensor<1xi32>", "below end");
    assert_error("  %0 = program_id [axis = 0] : i64", "result must be `i32`");
    assert_error("  %0 = num_programs %i [axis = 1] : i32", "has 1 operand(s), expected 0");
}

#[test]
fn shape_ops() {
    assert_error("  %0 = splat %ti : tensor<4xi32>", "splat takes a scalar");
    assert_error("  %0 = splat %i : tensor<4xf32>", "splat takes a scalar");
    assert_error("  %0 = broadcast %ti : tensor<8xi32>", "cannot broadcast");
    assert_error("  %0 = broadcast %ti : tensor<1x4xi32>", "cannot broadcast");
    assert_error("  %0 = expand_dims %ti [axis = 2] : tensor<4x1xi32>", "axis 2 out of range");
    assert_error("  %0 = expand_dims %ti [axis = 0] : tensor<4x1xi32>", "result must be `tensor<1x4xi32>`");
    assert_error("  %0 = reshape %m : tensor<16xf32>", "cannot reshape");
    assert_error("  %0 = reshape %m : tensor<32xi32>", "cannot reshape");
    assert_error("  %0 = trans %m [perm = [0, 0]] : tensor<8x4xf32>", "not a permutation");
    assert_error("  %0 = trans %m [perm = [1, 0]] : tensor<4x8xf32>", "result must be `tensor<8x4xf32>`");
    assert_error("  %0 = join %ti, %tf : tensor<4x2xi32>", "same type");
    assert_error("  %0 = join %ti, %ti : tensor<2x4xi32>", "result must be `tensor<4x2xi32>`");
    assert_error("  %0, %1 = split %m : tensor<4xf32>, tensor<4xf32>", "last dimension of 2");
    assert_error("  %0 = join %tf, %tf : tensor<4x2xf32>\n  %1, %2 = split %0 : tensor<4xf32>, f32", "results must be");
    assert_error("  %0 = cat %ti, %tf : tensor<8xi32>", "cannot concatenate");
    assert_error("  %0 = cat %ti, %ti : tensor<4xi32>", "result must be `tensor<8xi32>`");
}

#[test]
fn elementwise() {
    assert_error("  %0 = add %i, %f : i32", "operands and result must have the same type");
    assert_error("  %0 = add %i, %i : i64", "operands and result must have the same type");
    assert_error("  %0 = and %f, %f : f32", "`and` is not defined on `f32`");
    assert_error("  %0 = pow %i, %i : i32", "`pow` is not defined on `i32`");
    assert_error("  %0 = add %p, %p : ptr<f32>", "`add` is not defined on `ptr<f32>`");
    assert_error("  %0 = exp %f : f16", "result must be `f32`");
    assert_error("  %0 = exp %i : i32", "`exp` is not defined on `i32`");
    assert_error("  %0 = not %f : f32", "`not` is not defined on `f32`");
    assert_error("  %0 = isnan %f : f32", "result must be `i1`");
    assert_error("  %0 = cmp %i, %i [pred = lt] : i32", "result must be `i1`");
    assert_error("  %0 = cmp %i, %f [pred = lt] : i1", "operands must have the same type");
    assert_error("  %0 = select %i, %f, %f : f32", "condition `i32` must be i1");
    assert_error("  %0 = select %tb, %m, %m : tensor<4x8xf32>", "must be i1, scalar or of the shape");
    assert_error("  %0 = select %b, %i, %f : i32", "values and result must have the same type");
    assert_error("  %0 = fma %i, %i, %i : i32", "same float type");
    assert_error("  %0 = cast %ti [kind = convert] : f32", "cast must keep the shape");
    assert_error("  %0 = cast %f [kind = bitcast] : f16", "cannot `bitcast` from `f32` to `f16`");
    assert_error("  %0 = cast %i [kind = ptr_to_int] : i64", "cannot `ptr_to_int`");
    assert_error("  %0 = cast %p [kind = convert] : i64", "cannot `convert`");
    assert_error("  %0 = cast %b [kind = int_to_ptr] : ptr<f32>", "cannot `int_to_ptr`");
    assert_error("  %0 = addptr %p, %f : ptr<f32>", "integer offsets");
    assert_error("  %0 = addptr %tp, %i : tensor<4xptr<f32>>", "integer offsets of the same shape");
    assert_error("  %0 = addptr %p, %i : ptr<f16>", "result must be `ptr<f32>`");
}

#[test]
fn memory() {
    assert_error("  %0 = load %i : i32", "the pointer operand has type `i32`");
    assert_error("  %0 = load %p : f16", "gives `f32`, not `f16`");
    assert_error("  %0 = load %tp : f32", "gives `tensor<4xf32>`");
    assert_error("  %0 = load %tp, %ti : tensor<4xf32>", "mask must be i1");
    assert_error("  %0 = load %tp, %b : tensor<4xf32>", "mask must be i1 of the pointer's shape");
    assert_error("  %0 = load %tp, %tb, %ti : tensor<4xf32>", "`other` must have the result type");
    assert_error("  %0 = load %p, %b, %f, %f : f32", "has 4 operand(s), expected 1 to 3");
    let l = "  %l = cast %i [kind = convert] : i64\n";
    assert!(errors_of(&module_with(&format!(
        "{l}  %0 = desc_load %tp, %tb, %tf, %p, %l, %l, %i [rank = 1] : tensor<4xf32>"
    )))
    .is_empty());
    assert_error(
        &format!("{l}  %0 = desc_load %tp, %tb, %tf, %p, %l, %l, %l [rank = 1] : tensor<4xf32>"),
        "offsets must be `i32` scalars",
    );
    assert_error(
        &format!("{l}  %0 = desc_load %tp, %tb, %tf, %p, %i, %l, %i [rank = 1] : tensor<4xf32>"),
        "shape must be `i64` scalars",
    );
    assert_error(
        &format!("{l}  %0 = desc_load %tp, %tb, %tf, %tp, %l, %l, %i [rank = 1] : tensor<4xf32>"),
        "base must be a scalar pointer",
    );
    assert_error(&format!("{l}  %0 = desc_load %tp, %tb, %tf, %p, %l, %l [rank = 1] : tensor<4xf32>"), "expected 7");
    assert_error(
        &format!("{l}  %0 = desc_load %tp, %tb, %tb, %p, %l, %l, %i [rank = 1] : tensor<4xf32>"),
        "`other` must have the result type",
    );
    assert!(errors_of(&module_with(&format!("{l}  desc_store %tp, %tf, %tb, %p, %l, %l, %i [rank = 1]"))).is_empty());
    assert_error(
        &format!("{l}  desc_store %tp, %ti, %tb, %p, %l, %l, %i [rank = 1]"),
        "value of rank 1, not `tensor<4xi32>`",
    );
    assert_error(&format!("{l}  desc_store %tp, %tf, %ti, %p, %l, %l, %i [rank = 1]"), "mask must be i1");
    assert_error(&format!("{l}  desc_store %tp, %tf, %tb, %p, %l, %i, %i [rank = 1]"), "strides must be `i64` scalars");
    assert_error(&format!("{l}  desc_store %tp, %tf, %tb, %p, %l, %l [rank = 1]"), "expected 7");
    assert_error("  store %p, %i", "needs a `f32` value, not `i32`");
    assert_error("  store %tp, %tf, %ti", "mask must be i1");
    assert_error("  %0 = store %p, %f : f32", "has 1 result(s), expected 0");
    assert_error("  %0 = atomic_rmw %p, %f [op = and] : f32", "atomic `and` is not defined on `f32`");
    assert_error("  %0 = atomic_rmw %p, %i [op = add] : i32", "the value and result must be `f32`");
    assert_error("  %0 = atomic_rmw %tp, %tf, %ti [op = add] : tensor<4xf32>", "mask must be i1");
    assert_error("  %0 = atomic_cas %p, %f, %i : f32", "compare, value and result must be `f32`");
}

#[test]
fn dot() {
    assert_error("  %0 = dot %m, %m, %m : tensor<4x8xf32>", "shapes do not chain");
    assert_error("  %0 = dot %tf, %tf, %tf : tensor<4xf32>", "must all be 2-D");
    assert_error("  %0 = dot %sq, %sq, %sq : tensor<8x8xf16>", "accumulator's type");
    assert_error("  %0 = dot %sqh, %sqi, %sq : tensor<8x8xf32>", "cannot multiply `f16` by `i8`");
    assert!(errors_of(&module_with("  %0 = dot %sqh, %sqh, %sq : tensor<8x8xf32>")).is_empty());
}

const COMBINE: &str = "{\n  ^(%a: f32, %c: f32):\n    %s = add %a, %c : f32\n    yield %s\n  }";

#[test]
fn reduce_and_scan() {
    assert_error(&format!("  %0 = reduce %tf [axis = 1] {COMBINE} : f32"), "axis 1 out of range");
    assert_error(&format!("  %0 = reduce %tf [axis = 0] {COMBINE} : tensor<4xf32>"), "result 0 must be `f32`");
    assert_error(&format!("  %0 = scan %tf [axis = 0] {COMBINE} : f32"), "result 0 must be `tensor<4xf32>`");
    assert_error(&format!("  %0 = reduce %m [axis = 0] {COMBINE} : tensor<4xf32>"), "result 0 must be `tensor<8xf32>`");
    assert_error(
        "  %0 = reduce %tf [axis = 0] {\n  ^(%a: f32, %c: f16):\n    yield %a\n  } : f32",
        "combine region arguments must be (f32, f32)",
    );
    assert_error(
        "  %0 = reduce %tf [axis = 0] {\n  ^(%a: f32, %c: f32):\n    yield %a, %c\n  } : f32",
        "must yield (f32)",
    );
    assert_error(
        "  %0, %1 = reduce %tf, %m [axis = 0] {\n  ^(%a: f32, %c: f32, %d: f32, %e: f32):\n    yield %a, %c\n  } : f32, f32",
        "tensors of one shape",
    );
    assert_error("  %0 = reduce %tf [axis = 0] : f32", "has 0 region(s), expected 1");
}

#[test]
fn hints_and_debug_ops() {
    assert_error("  %0 = multiple_of %m [values = [16]] : tensor<4x8xf32>", "needs 2 positive value(s)");
    assert_error("  %0 = max_contiguous %ti [values = [0]] : tensor<4xi32>", "positive value(s)");
    assert_error("  %0 = max_constancy %i [values = [16]] : i64", "operand type");
    assert_error("  assume %i", "condition must be i1");
    assert_error("  assert %ti [msg = \"x\"]", "condition must be i1");
    assert_error("  %0 = print %i [prefix = \"\"] : i32", "has 1 result(s), expected 0");
}

#[test]
fn records() {
    let rec = |name: &str, end: bool| format!("  record [name = \"{name}\", end = {end}, kind = scope]\n");
    let ok = |body: &str| {
        let errs = errors_of(&module_with(body));
        assert!(errs.is_empty(), "{body}\n{errs:#?}");
    };
    // Nested, repeated and same-name-nested regions are fine; so is one per branch.
    ok(&format!(
        "{}{}{}{}{}{}",
        rec("a", false),
        rec("b", false),
        rec("b", true),
        rec("a", true),
        rec("a", false),
        rec("a", true)
    ));
    ok(&format!("{}{}{}{}", rec("a", false), rec("a", false), rec("a", true), rec("a", true)));
    ok("  if %b {\n    record [name = \"t\", end = false, kind = dot]\n    record [name = \"t\", end = true, kind = dot]\n    yield\n  } {\n    yield\n  }");
    assert_error(
        "  record [name = \"\", end = false, kind = scope]\n  record [name = \"\", end = true, kind = scope]",
        "non-empty region name",
    );
    assert_error("  record %i [name = \"a\", end = true, kind = scope]", "has 1 operand(s), expected 0");
    assert_error(&rec("a", true), "has no open start before it in its block");
    assert_error(&rec("a", false), "region \"a\" is started but not ended in its block");
    assert_error(
        &format!("{}{}{}{}", rec("a", false), rec("b", false), rec("a", true), rec("b", true)),
        "does not match the innermost open start in its block, \"b\"",
    );
    // Same name, other kind: not the same region.
    assert_error(
        "  record [name = \"a\", end = false, kind = scope]\n  record [name = \"a\", end = true, kind = loop]",
        "does not match",
    );
    // Balanced on every path means balanced in every block: not across a region boundary.
    assert_error(
        &format!(
            "{}  if %b {{\n{}    yield\n  }} {{\n{}    yield\n  }}",
            rec("a", false),
            rec("a", true),
            rec("a", true)
        ),
        "has no open start before it in its block",
    );
    assert_error(
        "  %0 = reduce %tf [axis = 0] {\n  ^(%a: f32, %c: f32):\n    record [name = \"r\", end = false, kind = scope]\n    record [name = \"r\", end = true, kind = scope]\n    %s = add %a, %c : f32\n    yield %s\n  } : f32",
        "a record cannot sit in the region of a `reduce` op",
    );
    assert_error(
        "  %0 = reduce %tf [axis = 0] {\n  ^(%a: f32, %c: f32):\n    if %b {\n      record [name = \"r\", end = false, kind = scope]\n      record [name = \"r\", end = true, kind = scope]\n      yield\n    } {\n      yield\n    }\n    %s = add %a, %c : f32\n    yield %s\n  } : f32",
        "a record cannot sit in the region of a `reduce` op",
    );
}

#[test]
fn for_loops() {
    assert_error(
        "  for %i, %f, %i {\n  ^(%iv: i32):\n    yield\n  }",
        "lb, ub and step must be scalars of one integer type",
    );
    assert_error("  for %ti, %ti, %ti {\n  ^(%iv: tensor<4xi32>):\n    yield\n  }", "lb, ub and step must be scalars");
    assert_error(
        "  %0 = for %i, %i, %i, %f {\n  ^(%iv: i32, %a: f32):\n    yield %a\n  } : i32",
        "results (i32) must match the inits (f32)",
    );
    assert_error("  %0 = for %i, %i, %i, %f {\n  ^(%a: f32):\n    yield %a\n  } : f32", "body arguments (f32) must be");
    assert_error("  %0 = for %i, %i, %i, %f {\n  ^(%iv: i32, %a: f32):\n    yield %iv\n  } : f32", "body yields (i32)");
    assert_error("  for %i, %i {\n  ^(%iv: i32):\n    yield\n  }", "expected lb, ub, step");
}

#[test]
fn ifs() {
    assert_error("  %0 = if %i {\n    yield %f\n  } {\n    yield %f\n  } : f32", "condition must be a scalar i1");
    assert_error("  %0 = if %tb {\n    yield %f\n  } {\n    yield %f\n  } : f32", "condition must be a scalar i1");
    assert_error("  %0 = if %b {\n    yield %f\n  } {\n    yield %i\n  } : f32", "else region yields (i32)");
    assert_error("  %0 = if %b {\n    yield\n  } {\n    yield %f\n  } : f32", "then region yields ()");
    assert_error("  if %b {\n  ^(%x: i32):\n    yield\n  } {\n    yield\n  }", "then region must have no arguments");
    assert_error("  if %b {\n    yield\n  }", "has 1 region(s), expected 2");
}

#[test]
fn whiles() {
    let w = |before_args: &str, cond: &str, after_args: &str, y: &str, res: &str| {
        format!("  %0 = while %i {{\n  ^({before_args}):\n    condition {cond}\n  }} {{\n  ^({after_args}):\n    yield {y}\n  }} : {res}")
    };
    assert!(errors_of(&module_with(&w("%a: i32", "%b, %a", "%c: i32", "%c", "i32"))).is_empty());
    assert_error(&w("%a: i32", "%a, %a", "%c: i32", "%c", "i32"), "`condition` must start with a scalar i1");
    assert_error(
        &w("%a: f32", "%b, %i", "%c: i32", "%i", "i32"),
        "before region's arguments (f32) must match the inits (i32)",
    );
    assert_error(
        &w("%a: i32", "%b, %f", "%c: i32", "%i", "i32"),
        "`condition` forwards (f32), but the results are (i32)",
    );
    assert_error(
        &w("%a: i32", "%b, %a", "%c: f32", "%i", "i32"),
        "after region's arguments (f32) must match the results",
    );
    assert_error(&w("%a: i32", "%b, %a", "%c: i32", "%f", "i32"), "after region yields (f32), but the inits are (i32)");
}

#[test]
fn returns_and_calls() {
    let text = format!("{HEADER}  return\n}}\nfunc @g(%a: i32) -> (f32) {{\n  return %a\n}}\n");
    let errs = errors_of(&text);
    assert!(errs.iter().any(|e| e.contains("returns (i32), but the function's results are (f32)")), "{errs:?}");
    assert_error("  %0 = call %i [callee = \"nope\"] : i32", "calls `@nope`, which is not in the module");
    assert_error("  %0 = call %i [callee = \"h\"] : f32", "passes (i32), but `@h` takes (f32)");
    assert_error("  %0 = call %f [callee = \"h\"] : i32", "expects (i32), but `@h` returns (f32)");
    assert!(errors_of(&module_with("  %0 = call %f [callee = \"h\"] : f32")).is_empty());
    // Without the module, calls are not checked.
    let m = parse_module(&module_with("  %0 = call %i [callee = \"nope\"] : i32")).unwrap();
    verify_function(&m.funcs[0]).unwrap();
    let dup = format!("{HELPER}{HELPER}");
    assert!(errors_of(&dup).iter().any(|e| e.contains("`@h` is defined twice")));
}

#[test]
fn terminators_and_regions() {
    assert_error("  if %b {\n    %x = add %i, %i : i32\n  } {\n    yield\n  }", "the block must end in `yield`");
    assert_error(
        "  if %b {\n    yield\n    %x = add %i, %i : i32\n    yield\n  } {\n    yield\n  }",
        "terminator must be the last",
    );
    assert_error("  if %b {\n    return\n  } {\n    yield\n  }", "the block must end in `yield`");
    assert_error("  if %b {\n  } {\n    yield\n  }", "a region has no ops; it must end in `yield`");
    assert_error(
        "  %0 = while %i {\n  ^(%a: i32):\n    yield %a\n  } {\n  ^(%c: i32):\n    yield %c\n  } : i32",
        "the block must end in `condition`",
    );
    assert_error("  %0 = add %i, %i {\n    yield\n  } : i32", "has 1 region(s), expected 0");
    let text = format!("{HEADER}  %0 = add %i, %i : i32\n}}\n");
    assert!(errors_of(&text).iter().any(|e| e.contains("the block must end in `return`")));
    let text = format!("{HEADER}  return\n  return\n}}\n");
    assert!(errors_of(&text).iter().any(|e| e.contains("terminator must be the last")));
}

#[test]
fn ssa_visibility_across_regions() {
    assert_error(
        "  if %b {\n    %x = add %i, %i : i32\n    yield\n  } {\n    %y = add %x, %x : i32\n    yield\n  }",
        "operand 0 is not visible here",
    );
    // A value from inside a loop body used after the loop.
    assert_error("  for %i, %i, %i {\n  ^(%iv: i32):\n    yield\n  }\n  %z = add %iv, %iv : i32", "not visible here");
}

#[test]
fn types_and_layouts() {
    let text = "kernel @g(%z: tensor<0xf32>) {\n  return\n}\n";
    assert!(errors_of(text).iter().any(|e| e.contains("zero-sized dimension")));
    let text =
        "kernel @g(%p: tensor<4xf32, #L0>) {\n  #L0 = blocked [size_per_thread = [1, 1], threads_per_warp = [1, 32], \
                warps_per_cta = [1, 1], order = [1, 0]]\n  return\n}\n";
    assert!(errors_of(text).iter().any(|e| e.contains("layout #L0 is for rank 2")), "{:?}", errors_of(text));
    let text = "kernel @g() {\n  #L0 = blocked [size_per_thread = [1, 1], threads_per_warp = [1, 32], \
                warps_per_cta = [1, 1], order = [1, 1]]\n  return\n}\n";
    assert!(errors_of(text).iter().any(|e| e.contains("not a permutation")));
    let text = "kernel @g() {\n  #L0 = blocked [size_per_thread = [1], threads_per_warp = [1, 32], \
                warps_per_cta = [1, 1], order = [1, 0]]\n  return\n}\n";
    assert!(errors_of(text).iter().any(|e| e.contains("different lengths")));
}

#[test]
fn linear_layouts_round_trip_and_are_checked() {
    // A 4x8 tensor over one warp: register bit 0 -> column 1, lanes -> the rest (one copy
    // lane: basis 0).
    let good = "kernel @g(%p: tensor<4x8xf32, #L0>) {\n  #L0 = linear [shape = [4, 8], reg = [1], lane = [2, 4, 8, 16, 0], warp = []]\n  return\n}\n";
    assert!(errors_of(good).is_empty(), "{:?}", errors_of(good));
    let m = parse_module(good).unwrap();
    assert_eq!(print_module(&m, &PrintOptions::default()), good);
    let bad =
        |layout: &str, ty: &str| format!("kernel @g(%p: tensor<{ty}xf32, #L0>) {{\n  #L0 = {layout}\n  return\n}}\n");
    for (layout, ty, want) in [
        ("linear [shape = [4, 8], reg = [1], lane = [2, 4, 8, 16, 0], warp = []]", "8x4", "is for shape [4, 8]"),
        ("linear [shape = [4, 8], reg = [64], lane = [2, 4, 8, 16, 0], warp = []]", "4x8", "outside shape"),
        ("linear [shape = [4, 8], reg = [0], lane = [2, 4, 8, 16, 1], warp = []]", "4x8", "register basis is 0"),
        ("linear [shape = [4, 8], reg = [1], lane = [2, 4, 8, 16], warp = []]", "4x8", "5 lane bases"),
        ("linear [shape = [4, 6], reg = [1], lane = [2, 4, 8, 16, 0], warp = []]", "4x6", "not a power of two"),
    ] {
        let text = bad(layout, ty);
        assert!(errors_of(&text).iter().any(|e| e.contains(want)), "{layout}: {:?}", errors_of(&text));
    }
}

#[test]
fn errors_point_at_the_op_and_show_it() {
    let text = module_with("  %0 = add %i, %f : i32");
    let m = parse_module_with(&text, &ParseOptions { text_locs: true, ..Default::default() }).unwrap();
    let errs = verify_module(&m).unwrap_err();
    assert_eq!(errs.len(), 1);
    let d = &errs[0];
    assert_eq!(d.loc(), Some(Loc { file: 0, line: 2, col: 3 }));
    assert!(d.message.starts_with("`add` op in `@k`:"), "{}", d.message);
    assert!(d.notes.iter().any(|n| n.contains("%0 = add %i, %f : i32")), "{:?}", d.notes);
    let r = d.render(&[SourceFile { path: "t.tir".into(), text: text.clone() }]);
    assert!(r.contains("t.tir:2:3"), "{r}");
}

// ---- structural corruption, built programmatically ----

/// `kernel @k(%a: i32) { %0 = add %a, %a; %1 = if %c { yield %0 } { yield %a }; return }`
fn small() -> (Function, Op, Op) {
    let mut f = Function::new("k", &[("a", Type::i32()), ("c", Type::i1())], vec![], true);
    let (a, c) = (f.params[0].value, f.params[1].value);
    let body = f.body;
    let mut b = Builder::at_end(&mut f, body);
    let add = b.op(OpKind::Binary(BinaryOp::Add), &[a, a], &[Type::i32()]);
    let x = b.func.result(add, 0);
    let iff = b.op(OpKind::If, &[c], &[Type::i32()]);
    b.op(OpKind::Return, &[], &[]);
    for v in [x, a] {
        let r = f.new_block(&[]);
        let y = f.new_op(OpKind::Yield, &[v], &[], Loc::UNKNOWN);
        f.append_op(r, y);
        f.add_region(iff, r);
    }
    verify_function(&f).unwrap();
    (f, add, iff)
}

fn struct_errors(f: &Function) -> String {
    verify_function(f).unwrap_err().iter().map(|d| d.message.clone()).collect::<Vec<_>>().join("\n")
}

#[test]
fn structural_corruption_is_reported_not_panicked() {
    let (mut f, add, iff) = small();
    let r0 = f.ops[iff].regions[0];
    f.ops[add].parent = Some(r0);
    assert!(struct_errors(&f).contains("its parent says"));

    let (mut f, add, _) = small();
    let body = f.body;
    f.blocks[body].ops.insert(0, add);
    assert!(struct_errors(&f).contains("listed in two places"));

    let (mut f, add, iff) = small();
    let r = f.result(add, 0);
    f.values[r].def = ValueDef::Result(iff, 0);
    assert!(struct_errors(&f).contains("says it is defined by"));

    let (mut f, _, iff) = small();
    let r0 = f.ops[iff].regions[0];
    f.blocks[r0].parent = None;
    assert!(struct_errors(&f).contains("has parent None"));

    let (mut f, _, _) = small();
    f.params[0].value = f.params[1].value;
    assert!(struct_errors(&f).contains("is not body argument 0"));

    let (mut f, add, _) = small();
    f.ops[add].operands.push(Value::from_u32(9999));
    assert!(struct_errors(&f).contains("operand 2 does not exist"));

    let (mut f, add, iff) = small();
    f.ops[add].results.push(Value::from_u32(9999));
    f.ops[iff].regions.push(Block::from_u32(9999));
    let e = struct_errors(&f);
    assert!(e.contains("result 1 does not exist") && e.contains("has 3 region(s)"), "{e}");

    let (mut f, _, _) = small();
    let body = f.body;
    f.blocks[body].ops.push(Op::from_u32(9999));
    assert!(struct_errors(&f).contains("does not exist"));

    let (mut f, _, iff) = small();
    let body = f.body;
    f.blocks[body].parent = Some(iff);
    assert!(struct_errors(&f).contains("claims to be a region"));

    // The same block as two regions.
    let (mut f, _, iff) = small();
    let r0 = f.ops[iff].regions[0];
    f.ops[iff].regions[1] = r0;
    assert!(struct_errors(&f).contains("used in two places"));

    // A block nested in itself.
    let (mut f, _, iff) = small();
    let r0 = f.ops[iff].regions[0];
    f.blocks[r0].ops.insert(0, iff);
    let _ = struct_errors(&f);
    let _ = f.to_string();

    f.body = Block::from_u32(9999);
    assert!(struct_errors(&f).contains("body block does not exist"));
    let _ = f.to_string();
}

#[test]
fn uses_of_removed_or_later_values() {
    let (mut f, add, _) = small();
    f.detach_op(add);
    assert!(struct_errors(&f).contains("its defining op was removed"));
    assert!(f.to_string().contains("%!v"), "dangling values print as %!vN");

    // Use before definition in the same block.
    let (mut f, add, iff) = small();
    let body = f.body;
    f.blocks[body].ops.retain(|&o| o != add);
    let pos = f.position(iff);
    f.blocks[body].ops.insert(pos + 1, add);
    assert!(struct_errors(&f).contains("operand 0 is not visible here"));
}

/// A GPU kernel with a shared-memory plan, `BODY` replaced by the case.
const PLANNED: &str = "kernel @k(%p: ptr<f32>) attributes {smem_total = 1024} {
  #L0 = blocked [size_per_thread = [1], threads_per_warp = [32], warps_per_cta = [4], order = [0]]
  #L1 = blocked [size_per_thread = [4], threads_per_warp = [32], warps_per_cta = [1], order = [0]]
  %0 = arange [start = 0, end = 128] : tensor<128xi32, #L0>
BODY
  return
}
";

fn planned_errors(body: &str) -> Vec<String> {
    errors_of(&PLANNED.replace("BODY", body))
}

#[track_caller]
fn assert_planned_error(body: &str, fragment: &str) {
    let errs = planned_errors(body);
    assert!(errs.iter().any(|e| e.contains(fragment)), "expected {fragment:?} for\n{body}\ngot {errs:#?}");
}

#[test]
fn discardable_attributes() {
    assert!(planned_errors("  %1 = convert_layout %0 {smem_offset = 512, smem_size = 512} : tensor<128xi32, #L1>")
        .is_empty());
    assert_planned_error(
        "  %1 = convert_layout %0 {smem_ofset = 0} : tensor<128xi32, #L1>",
        "unknown attribute `smem_ofset`",
    );
    assert_planned_error("  %1 = convert_layout %0 {smem_offset = 0} : tensor<128xi32, #L1>", "go together");
    assert_planned_error(
        "  %1 = convert_layout %0 {smem_offset = 768, smem_size = 512} : tensor<128xi32, #L1>",
        "[768, 1280) lie outside the function's `smem_total` of 1024",
    );
    assert_planned_error(
        "  %1 = convert_layout %0 {smem_offset = -1, smem_size = 512} : tensor<128xi32, #L1>",
        "non-negative",
    );
    assert_planned_error(
        "  %1 = convert_layout %0 {smem_offset = 0, smem_size = 0} : tensor<128xi32, #L1>",
        "positive",
    );
    assert_planned_error("  %1 = convert_layout %0 {smem_operand = false} : tensor<128xi32, #L1>", "must be `true`");
    assert_planned_error("  barrier {wgmma_in_flight = -1}", "non-negative count");
    assert_planned_error("  %1 = add %0, %0 {wgmma_in_flight = 1} : tensor<128xi32, #L0>", "only for `barrier`");
    assert_planned_error("  %1 = add %0, %0 {smem_operand = true} : tensor<128xi32, #L0>", "only for `convert_layout`");
    assert_planned_error(
        "  %1 = arange [start = 0, end = 4] : tensor<4xi32>",
        "has no layout in a function with a shared-memory plan",
    );
    // Offsets need a plan on the function; the plan is for kernels, with a byte count.
    assert_error("  %0 = add %ti, %ti {smem_offset = 0, smem_size = 16} : tensor<4xi32>", "no `smem_total`");
    let text = PLANNED.replace("BODY", "").replace("kernel @k", "func @k");
    assert!(errors_of(&text).iter().any(|e| e.contains("only for kernels")), "{:?}", errors_of(&text));
    let text = PLANNED.replace("BODY", "").replace("smem_total = 1024", "smem_total = -4");
    assert!(errors_of(&text).iter().any(|e| e.contains("must be a byte count")));
    let text = PLANNED.replace("BODY", "").replace("smem_total = 1024", "smem_totl = 4");
    assert!(errors_of(&text).iter().any(|e| e.contains("unknown function attribute `smem_totl`")));
}

#[test]
fn tma_copies_fill_their_buffer_with_the_maps_boxes() {
    let head = "  #L0 = shared [vec = 1, per_phase = 1, max_phase = 1, order = [1, 0]]
  #L1 = shared [vec = 1, per_phase = 1, max_phase = 1, order = [0]]
  %n = constant [value = 64] : i64
  %one = constant [value = 1] : i64
  %map = tma_map %p, %n, %n, %n, %one [block = [8, 32], swizzle = 128] : i64
  %bar = local_alloc : tensor<1xi64, #L1>
  mbarrier_init %bar [count = 1]
";
    // One box, or two side by side along the innermost dimension (rows wider than a swizzle).
    for shape in ["8x32", "8x64"] {
        let body =
            format!("{head}  %buf = local_alloc : tensor<{shape}xf32, #L0>\n  tma_copy %map, %buf, %bar, %i, %i");
        assert_eq!(errors_of(&module_with(&body)), Vec::<String>::new(), "{shape}");
    }
    // Boxes that do not tile the buffer: a partial box, or a different row count.
    for shape in ["8x48", "16x32", "8x16"] {
        let body =
            format!("{head}  %buf = local_alloc : tensor<{shape}xf32, #L0>\n  tma_copy %map, %buf, %bar, %i, %i");
        assert_error(&body, "do not tile");
    }
}

#[test]
fn transposed_views_rename_the_buffers_dims() {
    let head = "  #L0 = shared [vec = 8, per_phase = 1, max_phase = 8, order = [1, 0]]
  #L1 = shared [vec = 8, per_phase = 1, max_phase = 8, order = [0, 1]]
  #L2 = shared [vec = 4, per_phase = 1, max_phase = 8, order = [0, 1]]
  #L3 = shared [vec = 8, per_phase = 1, max_phase = 8, order = [2, 1, 0]]
  #L4 = shared [vec = 8, per_phase = 1, max_phase = 8, order = [1, 2, 0]]
  %buf = local_alloc : tensor<64x32xf16, #L0>
  %b3 = local_alloc : tensor<2x64x32xf16, #L3>
";
    let ok = format!(
        "{head}  %t = memdesc_trans %buf [perm = [1, 0]] : tensor<32x64xf16, #L1>
  %t3 = memdesc_trans %b3 [perm = [0, 2, 1]] : tensor<2x32x64xf16, #L4>"
    );
    assert_eq!(errors_of(&module_with(&ok)), Vec::<String>::new());
    // The shape must be the permuted one, the perm a permutation, the layout the renamed one.
    assert_error(
        &format!("{head}  %t = memdesc_trans %buf [perm = [1, 0]] : tensor<64x32xf16, #L1>"),
        "result must be",
    );
    assert_error(
        &format!("{head}  %t = memdesc_trans %buf [perm = [1, 1]] : tensor<32x64xf16, #L1>"),
        "not a permutation",
    );
    assert_error(&format!("{head}  %t = memdesc_trans %buf [perm = [1, 0]] : tensor<32x64xf16, #L0>"), "dims permuted");
    assert_error(&format!("{head}  %t = memdesc_trans %buf [perm = [1, 0]] : tensor<32x64xf16, #L2>"), "dims permuted");
}

#[test]
fn warp_specialization_splits_the_kernel_end_between_consumers_and_a_producer() {
    let head = "  #L0 = shared [vec = 1, per_phase = 1, max_phase = 1, order = [1, 0]]
  #L1 = shared [vec = 1, per_phase = 1, max_phase = 1, order = [0]]
  %bars = local_alloc : tensor<2x1xi64, #L0>
  mbarrier_init %bars [count = 4, primed = true]
  %z = constant [value = 0] : i32
  %bar = memdesc_index %bars, %z : tensor<1xi64, #L1>
";
    let ok = format!(
        "{head}  warp_specialize [producer_warps = 1] {{
    mbarrier_arrive %bar, %b {{wgmma_in_flight = 1}}
    %x = add %tf, %tf : tensor<4xf32>
    barrier
    yield
  }} {{
    mbarrier_wait %bar
    %y = add %i, %i : i32
    yield
  }}"
    );
    assert_eq!(errors_of(&module_with(&ok)), Vec::<String>::new());
    // Only right before the kernel's `return`.
    assert_error(&format!("{ok}\n  %after = add %i, %i : i32"), "last op of the function's body");
    // Records may sit in both regions (each role's probes), and between it and the `return`
    // (a profiled kernel region's end, which every warp reaches).
    let profiled = format!(
        "{head}  record [name = \"kernel\", end = false, kind = kernel]
  warp_specialize [producer_warps = 1] {{
    record [name = \"c\", end = false, kind = scope]
    record [name = \"c\", end = true, kind = scope]
    yield
  }} {{
    record [name = \"p\", end = false, kind = loop]
    mbarrier_wait %bar
    record [name = \"p\", end = true, kind = loop]
    yield
  }}
  record [name = \"kernel\", end = true, kind = kernel]"
    );
    assert_eq!(errors_of(&module_with(&profiled)), Vec::<String>::new());
    // Ping-pong turns: the consumers' (region 0, at any depth), never the producer's or outside.
    let turns = format!(
        "{head}  warp_specialize [producer_warps = 1] {{
    pingpong_pass [only = 1]
    pingpong_wait
    %r = for %z, %i, %i, %z {{
    ^(%j: i32, %acc: i32):
      pingpong_pass
      pingpong_wait
      yield %acc
    }} : i32
    pingpong_wait [only = 0]
    yield
  }} {{
    yield
  }}"
    );
    assert_eq!(errors_of(&module_with(&turns)), Vec::<String>::new());
    assert_error(&format!("{head}  pingpong_wait"), "only in region 0");

    assert_error(&format!("{profiled}\n  %after = add %i, %i : i32"), "last op of the function's body");
    // The producer's warps take part in no barrier and hold no register tensor.
    let producer = |ops: &str| {
        format!("{head}  warp_specialize [producer_warps = 1] {{\n    yield\n  }} {{\n{ops}\n    yield\n  }}")
    };
    assert_error(&producer("    barrier"), "in the producer region");
    assert_error(&producer("    %x = add %tf, %tf : tensor<4xf32>"), "in the producer region");
    assert_error(&producer("    pingpong_pass"), "only in region 0");
    // Regions carry nothing; an arrival's guard is an i1 and its barrier one slot.
    assert_error(
        &format!("{head}  warp_specialize [producer_warps = 1] {{\n    yield %i\n  }} {{\n    yield\n  }}"),
        "yield nothing",
    );
    assert_error(&format!("{head}  mbarrier_arrive %bar, %i"), "guard must be a scalar i1");
    assert_error(&format!("{head}  mbarrier_arrive %bars"), "one-slot");
    // `wgmma_in_flight` on barriers and arrivals only; `warp_specialize` on loops only.
    assert_error(
        &format!("{head}  mbarrier_wait %bar {{wgmma_in_flight = 1}}"),
        "only for `barrier` and `mbarrier_arrive`",
    );
    assert_error(&format!("{head}  %w = add %i, %i {{warp_specialize = true}} : i32"), "only for `for`");
}

#[test]
fn a_deferred_tma_store_needs_a_wait_on_its_box() {
    let head = "  #L0 = shared [vec = 1, per_phase = 1, max_phase = 1, order = [1, 0]]
  %buf = local_alloc : tensor<64x32xf16, #L0>
  %n = cast %i [kind = convert] : i64
  %map = tma_map %p, %n, %n, %n, %n [block = [64, 32], swizzle = 0] : i64
";
    let store = "  tma_store %map, %buf, %i, %i {store_read_deferred = true}";
    let ok = format!("{head}{store}\n  tma_store_wait %buf");
    assert_eq!(errors_of(&module_with(&ok)), Vec::<String>::new());
    assert_error(&format!("{head}{store}"), "needs a `tma_store_wait` on its box");
    assert_error(&format!("{head}  tma_store_wait %i"), "a shared buffer");
    assert_error(
        &format!("{head}  tma_store %map, %buf, %i, %i {{store_read_deferred = false}}\n  tma_store_wait %buf"),
        "must be `true`",
    );
    assert_error(&format!("{head}  barrier {{store_read_deferred = true}}"), "only for `tma_store`");
}

#[test]
fn gather_rules() {
    assert_error("  %g = gather %m, %tf [axis = 0] : tensor<4xf32>", "of one rank");
    assert_error("  %x = reshape %tf : tensor<4x1xf32>\n  %g = gather %m, %x [axis = 0] : tensor<4x1xf32>", "integer");
    assert_error(
        "  %x = reshape %ti : tensor<4x1xi32>\n  %g = gather %m, %x [axis = 0] : tensor<4x1xf32>",
        "differ outside",
    );
    assert_error(
        "  %x = reshape %ti : tensor<1x4xi32>\n  %g = gather %sq, %x [axis = 2] : tensor<1x4xf32>",
        "out of range",
    );
    assert_error("  %g = gather %sq, %sqi [axis = 1] : tensor<8x8xf16>", "result must be");
    let ok = module_with("  %g = gather %sq, %sqi [axis = 1] : tensor<8x8xf32>");
    assert_eq!(errors_of(&ok), Vec::<String>::new());
}
