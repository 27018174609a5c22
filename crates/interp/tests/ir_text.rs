//! Kernels written as IR text (the form `trident_ir::parse_module` reads).

mod common;

use common::poison;
use trident_core::{DType, HostTensor};
use trident_interp::{launch, ErrorKind, InterpArg, InterpOptions};

/// The IR crate's example of every op: it must run (or fail with a clean error), never panic.
#[test]
fn the_all_ops_example_runs() {
    let text = include_str!("../../ir/tests/data/all_ops.printed.tir");
    let m = trident_ir::parse_module(text).expect("all_ops parses");
    for flag in [false, true] {
        let mut args = vec![
            InterpArg::Tensor(HostTensor::from_f64(DType::F32, &[2048], &vec![0.5; 2048])),
            InterpArg::Tensor(HostTensor::zeros(DType::F16, &[16])),
            InterpArg::i32(16),
            InterpArg::u64(3 << 40),
            InterpArg::bool(flag),
        ];
        let rep = launch(&m, "all_ops", [1, 1, 1], &mut args, &InterpOptions::default());
        let rep = rep.unwrap_or_else(|e| panic!("flag {flag}: {}", e.render(&m)));
        assert!(rep.printed.starts_with("pid (0, 0, 0) idx ()"), "{}", rep.printed);
    }
    // A second program's offsets start at 1024 >= n: its `assert` (offs < n) fails, cleanly.
    let mut args = vec![
        InterpArg::Tensor(HostTensor::zeros(DType::F32, &[2048])),
        InterpArg::Tensor(HostTensor::zeros(DType::F16, &[16])),
        InterpArg::i32(16),
        InterpArg::u64(1),
        InterpArg::bool(true),
    ];
    let e = launch(&m, "all_ops", [2, 1, 1], &mut args, &InterpOptions::default()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::AssertFailed, "{}", e.message());
    assert!(e.message().contains("program (1, 0, 0)"), "{}", e.message());
    // The GPU-IR kernel of the example takes tensors with layouts: a clean launch error.
    let e = launch(&m, "gpu", [1, 1, 1], &mut [], &InterpOptions::default()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Launch);
}

const ROW_CUMSUM: &str = r#"
kernel @row_cumsum(%x: ptr<i32>, %y: ptr<i32>) {
  %row = program_id [axis = 0] : i32
  %c16 = constant [value = 16] : i32
  %base = mul %row, %c16 : i32
  %r = arange [start = 0, end = 16] : tensor<16xi32>
  %b = splat %base : tensor<16xi32>
  %offs = add %b, %r : tensor<16xi32>
  %xs = splat %x : tensor<16xptr<i32>>
  %px = addptr %xs, %offs : tensor<16xptr<i32>>
  %v = load %px : tensor<16xi32>
  %s = scan %v [axis = 0, reverse = false] {
  ^(%a: i32, %c: i32):
    %t = add %a, %c : i32
    yield %t
  } : tensor<16xi32>
  %ys = splat %y : tensor<16xptr<i32>>
  %py = addptr %ys, %offs : tensor<16xptr<i32>>
  store %py, %s
  return
}
"#;

#[test]
fn a_kernel_written_as_text() {
    let m = trident_ir::parse_module(ROW_CUMSUM).unwrap();
    trident_ir::verify_module(&m).unwrap();
    let x: Vec<f64> = (0..48).map(|i| ((i * 7) % 11) as f64 - 5.0).collect();
    let mut args = vec![
        InterpArg::Tensor(HostTensor::from_f64(DType::I32, &[48], &x)),
        InterpArg::Tensor(poison(DType::I32, &[48])),
    ];
    launch(&m, "row_cumsum", [3, 1, 1], &mut args, &InterpOptions::default()).unwrap();
    let got = args[1].as_tensor().unwrap().to_f64_vec();
    for row in 0..3 {
        let mut s = 0.0;
        for j in 0..16 {
            s += x[row * 16 + j];
            assert_eq!(got[row * 16 + j], s, "[{row},{j}]");
        }
    }
}
