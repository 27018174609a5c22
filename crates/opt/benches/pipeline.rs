//! Throughput of the default tile pipeline on large generated kernels, to keep every
//! pass linear in the size of the IR. Numbers are in README.md.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use trident_ir::{parse_module, Module};
use trident_opt::default_tile_pipeline;

/// Straight-line code: a chain of foldable constants, duplicated products, some stores.
fn straight_line(n: usize) -> Module {
    let mut t = String::from("kernel @k(%x: i32, %p: ptr<i32>) {\n  %c0 = constant [value = 1] : i32\n");
    for i in 0..n {
        t.push_str(&format!("  %c{} = add %c{i}, %c0 : i32\n", i + 1));
        t.push_str(&format!("  %v{i} = mul %x, %c{} : i32\n", i + 1));
        t.push_str(&format!("  %w{i} = mul %x, %c{} : i32\n", i + 1));
        if i % 10 == 0 {
            t.push_str(&format!("  store %p, %w{i}\n"));
        }
    }
    t.push_str("  return\n}\n");
    parse_module(&t).unwrap()
}

/// A loop calling a helper at every step: inlining, CSE of invariant work, LICM, DCE.
fn loop_with_calls(n: usize) -> Module {
    let mut t = String::from(
        "kernel @k(%x: i32, %y: i32, %n: i32, %p: ptr<i32>) {\n  %lb = constant [value = 0] : i32\n  \
         %st = constant [value = 1] : i32\n  for %lb, %n, %st {\n  ^(%i: i32):\n",
    );
    for i in 0..n {
        t.push_str(&format!("    %a{i} = add %x, %y : i32\n"));
        t.push_str(&format!("    %b{i} = call %a{i}, %i [callee = \"h\"] : i32\n"));
        t.push_str(&format!("    %d{i} = mul %b{i}, %i : i32\n"));
        if i % 100 == 0 {
            t.push_str(&format!("    store %p, %b{i}\n"));
        }
    }
    t.push_str(
        "    yield\n  }\n  return\n}\nfunc @h(%u: i32, %v: i32) -> (i32) {\n  %0 = mul %u, %v : i32\n  \
         %1 = add %0, %u : i32\n  return %1\n}\n",
    );
    parse_module(&t).unwrap()
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("default_pipeline");
    g.sample_size(10);
    for (name, make) in [("straight_line", straight_line as fn(usize) -> Module), ("loop_with_calls", loop_with_calls)]
    {
        for n in [1_000usize, 10_000] {
            let m = make(n);
            let ops: usize = m.funcs.iter().map(|f| f.all_ops().len()).sum();
            g.throughput(Throughput::Elements(ops as u64));
            g.bench_with_input(BenchmarkId::new(name, ops), &m, |b, m| {
                b.iter(|| {
                    let mut m = m.clone();
                    let mut pm = default_tile_pipeline();
                    pm.print_ir_after_all = false;
                    pm.run(&mut m).unwrap();
                    black_box(m)
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
