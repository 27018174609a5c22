//! Emulation speed: the same kernels (Triton's PTX in the emulator's test data) launched on
//! the PTX emulator and, through ptxas, on the SASS emulator — wall time per launch, the
//! median of several, decoding not included. `cargo run --release -p trident-sass-emu --example speed`.

use std::time::{Duration, Instant};
use trident_core::{DType, HostTensor};
use trident_emu::{KernelArg, Module};
use trident_gpu::tools::{find, ptxas, Tool};
use trident_sass::disasm::{disassemble, section_text};
use trident_sass::Cubin;

fn ramp(dtype: DType, n: usize) -> HostTensor {
    let v: Vec<f64> = (0..n).map(|i| ((i * 37) % 101) as f64 / 17.0 - 2.5).collect();
    HostTensor::from_f64(dtype, &[n], &v)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// A kernel: file, entry, grid, dynamic shared bytes, arguments.
type Case = (&'static str, &'static str, [u32; 3], u32, Vec<KernelArg>);

fn main() {
    let dir = std::env::temp_dir().join("trident-sass-emu-speed");
    std::fs::create_dir_all(&dir).unwrap();
    let data =
        |n: &str| std::fs::read_to_string(format!("{}/../emu/tests/data/{n}.ptx", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let f32s = |n| KernelArg::Buffer(ramp(DType::F32, n));
    let cases: Vec<Case> = vec![
        (
            "vadd",
            "vadd",
            [256, 1, 1],
            0,
            vec![f32s(65536), f32s(65536), f32s(65536), KernelArg::Scalar(65536), KernelArg::Null, KernelArg::Null],
        ),
        (
            "softmax",
            "row_softmax",
            [64, 1, 1],
            16,
            vec![
                f32s(64 * 128),
                f32s(64 * 128),
                KernelArg::Scalar(128),
                KernelArg::Scalar(128),
                KernelArg::Null,
                KernelArg::Null,
            ],
        ),
        (
            "layernorm",
            "layernorm",
            [64, 1, 1],
            16,
            vec![
                KernelArg::Buffer(ramp(DType::F16, 64 * 256)),
                f32s(256),
                f32s(256),
                KernelArg::Buffer(ramp(DType::F16, 64 * 256)),
                KernelArg::Scalar(256),
                KernelArg::Scalar(256),
                KernelArg::Scalar(1e-5f32.to_bits() as u64),
                KernelArg::Null,
                KernelArg::Null,
            ],
        ),
    ];
    println!("| kernel | grid | PTX emulator | SASS emulator (sm_80) | ratio |");
    println!("|---|---:|---:|---:|---:|");
    for (name, entry, grid, shared, args) in cases {
        let ptx = data(name);
        let module = Module::parse(&ptx).unwrap();
        let cfg =
            trident_emu::LaunchConfig { grid, block: [128, 1, 1], dynamic_shared_bytes: shared, ..Default::default() };
        let ptx_times: Vec<Duration> = (0..5)
            .map(|_| {
                let mut a = args.clone();
                let t = Instant::now();
                trident_emu::launch(&module, entry, &cfg, &mut a).unwrap();
                t.elapsed()
            })
            .collect();
        let bytes = ptxas(&ptx, "sm_80").unwrap().cubin;
        let path = dir.join(format!("{name}.cubin"));
        std::fs::write(&path, &bytes).unwrap();
        let cubin = Cubin::parse(&bytes).unwrap();
        let listings = disassemble(&find(Tool::Nvdisasm).unwrap(), &path).unwrap();
        let text = section_text(&cubin, &listings, cubin.kernel(entry).unwrap().text_section);
        let p = trident_sass_emu::Program::new(&cubin, entry, &text).unwrap();
        let scfg = trident_sass_emu::LaunchConfig {
            grid,
            block: [128, 1, 1],
            dynamic_shared_bytes: shared,
            ..Default::default()
        };
        let sass_times: Vec<Duration> = (0..5)
            .map(|_| {
                let mut a = args.clone();
                let t = Instant::now();
                trident_sass_emu::launch(&p, &scfg, &mut a).unwrap();
                t.elapsed()
            })
            .collect();
        let (a, b) = (median(ptx_times), median(sass_times));
        println!(
            "| {name} | {} | {:.2} ms | {:.2} ms | {:.2}× |",
            grid[0],
            a.as_secs_f64() * 1e3,
            b.as_secs_f64() * 1e3,
            b.as_secs_f64() / a.as_secs_f64()
        );
    }
}
