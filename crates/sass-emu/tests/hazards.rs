//! Broken schedules fail loudly at run time: every single-bit mutation of `ptxas`'s control
//! bits that the SASS toolkit's verifier calls a hazard — a wait-mask bit cleared, a stall cut
//! to one cycle — is run on the SASS emulator, which must stop with a `Hazard` error unless the
//! run never meets it: the hazard is off the launch's path, or the time a scoreboard wait took
//! at run time covers a stall the verifier (which counts stalls only) finds short. And no
//! mutant the verifier finds clean may stop the emulator. The emulator's checks and the
//! verifier are separate code; this is where they meet.

mod common;

use trident_core::{DType, HostTensor};
use trident_emu::{ErrorKind, KernelArg};
use trident_sass::verify::timing;
use trident_sass::Instr;
use trident_sass_emu::{launch, LaunchConfig, Program};

fn data(name: &str) -> String {
    std::fs::read_to_string(format!("{}/../emu/tests/data/{name}.ptx", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn ramp(dtype: DType, n: usize) -> HostTensor {
    let v: Vec<f64> = (0..n).map(|i| ((i * 37) % 101) as f64 / 17.0 - 2.5).collect();
    HostTensor::from_f64(dtype, &[n], &v)
}

struct Kernel {
    name: &'static str,
    entry: &'static str,
    grid: u32,
    shared: u32,
    args: Vec<KernelArg>,
}

fn kernels() -> Vec<Kernel> {
    vec![
        Kernel {
            name: "vadd",
            entry: "vadd",
            grid: 4,
            shared: 0,
            args: vec![
                KernelArg::Buffer(ramp(DType::F32, 1000)),
                KernelArg::Buffer(ramp(DType::F32, 1000)),
                KernelArg::Buffer(HostTensor::zeros(DType::F32, &[1000])),
                KernelArg::Scalar(1000),
                KernelArg::Null,
                KernelArg::Null,
            ],
        },
        Kernel {
            name: "softmax",
            entry: "row_softmax",
            grid: 4,
            shared: 16,
            args: vec![
                KernelArg::Buffer(ramp(DType::F32, 400)),
                KernelArg::Buffer(HostTensor::zeros(DType::F32, &[400])),
                KernelArg::Scalar(100),
                KernelArg::Scalar(100),
                KernelArg::Null,
                KernelArg::Null,
            ],
        },
        Kernel {
            name: "layernorm",
            entry: "layernorm",
            grid: 4,
            shared: 16,
            args: vec![
                KernelArg::Buffer(ramp(DType::F16, 800)),
                KernelArg::Buffer(ramp(DType::F32, 200)),
                KernelArg::Buffer(ramp(DType::F32, 200)),
                KernelArg::Buffer(HostTensor::zeros(DType::F16, &[800])),
                KernelArg::Scalar(200),
                KernelArg::Scalar(200),
                KernelArg::Scalar(1e-5f32.to_bits() as u64),
                KernelArg::Null,
                KernelArg::Null,
            ],
        },
    ]
}

/// The mutants of one kernel's control bits: (what, instructions).
fn mutants(instrs: &[Instr]) -> Vec<(String, Vec<Instr>)> {
    let mut out = vec![];
    for (i, ins) in instrs.iter().enumerate() {
        let c = ins.control();
        for k in 0..6 {
            if c.wait >> k & 1 == 1 {
                let mut m = instrs.to_vec();
                let mut d = c;
                d.wait &= !(1 << k);
                m[i].set_control(d);
                out.push((format!("{:#06x}: wait for SB{k} dropped", 16 * i), m));
            }
        }
        if c.stall >= 2 {
            let mut m = instrs.to_vec();
            let mut d = c;
            d.stall = 1;
            m[i].set_control(d);
            out.push((format!("{:#06x}: stall {} cut to 1", 16 * i, c.stall), m));
        }
    }
    out
}

#[test]
fn hazards_the_verifier_names_stop_the_sass_emulator() {
    if !common::tools() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("trident-sass-emu-hazards-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (mut flagged, mut caught, mut off_path, mut benign_ran) = (0, 0, 0, 0);
    for k in kernels() {
        for arch in ["sm_80", "sm_90a"] {
            let (cubin, text, p) = common::compile(&data(k.name), arch, k.entry, &dir, &format!("{}.{arch}", k.name));
            let kern = cubin.kernel(k.entry).unwrap();
            let cfg = LaunchConfig {
                grid: [k.grid, 1, 1],
                block: [128, 1, 1],
                dynamic_shared_bytes: k.shared,
                ..Default::default()
            };
            // The original runs clean.
            launch(&p, &cfg, &mut k.args.clone()).unwrap_or_else(|e| panic!("{} {arch}: {e}", k.name));
            for (what, m) in mutants(&kern.instrs) {
                let hazard = !timing(cubin.sm(), &m, &text).is_empty();
                let mut c2 = cubin.clone();
                let ki = c2.kernels.iter().position(|x| x.name == k.entry).unwrap();
                c2.kernels[ki].instrs = m;
                let p = Program::new(&c2, k.entry, &text).unwrap();
                let r = launch(&p, &cfg, &mut k.args.clone());
                match (hazard, r) {
                    (true, Err(e)) if e.kind == ErrorKind::Hazard => {
                        flagged += 1;
                        caught += 1;
                    }
                    (true, Ok(_)) => {
                        // Acceptable only where this run never meets it (see the header).
                        flagged += 1;
                        off_path += 1;
                        eprintln!("{} {arch} {what}: not met by this run", k.name);
                    }
                    (true, Err(e)) => panic!("{} {arch} {what}: failed otherwise: {e}", k.name),
                    (false, Err(e)) if e.kind == ErrorKind::Hazard => {
                        panic!(
                            "{} {arch} {what}: the verifier finds it clean, the emulator calls it a hazard: {e}",
                            k.name
                        )
                    }
                    (false, r) => {
                        r.unwrap_or_else(|e| panic!("{} {arch} {what}: {e}", k.name));
                        benign_ran += 1;
                    }
                }
            }
        }
    }
    eprintln!(
        "{flagged} mutants the verifier calls hazards: {caught} stopped by the SASS emulator, {off_path} not met by the run \
         (off its path, or covered by time spent waiting); {benign_ran} harmless ones ran clean"
    );
    assert!(flagged >= 50, "{flagged}");
    assert!(caught * 100 >= flagged * 90, "{caught} of {flagged}");
    let _ = std::fs::remove_dir_all(&dir);
}
