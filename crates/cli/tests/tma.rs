//! Tensor-descriptor loads and stores on the tensor-memory accelerator (issue 13): each kernel of
//! `tests/kernels/tma.py` runs on the interpreter, on the PTX emulator for sm_90a (TMA:
//! host-built tensor maps, `cp.async.bulk.tensor` on an mbarrier, stores as bulk groups) and
//! for sm_80 (plain loads and stores),
//! from the same seeded inputs (outputs start random, so a byte not written shows); the saved
//! outputs must be byte-identical (a case marked `sass` also on the SASS emulator for sm_90a). The sm_90a PTX must copy with TMA exactly where the
//! descriptor can be built before the launch.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const FILE: &str = "crates/cli/tests/kernels/tma.py";

struct Case {
    /// A kernel of `FILE`, or `PATH::KERNEL` elsewhere.
    kernel: &'static str,
    grid: &'static str,
    args: &'static [&'static str],
    /// The output argument compared.
    out: &'static str,
    /// Whether the sm_90a code copies with TMA.
    tma: bool,
    /// `cp.async.bulk.tensor` instructions in the sm_90a PTX (a ring: the prologue's copies
    /// and the loop's, one per box of each slot's tiles).
    copies: usize,
    /// `trident` options for compiling and running (warps, stages).
    opts: &'static [&'static str],
    /// Also run on the SASS emulator for sm_90a (slow: only where TMA itself is the point).
    sass: bool,
    /// 0: the backends agree bit for bit (integer-valued data); else f16 outputs agree within
    /// this relative tolerance (exp2 and summation order differ: attention).
    tol: f32,
    /// Warp-specialized on sm_90a (`WARP_SPECIALIZE=True` on the pipelined loop): a producer
    /// warp past `num_warps`, consumers handing slots back with `mbarrier.arrive`; its outputs
    /// are byte-identical to the same case's with `WARP_SPECIALIZE=False` on the emulators.
    ws: bool,
}

const CASES: &[Case] = &[
    Case {
        kernel: "copy_2d",
        grid: "2,2",
        args: &["src=randn:f16:100x72", "dst=randn:f16:164x136", "M=100", "N=72", "BM=64", "BN=64", "NAN=False"],
        out: "dst",
        tma: true,
        copies: 1,
        opts: &[],
        sass: false,
        tol: 0.0,
        ws: false,
    },
    Case {
        kernel: "copy_2d",
        grid: "2,2",
        args: &["src=randn:f32:20x36", "dst=randn:f32:36x68", "M=20", "N=36", "BM=16", "BN=32", "NAN=True"],
        out: "dst",
        tma: true,
        copies: 1,
        opts: &[],
        sass: false,
        tol: 0.0,
        ws: false,
    },
    Case {
        kernel: "copy_3d",
        grid: "2,2",
        args: &[
            "src=randn:f32:3x10x16",
            "dst=randn:f32:3x10x16",
            "B=3",
            "M=10",
            "N=16",
            "stride_b=160",
            "BB=2",
            "BM=8",
            "BN=16",
        ],
        out: "dst",
        tma: true,
        copies: 1,
        opts: &[],
        sass: false,
        tol: 0.0,
        ws: false,
    },
    Case {
        kernel: "copy_1d",
        grid: "4",
        args: &["src=rand:i32:200", "dst=rand:i32:200", "n=200", "BLOCK=64"],
        out: "dst",
        tma: true,
        copies: 1,
        opts: &[],
        sass: false,
        tol: 0.0,
        ws: false,
    },
    Case {
        kernel: "row_sums",
        grid: "3",
        args: &["src=rand:i32:20x100", "out=rand:i32:20", "M=20", "N=100", "BM=8", "BN=32"],
        out: "out",
        tma: true,
        copies: 1,
        opts: &[],
        sass: false,
        tol: 0.0,
        ws: false,
    },
    Case {
        kernel: "small_dot",
        grid: "2,2",
        args: &[
            "a=randn:i8:40x32",
            "b=randn:i8:32x48",
            "c=randn:f32:40x48",
            "M=40",
            "N=48",
            "K=32",
            "BM=32",
            "BN=32",
            "BK=32",
        ],
        out: "c",
        tma: true,
        copies: 2,
        opts: &[],
        sass: false,
        tol: 0.0,
        ws: false,
    },
    Case {
        kernel: "kernels/matmul_descriptor.py::matmul_desc_kernel",
        grid: "3,2",
        args: &[
            "a=@INTS:f16:130x256",
            "b=@INTS:f16:256x72",
            "c=randn:f32:130x72",
            "M=130",
            "N=72",
            "K=256",
            "BLOCK_M=64",
            "BLOCK_N=64",
            "BLOCK_K=32",
        ],
        out: "c",
        tma: true,
        copies: 6,
        opts: &[],
        sass: false,
        tol: 0.0,
        ws: false,
    },
    // Rows wider than 128 bytes (issue 13): each such tile is copied as 128-byte-wide boxes
    // into the column blocks of its slot. Ragged in every dimension: the boxes past the
    // tensor's edge (wholly, for N's last 64 columns here) are zero-filled by TMA.
    Case {
        // The best H100 configuration: B's rows are 256 bytes, two boxes per slot.
        kernel: "kernels/matmul_descriptor.py::matmul_desc_kernel",
        grid: "2,2",
        args: &[
            "a=@INTS:f16:200x200",
            "b=@INTS:f16:200x136",
            "c=randn:f32:200x136",
            "M=200",
            "N=136",
            "K=200",
            "BLOCK_M=128",
            "BLOCK_N=128",
            "BLOCK_K=64",
        ],
        out: "c",
        tma: true,
        // 3 slots × (A: 1 box, B: 2 boxes).
        copies: 9,
        opts: &["--num-warps", "8", "--num-stages", "3"],
        sass: true,
        tol: 0.0,
        ws: false,
    },
    Case {
        // B's rows are 512 bytes: four boxes per slot.
        kernel: "kernels/matmul_descriptor.py::matmul_desc_kernel",
        grid: "2,2",
        args: &[
            "a=@INTS:f16:70x136",
            "b=@INTS:f16:136x264",
            "c=randn:f32:70x264",
            "M=70",
            "N=264",
            "K=136",
            "BLOCK_M=64",
            "BLOCK_N=256",
            "BLOCK_K=64",
        ],
        out: "c",
        tma: true,
        copies: 15,
        opts: &["--num-warps", "4", "--num-stages", "3"],
        sass: false,
        tol: 0.0,
        ws: false,
    },
    Case {
        // A K tile of 128: A's rows are 256 bytes (two boxes), B's 128 (one).
        kernel: "kernels/matmul_descriptor.py::matmul_desc_kernel",
        grid: "2,2",
        args: &[
            "a=@INTS:f16:100x264",
            "b=@INTS:f16:264x72",
            "c=randn:f32:100x72",
            "M=100",
            "N=72",
            "K=264",
            "BLOCK_M=64",
            "BLOCK_N=64",
            "BLOCK_K=128",
        ],
        out: "c",
        tma: true,
        copies: 9,
        opts: &["--num-warps", "4", "--num-stages", "3"],
        sass: false,
        tol: 0.0,
        ws: false,
    },
    Case {
        // A lone box of 1024-byte rows: without a swizzle a box may be that wide (one copy).
        kernel: "copy_2d",
        grid: "1,2",
        args: &["src=randn:f32:12x300", "dst=randn:f32:28x556", "M=12", "N=300", "BM=16", "BN=256", "NAN=False"],
        out: "dst",
        tma: true,
        copies: 1,
        opts: &[],
        sass: false,
        tol: 0.0,
        ws: false,
    },
    Case {
        kernel: "store_2d",
        grid: "3,2",
        args: &["src=randn:f16:70x40", "dst=randn:f16:100x48", "M=70", "N=40", "LD=48", "BM=32", "BN=32"],
        out: "dst",
        tma: true,
        copies: 1,
        opts: &[],
        sass: true,
        tol: 0.0,
        ws: false,
    },
    // Rows of 256 and 512 bytes: the store box as 2 (f16) and 4 (f32) 128B-swizzled boxes
    // side by side, one copy each; ragged at the right and bottom edges (the boxes past N or
    // M must write nothing).
    Case {
        kernel: "store_2d",
        grid: "2,2",
        args: &["src=randn:f16:70x200", "dst=randn:f16:100x208", "M=70", "N=200", "LD=208", "BM=64", "BN=128"],
        out: "dst",
        tma: true,
        copies: 2,
        opts: &[],
        sass: true,
        tol: 0.0,
        ws: false,
    },
    Case {
        kernel: "store_2d",
        grid: "3,1",
        args: &["src=randn:f32:40x100", "dst=randn:f32:48x112", "M=40", "N=100", "LD=112", "BM=16", "BN=128"],
        out: "dst",
        tma: true,
        copies: 4,
        opts: &[],
        sass: true,
        tol: 0.0,
        ws: false,
    },
    Case {
        kernel: "store_3d_loop",
        grid: "2",
        args: &[
            "src=rand:i8:3x21x32",
            "dst=rand:i8:3x21x32",
            "B=3",
            "M=21",
            "N=32",
            "stride_b=672",
            "BB=2",
            "BM=8",
            "BN=32",
        ],
        out: "dst",
        tma: true,
        copies: 2,
        opts: &[],
        sass: false,
        tol: 0.0,
        ws: false,
    },
    Case {
        kernel: "kernels/matmul_persistent.py::matmul_persistent_kernel",
        grid: "3",
        args: &[
            "a=@INTS:f16:200x64",
            "b=@INTS:f16:136x64",
            "c=randn:f16:200x136",
            "M=200",
            "N=136",
            "K=64",
            "BLOCK_M=64",
            "BLOCK_N=64",
            "BLOCK_K=32",
            "GROUP_M=2",
            "NUM_SMS=3",
            "WARP_SPECIALIZE=True",
        ],
        out: "c",
        tma: true,
        // Warp-specialized on the tile loop: the producer's K loop copies A and B (read as
        // `b.T`), one copy each; the consumers store the tile.
        copies: 3,
        opts: &[],
        sass: true,
        tol: 0.0,
        ws: true,
    },
    // 128-byte rows: both rings 128B-swizzled, B's read K-major through the transpose; the
    // 256-byte rows of C's store box as two 128B-swizzled boxes (8 copies: 3 stages x 2 + 2).
    Case {
        kernel: "kernels/matmul_persistent.py::matmul_persistent_kernel",
        grid: "3",
        args: &[
            "a=@INTS:f16:200x128",
            "b=@INTS:f16:136x128",
            "c=randn:f16:200x136",
            "M=200",
            "N=136",
            "K=128",
            "BLOCK_M=128",
            "BLOCK_N=128",
            "BLOCK_K=64",
            "GROUP_M=2",
            "NUM_SMS=3",
            "WARP_SPECIALIZE=False",
        ],
        out: "c",
        tma: true,
        copies: 8,
        opts: &[],
        sass: true,
        tol: 0.0,
        ws: false,
    },
    // A batched dot whose B is read through `trans` of its last two dims (mma.sync on
    // ldmatrix: the transposed view of the ring's slot): 2 prologue stages + the loop's
    // prefetch, for A and B.
    Case {
        kernel: "batched_dot_bt",
        grid: "2",
        args: &[
            "a=@INTS:f16:3x16x96",
            "b=@INTS:f16:3x24x96",
            "c=randn:f32:3x16x24",
            "B=3",
            "M=16",
            "N=24",
            "K=96",
            "stride_ab=1536",
            "stride_bb=2304",
            "BB=2",
            "BM=16",
            "BN=32",
            "BK=32",
        ],
        out: "c",
        tma: true,
        copies: 6,
        opts: &[],
        sass: true,
        tol: 0.0,
        ws: false,
    },
    // Attention over descriptors whose shape is a product of parameters (Z * H * N_CTX,
    // computed at launch): Q's lone copy, then K (read as `k.T`) and V through the
    // pipeliner's rings: 2 prologue stages and the loop's prefetch, for each.
    Case {
        kernel: "kernels/flash_attention_desc.py::attn_fwd_desc",
        grid: "2,2",
        args: &[
            "q=@INTS:f16:1x2x100x64",
            "k=@INTS:f16:1x2x100x64",
            "v=@INTS:f16:1x2x100x64",
            "o=randn:f16:1x2x100x64",
            "sm_scale=0.125",
            "Z=1",
            "H=2",
            "N_CTX=100",
            "BLOCK_M=64",
            "BLOCK_N=32",
            "HEAD_DIM=64",
            "IS_CAUSAL=True",
        ],
        out: "o",
        tma: true,
        copies: 7,
        opts: &[],
        sass: true,
        tol: 1e-2,
        ws: false,
    },
    // Warp specialization: the producer warp's loop issues each slot's copies (A: 1 box,
    // B: 1 box; no prologue).
    Case {
        kernel: "kernels/matmul_descriptor.py::matmul_desc_kernel",
        grid: "3,2",
        args: &[
            "a=@INTS:f16:130x256",
            "b=@INTS:f16:256x72",
            "c=randn:f32:130x72",
            "M=130",
            "N=72",
            "K=256",
            "BLOCK_M=64",
            "BLOCK_N=64",
            "BLOCK_K=32",
            "WARP_SPECIALIZE=True",
        ],
        out: "c",
        tma: true,
        copies: 2,
        opts: &[],
        sass: true,
        tol: 0.0,
        ws: true,
    },
    // 8 consumer warps, ragged M and K, B in two 128-byte boxes per slot.
    Case {
        kernel: "kernels/matmul_descriptor.py::matmul_desc_kernel",
        grid: "2,2",
        args: &[
            "a=@INTS:f16:200x200",
            "b=@INTS:f16:200x136",
            "c=randn:f32:200x136",
            "M=200",
            "N=136",
            "K=200",
            "BLOCK_M=128",
            "BLOCK_N=128",
            "BLOCK_K=64",
            "WARP_SPECIALIZE=True",
        ],
        out: "c",
        tma: true,
        copies: 3,
        opts: &["--num-warps", "8", "--num-stages", "3"],
        sass: true,
        tol: 0.0,
        ws: true,
    },
    // Attention: Q's lone copy (consumers), K and V from the producer's loop.
    Case {
        kernel: "kernels/flash_attention_desc.py::attn_fwd_desc",
        grid: "2,2",
        args: &[
            "q=@INTS:f16:1x2x100x64",
            "k=@INTS:f16:1x2x100x64",
            "v=@INTS:f16:1x2x100x64",
            "o=randn:f16:1x2x100x64",
            "sm_scale=0.125",
            "Z=1",
            "H=2",
            "N_CTX=100",
            "BLOCK_M=64",
            "BLOCK_N=32",
            "HEAD_DIM=64",
            "IS_CAUSAL=True",
            "WARP_SPECIALIZE=True",
        ],
        out: "o",
        tma: true,
        copies: 3,
        opts: &[],
        sass: true,
        tol: 1e-2,
        ws: true,
    },
    // Two consumer warpgroups (8 warps, BLOCK_M = 128) and a 3-slot ring: FA3's ping-pong
    // turns between the warpgroups (`gpu-pingpong`), causal and ragged (a turn's pairing
    // must hold for every trip count, 1 to 5 key blocks here).
    Case {
        kernel: "kernels/flash_attention_desc.py::attn_fwd_desc",
        grid: "3,2",
        args: &[
            "q=@INTS:f16:1x2x300x64",
            "k=@INTS:f16:1x2x300x64",
            "v=@INTS:f16:1x2x300x64",
            "o=randn:f16:1x2x300x64",
            "sm_scale=0.125",
            "Z=1",
            "H=2",
            "N_CTX=300",
            "BLOCK_M=128",
            "BLOCK_N=64",
            "HEAD_DIM=64",
            "IS_CAUSAL=True",
            "WARP_SPECIALIZE=True",
        ],
        out: "o",
        tma: true,
        copies: 3,
        opts: &["--num-warps", "8", "--num-stages", "3"],
        sass: true,
        tol: 1e-2,
        ws: true,
    },
    // A K offset the loop carries (`off_k += BLOCK_K`), feeding both the boxes and the dead
    // masks: pipelined with TMA (2 prologue stages + the loop's, 2 copies each), and
    // warp-specialized (the producer carries the counter).
    Case {
        kernel: "matmul_carried_offset",
        grid: "3,2",
        args: &[
            "a=@INTS:f16:130x200",
            "b=@INTS:f16:200x72",
            "c=randn:f32:130x72",
            "M=130",
            "N=72",
            "K=200",
            "BLOCK_M=64",
            "BLOCK_N=64",
            "BLOCK_K=32",
            "WARP_SPECIALIZE=False",
        ],
        out: "c",
        tma: true,
        copies: 6,
        opts: &[],
        sass: false,
        tol: 0.0,
        ws: false,
    },
    Case {
        kernel: "matmul_carried_offset",
        grid: "3,2",
        args: &[
            "a=@INTS:f16:130x200",
            "b=@INTS:f16:200x72",
            "c=randn:f32:130x72",
            "M=130",
            "N=72",
            "K=200",
            "BLOCK_M=64",
            "BLOCK_N=64",
            "BLOCK_K=32",
            "WARP_SPECIALIZE=True",
        ],
        out: "c",
        tma: true,
        copies: 2,
        opts: &[],
        sass: true,
        tol: 0.0,
        ws: true,
    },
    // Host descriptors (Triton's `TensorDescriptor` arguments): the same TMA code from maps
    // built of the descriptors' fields. A ragged f16 copy into a larger destination (its
    // boxes store their padding), an f32 one with NaN padding, and a matmul.
    Case {
        kernel: "host_desc_copy",
        grid: "2,2",
        args: &["src_desc=desc[64x64]:randn:f16:100x72", "dst_desc=desc[64x64]:randn:f16:120x136", "BM=64", "BN=64"],
        out: "dst_desc",
        tma: true,
        copies: 2,
        opts: &[],
        sass: true,
        tol: 0.0,
        ws: false,
    },
    Case {
        kernel: "host_desc_copy",
        grid: "2,2",
        args: &["src_desc=desc[16x32,nan]:randn:f32:20x36", "dst_desc=desc[16x32]:randn:f32:36x68", "BM=16", "BN=32"],
        out: "dst_desc",
        tma: true,
        copies: 2,
        opts: &[],
        sass: false,
        tol: 0.0,
        ws: false,
    },
    Case {
        kernel: "host_desc_matmul",
        grid: "2,3",
        args: &[
            "a_desc=desc[64x64]:@INTS:f16:100x192",
            "b_desc=desc[64x64]:@INTS:f16:192x136",
            "c_desc=desc[64x64]:randn:f32:100x136",
            "K=192",
            "BLOCK_M=64",
            "BLOCK_N=64",
            "BLOCK_K=64",
        ],
        out: "c_desc",
        tma: true,
        // 3 slots × (A, B) and C's store: 256-byte f32 rows, two 128B-swizzled boxes.
        copies: 8,
        opts: &["--num-warps", "4", "--num-stages", "3"],
        sass: true,
        tol: 0.0,
        ws: false,
    },
    // Not TMA: the split epilogue of an MMA accumulator (reshape, permute, split) relabels
    // registers (`linear` layouts); on sm_80 (mma.sync), sm_90 and sm_90a (warpgroup MMA).
    Case {
        kernel: "dot_split_epilogue",
        grid: "1",
        args: &["a=@INTS:f16:64x64", "b=@INTS:f16:64x64", "c=randn:f32:64x64", "K=64", "BM=64", "BN=64", "BK=32"],
        out: "c",
        tma: false,
        copies: 0,
        opts: &[],
        sass: true,
        tol: 0.0,
        ws: false,
    },
    Case {
        kernel: "offset_base",
        grid: "2",
        args: &["src=randn:f32:9x16", "dst=randn:f32:16x16", "M=9", "N=16", "BM=8", "BN=16"],
        out: "dst",
        tma: false,
        copies: 0,
        opts: &[],
        sass: false,
        tol: 0.0,
        ws: false,
    },
];

/// The `FILE::KERNEL` the case runs.
fn kernel_path(case: &Case) -> String {
    if case.kernel.contains("::") {
        case.kernel.to_string()
    } else {
        format!("{FILE}::{}", case.kernel)
    }
}

/// A file-name-safe form of the case's kernel.
fn tag(case: &Case) -> String {
    case.kernel.rsplit("::").next().unwrap_or(case.kernel).to_string()
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn trident(args: &[String], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_trident"));
    c.args(args).current_dir(root());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("runs")
}

fn ptxas_present() -> bool {
    std::env::var_os("TRIDENT_PTXAS").is_some()
}

/// An `.npy` of f16 small integers (-4..=4, exactly representable; their dot products sum
/// exactly in f32, in any order) from a seeded generator.
fn ints_f16_npy(path: &Path, shape: &[usize], seed: u64) {
    let n: usize = shape.iter().product();
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let mut header = format!("{{'descr': '<f2', 'fortran_order': False, 'shape': ({},), }}", dims.join(", "));
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    // f16 bits of 0..=4; the sign bit makes the negatives.
    const BITS: [u16; 5] = [0x0000, 0x3c00, 0x4000, 0x4200, 0x4400];
    let mut x = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let v = (x % 9) as usize;
        let h = if v <= 4 { BITS[v] } else { BITS[v - 4] | 0x8000 };
        bytes.extend_from_slice(&h.to_le_bytes());
    }
    std::fs::write(path, bytes).unwrap();
}

/// The case's arguments, with `@INTS:f16:AxB` written to a file of small integers.
fn materialize(case: &Case, seed: u64) -> Vec<String> {
    case.args
        .iter()
        .map(|a| {
            let (name, v) = a.split_once('=').unwrap();
            // A host descriptor over such a file: `desc[BOX]:@INTS:f16:AxB`.
            let (desc, v) = match v.split_once("]:") {
                Some((d, rest)) if d.starts_with("desc[") => (format!("{d}]:"), rest),
                _ => (String::new(), v),
            };
            match v.strip_prefix("@INTS:f16:") {
                Some(shape) => {
                    let shape: Vec<usize> = shape.split('x').map(|d| d.parse().unwrap()).collect();
                    let path = std::env::temp_dir().join(format!(
                        "trident_tma_{}_{}_{name}_{seed}.npy",
                        std::process::id(),
                        tag(case)
                    ));
                    ints_f16_npy(&path, &shape, seed ^ name.len() as u64 ^ (name.as_bytes()[0] as u64) << 8);
                    format!("{name}={desc}@{}", path.display())
                }
                None => a.to_string(),
            }
        })
        .collect()
}

/// Runs `case` on `backend` (for `target` on the emulators) and returns the saved output's bytes.
fn run(case: &Case, backend: &str, target: &str, seed: u64) -> Vec<u8> {
    run_as(case, backend, target, seed, false)
}

/// [`run`], with `WARP_SPECIALIZE=True` turned off when `unspecialized`.
fn run_as(case: &Case, backend: &str, target: &str, seed: u64, unspecialized: bool) -> Vec<u8> {
    let out = std::env::temp_dir().join(format!(
        "trident_tma_{}_{}_{backend}_{target}_{seed}.npy",
        std::process::id(),
        tag(case)
    ));
    let _ = std::fs::remove_file(&out);
    let mut words: Vec<String> =
        ["run", &kernel_path(case), "--backend", backend, "--grid", case.grid].iter().map(|s| s.to_string()).collect();
    words.extend(case.opts.iter().map(|s| s.to_string()));
    words.extend(["--seed".to_string(), seed.to_string()]);
    words.extend(materialize(case, seed).into_iter().map(|w| {
        if unspecialized && w == "WARP_SPECIALIZE=True" {
            "WARP_SPECIALIZE=False".to_string()
        } else {
            w
        }
    }));
    words.extend(["--save".to_string(), format!("{}={}", case.out, out.display())]);
    let o = trident(&words, &[("TRIDENT_EMU_TARGET", target)]);
    assert!(o.status.success(), "{} on {backend} ({target}): {}", case.kernel, String::from_utf8_lossy(&o.stderr));
    let bytes = std::fs::read(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    bytes
}

/// An `.npy` file's bytes with every float NaN made one pattern: out-of-bounds NaN padding is
/// the interpreter's quiet NaN on one side and the tensor-memory accelerator's fill on the
/// other, the same value (the fill's pattern is the emulator's statement about the hardware).
fn nan_canonical(npy: &[u8]) -> Vec<u8> {
    let mut b = npy.to_vec();
    let header_len = u16::from_le_bytes([b[8], b[9]]) as usize;
    let header = String::from_utf8_lossy(&b[10..10 + header_len]).to_string();
    let data = 10 + header_len;
    if header.contains("'<f4'") {
        for c in b[data..].chunks_mut(4) {
            if f32::from_le_bytes([c[0], c[1], c[2], c[3]]).is_nan() {
                c.copy_from_slice(&f32::NAN.to_le_bytes());
            }
        }
    } else if header.contains("'<f2'") {
        for c in b[data..].chunks_mut(2) {
            let h = u16::from_le_bytes([c[0], c[1]]);
            if h & 0x7c00 == 0x7c00 && h & 0x03ff != 0 {
                c.copy_from_slice(&0x7e00u16.to_le_bytes());
            }
        }
    }
    b
}

/// Two saved `.npy` outputs agree: the same bytes, or (`tol > 0`, f16 data) every element
/// within `tol * (1 + |want|)` and NaN where the other is.
fn agree(got: &[u8], want: &[u8], tol: f32) -> bool {
    if tol == 0.0 || got.len() != want.len() {
        return got == want;
    }
    let header_len = u16::from_le_bytes([want[8], want[9]]) as usize;
    let data = 10 + header_len;
    if got[..data] != want[..data] || !String::from_utf8_lossy(&want[10..data]).contains("'<f2'") {
        return got == want;
    }
    let f16 = |c: &[u8]| {
        let h = u16::from_le_bytes([c[0], c[1]]) as u32;
        let (sign, exp, man) = (h >> 15, (h >> 10) & 0x1f, h & 0x3ff);
        let mag = match exp {
            0 => man as f32 * 2f32.powi(-24),
            31 => {
                if man == 0 {
                    f32::INFINITY
                } else {
                    f32::NAN
                }
            }
            e => (1.0 + man as f32 / 1024.0) * 2f32.powi(e as i32 - 15),
        };
        if sign == 1 {
            -mag
        } else {
            mag
        }
    };
    got[data..].chunks(2).zip(want[data..].chunks(2)).all(|(g, w)| {
        let (g, w) = (f16(g), f16(w));
        (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= tol * (1.0 + w.abs())
    })
}

#[test]
fn descriptor_loads_copy_with_tma_on_sm90_and_agree_with_the_interpreter() {
    if !ptxas_present() {
        eprintln!("skipped: no ptxas (scripts/install-tools; TRIDENT_PTXAS)");
        return;
    }
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() % 10_000;
    eprintln!("seed {seed}");
    for case in CASES {
        // The PTX copies with TMA exactly where the map can be built before the launch.
        let mut words: Vec<String> = ["compile", &kernel_path(case), "--emit", "ptx", "--target", "sm_90a"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        words.extend(case.opts.iter().map(|s| s.to_string()));
        words.extend(materialize(case, seed));
        let o = trident(&words, &[]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let ptx = String::from_utf8_lossy(&o.stdout);
        assert_eq!(ptx.contains("cp.async.bulk.tensor"), case.tma, "{}: TMA in the sm_90a PTX", case.kernel);
        assert_eq!(ptx.contains(".param .align 64 .b8"), case.tma, "{}: a tensor-map parameter", case.kernel);
        assert_eq!(
            ptx.matches("cp.async.bulk.tensor").count(),
            case.copies,
            "{} ({:?}): TMA copies in the sm_90a PTX",
            case.kernel,
            case.args
        );
        // Warp specialization: one producer warp past the consumers, which hand slots back.
        let warps: u32 =
            case.opts.iter().position(|&o| o == "--num-warps").map_or(4, |i| case.opts[i + 1].parse().unwrap());
        let threads = if case.ws { 32 * (warps + 1) } else { 32 * warps };
        assert!(
            ptx.contains(&format!(".reqntid {threads}\n")),
            "{} ({:?}): .reqntid {threads}",
            case.kernel,
            case.args
        );
        assert_eq!(
            ptx.contains("mbarrier.arrive.shared::cta"),
            case.ws,
            "{} ({:?}): slots handed back",
            case.kernel,
            case.args
        );
        // Ping-pong turns where two consumer warpgroups run an attention loop's two dots.
        let pingpong = case.ws && warps == 8 && case.kernel.contains("attn");
        assert_eq!(ptx.contains("bar.arrive"), pingpong, "{} ({:?}): ping-pong turns", case.kernel, case.args);
        // A TMA ring leaves no element-wise copies (`cp.async.ca/cg`).
        if case.tma {
            assert!(!ptx.contains("cp.async.c"), "{} ({:?}): cp.async beside TMA", case.kernel, case.args);
        }

        let want = nan_canonical(&run(case, "interp", "sm_80", seed));
        for target in ["sm_90a", "sm_90", "sm_80"] {
            let got = nan_canonical(&run(case, "emu", target, seed));
            assert!(
                agree(&got, &want, case.tol),
                "{} ({:?}): emu {target} differs from the interpreter (seed {seed})",
                case.kernel,
                case.args
            );
        }
        if case.ws {
            let plain = run_as(case, "emu", "sm_90a", seed, true);
            assert!(
                run(case, "emu", "sm_90a", seed) == plain,
                "{} ({:?}): warp-specialized and plain differ on the emulator (seed {seed})",
                case.kernel,
                case.args
            );
        }
        if case.sass {
            let got = nan_canonical(&run(case, "sass-emu", "sm_90a", seed));
            assert!(
                agree(&got, &want, case.tol),
                "{} ({:?}): the SASS emulator (sm_90a) differs from the interpreter (seed {seed})",
                case.kernel,
                case.args
            );
        }
    }
}

#[test]
fn a_descriptor_the_launch_cannot_encode_is_an_error_naming_its_argument() {
    if !ptxas_present() {
        eprintln!("skipped: no ptxas");
        return;
    }
    // N = -8: a negative dimension for the map of `src`.
    let words: Vec<String> = [
        "run",
        &format!("{FILE}::copy_2d"),
        "--backend",
        "emu",
        "--grid",
        "1",
        "src=randn:f16:8x8",
        "dst=zeros:f16:72x72",
        "M=8",
        "N=-8",
        "BM=64",
        "BN=64",
        "NAN=False",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let o = trident(&words, &[("TRIDENT_EMU_TARGET", "sm_90a")]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("tensor descriptor of `src`") && err.contains("from `N`"), "{err}");

    // A shape the launch computes (Z * H * N_CTX rows) that comes out negative names the
    // product's factors.
    let words: Vec<String> = [
        "run",
        "kernels/flash_attention_desc.py",
        "--backend",
        "emu",
        "--grid",
        "1,1",
        "q=randn:f16:64x16",
        "k=randn:f16:64x16",
        "v=randn:f16:64x16",
        "o=zeros:f16:64x16",
        "sm_scale=0.25",
        "Z=-1",
        "H=4",
        "N_CTX=16",
        "BLOCK_M=16",
        "BLOCK_N=16",
        "HEAD_DIM=16",
        "IS_CAUSAL=False",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let o = trident(&words, &[("TRIDENT_EMU_TARGET", "sm_90a")]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("a dimension of -64") && err.contains("the product `Z` * `H` * `N_CTX`"), "{err}");
}

/// `TRIDENT_SETMAXNREG=1`: a warp-specialized kernel with two consumer warpgroups gets a
/// producer warpgroup that gives its registers to the consumers. D128 attention with
/// 128-key blocks, which spills at the 168 registers ptxas otherwise allows 8 consumer warps
/// and a producer warp, then needs no spill; the outputs are the same bytes on both
/// emulators, with and without the move.
#[test]
fn a_producer_warpgroup_gives_its_registers_to_the_consumers() {
    if !ptxas_present() {
        eprintln!("skipped: no ptxas (scripts/install-tools; TRIDENT_PTXAS)");
        return;
    }
    let case = Case {
        kernel: "kernels/flash_attention_desc.py::attn_fwd_desc",
        grid: "2,2",
        args: &[
            "q=@INTS:f16:1x2x200x128",
            "k=@INTS:f16:1x2x200x128",
            "v=@INTS:f16:1x2x200x128",
            "o=randn:f16:1x2x200x128",
            "sm_scale=0.125",
            "Z=1",
            "H=2",
            "N_CTX=200",
            "BLOCK_M=128",
            "BLOCK_N=128",
            "HEAD_DIM=128",
            "IS_CAUSAL=False",
            "WARP_SPECIALIZE=True",
        ],
        out: "o",
        tma: true,
        copies: 3,
        opts: &["--num-warps", "8", "--num-stages", "2"],
        sass: true,
        tol: 1e-2,
        ws: true,
    };
    let seed = 7;
    let dir = std::env::temp_dir().join(format!("trident_tma_smr_{}", std::process::id()));
    let compile = |smr: &str| {
        let mut words: Vec<String> =
            ["compile", &kernel_path(&case), "--emit", "cubin", "--target", "sm_90a", "--output"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        words.push(dir.join(format!("a{smr}.cubin")).display().to_string());
        words.extend(case.opts.iter().map(|s| s.to_string()));
        words.extend(materialize(&case, seed));
        let cache = dir.join(format!("cache{smr}")).display().to_string();
        let o = trident(&words, &[("TRIDENT_SETMAXNREG", smr), ("TRIDENT_CACHE_DIR", &cache)]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr)
    };
    let (with, without) = (compile("1"), compile("0"));
    assert!(with.contains("spill_stores: 0"), "{with}");
    assert!(!without.contains("spill_stores: 0"), "the plain split spills at this size: {without}");
    let mut words: Vec<String> =
        ["compile", &kernel_path(&case), "--emit", "ptx", "--target", "sm_90a"].iter().map(|s| s.to_string()).collect();
    words.extend(case.opts.iter().map(|s| s.to_string()));
    words.extend(materialize(&case, seed));
    let o = trident(&words, &[("TRIDENT_SETMAXNREG", "1"), ("TRIDENT_CACHE", "0")]);
    let ptx = String::from_utf8_lossy(&o.stdout);
    for line in
        [".reqntid 384", ".maxnreg 168", "setmaxnreg.inc.sync.aligned.u32 232", "setmaxnreg.dec.sync.aligned.u32 40"]
    {
        assert!(ptx.contains(line), "{line} in the PTX");
    }
    let run_on = |backend: &str, smr: &str| {
        let out = dir.join(format!("o_{backend}_{smr}.npy"));
        let mut words: Vec<String> = ["run", &kernel_path(&case), "--backend", backend, "--grid", case.grid]
            .iter()
            .map(|s| s.to_string())
            .collect();
        words.extend(case.opts.iter().map(|s| s.to_string()));
        words.extend(["--seed".to_string(), seed.to_string()]);
        words.extend(materialize(&case, seed));
        words.extend(["--save".to_string(), format!("o={}", out.display())]);
        let cache = dir.join(format!("cache{smr}")).display().to_string();
        let o = trident(
            &words,
            &[("TRIDENT_SETMAXNREG", smr), ("TRIDENT_EMU_TARGET", "sm_90a"), ("TRIDENT_CACHE_DIR", &cache)],
        );
        assert!(o.status.success(), "{backend}: {}", String::from_utf8_lossy(&o.stderr));
        std::fs::read(&out).unwrap()
    };
    for backend in ["emu", "sass-emu"] {
        assert!(run_on(backend, "1") == run_on(backend, "0"), "{backend}: outputs differ with the register move");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
