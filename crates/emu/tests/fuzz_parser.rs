//! Mutation fuzzing: mutated PTX (from the Triton test data and hand-written kernels)
//! must never panic the parser or the executor; it either runs or returns an error.

#![allow(clippy::needless_range_loop)]

mod common;

use common::Rng;
use trident_core::{DType, HostTensor};
use trident_emu::{launch, KernelArg, LaunchConfig, Module};

const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    ";",
    ",",
    "@",
    "!",
    "%r1",
    "%p1",
    "%rd1",
    "_",
    "-",
    "+",
    "0x7fffffff",
    "4294967296",
    "99999999999999999999",
    "0f7F800000",
    "1.5e300",
    ".reg",
    ".b32",
    ".v4",
    ".shared",
    ".extern",
    "<",
    ">",
    "%r<100000000>",
    "bra",
    "$L__BB0_1",
    "ret;",
    "exit;",
    "bar.sync 0;",
    "bar.sync 15, 33;",
    "ld.global.v4.b32",
    "st.shared.v2.b64",
    "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
    "shfl.sync.bfly.b32",
    "cvt.rn.f16x2.f32",
    "[%rd1+-8]",
    ".param .b8 x[99999999999];",
    ".local .b8 y[4294967295];",
    "\"",
    "/*",
    "//",
    "\n",
    "call.uni",
    "vprintf",
    "cp.async.cg.shared.global",
    "atom.global.add.f32",
    "@%p1 bra",
    "{{{{{{{{{{{{",
    "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
];

fn mutate(rng: &mut Rng, text: &str) -> String {
    let mut s: Vec<u8> = text.as_bytes().to_vec();
    for _ in 0..1 + rng.below(4) {
        if s.is_empty() {
            break;
        }
        let at = rng.below(s.len() as u64) as usize;
        match rng.below(6) {
            0 => {
                let len = (rng.below(20) as usize).min(s.len() - at);
                s.drain(at..at + len);
            }
            1 => {
                let t = TOKENS[rng.below(TOKENS.len() as u64) as usize];
                s.splice(at..at, format!(" {t} ").bytes());
            }
            2 => s[at] = b"0123456789;{}[]%.,-"[rng.below(19) as usize],
            3 => s.truncate(at),
            4 => {
                // Duplicate a line.
                let text = String::from_utf8_lossy(&s).into_owned();
                let lines: Vec<&str> = text.lines().collect();
                let i = rng.below(lines.len() as u64) as usize;
                let mut out: Vec<&str> = lines.clone();
                out.insert(i, lines[i]);
                s = out.join("\n").into_bytes();
            }
            _ => {
                // Replace a number by an extreme one.
                if let Some(p) = s[at..].iter().position(|c| c.is_ascii_digit()) {
                    let big = ["0", "4294967295", "18446744073709551615", "65536", "-1"][rng.below(5) as usize];
                    s.splice(at + p..at + p + 1, big.bytes());
                }
            }
        }
    }
    String::from_utf8_lossy(&s).into_owned()
}

/// Iterations scale with `TRIDENT_FUZZ_SCALE` (default 1) for longer local runs.
fn scale() -> usize {
    std::env::var("TRIDENT_FUZZ_SCALE").ok().and_then(|v| v.parse().ok()).unwrap_or(1)
}

fn corpus() -> Vec<String> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
    ["vadd", "softmax", "layernorm", "matmul", "attn_fwd", "tma"]
        .iter()
        .map(|n| std::fs::read_to_string(format!("{dir}/{n}.ptx")).expect("test data"))
        .collect()
}

#[test]
fn mutated_ptx_never_panics_the_parser() {
    let mut rng = Rng(0xf022);
    let corpus = corpus();
    let mut parsed = 0;
    let n = 400 * scale();
    for i in 0..n {
        let base = &corpus[i % corpus.len()];
        let text = mutate(&mut rng, base);
        if Module::parse(&text).is_ok() {
            parsed += 1;
        }
    }
    // Some mutations (e.g. inside comments) still parse; most should not.
    assert!(parsed > 0 && parsed < n, "parsed {parsed} of {n}");
}

#[test]
fn mutated_kernels_never_panic_the_executor() {
    let mut rng = Rng(0xf023);
    let base = &corpus()[0];
    let mut ran = 0;
    for _ in 0..150 * scale() {
        let text = mutate(&mut rng, base);
        let Ok(m) = Module::parse(&text) else { continue };
        for entry in m.entries() {
            let n = m.entry_params(entry).map(|p| p.len()).unwrap_or(0);
            let mut args: Vec<KernelArg> = (0..n)
                .map(|i| match i % 3 {
                    0 | 1 => KernelArg::Buffer(HostTensor::zeros(DType::F32, &[300])),
                    _ => KernelArg::Scalar(300),
                })
                .collect();
            let cfg = LaunchConfig {
                grid: [2, 1, 1],
                block: [128, 1, 1],
                dynamic_shared_bytes: 64,
                max_warp_instructions_per_cta: 20_000,
                ..LaunchConfig::default()
            };
            let _ = launch(&m, entry, &cfg, &mut args);
            ran += 1;
        }
    }
    assert!(ran > 10, "only {ran} mutated kernels parsed");
}

#[test]
fn mutated_tensor_map_kernels_never_panic_the_executor() {
    let mut rng = Rng(0xf024);
    let base = &corpus()[5];
    // A valid map of a 90 x 50 f16 tensor in buffer argument 0.
    let map = trident_emu::TensorMap::tiled(
        trident_emu::buffer_base(0),
        trident_emu::tensormap::ElemType::F16,
        &[90, 50],
        &[192],
        &[64, 8],
        trident_emu::tensormap::Swizzle::B128,
        trident_emu::tensormap::OobFill::Nan,
    )
    .expect("a valid map");
    let mut ran = 0;
    for _ in 0..100 * scale() {
        let text = mutate(&mut rng, base);
        let Ok(m) = Module::parse(&text) else { continue };
        for entry in m.entries() {
            let params = m.entry_params(entry).unwrap_or_default();
            let mut args: Vec<KernelArg> = params
                .iter()
                .enumerate()
                .map(|(i, p)| match (i, p.bytes) {
                    (_, 128) => KernelArg::Bytes(map.encode().to_vec()),
                    (_, 8) => KernelArg::Buffer(HostTensor::zeros(DType::U8, &[if i == 0 { 9600 } else { 2048 }])),
                    _ => KernelArg::Scalar(3),
                })
                .collect();
            let cfg = LaunchConfig {
                grid: [1, 1, 1],
                block: [128, 1, 1],
                max_warp_instructions_per_cta: 20_000,
                ..LaunchConfig::default()
            };
            let _ = launch(&m, entry, &cfg, &mut args);
            ran += 1;
        }
    }
    assert!(ran > 10, "only {ran} mutated kernels parsed");
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
fn long_run_of_the_ptx_parser_and_executor() {
    let corpus = corpus();
    long_run::drive(
        |seed, i| {
            let mut rng = Rng(seed ^ i.wrapping_mul(0xA076_1D64_78BD_642F));
            mutate(&mut rng, &corpus[(i % corpus.len() as u64) as usize])
        },
        |text| {
            let Ok(m) = Module::parse(text) else { return false };
            for entry in m.entries() {
                let n = m.entry_params(entry).map(|p| p.len()).unwrap_or(0);
                let mut args: Vec<KernelArg> = (0..n)
                    .map(|i| match i % 3 {
                        0 | 1 => KernelArg::Buffer(HostTensor::zeros(DType::F32, &[300])),
                        _ => KernelArg::Scalar(300),
                    })
                    .collect();
                let cfg = LaunchConfig {
                    grid: [2, 1, 1],
                    block: [128, 1, 1],
                    dynamic_shared_bytes: 64,
                    max_warp_instructions_per_cta: 20_000,
                    ..LaunchConfig::default()
                };
                let _ = launch(&m, entry, &cfg, &mut args);
            }
            true
        },
    );
}
