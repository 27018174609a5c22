//! Compiling Triton source with the front end (and optionally the default tile-IR
//! pipeline) into a module plus launch arguments in IR parameter order.

use trident_core::{DType, HostTensor};
use trident_front::{compile, parse_file, ArgInfo, CompileOptions, ConstValue, ParamBinding};
use trident_interp::InterpArg;
use trident_ir::{Elem, Module};

/// A Python argument: a tensor, an int, a float, or a constexpr int.
pub enum A {
    T(HostTensor),
    I(i64),
    F(f64),
    C(i64),
}

pub struct Compiled {
    pub module: Module,
    pub kernel: String,
    pub args: Vec<InterpArg>,
    /// IR parameter index of each tensor argument, in the order given.
    pub tensor_slots: Vec<usize>,
}

pub fn compile_source(
    path: &str,
    src: &str,
    kernel: &str,
    args: Vec<(&str, A)>,
    debug: bool,
    optimize: bool,
) -> Compiled {
    compile_source_with(path, src, kernel, args, &CompileOptions { debug, ..Default::default() }, optimize)
}

/// As [`compile_source`], with the front end's options given.
pub fn compile_source_with(
    path: &str,
    src: &str,
    kernel: &str,
    args: Vec<(&str, A)>,
    opts: &CompileOptions,
    optimize: bool,
) -> Compiled {
    let file = parse_file(path, src).unwrap_or_else(|d| panic!("{d:?}"));
    let infos: Vec<(String, ArgInfo)> = args
        .iter()
        .map(|(n, a)| {
            let info = match a {
                A::T(t) => ArgInfo::Pointer { dtype: t.dtype, aligned16: true },
                A::I(v) => ArgInfo::Int(*v),
                A::F(v) => ArgInfo::Float(*v),
                A::C(v) => ArgInfo::Constexpr(ConstValue::int(*v)),
            };
            (n.to_string(), info)
        })
        .collect();
    let mut c = compile(&file, kernel, &infos, opts).unwrap_or_else(|d| panic!("{}", d[0].render(&[])));
    if optimize {
        trident_opt::default_tile_pipeline().run(&mut c.module).unwrap_or_else(|d| panic!("{}", d[0].render(&[])));
    }
    let f = c.module.func(&c.kernel).unwrap();
    let mut iargs: Vec<Option<InterpArg>> = vec![None; f.params.len()];
    let mut tensor_slots = vec![];
    for ((_, a), binding) in args.into_iter().zip(&c.params) {
        let ParamBinding::Runtime { ir_index } = binding else { continue };
        let ty = f.ty(f.params[*ir_index].value).elem();
        iargs[*ir_index] = Some(match (a, ty) {
            (A::T(t), _) => {
                tensor_slots.push(*ir_index);
                InterpArg::Tensor(t)
            }
            (A::I(v), Elem::Num(DType::I64)) => InterpArg::i64(v),
            (A::I(v), _) => InterpArg::i32(v as i32),
            (A::F(v), _) => InterpArg::f32(v as f32),
            (A::C(_), _) => unreachable!("constexprs are not runtime parameters"),
        });
    }
    let args = iargs.into_iter().map(|a| a.expect("every IR parameter bound")).collect();
    Compiled { kernel: c.kernel, module: c.module, args, tensor_slots }
}
