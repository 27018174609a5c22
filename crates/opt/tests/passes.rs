//! The pass manager, and properties every pass must have on any valid input:
//! it leaves valid IR, never panics, and agrees with constant folding.

use std::cell::RefCell;
use std::rc::Rc;
use trident_ir::*;
use trident_opt::*;

const SAMPLE: &str = include_str!("../../ir/tests/data/all_ops.tir");

fn sample() -> Module {
    parse_module(SAMPLE).unwrap()
}

#[test]
fn dumps_after_every_pass() {
    let mut pm = PassManager::new();
    pm.add_pipeline("canonicalize, cse").unwrap();
    pm.print_ir_after_all = true;
    let out = Rc::new(RefCell::new(String::new()));
    let sink = out.clone();
    pm.set_dump_sink(move |s| sink.borrow_mut().push_str(s));
    let mut m = parse_module("kernel @k(%a: i32) -> (i32) {\n  %0 = add %a, %a : i32\n  %1 = add %a, %a : i32\n  %2 = mul %0, %1 : i32\n  return %2\n}\n").unwrap();
    pm.run(&mut m).unwrap();
    let text = out.borrow().clone();
    let a = text.find("// -----// IR Dump After canonicalize //----- //\nkernel @k").expect(&text);
    let b = text.find("// -----// IR Dump After cse //----- //\nkernel @k").expect(&text);
    assert!(a < b);
    // The CSE dump shows the merged add.
    assert!(text[b..].contains("%1 = mul %0, %0 : i32"), "{text}");
    assert_eq!(pm.timings().len(), 2);
    assert!(pm.timing_report().contains("cse"));
}

#[test]
fn dumps_can_show_locations() {
    let mut pm = PassManager::new();
    pm.add_pipeline("dce").unwrap();
    pm.print_ir_after_all = true;
    pm.print_options = PrintOptions::with_locs();
    let out = Rc::new(RefCell::new(String::new()));
    let sink = out.clone();
    pm.set_dump_sink(move |s| sink.borrow_mut().push_str(s));
    let mut m = parse_module("kernel @k() {\n  return loc(7:5)\n}\n").unwrap();
    pm.run(&mut m).unwrap();
    assert!(out.borrow().contains("return loc(7:5)"));
}

struct Breaker;

impl Pass for Breaker {
    fn name(&self) -> &'static str {
        "breaker"
    }
    fn run_on_function(&self, f: &mut Function) -> Result<bool, Diagnostic> {
        // Corrupt a result type, as a buggy pass might.
        if let Some(op) = f.all_ops().into_iter().find(|&o| !f.ops[o].results.is_empty()) {
            let r = f.ops[op].results[0];
            f.values[r].ty = Type::scalar(DType::F64);
        }
        Ok(true)
    }
}

struct Refuser;

impl Pass for Refuser {
    fn name(&self) -> &'static str {
        "refuser"
    }
    fn run_on_module(&self, _m: &mut Module) -> Result<bool, Diagnostic> {
        Err(Diagnostic::error("cannot handle this"))
    }
}

#[test]
fn verification_after_each_pass_names_the_culprit() {
    let mut pm = PassManager::new();
    pm.add(Box::new(Canonicalize)).add(Box::new(Breaker)).add(Box::new(Dce));
    let mut m =
        parse_module("kernel @k(%a: i32, %p: ptr<i32>) {\n  %0 = mul %a, %a : i32\n  store %p, %0\n  return\n}\n")
            .unwrap();
    let errs = pm.run(&mut m).unwrap_err();
    assert!(errs.iter().all(|d| d.notes.iter().any(|n| n.contains("after pass `breaker`"))), "{errs:?}");
    // Stopped there: dce did not run.
    assert_eq!(pm.timings().iter().map(|t| t.name).collect::<Vec<_>>(), vec!["canonicalize", "breaker"]);

    let mut pm = PassManager::new();
    pm.verify_each = false;
    pm.add(Box::new(Breaker));
    pm.run(&mut m).unwrap();

    // Invalid input is rejected before any pass sees it (passes assume valid IR).
    let mut pm = default_tile_pipeline();
    let errs = pm.run(&mut m).unwrap_err();
    assert!(errs[0].notes.iter().any(|n| n.contains("before the first pass")), "{errs:?}");
    assert!(pm.timings().is_empty());

    let mut fresh = parse_module("kernel @k() {\n  return\n}\n").unwrap();
    let mut pm = PassManager::new();
    pm.add(Box::new(Refuser));
    let errs = pm.run(&mut fresh).unwrap_err();
    assert_eq!(errs[0].message, "cannot handle this");
    assert!(errs[0].notes.iter().any(|n| n.contains("in pass `refuser`")));
}

#[test]
fn registry() {
    for &name in PASS_NAMES {
        assert_eq!(create_pass(name).unwrap().name(), name);
    }
    assert!(create_pass("unroll").is_none());
    let mut pm = PassManager::new();
    let e = pm.add_pipeline("cse, unroll").err().unwrap();
    assert!(e.contains("unknown pass `unroll`"), "{e}");
    assert_eq!(
        default_tile_pipeline().pass_names(),
        vec!["inline", "canonicalize", "cse", "licm", "canonicalize", "cse", "dce"]
    );
}

#[test]
fn every_pass_keeps_the_sample_valid() {
    let names: Vec<&str> = PASS_NAMES.to_vec();
    for name in names {
        let mut m = sample();
        let mut pm = PassManager::new();
        pm.add_pipeline(name).unwrap();
        pm.run(&mut m).unwrap_or_else(|e| panic!("{name}: {e:?}"));
    }
    let mut m = sample();
    default_tile_pipeline().run(&mut m).unwrap();
    // Effects survive the whole pipeline.
    let text = m.to_string();
    for op in ["store", "atomic_rmw", "atomic_cas", "print", "assert", "assume", "load %x_ptr [volatile = true]"] {
        assert!(text.contains(op), "`{op}` vanished:\n{text}");
    }
    // Helpers are inlined and dropped; kernels stay.
    assert_eq!(m.funcs.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(), vec!["all_ops", "gpu"]);
}

/// Running a cleanup pass a second time changes nothing.
#[test]
fn passes_reach_a_fixed_point() {
    for name in ["canonicalize", "cse", "dce", "licm"] {
        let mut m = sample();
        let mut once = PassManager::new();
        once.add_pipeline(&format!("inline, {name}")).unwrap();
        once.run(&mut m).unwrap();
        let first = m.to_string();
        let mut again = PassManager::new();
        again.add_pipeline(name).unwrap();
        again.run(&mut m).unwrap();
        assert_eq!(m.to_string(), first, "{name} is not idempotent");
        assert!(!again.timings()[0].changed, "{name} reported a change the second time");
    }
}

// ---------------------------------------------------------------- random programs

struct Rng(u64);

impl Rng {
    fn from_clock() -> Rng {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(7, |d| d.as_nanos() as u64);
        Rng(t | 1)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

const INT_TYPES: &[DType] = &[DType::I8, DType::U8, DType::I32, DType::U32, DType::I64, DType::U64, DType::I1];
const FLOAT_TYPES: &[DType] = &[DType::F16, DType::BF16, DType::F32, DType::F64];

/// A value of type `d` as constant text: special values often, random ones otherwise.
fn random_value(rng: &mut Rng, d: DType) -> String {
    if d.is_bool() {
        return (rng.below(2) == 0).to_string();
    }
    if d.is_float() {
        let specials = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, 65504.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 1e-8];
        let v = if rng.below(4) != 0 {
            *rng.pick(&specials)
        } else {
            (rng.next() as i64 as f64) / (1u64 << rng.below(64)) as f64
        };
        return Attr::Float(v).to_string();
    }
    let bits = d.bits();
    // Identity and boundary values most of the time: they are what the rewrites key on.
    let raw: u64 = match rng.below(4) {
        3 => rng.next(),
        _ => *rng.pick(&[0u64, 1, 2, u64::MAX, 1u64 << (bits - 1), (1u64 << (bits - 1)).wrapping_sub(1)]),
    };
    // Canonical form: sign-extended for signed types, zero-extended for unsigned.
    let m = if bits == 64 { raw } else { raw & ((1u64 << bits) - 1) };
    if d.is_signed_int() && bits < 64 && (m >> (bits - 1)) & 1 == 1 {
        ((m | !((1u64 << bits) - 1)) as i64).to_string()
    } else {
        // Unsigned 64-bit values above i64::MAX are written wrapped, as the IR stores them.
        (m as i64).to_string()
    }
}

/// A random straight-line function of `%x`, `%y` (type `d`) returning every value it computes.
fn random_program(rng: &mut Rng, d: DType) -> String {
    let int = d.is_int();
    let ops: &[&str] = if d.is_bool() {
        &["add", "sub", "mul", "and", "or", "xor"]
    } else if int {
        &["add", "sub", "mul", "div", "rem", "and", "or", "xor", "shl", "shr", "max", "min", "umulhi"]
    } else {
        &["add", "sub", "mul", "div", "rem", "max", "min", "max_nan", "min_nan", "copysign"]
    };
    let unary: &[&str] = if d.is_bool() {
        &["not"]
    } else if int {
        &["neg", "not", "abs", "popc", "clz"]
    } else {
        &["neg", "abs", "floor", "ceil", "trunc", "rint", "round", "sqrt_rn"]
    };
    let mut body = String::new();
    let mut vals = vec!["%x".to_string(), "%y".to_string()];
    let mut bools: Vec<String> = vec![];
    let mut n = 0;
    for _ in 0..2 + rng.below(3) {
        body.push_str(&format!("  %c{n} = constant [value = {}] : {d}\n", random_value(rng, d)));
        vals.push(format!("%c{n}"));
        n += 1;
    }
    for _ in 0..3 + rng.below(8) {
        let a = rng.pick(&vals).clone();
        let b = if rng.below(4) == 0 { a.clone() } else { rng.pick(&vals).clone() };
        let line = match rng.below(6) {
            0 if !bools.is_empty() => {
                let c = rng.pick(&bools).clone();
                format!("select {c}, {a}, {b} : {d}")
            }
            1 => {
                let p = rng.pick(&["eq", "ne", "lt", "le", "gt", "ge"]);
                let v = format!("%b{n}");
                body.push_str(&format!("  {v} = cmp {a}, {b} [pred = {p}] : i1\n"));
                bools.push(v);
                n += 1;
                continue;
            }
            2 => format!("{} {a} : {d}", rng.pick(unary)),
            _ => format!("{} {a}, {b} : {d}", rng.pick(ops)),
        };
        body.push_str(&format!("  %v{n} = {line}\n"));
        vals.push(format!("%v{n}"));
        n += 1;
    }
    let mut rets: Vec<String> = vals[2..].to_vec();
    rets.extend(bools.iter().cloned());
    let types: Vec<String> =
        vals[2..].iter().map(|_| d.to_string()).chain(bools.iter().map(|_| "i1".to_string())).collect();
    format!("kernel @k(%x: {d}, %y: {d}) -> ({}) {{\n{body}  return {}\n}}\n", types.join(", "), rets.join(", "))
}

/// Turns the parameters into constants: `kernel @k() -> (...) { %x = constant ...; ...`.
fn with_constants(text: &str, d: DType, x: &str, y: &str) -> String {
    let header_end = text.find('{').unwrap() + 1;
    let header = &text[..header_end];
    let results = &header[header.find("->").unwrap()..];
    format!(
        "kernel @k() {results}\n  %x = constant [value = {x}] : {d}\n  %y = constant [value = {y}] : {d}{}",
        &text[header_end..]
    )
}

/// The returned values of a module after folding, as constants where they folded.
fn folded_results(text: &str) -> Vec<Option<(Const, Type)>> {
    let mut m = parse_module(text).unwrap_or_else(|d| panic!("{d}\n{text}"));
    let mut pm = PassManager::new();
    pm.add_pipeline("canonicalize").unwrap();
    pm.run(&mut m).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    let f = &m.funcs[0];
    let ret = f.terminator(f.body).unwrap();
    f.ops[ret]
        .operands
        .iter()
        .map(|&v| match f.def_op(v).map(|o| &f.ops[o].kind) {
            Some(OpKind::Constant(c)) => Some((*c, f.ty(v).clone())),
            _ => None,
        })
        .collect()
}

fn same_const(a: Const, b: Const) -> bool {
    match (a, b) {
        (Const::Float(x), Const::Float(y)) => (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

/// Optimising first and then substituting constants for the parameters gives the same
/// folded results as substituting first: identities, operand swaps and select/cmp
/// rewrites agree with constant folding. Also checks every pipeline output verifies.
#[test]
fn rewrites_agree_with_folding() {
    let mut rng = Rng::from_clock();
    let seed = rng.0;
    let mut compared = 0;
    for case in 0..3000 {
        let d = if case % 2 == 0 { *rng.pick(INT_TYPES) } else { *rng.pick(FLOAT_TYPES) };
        let prog = random_program(&mut rng, d);
        let (x, y) = (random_value(&mut rng, d), random_value(&mut rng, d));
        let direct = folded_results(&with_constants(&prog, d, &x, &y));
        for pipeline in ["canonicalize", "inline, canonicalize, cse, licm, canonicalize, cse, dce"] {
            let mut m = parse_module(&prog).unwrap_or_else(|e| panic!("{e}\n{prog}"));
            let mut pm = PassManager::new();
            pm.add_pipeline(pipeline).unwrap();
            pm.run(&mut m).unwrap_or_else(|e| panic!("seed {seed}: {e:?}\n{prog}"));
            let optimised = m.to_string();
            let later = folded_results(&with_constants(&optimised, d, &x, &y));
            assert_eq!(direct.len(), later.len());
            for (i, (a, b)) in direct.iter().zip(&later).enumerate() {
                if let (Some((ca, ta)), Some((cb, tb))) = (a, b) {
                    compared += 1;
                    assert!(
                        ta == tb && same_const(*ca, *cb),
                        "seed {seed}: result {i} folds to {ca:?} directly but {cb:?} after `{pipeline}`\n\
                         x = {x}, y = {y}\n{prog}\noptimised:\n{optimised}"
                    );
                }
            }
        }
    }
    assert!(compared > 10000, "only {compared} comparisons (seed {seed})");
}

fn mutate(rng: &mut Rng, text: &str) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for _ in 0..1 + rng.below(3) {
        let i = rng.below(lines.len());
        match rng.below(5) {
            0 => {
                let l = lines[i].clone();
                lines.insert(i, l);
            }
            1 => {
                lines.remove(i);
            }
            2 => {
                let j = rng.below(lines.len());
                lines.swap(i, j);
            }
            3 => {
                // Point an operand elsewhere.
                let names = ["%x", "%0", "%1", "%2", "%3", "%a", "%i", "%c"];
                if let Some(p) = lines[i].rfind('%') {
                    let end = lines[i][p + 1..]
                        .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                        .map_or(lines[i].len(), |e| p + 1 + e);
                    let n = *rng.pick(&names);
                    lines[i].replace_range(p..end, n);
                }
            }
            _ => {
                let words =
                    [("add", "mul"), ("f32", "i32"), ("lt", "ge"), ("0", "1"), ("true", "false"), ("for", "if")];
                let (a, b) = *rng.pick(&words);
                lines[i] = lines[i].replacen(a, b, 1);
            }
        }
        if lines.is_empty() {
            break;
        }
    }
    lines.join("\n")
}

/// Mutated programs that still verify go through the default pipeline without a panic,
/// and come out valid.
#[test]
fn pipeline_on_mutated_valid_ir() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/filetests");
    let mut sources: Vec<String> = vec![SAMPLE.to_string()];
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let t = std::fs::read_to_string(e.path()).unwrap();
        let input = t.split("// EXPECTED").next().unwrap_or("").to_string();
        sources.push(input);
    }
    let mut rng = Rng::from_clock();
    let seed = rng.0;
    let mut ran = 0;
    for case in 0..1500 {
        let src = &sources[case % sources.len()];
        let text = mutate(&mut rng, src);
        let Ok(m) = parse_module(&text) else { continue };
        if verify_module(&m).is_err() {
            continue;
        }
        ran += 1;
        let r = std::panic::catch_unwind(|| {
            let mut m = m;
            let mut pm = default_tile_pipeline();
            pm.print_ir_after_all = false;
            // Inlining may legitimately fail (recursion); anything else must verify.
            match pm.run(&mut m) {
                Ok(()) => None,
                Err(e) if e.iter().any(|d| d.message.contains("recursive")) => None,
                Err(e) => Some(format!("{e:?}")),
            }
        });
        match r {
            Ok(None) => {}
            Ok(Some(e)) => panic!("seed {seed}, case {case}: pipeline broke valid IR: {e}\n{text}"),
            Err(_) => panic!("seed {seed}, case {case}: panic on\n{text}"),
        }
    }
    assert!(ran > 100, "only {ran} mutated programs verified (seed {seed})");
}
