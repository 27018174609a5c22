//! `--backend cuda` through the emulated driver (crates/emu-driver): `TRIDENT_CUDA_DRIVER`
//! names `libtrident_emu_driver.so`, so the CUDA backend's whole host path runs here — module
//! loading, parameter packing and checks, the shared-memory opt-in, tensor maps through
//! `cuTensorMapEncodeTiled`, events, profile buffers, `CudaTimer` — on the emulators.
//!
//! Outputs are compared byte for byte: with cubins refused (`TRIDENT_EMU_DRIVER_NO_CUBIN`) the
//! driver JITs the PTX onto the PTX emulator, so `--backend cuda` must give exactly what
//! `--backend emu` gives for the same target; with the tools present, the cubin runs on the
//! SASS emulator and must give what `--backend sass-emu` gives. Inputs are fresh random (the
//! seed is printed), outputs start random so an element not written shows.
//!
//! The library is found next to this test's executable: the CLI has trident-emu-driver as a
//! dev-dependency, so cargo builds its cdylib into `deps/` before the tests run.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `libtrident_emu_driver.so` (or the platform's name for it) in this executable's directory.
fn driver() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable");
    let name = format!("{}trident_emu_driver{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX);
    let dir = exe.parent().expect("a directory");
    let p = dir.join(&name);
    assert!(p.is_file(), "{} is missing (cargo builds it for the dev-dependency on trident-emu-driver)", p.display());
    p
}

fn trident(args: &[String], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_trident"));
    c.args(args).current_dir(root()).env("TRIDENT_CUDA_DRIVER", driver());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("runs")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn tools() -> bool {
    std::env::var_os("TRIDENT_PTXAS").is_some() && std::env::var_os("TRIDENT_NVDISASM").is_some()
}

fn words(w: &[&str]) -> Vec<String> {
    w.iter().map(|s| s.to_string()).collect()
}

fn seed() -> u64 {
    let s = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() % 100_000;
    eprintln!("seed {s}");
    s
}

struct Case {
    kernel: &'static str,
    args: &'static [&'static str],
    out: &'static str,
}

const CASES: &[Case] = &[
    Case {
        kernel: "kernels/vector_add.py::add_kernel",
        args: &[
            "--grid",
            "4",
            "x=randn:f32:1000",
            "y=randn:f32:1000",
            "out=randn:f32:1000",
            "n_elements=1000",
            "BLOCK=256",
        ],
        out: "out",
    },
    Case {
        kernel: "kernels/softmax.py::softmax_kernel",
        args: &[
            "--grid",
            "5",
            "x=randn:f32:5x200",
            "y=randn:f32:5x200",
            "x_row_stride=200",
            "y_row_stride=200",
            "n_cols=200",
            "BLOCK=256",
        ],
        out: "y",
    },
    Case {
        kernel: "kernels/matmul.py::matmul_kernel",
        args: &[
            "--grid",
            "4",
            "--num-warps",
            "4",
            "a=randn:f16:64x96",
            "b=randn:f16:96x64",
            "c=randn:f16:64x64",
            "M=64",
            "N=64",
            "K=96",
            "stride_am=96",
            "stride_ak=1",
            "stride_bk=64",
            "stride_bn=1",
            "stride_cm=64",
            "stride_cn=1",
            "BLOCK_M=32",
            "BLOCK_N=32",
            "BLOCK_K=32",
            "GROUP_M=2",
        ],
        out: "c",
    },
    // On sm_90a the descriptors become tensor maps: built at launch by cuTensorMapEncodeTiled
    // and passed as hidden 128-byte parameters.
    Case {
        kernel: "kernels/matmul_descriptor.py::matmul_desc_kernel",
        args: &[
            "--grid",
            "3,2",
            "a=randn:f16:130x256",
            "b=randn:f16:256x72",
            "c=randn:f32:130x72",
            "M=130",
            "N=72",
            "K=256",
            "BLOCK_M=64",
            "BLOCK_N=64",
            "BLOCK_K=32",
        ],
        out: "c",
    },
];

/// Runs `case` on `backend` and returns the saved output's bytes.
fn run(case: &Case, backend: &str, seed: u64, env: &[(&str, &str)]) -> Vec<u8> {
    let tag = case.kernel.rsplit("::").next().unwrap();
    let out =
        std::env::temp_dir().join(format!("trident-emu-driver-{}-{tag}-{backend}-{seed}.npy", std::process::id()));
    let _ = std::fs::remove_file(&out);
    let mut w = words(&["run", case.kernel, "--backend", backend, "--seed", &seed.to_string()]);
    w.extend(words(case.args));
    w.extend(["--save".to_string(), format!("{}={}", case.out, out.display())]);
    let o = trident(&w, env);
    assert!(o.status.success(), "{tag} on {backend} ({env:?}): {}", text(&o));
    let bytes = std::fs::read(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    bytes
}

#[test]
fn cuda_runs_through_the_emulated_driver_give_the_emulators_bytes() {
    let seed = seed();
    for case in CASES {
        for target in ["sm_90a", "sm_80"] {
            if target == "sm_80" && case.kernel.contains("descriptor") {
                continue; // no tensor maps on sm_80: covered by the emulator's own tests
            }
            let t = [("TRIDENT_EMU_TARGET", target)];
            let want = run(case, "emu", seed, &t);
            let ptx = [("TRIDENT_EMU_TARGET", target), ("TRIDENT_EMU_DRIVER_NO_CUBIN", "1")];
            assert!(
                run(case, "cuda", seed, &ptx) == want,
                "{} ({target}, PTX JIT): cuda differs from emu",
                case.kernel
            );
            if tools() {
                let want = run(case, "sass-emu", seed, &t);
                assert!(
                    run(case, "cuda", seed, &t) == want,
                    "{} ({target}, cubin): cuda differs from sass-emu",
                    case.kernel
                );
            }
        }
    }
}

#[test]
fn bench_and_profile_run_on_cuda() {
    let case = &CASES[1];
    let mut w = words(&["bench", case.kernel, "--backend", "cuda"]);
    w.extend(words(case.args));
    let o = trident(&w, &[]);
    assert!(o.status.success(), "{}", text(&o));
    // The PTX path: the SASS emulator does not read the global timer profiles record
    // (`CS2R SR_GLOBALTIMERLO` is unsupported there), the PTX emulator does.
    let mut w = words(&["profile", case.kernel, "--backend", "cuda", "--regions", "kernel,loads"]);
    w.extend(words(case.args));
    let o = trident(&w, &[("TRIDENT_EMU_DRIVER_NO_CUBIN", "1")]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("kernel softmax_kernel on cuda-sm_90a"), "{out}");
    assert!(out.contains("issues: 0 errors"), "{out}");
}

#[test]
fn a_sass_search_times_candidates_with_cuda_events() {
    if !tools() {
        return eprintln!("skipped: TRIDENT_PTXAS/TRIDENT_NVDISASM not set");
    }
    let mut w = words(&[
        "sass",
        "search",
        CASES[1].kernel,
        "--backend",
        "cuda",
        "--algo",
        "greedy",
        "--budget",
        "3",
        "--repeats",
        "3",
    ]);
    w.extend(words(CASES[1].args));
    let o = trident(&w, &[]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("0 failed"), "{out}");
}

#[test]
fn a_kernel_reading_past_a_buffer_is_an_illegal_address_naming_the_launch() {
    // n_elements says 1000, x holds 600: the kernel reads past x.
    let w = words(&[
        "run",
        "kernels/vector_add.py::add_kernel",
        "--backend",
        "cuda",
        "--grid",
        "4",
        "x=randn:f32:600",
        "y=randn:f32:1000",
        "out=randn:f32:1000",
        "n_elements=1000",
        "BLOCK=256",
    ]);
    for env in [&[][..], &[("TRIDENT_EMU_DRIVER_NO_CUBIN", "1")][..]] {
        let o = trident(&w, env);
        let out = text(&o);
        assert!(!o.status.success(), "{out}");
        assert!(out.contains("CUDA_ERROR_ILLEGAL_ADDRESS"), "{out}");
        assert!(out.contains("kernel `add_kernel`"), "{out}");
        // The driver says where, on stderr.
        assert!(out.contains("trident-emu-driver: kernel `add_kernel` faulted"), "{out}");
    }
}

#[test]
fn bad_arguments_and_devices_are_errors_naming_them() {
    // A tensor map the launch cannot encode names its argument and field.
    let mut w = words(&["run", "crates/cli/tests/kernels/tma.py::copy_2d", "--backend", "cuda", "--grid", "1"]);
    w.extend(words(&["src=randn:f16:8x8", "dst=zeros:f16:72x72", "M=8", "N=-8", "BM=64", "BN=64", "NAN=False"]));
    let o = trident(&w, &[]);
    let out = text(&o);
    assert!(!o.status.success());
    assert!(out.contains("tensor descriptor of `src`") && out.contains("from `N`"), "{out}");
    // A device the driver cannot be.
    let o = trident(
        &words(&["run", CASES[0].kernel, "--backend", "cuda"])
            .into_iter()
            .chain(words(CASES[0].args))
            .collect::<Vec<_>>(),
        &[("TRIDENT_EMU_TARGET", "sm_75")],
    );
    let out = text(&o);
    assert!(!o.status.success());
    assert!(out.contains("TRIDENT_EMU_TARGET=`sm_75`"), "{out}");
}
