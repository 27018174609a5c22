//! Kernels compared with Triton's own interpreter: tests/data/oracle_kernels.py run by
//! tests/data/gen_oracle.py produced tests/data/oracle/*.txt (inputs and expected outputs).

mod common;
use common::*;
use trident_core::{DType, HostTensor};
use trident_front::ConstValue;

struct Case {
    kernel: String,
    grid: [u32; 3],
    args: Vec<(String, A)>,
    outs: Vec<(String, HostTensor, f64, f64)>,
}

fn parse_tensor(dtype: &str, shape: &str, lines: &mut std::str::Lines) -> HostTensor {
    let d = DType::parse(dtype).expect("dtype");
    let shape: Vec<usize> = shape.split('x').map(|s| s.parse().expect("dim")).collect();
    let mut t = HostTensor::zeros(d, &shape);
    let w = d.size_bytes();
    for i in 0..t.numel() {
        let bits = u64::from_str_radix(lines.next().expect("value").trim(), 16).expect("hex");
        t.data[i * w..(i + 1) * w].copy_from_slice(&bits.to_le_bytes()[..w]);
    }
    t
}

fn parse_case(text: &str) -> Case {
    let mut c = Case { kernel: String::new(), grid: [1, 1, 1], args: vec![], outs: vec![] };
    let mut lines = text.lines();
    while let Some(l) = lines.next() {
        let f: Vec<&str> = l.split_whitespace().collect();
        match f[0] {
            "kernel" => c.kernel = f[1].into(),
            "grid" => c.grid = [f[1].parse().unwrap(), f[2].parse().unwrap(), f[3].parse().unwrap()],
            "in" => {
                let t = parse_tensor(f[2], f[3], &mut lines);
                c.args.push((f[1].into(), A::T(t)));
            }
            "int" => c.args.push((f[1].into(), A::I(f[2].parse().unwrap()))),
            "float" => c.args.push((f[1].into(), A::F(f[2].parse().unwrap()))),
            "bool" => c.args.push((f[1].into(), A::B(f[2] == "True"))),
            "cint" => c.args.push((f[1].into(), A::C(ConstValue::Int(f[2].parse().unwrap())))),
            "cbool" => c.args.push((f[1].into(), A::C(ConstValue::Bool(f[2] == "True")))),
            "out" => {
                let t = parse_tensor(f[2], f[3], &mut lines);
                c.outs.push((f[1].into(), t, f[4].parse().unwrap(), f[5].parse().unwrap()));
            }
            other => panic!("bad line {other}"),
        }
    }
    c
}

fn check(name: &str) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
    let src = std::fs::read_to_string(format!("{dir}/oracle_kernels.py")).unwrap();
    let case = parse_case(&std::fs::read_to_string(format!("{dir}/oracle/{name}.txt")).unwrap());
    let args: Vec<(&str, A)> = case.args.iter().map(|(k, a)| (k.as_str(), a.clone())).collect();
    let out = run(&src, &case.kernel, &args, case.grid);
    for (o, want, rtol, atol) in &case.outs {
        let got = &out[o];
        for i in 0..want.numel() {
            let (g, w) = (got.get_f64(i), want.get_f64(i));
            let ok = if *rtol == 0.0 && *atol == 0.0 {
                got.get_bits(i) == want.get_bits(i) || (g.is_nan() && w.is_nan())
            } else {
                (g - w).abs() <= atol + rtol * w.abs() || (g.is_nan() && w.is_nan())
            };
            assert!(
                ok,
                "{name}: {o}[{i}]: Trident {g} (bits {:x}), Triton {w} (bits {:x})",
                got.get_bits(i),
                want.get_bits(i)
            );
        }
    }
}

macro_rules! oracle_tests {
    ($($t:ident => $f:literal),* $(,)?) => { $( #[test] fn $t() { check($f); } )* };
}

oracle_tests! {
    rand_seed_0 => "rand_0",
    rand_seed_12345 => "rand_12345",
    rand_negative_seed => "rand_281474976710649",
    rand_64bit_seed => "rand_1099511627781",
    randint4x => "rand4x",
    sort_flip_argmax_f32 => "sort_float32",
    sort_flip_argmax_i32 => "sort_int32",
    sort_flip_argmax_f16 => "sort_float16",
    sort_2d_and_max_with_indices => "sort2d",
    scans_and_custom_reduce => "scan",
    integer_division_and_shifts => "intdiv",
    float_mod_div_minmax_casts => "float",
    control_flow_loops_ifs_helpers => "control_3",
    control_flow_zero_trip_loops => "control_0",
    atomics => "atomic",
    join_split_interleave_permute_cat => "shape",
    dot_f16 => "dot",
    math_functions => "math",
}
