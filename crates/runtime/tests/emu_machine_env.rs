//! `TRIDENT_EMU_MACHINE`: the GPU whose timing the emulator models. A DRAM-bound vector add
//! takes less modelled time on the H200 model (the H100's SMs, more DRAM bandwidth) than on
//! the default H100, with the same results; an unknown name is an error naming the variable.
//! One test in its own binary: it sets a process environment variable.

mod common;

use common::*;
use trident_runtime::args::Backend;
use trident_runtime::launch::launch;

#[test]
fn the_modelled_machine_follows_trident_emu_machine() {
    let dir = TempDir::new("emu-machine");
    let s = session(dir.path());
    let prog = program("vadd.py", VADD);
    let k = prog.kernel(None).unwrap();
    let seed = seed();
    // 3 × 4 MiB: 1024 CTAs, several waves over the 132 SMs: the DRAM floor (~4 µs) dominates.
    let n = 1 << 20;
    let time = |machine: Option<&str>| {
        match machine {
            Some(m) => std::env::set_var("TRIDENT_EMU_MACHINE", m),
            None => std::env::remove_var("TRIDENT_EMU_MACHINE"),
        }
        let mut a = args(
            &[
                &format!("x=randn:f32:{n}"),
                &format!("y=randn:f32:{n}"),
                &format!("out=empty:f32:{n}"),
                &format!("n={n}"),
                "BLOCK=1024",
            ],
            seed,
        );
        let out = launch(&prog, k, &mut a, &opts(&s, Backend::Emu, "cdiv(n, BLOCK)")).map(|o| o.run_time);
        if out.is_ok() {
            check_vadd(&a, seed);
        }
        out
    };
    let h100 = time(None).unwrap();
    assert_eq!(time(Some("h100")).unwrap(), h100, "h100 is the default");
    let h200 = time(Some("h200")).unwrap();
    // The kernel's part (less the fixed 2 µs launch overhead both models add) scales with the
    // DRAM bandwidth, 3.0 → 4.3 TB/s, all but the first wave's latency.
    let overhead = trident_emu::MachineModel::h100_sxm().launch_overhead_ns * 1e-9;
    let ratio = (h100.as_secs_f64() - overhead) / (h200.as_secs_f64() - overhead);
    eprintln!("h100 {h100:?} / h200 {h200:?}: kernel part {ratio:.3}");
    assert!(ratio > 1.25 && ratio < 4.3 / 3.0 + 0.01, "h100 {h100:?} / h200 {h200:?}: {ratio}");
    let e = time(Some("b300")).unwrap_err().text;
    assert!(e.contains("TRIDENT_EMU_MACHINE") && e.contains("h200"), "{e}");
    std::env::remove_var("TRIDENT_EMU_MACHINE");
}
