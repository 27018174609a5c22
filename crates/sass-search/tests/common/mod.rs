//! What the search's tests share: Triton's PTX from the emulator's test data through
//! `ptxas`, the disassembler, and launches of the kernels on small sizes.

#![allow(dead_code)]

use trident_core::{DType, HostTensor};
use trident_emu::KernelArg;
use trident_gpu::tools::{find, ptxas, Tool};
use trident_sass::disasm::section_text;
use trident_sass::verify::{reordering, timing};
use trident_sass::Cubin;
use trident_sass_emu::LaunchConfig;
use trident_sass_emu::{launch, Program};
use trident_sass_search::check::{first_difference, fresh_inputs};
use trident_sass_search::{nvdisasm, Disassembler, Problem};

/// Whether ptxas and nvdisasm are there (scripts/install-tools); says so when not.
pub fn tools() -> bool {
    let ok = find(Tool::Ptxas).is_ok() && find(Tool::Nvdisasm).is_ok();
    if !ok {
        eprintln!("skipped: ptxas/nvdisasm not found (scripts/install-tools)");
    }
    ok
}

pub fn disassembler() -> Disassembler {
    nvdisasm(find(Tool::Nvdisasm).unwrap())
}

/// The emulator's test data `NAME.ptx` (read as PTX 9.0, as the SASS emulator's tests do).
fn data(name: &str) -> String {
    let text = std::fs::read_to_string(format!("{}/../emu/tests/data/{name}.ptx", env!("CARGO_MANIFEST_DIR"))).unwrap();
    text.replacen(".version 9.4", ".version 9.0", 1)
}

fn ramp(dtype: DType, n: usize, scale: f64) -> HostTensor {
    let v: Vec<f64> = (0..n).map(|i| ((i * 37 % 101) as f64 / 50.0 - 1.0) * scale).collect();
    HostTensor::from_f64(dtype, &[n], &v)
}

/// Kernel `which` (`vadd`, `softmax`, `matmul`) compiled for `arch`, with a small launch.
pub fn problem(which: &str, arch: &str) -> Problem {
    let (entry, args, grid, threads, shared) = match which {
        "vadd" => {
            let n = 512;
            let args = vec![
                KernelArg::Buffer(ramp(DType::F32, n, 3.0)),
                KernelArg::Buffer(ramp(DType::F32, n, 2.0)),
                KernelArg::Buffer(HostTensor::zeros(DType::F32, &[n])),
                KernelArg::Scalar(n as u64),
            ];
            ("vadd", args, [4, 1, 1], 128, 0)
        }
        "softmax" => {
            let (rows, cols) = (4, 100);
            let args = vec![
                KernelArg::Buffer(ramp(DType::F32, rows * cols, 4.0)),
                KernelArg::Buffer(HostTensor::zeros(DType::F32, &[rows * cols])),
                KernelArg::Scalar(cols as u64),
                KernelArg::Scalar(cols as u64),
            ];
            ("row_softmax", args, [rows as u32, 1, 1], 128, 16)
        }
        "matmul" => {
            let (m, n, k) = (64usize, 64usize, 32usize);
            let args = vec![
                KernelArg::Buffer(ramp(DType::F16, m * k, 1.0)),
                KernelArg::Buffer(ramp(DType::F16, k * n, 1.0)),
                KernelArg::Buffer(HostTensor::zeros(DType::F16, &[m * n])),
                KernelArg::Scalar(m as u64),
                KernelArg::Scalar(n as u64),
                KernelArg::Scalar(k as u64),
                KernelArg::Scalar(k as u64),
                KernelArg::Scalar(n as u64),
                KernelArg::Scalar(n as u64),
            ];
            ("matmul", args, [1, 1, 1], 128, if arch == "sm_80" { 16384 } else { 24576 })
        }
        other => panic!("no test kernel {other}"),
    };
    let name = if arch == "sm_80" || which == "vadd" || which == "softmax" {
        which.to_string()
    } else {
        format!("{which}.sm90")
    };
    let cubin = ptxas(&data(&name), arch).unwrap_or_else(|e| panic!("ptxas {arch}: {e}")).cubin;
    let config = LaunchConfig { grid, block: [threads, 1, 1], dynamic_shared_bytes: shared, ..Default::default() };
    Problem { cubin, kernel: entry.to_string(), args, config }
}

/// Kernel `which` (`softmax`, `layernorm`, `matmul`, `attn_fwd`) of the emulator's test data
/// through `ptxas` for `arch`: the cubin, the kernel's index and its text (no launch: the
/// mask tests need only the instructions).
pub fn compiled(which: &str, arch: &str) -> (trident_sass::Cubin, usize, Vec<trident_sass::disasm::Text>) {
    let name = if arch == "sm_80" { which.to_string() } else { format!("{which}.sm90") };
    let bytes = ptxas(&data(&name), arch).unwrap_or_else(|e| panic!("ptxas {which} {arch}: {e}")).cubin;
    let cubin = trident_sass::Cubin::parse(&bytes).unwrap();
    let listings = disassembler()(&bytes).unwrap();
    let kernel = 0;
    let k = &cubin.kernels[kernel];
    let text = trident_sass::disasm::section_text(&cubin, &listings, k.text_section);
    assert_eq!(text.len(), k.instrs.len(), "{which} {arch}: text and instructions");
    (cubin, kernel, text)
}

/// The independent check of `bytes` against the problem's original.
pub fn recheck(e: &trident_sass_search::Env, bytes: &[u8], seed: u64) {
    let p = e.problem();
    let orig = Cubin::parse(&p.cubin).unwrap();
    let new = Cubin::parse(bytes).unwrap();
    let dis = disassembler();
    let ot = section_text(&orig, &dis(&p.cubin).unwrap(), orig.kernels[e.kernel].text_section);
    let nt = section_text(&new, &dis(bytes).unwrap(), new.kernels[e.kernel].text_section);
    let (oi, ni) = (&orig.kernels[e.kernel].instrs, &new.kernels[e.kernel].instrs);
    assert!(timing(e.sm, ni, &nt).is_empty(), "a kept schedule has a timing violation");
    assert!(reordering((oi, &ot), (ni, &nt)).is_empty(), "a kept schedule is not a legal reordering");
    let inputs = fresh_inputs(&p.args, seed);
    let run = |c: &Cubin, t: &[trident_sass::disasm::Text]| -> Vec<KernelArg> {
        let prog = Program::new(c, &p.kernel, t).unwrap();
        let mut args = inputs.clone();
        while args.len() < prog.kernel.params.len() {
            args.push(KernelArg::Null);
        }
        launch(&prog, &p.config, &mut args).unwrap();
        args
    };
    let (want, got) = (run(&orig, &ot), run(&new, &nt));
    assert_eq!(first_difference(&want, &got), None, "a kept schedule computes something else");
}
