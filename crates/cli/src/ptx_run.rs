//! `trident run FILE.ptx::ENTRY`: run PTX directly, on the emulator or a CUDA device.
//!
//! ```text
//! trident run FILE.ptx::ENTRY --grid X[,Y[,Z]] --block T[,TY[,TZ]] [--shared BYTES]
//!             [--backend emu|cuda] [--seed N] [--save I=PATH.npy]... VALUE...
//! ```
//! VALUEs are positional, one per `.entry` parameter in order, with the forms of
//! `trident run` (`@x.npy`, `randn:f16:128x64`, scalars); a tensor is passed as a
//! device pointer and `0` as a null pointer; scalars are converted to the parameter's
//! PTX type. `--save I=PATH` writes the tensor given as parameter I (0-based).

use trident_core::HostTensor;
use trident_runtime::args::{parse_and_materialize, parse_grid, ArgValue};
use trident_runtime::{npy, Backend};

struct PtxRun {
    file: String,
    entry: Option<String>,
    grid: [u32; 3],
    block: [u32; 3],
    shared: u32,
    backend: Backend,
    seed: u64,
    saves: Vec<(usize, String)>,
    values: Vec<String>,
}

fn parse(words: &[String]) -> Result<PtxRun, String> {
    let mut r = PtxRun {
        file: String::new(),
        entry: None,
        grid: [0; 3],
        block: [0; 3],
        shared: 0,
        backend: Backend::Emu,
        seed: 0,
        saves: vec![],
        values: vec![],
    };
    let mut target = None;
    let mut it = words.iter();
    while let Some(w) = it.next() {
        if let Some(opt) = w.strip_prefix("--") {
            let (opt, v) = match opt.split_once('=') {
                Some((o, v)) => (o.to_string(), v.to_string()),
                None => (opt.to_string(), it.next().ok_or_else(|| format!("--{opt} needs a value"))?.clone()),
            };
            match opt.as_str() {
                "grid" => r.grid = parse_grid(&v).map_err(|e| e.to_string())?.dims(),
                "block" => {
                    r.block = parse_grid(&v).map_err(|e| e.to_string().replace("--grid", "--block"))?.dims();
                }
                "shared" => r.shared = v.parse().map_err(|_| format!("--shared: expected bytes, got `{v}`"))?,
                "seed" => r.seed = v.parse().map_err(|_| format!("--seed: expected an integer, got `{v}`"))?,
                "backend" => {
                    r.backend = match v.as_str() {
                        "emu" => Backend::Emu,
                        "cuda" => Backend::Cuda,
                        "auto" if trident_runtime::gpu::cuda_available() => Backend::Cuda,
                        "auto" => Backend::Emu,
                        _ => return Err(format!("--backend: PTX runs on emu or cuda, not `{v}`")),
                    }
                }
                "save" => {
                    let (i, p) = v.split_once('=').ok_or_else(|| format!("--save: expected I=PATH, got `{v}`"))?;
                    let i = i.parse().map_err(|_| format!("--save: `{i}` is not a parameter index"))?;
                    r.saves.push((i, p.to_string()));
                }
                _ => return Err(format!("unknown option --{opt}")),
            }
        } else if target.is_none() {
            target = Some(w.clone());
        } else {
            r.values.push(w.clone());
        }
    }
    let target = target.ok_or("no PTX file given")?;
    match target.split_once("::") {
        Some((f, e)) => {
            r.file = f.to_string();
            r.entry = Some(e.to_string()).filter(|e| !e.is_empty());
        }
        None => r.file = target,
    }
    if r.grid[0] == 0 {
        return Err("--grid is required".into());
    }
    if r.block[0] == 0 {
        return Err("--block is required for PTX".into());
    }
    Ok(r)
}

/// One materialised positional value.
enum Val {
    Tensor(HostTensor),
    Null,
    Bits(u64),
}

fn convert(i: usize, text: &str, p: &trident_emu::ParamType, seed: u64) -> Result<Val, String> {
    let arg = parse_and_materialize(&format!("p{i}={text}"), seed).map_err(|e| format!("parameter {i}: {e}"))?;
    let ty = p.name();
    let float = ty.starts_with('f');
    Ok(match arg.value {
        ArgValue::Tensor(t) if p.is_pointer || p.bytes == 8 => Val::Tensor(t),
        ArgValue::Tensor(_) => {
            return Err(format!("parameter {i} is `.{ty}`: a tensor needs a 64-bit pointer parameter"))
        }
        ArgValue::Int(0) if p.is_pointer => Val::Null,
        ArgValue::Int(x) if float => {
            Val::Bits(if p.bytes == 8 { (x as f64).to_bits() } else { (x as f32).to_bits() as u64 })
        }
        ArgValue::Int(x) => Val::Bits(x as u64),
        ArgValue::Float(x) if float => Val::Bits(if p.bytes == 8 { x.to_bits() } else { (x as f32).to_bits() as u64 }),
        ArgValue::Float(_) => return Err(format!("parameter {i} is `.{ty}`: give an integer, not `{text}`")),
        ArgValue::Bool(b) => Val::Bits(b as u64),
        ArgValue::None if p.is_pointer => Val::Null,
        ArgValue::Str(_) | ArgValue::DType(_) | ArgValue::None => {
            return Err(format!("parameter {i} is `.{ty}`: PTX parameters take numbers and tensors, not `{text}`"))
        }
    })
}

pub fn run(words: &[String]) -> Result<(), String> {
    let r = parse(words).map_err(|e| format!("error: {e}"))?;
    let text = std::fs::read_to_string(&r.file).map_err(|e| format!("error: cannot read `{}`: {e}", r.file))?;
    let module = trident_emu::Module::parse(&text).map_err(|e| format!("error: {e}"))?;
    let entry = match &r.entry {
        Some(e) => e.clone(),
        None => {
            let names: Vec<String> = module.entries().into_iter().map(str::to_string).collect();
            match names.as_slice() {
                [one] => one.clone(),
                _ => {
                    return Err(format!(
                        "error: {} has entries {}: name one as FILE.ptx::ENTRY",
                        r.file,
                        names.join(", ")
                    ))
                }
            }
        }
    };
    let params = module.entry_params(&entry).map_err(|e| format!("error: {e}"))?;
    if params.len() != r.values.len() {
        let sig: Vec<String> = params.iter().map(|p| p.name()).collect();
        return Err(format!(
            "error: `{entry}` takes {} parameters ({}), {} values given",
            params.len(),
            sig.join(", "),
            r.values.len()
        ));
    }
    let vals: Vec<Val> = r
        .values
        .iter()
        .zip(&params)
        .enumerate()
        .map(|(i, (v, p))| convert(i, v, p, r.seed))
        .collect::<Result<_, _>>()?;
    for (i, _) in &r.saves {
        if !matches!(vals.get(*i), Some(Val::Tensor(_))) {
            return Err(format!("error: --save {i}: parameter {i} is not a tensor"));
        }
    }
    let tensors: Vec<Option<HostTensor>> = match r.backend {
        Backend::Cuda => run_cuda(&text, &entry, &r, &params, &vals)?,
        _ => {
            let mut args: Vec<trident_emu::KernelArg> = vals
                .into_iter()
                .map(|v| match v {
                    Val::Tensor(t) => trident_emu::KernelArg::Buffer(t),
                    Val::Null => trident_emu::KernelArg::Null,
                    Val::Bits(b) => trident_emu::KernelArg::Scalar(b),
                })
                .collect();
            let cfg = trident_emu::LaunchConfig {
                grid: r.grid,
                block: r.block,
                dynamic_shared_bytes: r.shared,
                ..Default::default()
            };
            let rep = trident_emu::launch(&module, &entry, &cfg, &mut args).map_err(|e| format!("error: {e}"))?;
            print!("{}", rep.printf);
            eprintln!("ran {entry} on the emulator: {} modelled cycles", rep.cycles);
            args.into_iter()
                .map(|a| match a {
                    trident_emu::KernelArg::Buffer(t) => Some(t),
                    _ => None,
                })
                .collect()
        }
    };
    for (i, path) in &r.saves {
        let t = tensors[*i].as_ref().expect("checked above");
        npy::write(std::path::Path::new(path), t).map_err(|e| format!("error: --save {i}: {e}"))?;
    }
    Ok(())
}

fn run_cuda(
    text: &str,
    entry: &str,
    r: &PtxRun,
    params: &[trident_emu::ParamType],
    vals: &[Val],
) -> Result<Vec<Option<HostTensor>>, String> {
    use trident_cuda::{Device, DeviceBuffer, Param};
    let e = |x: trident_cuda::CudaError| format!("error: {x}");
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
            (Val::Null, _) => Param::DevicePtr(0),
            (Val::Bits(x), _) => match p.bytes {
                1 => Param::U8(*x as u8),
                2 => Param::U16(*x as u16),
                4 => Param::U32(*x as u32),
                _ => Param::U64(*x),
            },
            (Val::Tensor(_), None) => unreachable!("tensors have buffers"),
        })
        .collect();
    trident_cuda::launch(&kernel, r.grid, r.block, r.shared, &dev.default_stream(), &ps).map_err(e)?;
    dev.synchronize().map_err(e)?;
    vals.iter()
        .zip(&bufs)
        .map(|(v, b)| match (v, b) {
            (Val::Tensor(t), Some(buf)) => buf.to_host(t.dtype, &t.shape).map(Some).map_err(e),
            _ => Ok(None),
        })
        .collect()
}
