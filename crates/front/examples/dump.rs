//! Compiles one kernel and prints its tile IR: `cargo run -p trident-front --example dump -- FILE KERNEL NAME=VALUE...`
//! VALUE: `*f16` (pointer), `*f16:u` (unaligned pointer), an integer, a float (`1.5`), `True`/`False`,
//! `c:INT`, `c:FLOAT`, `c:True`, `c:str:TEXT`, `c:tl.float16` (constexprs).

use trident_front::{compile, parse_file, ArgInfo, CompileOptions, ConstValue};

fn parse_arg(v: &str) -> ArgInfo {
    if let Some(p) = v.strip_prefix('*') {
        let (d, aligned) = match p.strip_suffix(":u") {
            Some(d) => (d, false),
            None => (p, true),
        };
        return ArgInfo::Pointer { dtype: trident_core::DType::parse(d).expect("dtype"), aligned16: aligned };
    }
    if let Some(c) = v.strip_prefix("c:") {
        let cv = if let Some(s) = c.strip_prefix("str:") {
            ConstValue::Str(s.into())
        } else if let Some(d) = c.strip_prefix("tl.") {
            ConstValue::dtype(trident_core::DType::parse(d).expect("dtype"))
        } else if c == "True" || c == "False" {
            ConstValue::Bool(c == "True")
        } else if c == "None" {
            ConstValue::None
        } else if let Ok(i) = c.parse::<i64>() {
            ConstValue::int(i)
        } else {
            ConstValue::Float(c.parse().expect("number"))
        };
        return ArgInfo::Constexpr(cv);
    }
    if v == "True" || v == "False" {
        return ArgInfo::Bool(v == "True");
    }
    if let Ok(i) = v.parse::<i64>() {
        return ArgInfo::Int(i);
    }
    ArgInfo::Float(v.parse().expect("number"))
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let text = std::fs::read_to_string(&a[1]).expect("read");
    let file = match parse_file(&a[1], &text) {
        Ok(f) => f,
        Err(d) => {
            eprintln!("{}", d.render(&[trident_ir::SourceFile { path: a[1].clone(), text }]));
            std::process::exit(1);
        }
    };
    let args: Vec<(String, ArgInfo)> = a[3..]
        .iter()
        .map(|kv| {
            let (k, v) = kv.split_once('=').expect("NAME=VALUE");
            (k.to_string(), parse_arg(v))
        })
        .collect();
    let t = std::time::Instant::now();
    let r = compile(&file, &a[2], &args, &CompileOptions { debug: true, ..Default::default() });
    let dt = t.elapsed();
    match r {
        Ok(c) => {
            println!("{}", c.module);
            if let Err(errs) = trident_ir::verify_module(&c.module) {
                for e in errs {
                    eprintln!("VERIFY: {}", e.render(&c.module.files));
                }
            }
            for p in &c.static_prints {
                println!("static_print: {p}");
            }
            eprintln!("compiled in {dt:?}; params: {:?}", c.params);
        }
        Err(ds) => {
            let files = vec![file.source_file()];
            for d in ds {
                eprintln!("{}", d.render(&files));
            }
            std::process::exit(1);
        }
    }
}
