//! The text form: printing and parsing back, parse errors, and robustness of the parser.

use std::collections::BTreeSet;
use trident_ir::*;

const SAMPLE: &str = include_str!("data/all_ops.tir");

fn parse_ok(text: &str) -> Module {
    match parse_module(text) {
        Ok(m) => m,
        Err(d) => panic!("{}", d.render(&[SourceFile { path: "input.tir".into(), text: text.into() }])),
    }
}

fn verify_ok(m: &Module, text: &str) {
    if let Err(errs) = verify_module(m) {
        let files = [SourceFile { path: "input.tir".into(), text: text.into() }];
        panic!("{}", trident_ir::diag::render(&errs, &files, false));
    }
}

/// A small deterministic generator (xorshift); seeds come from the clock so every run
/// sees new inputs, and failures print the seed.
struct Rng(u64);

impl Rng {
    fn from_clock() -> Rng {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64);
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
}

#[test]
fn sample_verifies_and_round_trips() {
    let m = parse_ok(SAMPLE);
    verify_ok(&m, SAMPLE);
    for opts in [PrintOptions::default(), PrintOptions::with_locs()] {
        let once = print_module(&m, &opts);
        let m2 = parse_ok(&once);
        verify_ok(&m2, &once);
        let twice = print_module(&m2, &opts);
        assert_eq!(once, twice, "printing is not a fixpoint of parse ∘ print");
    }
    assert_eq!(m.to_string(), print_module(&m, &PrintOptions::default()));
}

#[test]
fn round_trip_keeps_structure_types_attrs_and_locs() {
    let m = parse_ok(SAMPLE);
    let m2 = parse_ok(&print_module(&m, &PrintOptions::with_locs()));
    assert_eq!(m.funcs.len(), m2.funcs.len());
    for (f, g) in m.funcs.iter().zip(&m2.funcs) {
        assert_eq!(f.name, g.name);
        assert_eq!(f.kernel, g.kernel);
        assert_eq!(f.result_types, g.result_types);
        assert_eq!(f.loc, g.loc);
        assert_eq!(f.layouts.values().collect::<Vec<_>>(), g.layouts.values().collect::<Vec<_>>());
        for (p, q) in f.params.iter().zip(&g.params) {
            assert_eq!(p.name, q.name);
            assert_eq!(p.attrs, q.attrs);
            assert_eq!(f.ty(p.value), g.ty(q.value));
        }
        let (a, b) = (f.all_ops(), g.all_ops());
        assert_eq!(a.len(), b.len());
        for (&x, &y) in a.iter().zip(&b) {
            let (dx, dy) = (&f.ops[x], &g.ops[y]);
            assert_eq!(dx.kind, dy.kind);
            assert_eq!(dx.loc, dy.loc);
            assert_eq!(dx.operands.len(), dy.operands.len());
            assert_eq!(dx.regions.len(), dy.regions.len());
            let tx: Vec<_> = dx.results.iter().map(|&v| f.ty(v)).collect();
            let ty: Vec<_> = dy.results.iter().map(|&v| g.ty(v)).collect();
            assert_eq!(tx, ty);
            for (&r, &s) in dx.regions.iter().zip(&dy.regions) {
                let ax: Vec<_> = f.blocks[r].args.iter().map(|&v| f.ty(v)).collect();
                let ay: Vec<_> = g.blocks[s].args.iter().map(|&v| g.ty(v)).collect();
                assert_eq!(ax, ay);
            }
        }
    }
    // Explicit locations in the sample: `loc(4:9)` (file 0) and `loc(2:5:7)`.
    let f = &m.funcs[0];
    let ops = f.all_ops();
    assert_eq!(f.ops[ops[0]].loc, Loc { file: 0, line: 4, col: 9 });
    assert_eq!(f.ops[ops[1]].loc, Loc { file: 2, line: 5, col: 7 });
    assert_eq!(f.ops[ops[2]].loc, Loc::UNKNOWN);
    assert_eq!(f.params[0].attrs.divisibility, Some(16));
}

#[test]
fn sample_covers_every_op_kind() {
    let m = parse_ok(SAMPLE);
    let mut seen = BTreeSet::new();
    for f in &m.funcs {
        for op in f.all_ops() {
            let k = &f.ops[op].kind;
            let name = match k {
                OpKind::Binary(_) => "<binary>",
                OpKind::Unary(_) => "<unary>",
                _ => k.name(),
            };
            seen.insert(name);
        }
    }
    let all = [
        "constant",
        "arange",
        "program_id",
        "num_programs",
        "splat",
        "broadcast",
        "expand_dims",
        "reshape",
        "trans",
        "join",
        "split",
        "cat",
        "<binary>",
        "<unary>",
        "cmp",
        "select",
        "fma",
        "cast",
        "addptr",
        "load",
        "store",
        "atomic_rmw",
        "atomic_cas",
        "dot",
        "reduce",
        "scan",
        "multiple_of",
        "max_contiguous",
        "max_constancy",
        "assume",
        "print",
        "assert",
        "for",
        "if",
        "while",
        "yield",
        "condition",
        "call",
        "return",
    ];
    for k in all {
        assert!(seen.contains(k), "the sample lacks `{k}`");
    }
    let all_types =
        ["i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f8e4m3", "f8e5m2", "f16", "bf16", "f32", "f64"];
    let text = m.to_string();
    for t in all_types {
        assert!(text.contains(&format!(": {t}")) || text.contains(&format!("x{t}>")), "the sample lacks `{t}`");
    }
}

/// The printed form of the sample, compared with a committed copy (`BLESS=1` rewrites it).
#[test]
fn printed_form_is_stable() {
    let m = parse_ok(SAMPLE);
    let got = print_module(&m, &PrintOptions::with_locs());
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/all_ops.printed.tir");
    if std::env::var_os("BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &got).unwrap();
    }
    let want = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(got, want, "printed form changed; rerun with BLESS=1 if intended");
}

/// Every elementwise op name, built programmatically, prints and parses back to the same kind.
#[test]
fn every_elementwise_kind_round_trips() {
    let mut f = Function::new("k", &[("a", Type::f32()), ("i", Type::i32())], vec![], true);
    let (a, i) = (f.params[0].value, f.params[1].value);
    let body = f.body;
    let mut b = Builder::at_end(&mut f, body);
    let mut kinds = vec![];
    for &op in BinaryOp::ALL {
        let int = matches!(
            op,
            BinaryOp::And | BinaryOp::Or | BinaryOp::Xor | BinaryOp::Shl | BinaryOp::Shr | BinaryOp::UMulHi
        );
        let x = if int { i } else { a };
        b.binary(op, x, x);
        kinds.push(OpKind::Binary(op));
    }
    for &op in UnaryOp::ALL {
        let int = matches!(op, UnaryOp::Not | UnaryOp::Popc | UnaryOp::Clz);
        let pred = matches!(op, UnaryOp::IsNan | UnaryOp::IsInf | UnaryOp::IsFinite | UnaryOp::Signbit);
        let x = if int { i } else { a };
        let t = if pred { Type::i1() } else { b.ty(x).clone() };
        b.op1(OpKind::Unary(op), &[x], t);
        kinds.push(OpKind::Unary(op));
    }
    for &p in CmpPred::ALL {
        b.op1(OpKind::Cmp(p), &[a, a], Type::i1());
        kinds.push(OpKind::Cmp(p));
    }
    for (k, r) in
        [(CastKind::Convert, Rounding::Rtne), (CastKind::Convert, Rounding::Rtz), (CastKind::Bitcast, Rounding::Rtne)]
    {
        b.op1(OpKind::Cast { kind: k, rounding: r }, &[a], Type::scalar(DType::I32));
        kinds.push(OpKind::Cast { kind: k, rounding: r });
    }
    b.op(OpKind::Return, &[], &[]);
    verify_function(&f).unwrap();
    let text = f.to_string();
    let g = parse_function(&text).unwrap();
    verify_function(&g).unwrap();
    let got: Vec<OpKind> =
        g.all_ops().iter().map(|&o| g.ops[o].kind.clone()).filter(|k| *k != OpKind::Return).collect();
    assert_eq!(got, kinds);
    assert_eq!(g.to_string(), text);
}

#[test]
fn float_constants_round_trip_bit_exact() {
    let mut rng = Rng::from_clock();
    let seed = rng.0;
    let mut values: Vec<f64> =
        vec![0.0, -0.0, f64::MIN_POSITIVE, 5e-324, f64::MAX, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, -f64::NAN];
    for _ in 0..500 {
        values.push(f64::from_bits(rng.next()));
    }
    let mut f = Function::new("k", &[], vec![], true);
    let body = f.body;
    let mut b = Builder::at_end(&mut f, body);
    for &v in &values {
        b.constant(Const::Float(v), Type::scalar(DType::F64));
    }
    b.op(OpKind::Return, &[], &[]);
    let g = parse_function(&f.to_string()).unwrap();
    let back: Vec<u64> = g
        .all_ops()
        .iter()
        .filter_map(|&o| match g.ops[o].kind {
            OpKind::Constant(Const::Float(v)) => Some(v.to_bits()),
            _ => None,
        })
        .collect();
    let want: Vec<u64> = values.iter().map(|v| v.to_bits()).collect();
    assert_eq!(back, want, "seed {seed}");
}

#[test]
fn integer_constants_round_trip() {
    let mut rng = Rng::from_clock();
    let mut f = Function::new("k", &[], vec![], true);
    let body = f.body;
    let mut b = Builder::at_end(&mut f, body);
    let mut want = vec![i64::MIN, i64::MAX, -1, 0];
    for _ in 0..100 {
        want.push(rng.next() as i64);
    }
    for &v in &want {
        b.constant(Const::Int(v), Type::i64());
    }
    b.op(OpKind::Return, &[], &[]);
    let g = parse_function(&f.to_string()).unwrap();
    let got: Vec<i64> = g
        .all_ops()
        .iter()
        .filter_map(|&o| match g.ops[o].kind {
            OpKind::Constant(Const::Int(v)) => Some(v),
            _ => None,
        })
        .collect();
    assert_eq!(got, want);
}

#[test]
fn parameter_names_that_cannot_print_are_renamed() {
    let f = Function::new(
        "k",
        &[("0", Type::i32()), ("a b", Type::i32()), ("x", Type::i32()), ("x", Type::i32())],
        vec![],
        true,
    );
    let mut f = f;
    let body = f.body;
    Builder::at_end(&mut f, body).op(OpKind::Return, &[], &[]);
    let text = f.to_string();
    assert!(text.starts_with("kernel @k(%arg0: i32, %arg1: i32, %x: i32, %arg3: i32)"), "{text}");
    parse_function(&text).unwrap();
}

#[test]
fn hand_written_names_and_comments() {
    let text = "// leading comment\nkernel @k(%a: i32) { // trailing\n  %b.1 = add %a, %a : i32 // c\n  %7 = mul %b.1, %a : i32\n  return\n}\n";
    let m = parse_ok(text);
    verify_ok(&m, text);
    assert_eq!(m.to_string(), "kernel @k(%a: i32) {\n  %0 = add %a, %a : i32\n  %1 = mul %0, %a : i32\n  return\n}\n");
}

#[test]
fn text_locs_point_into_the_ir() {
    let text = "kernel @k(%a: i32) {\n  %b = add %a, %a : i32\n    return\n}\n";
    let m = parse_module_with(text, &ParseOptions { file: FileId(3), text_locs: true }).unwrap();
    let f = &m.funcs[0];
    let ops = f.all_ops();
    assert_eq!(f.ops[ops[0]].loc, Loc { file: 3, line: 2, col: 3 });
    assert_eq!(f.ops[ops[1]].loc, Loc { file: 3, line: 3, col: 5 });
}

/// (input, message fragment, line, column)
const BAD: &[(&str, &str, u32, u32)] = &[
    ("kernel @k() {\n  %0 = frob : i32\n}", "unknown op `frob`", 2, 8),
    ("kernel @k() {\n  %0 = add %x, %x : i32\n}", "undefined value `%x`", 2, 12),
    ("kernel @k(%a: i32) {\n  %0 = add %a, %a\n  return\n}", "names 1 result(s) but gives 0", 2, 3),
    ("kernel @k(%a: i32) {\n  add %a, %a : i32\n}", "names 0 result(s) but gives 1", 2, 3),
    ("kernel @k(%a: i32) {\n  %a = add %a, %a : i32\n}", "defined twice", 2, 3),
    ("kernel @k(%a: i32) {\n  %0 = cmp %a, %a : i1\n}", "needs attribute `pred`", 2, 8),
    ("kernel @k(%a: i32) {\n  %0 = cmp %a, %a [pred = lt, foo = 1] : i1\n}", "has no attribute `foo`", 2, 31),
    ("kernel @k(%a: i32) {\n  %0 = cmp %a, %a [pred = lt, pred = gt] : i1\n}", "given twice", 2, 31),
    ("kernel @k(%a: f33) {\n}", "unknown element type `f33`", 1, 15),
    ("kernel @k(%a: tensor<4x>) {\n}", "expected an element type", 1, 24),
    ("kernel @k(%a: i32) {\n  %0 = constant [value = 1.5.5] : f32\n}", "expected `,` or `]`", 2, 29),
    ("kernel @k() {\n  print [prefix = \"abc]\n}", "unterminated string", 2, 19),
    ("kernel @k() {\n  print [prefix = \"\\q\"]\n}", "unknown escape", 2, 20),
    ("kernel @k() {\n  return", "expected `}`", 2, 9),
    ("kernel @k() {\n  return loc(1)\n}", "location", 2, 16),
    ("kernel @k(%p: tensor<4xf32, #L0>) {\n  return\n}", "layout #L0 is not defined", 1, 29),
    ("kernel @k() {\n  #L1 = slice [dim = 0, parent = #L0]\n}", "defined in order", 2, 3),
    ("kernel @k() {\n  #L0 = slice [dim = 0, parent = #L0]\n}", "defined before it", 2, 34),
    ("kernel @k() {\n  #L0 = blocked [order = [0]]\n}", "needs parameter `size_per_thread`", 2, 9),
    ("kernel @k() {\n  #L0 = wavy [order = [0]]\n}", "unknown layout kind", 2, 9),
    ("kern @k() {\n}", "expected `kernel` or `func`", 1, 1),
    ("kernel @k(%a: i32 {divisibility = 0}) {\n}", "divisibility must be positive", 1, 35),
    ("kernel @k(%a: i32) {\n  %0 = program_id [axis = 3] : i32\n}", "axis", 2, 8),
    ("kernel @k(%a: i32) {\n  %0 = constant [value = 99999999999999999999] : i64\n}", "out of range", 2, 26),
];

#[test]
fn parse_errors_point_at_the_problem() {
    for &(text, msg, line, col) in BAD {
        match parse_module(text) {
            Ok(m) => panic!("parsed {text:?} as\n{m}"),
            Err(d) => {
                assert!(d.message.contains(msg), "for {text:?}: message {:?} lacks {msg:?}", d.message);
                let loc = d.loc().expect("parse errors have a location");
                assert_eq!((loc.line, loc.col), (line, col), "for {text:?}: {}", d.message);
                // Renders with a caret under the IR text.
                let r = d.render(&[SourceFile { path: "t.tir".into(), text: text.into() }]);
                assert!(r.contains(&format!("t.tir:{line}:{col}")), "{r}");
            }
        }
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let mut text = String::from("kernel @k(%c: i1) {\n");
    for _ in 0..300 {
        text.push_str("if %c {\n");
    }
    text.push_str("yield\n");
    for _ in 0..300 {
        text.push_str("} {\nyield\n}\nyield\n");
    }
    text.push_str("return\n}\n");
    let e = parse_module(&text).unwrap_err();
    assert!(e.message.contains("nested"), "{}", e.message);
}

const ALPHABET: &[&str] = &[
    "%", "@", "{", "}", "(", ")", "[", "]", "<", ">", ",", ":", "=", "^", "\"", "\\", "#L", "x", "0", "7", "-", ".",
    "e", "\n", " ", "//", "loc(", "tensor<", "ptr<", "f32", "i1", "yield", "return", "%0", "%1", "nan", "0x", "é",
    "\u{0}",
];

fn mutate(rng: &mut Rng, text: &str) -> String {
    let mut s: Vec<char> = text.chars().collect();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(s.len() + 1);
        match rng.below(6) {
            0 if !s.is_empty() => {
                let len = 1 + rng.below(8);
                s.drain(at.min(s.len() - 1)..(at + len).min(s.len()));
            }
            1 => {
                let ins: Vec<char> = ALPHABET[rng.below(ALPHABET.len())].chars().collect();
                s.splice(at..at, ins);
            }
            2 if !s.is_empty() => {
                let i = at.min(s.len() - 1);
                s[i] = ALPHABET[rng.below(ALPHABET.len())].chars().next().unwrap_or('x');
            }
            3 => s.truncate(at),
            4 if s.contains(&'\n') => {
                // Duplicate a line: redefinitions, repeated terminators.
                let t: String = s.iter().collect();
                let lines: Vec<&str> = t.lines().collect();
                let i = rng.below(lines.len());
                let mut out = lines.clone();
                out.insert(i, lines[i]);
                s = out.join("\n").chars().collect();
            }
            _ if s.contains(&'\n') => {
                // Swap two lines: uses before definitions, misplaced terminators.
                let t: String = s.iter().collect();
                let mut lines: Vec<&str> = t.lines().collect();
                let (i, j) = (rng.below(lines.len()), rng.below(lines.len()));
                lines.swap(i, j);
                s = lines.join("\n").chars().collect();
            }
            _ => {}
        }
    }
    s.into_iter().collect()
}

/// Mutated IR never makes the parser, verifier or printer panic.
#[test]
fn mutated_ir_never_panics() {
    let mut rng = Rng::from_clock();
    let seed = rng.0;
    let printed = parse_ok(SAMPLE).to_string();
    // The third source exercises discardable attributes (ops and function header).
    let sources = [SAMPLE, printed.as_str(), WITH_ATTRS];
    let (mut parsed, mut verified) = (0, 0);
    for i in 0..3000 {
        let text = mutate(&mut rng, sources[i % sources.len()]);
        let r = std::panic::catch_unwind(|| {
            let mut v = false;
            let p = match parse_module(&text) {
                Ok(m) => {
                    let _ = m.to_string();
                    v = verify_module(&m).is_ok();
                    if let Err(errs) = verify_module(&m) {
                        let _ = trident_ir::diag::render(
                            &errs,
                            &[SourceFile { path: "x".into(), text: text.clone() }],
                            false,
                        );
                    }
                    true
                }
                Err(d) => {
                    let _ = d.render(&[SourceFile { path: "x".into(), text: text.clone() }]);
                    false
                }
            };
            (p, v)
        });
        match r {
            Ok((p, v)) => {
                parsed += p as u32;
                verified += v as u32;
            }
            Err(_) => panic!("panic (seed {seed}, case {i}) on input:\n{text}"),
        }
    }
    // The mutations must exercise both outcomes, or the test proves little.
    assert!(parsed > 20 && parsed < 3000, "parsed {parsed} of 3000 (seed {seed})");
    assert!(verified > 5, "verified {verified} (seed {seed})");
}

/// GPU IR with discardable attributes on ops and on the function (a shared-memory plan).
const WITH_ATTRS: &str = "kernel @k(%p: ptr<f32>) attributes {smem_total = 1024} {
  #L0 = blocked [size_per_thread = [1], threads_per_warp = [32], warps_per_cta = [4], order = [0]]
  #L1 = blocked [size_per_thread = [4], threads_per_warp = [32], warps_per_cta = [1], order = [0]]
  %0 = arange [start = 0, end = 128] : tensor<128xi32, #L0>
  %1 = convert_layout %0 {smem_offset = 512, smem_size = 512} : tensor<128xi32, #L1>
  %2 = reduce %1 [axis = 0] {smem_offset = 0, smem_size = 128} {
  ^(%3: i32, %4: i32):
    %5 = add %3, %4 : i32
    yield %5
  } : i32
  return
}
";

#[test]
fn discardable_attributes_round_trip_and_are_kept_by_clones() {
    let m = parse_ok(WITH_ATTRS);
    verify_ok(&m, WITH_ATTRS);
    let f = &m.funcs[0];
    assert_eq!(f.attrs.int("smem_total"), Some(1024));
    let reduce = f.all_ops().into_iter().find(|&o| matches!(f.ops[o].kind, OpKind::Reduce { .. })).unwrap();
    assert_eq!(f.ops[reduce].attrs.int("smem_offset"), Some(0));
    assert_eq!(f.ops[reduce].attrs.len(), 2);
    assert_eq!(m.to_string(), WITH_ATTRS, "printed in name order, after `[...]`, before regions");
    // A clone carries them; a function clone too.
    let mut g = f.clone();
    let mut map = edit::ValueMap::new();
    let c = g.clone_op(reduce, &mut map);
    assert_eq!(g.ops[c].attrs, f.ops[reduce].attrs);
    assert_eq!(g.attrs, f.attrs);
    // Hand-written with spaces and newlines inside the braces.
    let loose = WITH_ATTRS.replace("{smem_offset = 512, smem_size = 512}", "{ smem_size=512,\n smem_offset = 512 }");
    assert_eq!(parse_ok(&loose).to_string(), WITH_ATTRS);
}

#[test]
fn ir_without_discardable_attributes_prints_as_before() {
    // The compile cache keys on tile-IR text: an op with regions but no discardable
    // attributes must print `{` of its region right after its own attributes.
    let text = "kernel @k(%x: tensor<4xf32>) {\n  %0 = reduce %x [axis = 0] {\n  ^(%1: f32, %2: f32):\n    %3 = add %1, %2 : f32\n    yield %3\n  } : f32\n  return\n}\n";
    let m = parse_ok(text);
    assert!(m.funcs[0].attrs.is_empty());
    assert_eq!(m.to_string(), text);
}

#[test]
fn discardable_attribute_syntax_errors() {
    for (bad, msg) in [
        (WITH_ATTRS.replace("smem_size = 512}", "smem_size = 512, smem_size = 4}"), "given twice"),
        (WITH_ATTRS.replace("smem_size = 512}", "smem_size = 512"), "expected `,` or `}`"),
        (WITH_ATTRS.replace("attributes {smem_total = 1024}", "attributes smem_total = 1024"), "expected `{`"),
    ] {
        match parse_module(&bad) {
            Ok(m) => panic!("parsed\n{bad}\nas\n{m}"),
            Err(d) => assert!(d.message.contains(msg), "{:?} lacks {msg:?}", d.message),
        }
    }
}
