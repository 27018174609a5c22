//! Host tensor descriptors (`ArgInfo::TensorDesc`, Triton's `TensorDescriptor` arguments): how
//! the parameter is bound (base pointer, shape, strides but the last as IR parameters, with
//! the alignment facts the launch guarantees), that the kernel sees a descriptor
//! (`isinstance(d, tl.tensor_descriptor)`, `d.shape`, loads and stores), that it computes what
//! the same kernel with an in-kernel `tl.make_tensor_descriptor` computes, and the errors.

use trident_core::{DType, HostTensor};
use trident_front::{compile, parse_file, ArgInfo, CompileOptions, Compiled, ConstValue, ParamBinding};
use trident_interp::{launch, InterpArg, InterpOptions};
use trident_ir::{Elem, Type};

const SRC: &str = r#"
import triton
import triton.language as tl


@triton.jit
def from_host(x_desc, y_desc, BM: tl.constexpr, BN: tl.constexpr):
    m = tl.program_id(0) * BM
    n = tl.program_id(1) * BN
    tl.static_assert(isinstance(x_desc, tl.tensor_descriptor))
    # Triton's types: sizes int32, strides int64.
    tl.static_assert(x_desc.shape[0].dtype == tl.int32)
    tl.static_assert(x_desc.strides[0].dtype == tl.int64)
    y_desc.store([m, n], x_desc.load([m, n]) * 3 + x_desc.shape[1])


@triton.jit
def in_kernel(x, y, M, N, BM: tl.constexpr, BN: tl.constexpr):
    m = tl.program_id(0) * BM
    n = tl.program_id(1) * BN
    x_desc = tl.make_tensor_descriptor(x, [M, N], [N, 1], [BM, BN])
    y_desc = tl.make_tensor_descriptor(y, [M, N], [N, 1], [BM, BN])
    tl.static_assert(x_desc.shape[0].dtype == tl.int32)
    tl.static_assert(x_desc.strides[0].dtype == tl.int64)
    y_desc.store([m, n], x_desc.load([m, n]) * 3 + x_desc.shape[1])


@triton.jit
def pointer_is_not_a_descriptor(x):
    tl.static_assert(not isinstance(x, tl.tensor_descriptor))
"#;

fn desc(dtype: DType, block: &[u32]) -> ArgInfo {
    ArgInfo::TensorDesc { dtype, aligned16: true, block: block.to_vec(), nan: false, shape_div16: vec![false, true] }
}

fn cx(v: i64) -> ArgInfo {
    ArgInfo::Constexpr(ConstValue::int(v))
}

fn build(kernel: &str, args: &[(&str, ArgInfo)]) -> Result<Compiled, String> {
    let file = parse_file("k.py", SRC).map_err(|d| d.render(&[file_src()]))?;
    let infos: Vec<(String, ArgInfo)> = args.iter().map(|(k, a)| (k.to_string(), a.clone())).collect();
    compile(&file, kernel, &infos, &CompileOptions::default())
        .map_err(|ds| ds.iter().map(|d| d.render(&file.source_files())).collect())
}

fn file_src() -> trident_ir::SourceFile {
    trident_ir::SourceFile { path: "k.py".into(), text: SRC.into() }
}

#[test]
fn a_host_descriptor_is_a_base_pointer_a_shape_and_the_strides_but_the_last() {
    let c = build(
        "from_host",
        &[
            ("x_desc", desc(DType::F16, &[16, 32])),
            ("y_desc", desc(DType::F16, &[16, 32])),
            ("BM", cx(16)),
            ("BN", cx(32)),
        ],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    trident_ir::verify_module(&c.module).expect("verifies");
    assert_eq!(c.params[0], ParamBinding::Descriptor { base: 0, shape: vec![1, 2], strides: vec![3] });
    assert_eq!(c.params[1], ParamBinding::Descriptor { base: 4, shape: vec![5, 6], strides: vec![7] });
    let f = c.module.func(&c.kernel).unwrap();
    assert_eq!(f.params.len(), 8);
    let ty = |i: usize| f.ty(f.params[i].value).clone();
    assert_eq!(ty(0), Type::Scalar(Elem::ptr(DType::F16)));
    assert_eq!(ty(1), Type::Scalar(Elem::Num(DType::I32)));
    assert_eq!(ty(3), Type::Scalar(Elem::Num(DType::I64)));
    // The base is 16-byte aligned; a stride is a multiple of 16 bytes: 8 f16 elements.
    assert_eq!(f.params[0].attrs.divisibility, Some(16));
    assert_eq!(f.params[1].attrs.divisibility, None);
    // A size that is a multiple of 16 is specialized as one (vectorizable bounds masks).
    assert_eq!(f.params[2].attrs.divisibility, Some(16));
    assert_eq!(f.params[3].attrs.divisibility, Some(8));
}

#[test]
fn isinstance_tells_a_pointer_from_a_descriptor() {
    let p = ArgInfo::Pointer { dtype: DType::F32, aligned16: true };
    build("pointer_is_not_a_descriptor", &[("x", p)]).unwrap_or_else(|e| panic!("{e}"));
}

/// Deterministic, non-zero, distinct values.
fn tensor(shape: &[usize], salt: u32) -> HostTensor {
    let n: usize = shape.iter().product();
    let vals: Vec<f64> = (0..n).map(|i| (((i as u32).wrapping_mul(2654435761) ^ salt) % 97) as f64 - 48.5).collect();
    HostTensor::from_f64(DType::F32, shape, &vals)
}

#[test]
fn the_kernel_computes_what_the_in_kernel_descriptor_computes() {
    let (m, n) = (40usize, 56usize); // ragged against 16 x 32 boxes
    let x = tensor(&[m, n], 7);
    let y0 = tensor(&[m, n], 99);
    let grid = [3, 2, 1];
    let opts = InterpOptions::default();

    let host = build(
        "from_host",
        &[
            ("x_desc", desc(DType::F32, &[16, 32])),
            ("y_desc", desc(DType::F32, &[16, 32])),
            ("BM", cx(16)),
            ("BN", cx(32)),
        ],
    )
    .unwrap();
    let mut args = vec![
        InterpArg::Tensor(x.clone()),
        InterpArg::i32(m as i32),
        InterpArg::i32(n as i32),
        InterpArg::i64(n as i64),
        InterpArg::Tensor(y0.clone()),
        InterpArg::i32(m as i32),
        InterpArg::i32(n as i32),
        InterpArg::i64(n as i64),
    ];
    launch(&host.module, &host.kernel, grid, &mut args, &opts).map_err(|e| e.render(&host.module)).unwrap();
    let InterpArg::Tensor(got) = &args[4] else { panic!() };

    let ptr = ArgInfo::Pointer { dtype: DType::F32, aligned16: true };
    let inner = build(
        "in_kernel",
        &[
            ("x", ptr.clone()),
            ("y", ptr),
            ("M", ArgInfo::Int(m as i64)),
            ("N", ArgInfo::Int(n as i64)),
            ("BM", cx(16)),
            ("BN", cx(32)),
        ],
    )
    .unwrap();
    let mut args2 = vec![
        InterpArg::Tensor(x.clone()),
        InterpArg::Tensor(y0.clone()),
        InterpArg::i32(m as i32),
        InterpArg::i32(n as i32),
    ];
    launch(&inner.module, &inner.kernel, grid, &mut args2, &opts).map_err(|e| e.render(&inner.module)).unwrap();
    let InterpArg::Tensor(want) = &args2[1] else { panic!() };
    assert_eq!(got.data, want.data);
    // And what that is: every element of y written, 3x + N.
    let (xs, ys) = (x.to_f64_vec(), got.to_f64_vec());
    assert!(xs.iter().zip(&ys).all(|(a, b)| *b == a * 3.0 + n as f64));
}

#[test]
fn descriptors_the_rules_forbid_are_errors_at_the_parameter() {
    let bad = |block: &[u32], dtype: DType| {
        build(
            "from_host",
            &[("x_desc", desc(dtype, block)), ("y_desc", desc(DType::F32, &[16, 32])), ("BM", cx(16)), ("BN", cx(32))],
        )
        .expect_err("refused")
    };
    let e = bad(&[16, 12], DType::F32);
    assert!(e.contains("x_desc") && e.contains("not a power of 2"), "{e}");
    let e = bad(&[16, 2], DType::F32);
    assert!(e.contains("at least 16 bytes"), "{e}");
    let e = bad(&[1, 1, 1, 1, 1, 16], DType::F32);
    assert!(e.contains("rank 1 to 5"), "{e}");
    let e = build(
        "from_host",
        &[
            ("x_desc", desc(DType::F32, &[16, 32])),
            ("y_desc", desc(DType::F32, &[16, 32])),
            ("BM", desc(DType::F32, &[16, 32])),
            ("BN", cx(32)),
        ],
    )
    .expect_err("refused");
    assert!(e.contains("`BM` is a tl.constexpr parameter but was given a tensor descriptor"), "{e}");
}
