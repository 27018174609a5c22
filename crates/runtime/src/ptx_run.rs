//! Runs of PTX given by the user (`trident run FILE.ptx::ENTRY`), on the emulator or a
//! CUDA device: the PTX is not Trident's, so its parameters are read from the `.entry`
//! itself and the values given positionally, one per parameter.
//!
//! A tensor is passed as a device pointer (to a 64-bit parameter), `0` or `None` as a null
//! pointer, and a scalar converted to the parameter's PTX type by [`scalar_bits`] (the
//! conversion compiled kernels use too). `--save I=PATH` writes the tensor given as
//! parameter I (0-based) after the run; which parameters are tensors is checked first.

use trident_core::{DType, HostTensor};

use crate::args::{parse_and_materialize, ArgValue, Backend, PtxCommand};
use crate::error::RunError;
use crate::scalar::scalar_bits;

/// What a PTX run gives back.
#[derive(Debug)]
pub struct PtxOutcome {
    /// The entry that ran.
    pub entry: String,
    /// Where it ran: `Emu` or `Cuda`.
    pub backend: Backend,
    /// Device `printf` output (the emulator's; on CUDA it goes to stdout directly).
    pub printed: String,
    /// The emulator's modelled cycles (`None` on CUDA).
    pub cycles: Option<u64>,
    /// Each parameter after the run: the tensor, or `None` for scalars and null pointers.
    pub tensors: Vec<Option<HostTensor>>,
}

/// One positional value, materialised for its parameter.
enum Val {
    Tensor(HostTensor),
    Null,
    Bits(u64),
}

/// The dtype a scalar PTX parameter holds, for [`scalar_bits`]: floats by their PTX
/// type, everything else as an unsigned integer of the parameter's width.
fn param_dtype(i: usize, p: &trident_emu::ParamType) -> Result<DType, RunError> {
    use trident_emu::Ty;
    Ok(match (p.ty, p.bytes) {
        (Ty::F16, 2) => DType::F16,
        (Ty::BF16, 2) => DType::BF16,
        (Ty::F32 | Ty::TF32, 4) => DType::F32,
        (Ty::F64, 8) => DType::F64,
        (Ty::E4M3, 1) => DType::F8E4M3,
        (Ty::E5M2, 1) => DType::F8E5M2,
        (_, 1) => DType::U8,
        (_, 2) => DType::U16,
        (_, 4) => DType::U32,
        (_, 8) => DType::U64,
        (_, n) => {
            return Err(RunError::msg(format!(
                "parameter {i} is `.{}` ({n} bytes): PTX runs pass numbers and tensors",
                p.name()
            )))
        }
    })
}

fn convert(i: usize, text: &str, p: &trident_emu::ParamType, seed: u64) -> Result<Val, RunError> {
    let arg = parse_and_materialize(&format!("p{i}={text}"), seed)
        .map_err(|e| RunError::msg(format!("parameter {i}: {e}")))?;
    let ty = p.name();
    let is_float = p.is_float() && !p.is_pointer;
    Ok(match arg.value {
        ArgValue::Tensor(t) if p.is_pointer || p.bytes == 8 => Val::Tensor(t),
        ArgValue::Tensor(_) => {
            return Err(RunError::msg(format!("parameter {i} is `.{ty}`: a tensor needs a 64-bit pointer parameter")))
        }
        ArgValue::Int(0) | ArgValue::None if p.is_pointer => Val::Null,
        ArgValue::Float(_) if !is_float => {
            return Err(RunError::msg(format!("parameter {i} is `.{ty}`: give an integer, not `{text}`")))
        }
        v @ (ArgValue::Int(_) | ArgValue::Float(_) | ArgValue::Bool(_)) => {
            Val::Bits(scalar_bits(&v, param_dtype(i, p)?))
        }
        ArgValue::Str(_)
        | ArgValue::DType(_)
        | ArgValue::None
        | ArgValue::Tuple(_)
        | ArgValue::Device(_)
        | ArgValue::Descriptor(_) => {
            return Err(RunError::msg(format!(
                "parameter {i} is `.{ty}`: PTX parameters take numbers and tensors, not `{text}`"
            )))
        }
    })
}

/// A cubin parameter's value: the cubin says only each parameter's size, so an 8-byte one
/// takes a tensor (a pointer), `0`/`None` (null) or a 64-bit number (floats as f64), a 4-byte
/// one a 32-bit number (floats as f32), smaller ones integers.
fn convert_sized(i: usize, text: &str, bytes: u32, seed: u64) -> Result<Val, RunError> {
    let arg = parse_and_materialize(&format!("p{i}={text}"), seed)
        .map_err(|e| RunError::msg(format!("parameter {i}: {e}")))?;
    Ok(match (arg.value, bytes) {
        (ArgValue::Tensor(t), 8) => Val::Tensor(t),
        (ArgValue::Tensor(_), n) => {
            return Err(RunError::msg(format!("parameter {i} has {n} bytes: a tensor needs an 8-byte (pointer) one")))
        }
        (ArgValue::None, 8) => Val::Null,
        (ArgValue::Float(x), 4) => Val::Bits((x as f32).to_bits() as u64),
        (ArgValue::Float(x), 8) => Val::Bits(x.to_bits()),
        (v @ (ArgValue::Int(_) | ArgValue::Bool(_)), 1 | 2 | 4 | 8) => {
            let d = match bytes {
                1 => DType::U8,
                2 => DType::U16,
                4 => DType::U32,
                _ => DType::U64,
            };
            Val::Bits(scalar_bits(&v, d))
        }
        (_, n) => {
            return Err(RunError::msg(format!(
                "parameter {i} ({n} bytes): cubin runs pass numbers and tensors, not `{text}`"
            )))
        }
    })
}

/// An error unless `cmd` gives one value per parameter (`sig`: the parameters as shown).
fn check_count(cmd: &PtxCommand, entry: &str, sig: &[String]) -> Result<(), RunError> {
    if sig.len() == cmd.values.len() {
        return Ok(());
    }
    Err(RunError::msg(format!(
        "`{entry}` takes {} parameters ({}), {} values given",
        sig.len(),
        sig.join(", "),
        cmd.values.len()
    )))
}

/// An error unless every `--save` names a tensor.
fn check_saves(cmd: &PtxCommand, vals: &[Val]) -> Result<(), RunError> {
    for s in &cmd.saves {
        if !matches!(vals.get(s.index), Some(Val::Tensor(_))) {
            return Err(RunError::msg(format!("--save {0}: parameter {0} is not a tensor", s.index)));
        }
    }
    Ok(())
}

/// The values as the emulators' arguments.
fn kernel_args(vals: Vec<Val>) -> Vec<trident_emu::KernelArg> {
    vals.into_iter()
        .map(|v| match v {
            Val::Tensor(t) => trident_emu::KernelArg::Buffer(t),
            Val::Null => trident_emu::KernelArg::Null,
            Val::Bits(b) => trident_emu::KernelArg::Scalar(b),
        })
        .collect()
}

/// `trident run FILE.cubin[::KERNEL]`: the machine code on the SASS emulator (or, with
/// `--backend cuda`, on the device), values positional as for PTX.
fn run_cubin(cmd: &PtxCommand, file: &str) -> Result<PtxOutcome, RunError> {
    let bytes = std::fs::read(&cmd.file).map_err(|e| RunError::msg(format!("cannot read `{file}`: {e}")))?;
    let cubin = trident_sass::Cubin::parse(&bytes).map_err(|e| RunError::msg(format!("{file}: not a cubin: {e}")))?;
    let entry = match &cmd.entry {
        Some(e) => e.clone(),
        None => match cubin.kernels.as_slice() {
            [one] => one.name.clone(),
            ks => {
                let names: Vec<&str> = ks.iter().map(|k| k.name.as_str()).collect();
                return Err(RunError::msg(format!(
                    "{file} has kernels {}: name one as FILE.cubin::KERNEL",
                    names.join(", ")
                )));
            }
        },
    };
    let backend = match cmd.backend {
        Backend::Cuda => Backend::Cuda,
        Backend::Auto if crate::gpu::cuda_available() => Backend::Cuda,
        Backend::Auto | Backend::SassEmu => Backend::SassEmu,
        b => {
            return Err(RunError::msg(format!(
                "a cubin is machine code: it runs on --backend sass-emu or cuda, not {b:?}"
            )))
        }
    };
    if backend == Backend::Cuda {
        return Err(RunError::msg(
            "error: cubin runs on a CUDA device are not supported yet (--backend sass-emu, or run the PTX)",
        ));
    }
    let p = crate::sass_run::program_of_cubin(&bytes, &entry)?;
    let sizes: Vec<u32> = p.kernel.params.iter().map(|q| q.size).collect();
    check_count(cmd, &entry, &sizes.iter().map(|n| format!("{n} bytes")).collect::<Vec<_>>())?;
    let vals: Vec<Val> = cmd
        .values
        .iter()
        .zip(&sizes)
        .enumerate()
        .map(|(i, (v, &n))| convert_sized(i, v, n, cmd.seed))
        .collect::<Result<_, _>>()?;
    check_saves(cmd, &vals)?;
    let mut args = kernel_args(vals);
    let cfg = trident_sass_emu::LaunchConfig {
        grid: cmd.grid.dims(),
        block: cmd.block.dims(),
        dynamic_shared_bytes: cmd.shared,
        machine: crate::env::emu_machine().map_err(RunError::argument)?,
        ..Default::default()
    };
    let rep =
        trident_sass_emu::launch(&p, &cfg, &mut args).map_err(|e| RunError::msg(format!("error: sass-emu: {e}")))?;
    let tensors = crate::gpu::emulator_tensors(args);
    Ok(PtxOutcome { entry, backend, printed: String::new(), cycles: Some(rep.cycles), tensors })
}

/// Reads, checks and runs the PTX (or cubin) a command line names. Nothing is written to
/// disk: the caller saves [`PtxOutcome::tensors`] as `cmd.saves` asks.
pub fn run_ptx(cmd: &PtxCommand) -> Result<PtxOutcome, RunError> {
    let file = cmd.file.display().to_string();
    if file.ends_with(".cubin") {
        return run_cubin(cmd, &file);
    }
    let text = std::fs::read_to_string(&cmd.file).map_err(|e| RunError::msg(format!("cannot read `{file}`: {e}")))?;
    let module = trident_emu::Module::parse(&text).map_err(|e| RunError::msg(e.to_string()))?;
    let entry = match &cmd.entry {
        Some(e) => e.clone(),
        None => match module.entries().as_slice() {
            [one] => one.to_string(),
            names => {
                return Err(RunError::msg(format!(
                    "{file} has entries {}: name one as FILE.ptx::ENTRY",
                    names.join(", ")
                )))
            }
        },
    };
    let params = module.entry_params(&entry).map_err(|e| RunError::msg(e.to_string()))?;
    check_count(cmd, &entry, &params.iter().map(|p| p.name()).collect::<Vec<_>>())?;
    let vals: Vec<Val> = cmd
        .values
        .iter()
        .zip(&params)
        .enumerate()
        .map(|(i, (v, p))| convert(i, v, p, cmd.seed))
        .collect::<Result<_, _>>()?;
    check_saves(cmd, &vals)?;
    let backend = match cmd.backend {
        Backend::Auto if crate::gpu::cuda_available() => Backend::Cuda,
        Backend::Cuda => Backend::Cuda,
        Backend::SassEmu => Backend::SassEmu,
        _ => Backend::Emu,
    };
    if backend == Backend::Cuda {
        let tensors = run_cuda(&text, &entry, cmd, &params, &vals)?;
        return Ok(PtxOutcome { entry, backend, printed: String::new(), cycles: None, tensors });
    }
    let mut args = kernel_args(vals);
    if backend == Backend::SassEmu {
        // The PTX through ptxas for the architecture it names, the SASS on the SASS emulator.
        let arch = text.lines().find_map(|l| l.trim().strip_prefix(".target ")).unwrap_or("sm_80");
        let arch = arch.split(',').next().unwrap_or("sm_80").trim();
        let cubin = trident_gpu::tools::ptxas(&text, arch)
            .map_err(|e| RunError::msg(format!("error: --backend sass-emu needs ptxas: {e}")))?
            .cubin;
        let p = crate::sass_run::program_of_cubin(&cubin, &entry)?;
        let cfg = trident_sass_emu::LaunchConfig {
            grid: cmd.grid.dims(),
            block: cmd.block.dims(),
            dynamic_shared_bytes: cmd.shared,
            machine: crate::env::emu_machine().map_err(RunError::argument)?,
            ..Default::default()
        };
        let rep = trident_sass_emu::launch(&p, &cfg, &mut args)
            .map_err(|e| RunError::msg(format!("error: sass-emu: {e}")))?;
        let tensors = crate::gpu::emulator_tensors(args);
        return Ok(PtxOutcome { entry, backend, printed: String::new(), cycles: Some(rep.cycles), tensors });
    }
    let cfg = trident_emu::LaunchConfig {
        grid: cmd.grid.dims(),
        block: cmd.block.dims(),
        dynamic_shared_bytes: cmd.shared,
        machine: crate::env::emu_machine().map_err(RunError::argument)?.unwrap_or_default(),
        ..Default::default()
    };
    let rep = trident_emu::launch(&module, &entry, &cfg, &mut args).map_err(|e| RunError::msg(e.to_string()))?;
    let tensors = crate::gpu::emulator_tensors(args);
    Ok(PtxOutcome { entry, backend, printed: rep.printf, cycles: Some(rep.cycles), tensors })
}

fn run_cuda(
    text: &str,
    entry: &str,
    cmd: &PtxCommand,
    params: &[trident_emu::ParamType],
    vals: &[Val],
) -> Result<Vec<Option<HostTensor>>, RunError> {
    use trident_cuda::{Device, DeviceBuffer, Param};
    let e = |x: trident_cuda::CudaError| RunError::msg(x.to_string());
    let dev = Device::open(0).map_err(e)?;
    let module = trident_cuda::Module::load_ptx(&dev, text).map_err(e)?;
    let kernel = module.kernel(entry).map_err(e)?;
    let bufs: Vec<Option<DeviceBuffer>> = vals
        .iter()
        .map(|v| match v {
            Val::Tensor(t) => DeviceBuffer::from_host(&dev, t).map(Some),
            _ => Ok(None),
        })
        .collect::<Result<_, _>>()
        .map_err(e)?;
    let ps: Vec<Param> = vals
        .iter()
        .zip(&bufs)
        .zip(params)
        .map(|((v, b), p)| match (v, b) {
            (_, Some(buf)) => Param::Ptr(buf),
            (Val::Bits(x), _) => match p.bytes {
                1 => Param::U8(*x as u8),
                2 => Param::U16(*x as u16),
                4 => Param::U32(*x as u32),
                _ => Param::U64(*x),
            },
            // A null pointer (tensors always have a buffer).
            _ => Param::DevicePtr(0),
        })
        .collect();
    trident_cuda::launch(&kernel, cmd.grid.dims(), cmd.block.dims(), cmd.shared, &dev.default_stream(), &ps)
        .map_err(e)?;
    dev.synchronize().map_err(e)?;
    vals.iter()
        .zip(&bufs)
        .map(|(v, b)| match (v, b) {
            (Val::Tensor(t), Some(buf)) => buf.to_host(t.dtype, &t.shape).map(Some).map_err(e),
            _ => Ok(None),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{PtxSave, RunLine};

    fn vadd_line(extra: &[&str]) -> PtxCommand {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../emu/tests/data/vadd.ptx");
        let mut words = vec![path, "--grid", "4", "--block", "128"];
        words.extend_from_slice(extra);
        match RunLine::parse(&words).unwrap() {
            RunLine::Ptx(p) => p,
            RunLine::Kernel(_) => panic!("not a PTX line"),
        }
    }

    #[test]
    fn runs_ptx_on_the_emulator() {
        let cmd = vadd_line(&["ones:f32:500", "ones:f32:500", "empty:f32:500", "500", "0", "0", "--save", "2=o.npy"]);
        assert_eq!(cmd.saves, vec![PtxSave { index: 2, path: "o.npy".into() }]);
        let out = run_ptx(&cmd).unwrap();
        assert_eq!((out.backend, out.entry.as_str()), (Backend::Emu, "vadd"));
        assert!(out.cycles.is_some_and(|c| c > 0));
        let t = out.tensors[2].as_ref().unwrap();
        assert!(t.to_f64_vec().iter().all(|&v| v == 2.0));
        assert!(out.tensors[3].is_none());
    }

    #[test]
    fn bad_values_are_named_errors() {
        let err = |extra: &[&str]| run_ptx(&vadd_line(extra)).unwrap_err().text;
        assert!(err(&["ones:f32:10", "7"]).contains("takes 6 parameters"));
        let six = |p3: &'static str| ["ones:f32:8", "ones:f32:8", "empty:f32:8", p3, "0", "0"];
        assert!(err(&six("0.5")).contains("parameter 3 is `.u32`: give an integer"), "{}", err(&six("0.5")));
        assert!(err(&six("'s'")).contains("PTX parameters take numbers and tensors"));
        assert!(err(&six("zeros:f32:4")).contains("needs a 64-bit pointer parameter"));
        let mut saves = six("8").to_vec();
        saves.extend(["--save", "3=x.npy"]);
        assert!(err(&saves).contains("--save 3: parameter 3 is not a tensor"));
    }
}
