//! `TRIDENT_SPLIT_LOOPS=1` (the tile pass `split-loops`, opt-in) end to end: flash attention,
//! causal and full, on a ragged sequence length (the last key block partly out of bounds),
//! gives the same bytes with and without the split on the interpreter and the PTX emulator —
//! a mask proven all-true is dropped only where it selected every element anyway — and the
//! tile IR shows the split only when asked for.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn trident(args: &[String], split: bool) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_trident"));
    c.args(args).current_dir(root()).env("TRIDENT_CACHE", "0").env_remove("TRIDENT_EMU_TARGET");
    if split {
        c.env("TRIDENT_SPLIT_LOOPS", "1");
    } else {
        c.env_remove("TRIDENT_SPLIT_LOOPS");
    }
    c.output().expect("runs")
}

/// The attention launch: Z=1, H=2, N_CTX=100 (not a multiple of the 32-key blocks), D=32.
fn args(causal: bool) -> Vec<String> {
    let (h, n, d) = (2, 100, 32);
    let mut a = vec![
        "--grid".to_string(),
        format!("4,{h}"),
        format!("q=randn:f16:1x{h}x{n}x{d}"),
        format!("k=randn:f16:1x{h}x{n}x{d}"),
        format!("v=randn:f16:1x{h}x{n}x{d}"),
        format!("o=randn:f16:1x{h}x{n}x{d}"),
        "sm_scale=0.125".to_string(),
    ];
    for t in ["q", "k", "v", "o"] {
        let dims = if t == "k" || t == "v" { ["z", "h", "n", "d"] } else { ["z", "h", "m", "d"] };
        for (dim, st) in dims.iter().zip([h * n * d, n * d, d, 1]) {
            a.push(format!("stride_{t}{dim}={st}"));
        }
    }
    a.extend([
        format!("H={h}"),
        format!("N_CTX={n}"),
        "BLOCK_M=32".to_string(),
        "BLOCK_N=32".to_string(),
        format!("HEAD_DIM={d}"),
        format!("IS_CAUSAL={}", if causal { "True" } else { "False" }),
    ]);
    a
}

#[test]
fn split_loops_give_the_same_bytes_on_the_interpreter_and_the_emulator() {
    let dir = std::env::temp_dir().join(format!("trident-split-loops-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for causal in [true, false] {
        for backend in ["interp", "emu"] {
            let mut outs = vec![];
            for split in [false, true] {
                let path = dir.join(format!("o_{causal}_{backend}_{split}.npy"));
                let mut words: Vec<String> =
                    ["run", "kernels/flash_attention.py::attn_fwd", "--backend", backend, "--num-warps", "4"]
                        .iter()
                        .map(|s| s.to_string())
                        .collect();
                words.extend(args(causal));
                words.push("--save".to_string());
                words.push(format!("o={}", path.display()));
                let o = trident(&words, split);
                assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
                outs.push(std::fs::read(&path).unwrap());
            }
            assert_eq!(outs[0], outs[1], "causal={causal} on {backend}: outputs with and without split-loops");
        }
        // The tile IR: two loops, marked, only with the option.
        let mut words: Vec<String> = ["compile", "kernels/flash_attention.py::attn_fwd", "--emit", "ttir"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        words.extend(args(causal).into_iter().filter(|a| !a.starts_with("--grid") && !a.contains(',')).map(|a| {
            match a.split_once('=') {
                Some((n, v)) if v.starts_with("randn:f16") => format!("{n}=*f16"),
                _ => a,
            }
        }));
        let plain = trident(&words, false);
        let split = trident(&words, true);
        assert!(plain.status.success() && split.status.success(), "{}", String::from_utf8_lossy(&split.stderr));
        let (plain, split) = (String::from_utf8_lossy(&plain.stdout), String::from_utf8_lossy(&split.stdout));
        assert!(!plain.contains("loop_split"), "{plain}");
        assert_eq!(split.matches("{loop_split = true}").count(), 2, "{split}");
    }
}
