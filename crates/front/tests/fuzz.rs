//! Mutation fuzzing: real kernels with tokens and lines deleted, duplicated or swapped
//! must give a result or a diagnostic from `parse_file` + `compile`, never a panic.

mod common;
use common::Rng;
use std::panic::{catch_unwind, AssertUnwindSafe};
use trident_core::DType;
use trident_front::{compile, parse_file, ArgInfo, CompileOptions, ConstValue};

fn sources() -> Vec<(String, String)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../kernels");
    let mut out = vec![];
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "py") {
                if let Ok(t) = std::fs::read_to_string(&p) {
                    out.push((p.display().to_string(), t));
                }
            }
        }
    }
    out.push(("oracle_kernels.py".into(), include_str!("data/oracle_kernels.py").into()));
    out.sort();
    out
}

/// Plausible arguments for every parameter of a kernel: pointers for lower-case names, small ints, constexpr 16.
fn args_for(file: &trident_front::KernelFile, kernel: &str, rng: &mut Rng) -> Vec<(String, ArgInfo)> {
    let Some(k) = file.kernel(kernel) else { return vec![] };
    k.params
        .iter()
        .map(|p| {
            let a = if p.is_constexpr {
                ArgInfo::Constexpr(ConstValue::int([16, 32, 1, 0, 3][(rng.next_u64() % 5) as usize]))
            } else {
                let looks_like_pointer = p.name.len() <= 3
                    || p.name.contains("ptr")
                    || p.name.chars().next().is_some_and(|c| c.is_uppercase());
                match if looks_like_pointer { rng.next_u64() % 4 } else { 3 + rng.next_u64() % 3 } {
                    0..=2 => ArgInfo::Pointer {
                        dtype: [DType::F32, DType::F16, DType::I32][(rng.next_u64() % 3) as usize],
                        aligned16: true,
                    },
                    3 => ArgInfo::Int((rng.next_u64() % 100) as i64),
                    4 => ArgInfo::Float(0.5),
                    _ => ArgInfo::Int(1),
                }
            };
            (p.name.clone(), a)
        })
        .collect()
}

fn mutate(src: &str, rng: &mut Rng) -> String {
    let lines: Vec<&str> = src.lines().collect();
    let mut out: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
    for _ in 0..1 + rng.next_u64() % 3 {
        if out.is_empty() {
            break;
        }
        let i = (rng.next_u64() as usize) % out.len();
        match rng.next_u64() % 6 {
            0 => {
                out.remove(i);
            }
            1 => {
                let l = out[i].clone();
                out.insert(i, l);
            }
            2 => {
                let j = (rng.next_u64() as usize) % out.len();
                out.swap(i, j);
            }
            _ => {
                // Token-level: delete or duplicate one whitespace-separated token.
                let toks: Vec<&str> = out[i].split(' ').collect();
                if toks.len() > 1 {
                    let k = (rng.next_u64() as usize) % toks.len();
                    let mut t: Vec<String> = toks.iter().map(|s| s.to_string()).collect();
                    if rng.next_u64().is_multiple_of(2) {
                        t.remove(k);
                    } else {
                        let dup = t[k].clone();
                        t.insert(k, dup);
                    }
                    out[i] = t.join(" ");
                }
            }
        }
    }
    out.join("\n")
}

#[test]
fn mutated_kernels_never_panic() {
    let seed: u64 = std::env::var("FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(7);
    let mut rng = Rng::new(seed);
    let srcs = sources();
    assert!(srcs.len() > 1);
    let mut runs = 0;
    // FUZZ_ROUNDS=5000 for a longer local run.
    let rounds: usize = std::env::var("FUZZ_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(200);
    for round in 0..rounds {
        for (path, src) in &srcs {
            let m = if round == 0 { src.clone() } else { mutate(src, &mut rng) };
            let r = catch_unwind(AssertUnwindSafe(|| {
                let Ok(file) = parse_file(path, &m) else { return 0 };
                let names: Vec<String> = file.kernels().iter().map(|k| k.name.clone()).collect();
                let mut n = 0;
                for k in names {
                    // Several argument guesses, so that some get deep into the lowering.
                    for t in 0..4 {
                        let args = args_for(&file, &k, &mut Rng::new(round as u64 * 4 + t));
                        if let Ok(c) = compile(&file, &k, &args, &CompileOptions::default()) {
                            // Whatever compiles must verify.
                            if let Err(e) = trident_ir::verify_module(&c.module) {
                                panic!("unverifiable IR: {}", e[0].render(&c.module.files));
                            }
                            n += 1;
                        }
                    }
                }
                n
            }));
            match r {
                Ok(n) => runs += n,
                Err(_) => panic!("panic on mutated {path} (round {round}):\n{m}"),
            }
        }
    }
    // Enough mutants must get through to the end of the lowering for the test to mean something.
    assert!(runs > 100, "too few compilations succeeded ({runs})");
}

/// The long-run protocol of `scripts/fuzz-parsers` (the same in the front end's and the
/// emulator's fuzz tests): inputs `FUZZ_START..FUZZ_START + FUZZ_COUNT` of seed `FUZZ_SEED`,
/// input `i` made from `(seed, i)` alone, so that the driver can restart after input `i`
/// when the process dies (an abort) or stops making progress (a hang). Before each input its
/// text goes to `FUZZ_DIR/current.txt` and `B i` to `FUZZ_DIR/progress`; after it, `E i
/// ok|error|panic`. A panic's input is kept as `FUZZ_DIR/panic-i.txt`.
mod long_run {
    use std::io::Write;
    use std::panic::{catch_unwind, AssertUnwindSafe};

    fn env(name: &str) -> Option<u64> {
        std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
    }

    /// `make(seed, i)` gives input `i`'s text; `run(text)` runs it: `true` if it was accepted.
    pub fn drive(make: impl Fn(u64, u64) -> String, run: impl Fn(&str) -> bool) {
        let (Some(seed), Some(start), Some(count)) = (env("FUZZ_SEED"), env("FUZZ_START"), env("FUZZ_COUNT")) else {
            panic!("set FUZZ_SEED, FUZZ_START, FUZZ_COUNT and FUZZ_DIR (scripts/fuzz-parsers does)")
        };
        let dir = std::path::PathBuf::from(std::env::var("FUZZ_DIR").expect("FUZZ_DIR"));
        let mut progress =
            std::fs::OpenOptions::new().create(true).append(true).open(dir.join("progress")).expect("progress file");
        // Panics are counted, not printed: the driver reports them with their inputs.
        std::panic::set_hook(Box::new(|_| {}));
        // `FUZZ_SELFTEST=P,A,H`: input P panics, A aborts, H hangs (the driver's `--selftest`).
        let inject: Vec<u64> = std::env::var("FUZZ_SELFTEST")
            .map(|v| v.split(',').filter_map(|w| w.trim().parse().ok()).collect())
            .unwrap_or_default();
        for i in start..start + count {
            let text = make(seed, i);
            std::fs::write(dir.join("current.txt"), &text).expect("current input");
            let _ = writeln!(progress, "B {i}");
            let outcome = match catch_unwind(AssertUnwindSafe(|| match inject.iter().position(|&j| j == i) {
                Some(0) => panic!("injected"),
                Some(1) => std::process::abort(),
                Some(2) => loop {
                    std::thread::sleep(std::time::Duration::from_secs(1));
                },
                _ => run(&text),
            })) {
                Ok(true) => "ok",
                Ok(false) => "error",
                Err(_) => {
                    let _ = std::fs::write(dir.join(format!("panic-{i}.txt")), &text);
                    "panic"
                }
            };
            let _ = writeln!(progress, "E {i} {outcome}");
        }
    }
}

#[test]
#[ignore = "the long run of scripts/fuzz-parsers"]
fn long_run_of_the_front_end() {
    let srcs = sources();
    long_run::drive(
        |seed, i| {
            let mut rng = Rng::new(seed ^ i.wrapping_mul(0xA076_1D64_78BD_642F));
            let (_, src) = &srcs[(i % srcs.len() as u64) as usize];
            mutate(src, &mut rng)
        },
        |m| {
            let Ok(file) = parse_file("fuzz.py", m) else { return false };
            let names: Vec<String> = file.kernels().iter().map(|k| k.name.clone()).collect();
            let mut any = false;
            for k in names {
                for t in 0..4 {
                    let args = args_for(&file, &k, &mut Rng::new(t));
                    if let Ok(c) = compile(&file, &k, &args, &CompileOptions::default()) {
                        if let Err(e) = trident_ir::verify_module(&c.module) {
                            panic!("unverifiable IR: {}", e[0].render(&c.module.files));
                        }
                        any = true;
                    }
                }
            }
            any
        },
    );
}
