//! Editing helpers: cloning, inlining a region, removing slots, replacing uses.

use trident_ir::edit::ValueMap;
use trident_ir::*;

const LOOP: &str = "kernel @k(%n: i32, %x: f32, %p: ptr<f32>) {
  %lb = constant [value = 0] : i32
  %st = constant [value = 1] : i32
  %a, %b = for %lb, %n, %st, %x, %x {
  ^(%i: i32, %u: f32, %v: f32):
    %c = if %u_pos {
      yield %u
    } {
      yield %v
    } : f32
    yield %c, %v
  } : f32, f32
  store %p, %a
  return
}
";

fn parse(text: &str) -> Function {
    parse_function(text).unwrap_or_else(|d| panic!("{d}"))
}

fn for_op(f: &Function) -> Op {
    f.all_ops().into_iter().find(|&o| f.ops[o].kind == OpKind::For).unwrap()
}

#[test]
fn clone_op_copies_regions_with_fresh_values() {
    let text = LOOP.replace("%u_pos", "%cnd").replace("%x: f32,", "%x: f32, %cnd: i1,");
    let mut f = parse(&text);
    let lp = for_op(&f);
    let mut map = ValueMap::new();
    let c = f.clone_op(lp, &mut map);
    f.insert_op_before(lp, c);
    verify_function(&f).unwrap();
    // Every value of the original maps to a different one in the copy, regions included.
    assert_eq!(f.ops[c].regions.len(), 1);
    assert_ne!(f.ops[c].regions[0], f.ops[lp].regions[0]);
    let orig_args = f.blocks[f.ops[lp].regions[0]].args.clone();
    for a in orig_args {
        assert_ne!(map[&a], a);
    }
    let text = f.to_string();
    assert_eq!(text.matches("= for ").count(), 2, "{text}");
}

#[test]
fn import_op_from_another_function() {
    let text = LOOP.replace("%u_pos", "%cnd").replace("%x: f32,", "%x: f32, %cnd: i1,");
    let g = parse(&text);
    let mut f = Function::new("h", &[("n", Type::i32()), ("x", Type::f32()), ("cnd", Type::i1())], vec![], true);
    let mut map = ValueMap::new();
    for (p, q) in g.params.iter().zip(&f.params) {
        map.insert(p.value, q.value);
    }
    let body = f.body;
    for &op in &g.blocks[g.body].ops {
        if matches!(g.ops[op].kind, OpKind::For | OpKind::Constant(_)) {
            let c = f.import_op(&g, op, &mut map);
            f.append_op(body, c);
        }
    }
    Builder::at_end(&mut f, body).op(OpKind::Return, &[], &[]);
    verify_function(&f).unwrap();
}

#[test]
fn inline_block_and_remove_slots() {
    let text = LOOP.replace("%u_pos", "%cnd").replace("%x: f32,", "%x: f32, %cnd: i1,");
    let mut f = parse(&text);
    let lp = for_op(&f);
    let body = f.ops[lp].regions[0];
    // Drop the second loop-carried slot (its result and argument are unused apart from the yield).
    let yield_op = f.terminator(body).unwrap();
    let v_arg = f.blocks[body].args[2];
    let iff = f.blocks[body].ops[0];
    // The `if`'s else branch uses %v: make it yield %u instead so that %v is unused.
    let else_block = f.ops[iff].regions[1];
    let else_yield = f.terminator(else_block).unwrap();
    f.ops[else_yield].operands[0] = f.blocks[body].args[1];
    f.remove_operand(yield_op, 1);
    f.remove_block_arg(body, 2);
    f.remove_result(lp, 1);
    f.remove_operand(lp, 4);
    verify_function(&f).unwrap();
    assert!(!f.blocks[body].args.contains(&v_arg));
    // Inline the `if`'s then region in front of it: the `if` becomes its yielded value.
    let then_block = f.ops[iff].regions[0];
    let vals = f.inline_block_before(then_block, iff, &[]);
    f.replace_op(iff, &vals);
    verify_function(&f).unwrap();
    assert!(!f.is_attached(iff));
    assert!(!f.to_string().contains("if"));
}

#[test]
fn attachment_and_nesting_queries() {
    let text = LOOP.replace("%u_pos", "%cnd").replace("%x: f32,", "%x: f32, %cnd: i1,");
    let mut f = parse(&text);
    let lp = for_op(&f);
    let body = f.ops[lp].regions[0];
    let iff = f.blocks[body].ops[0];
    let then_block = f.ops[iff].regions[0];
    assert!(f.block_is_within(then_block, f.body));
    assert!(f.block_is_within(then_block, body));
    assert!(!f.block_is_within(body, then_block));
    let c = f.result(iff, 0);
    assert!(f.is_defined_within(c, body));
    assert!(!f.is_defined_within(f.params[0].value, body));
    assert!(f.is_attached(iff));
    let inner_yield = f.terminator(then_block).unwrap();
    f.erase_op(lp);
    assert!(!f.is_attached(iff) && !f.is_attached(inner_yield));
}

#[test]
fn replace_uses_follows_chains() {
    let mut f = parse("kernel @k(%a: i32, %b: i32, %c: i32) -> (i32) {\n  %0 = add %a, %b : i32\n  return %0\n}\n");
    let (a, b, c) = (f.params[0].value, f.params[1].value, f.params[2].value);
    let map: ValueMap = [(a, b), (b, c)].into_iter().collect();
    f.replace_uses(&map);
    assert!(f.to_string().contains("add %c, %c"), "{f}");
}
