//! Triton's tuple arguments through `launch`: a tuple of tensors and scalars given to a
//! parameter that is not a `tl.constexpr` runs element by element, and the tensors the
//! kernel wrote come back inside the caller's tuple — on the interpreter and the emulator;
//! on an error the tuple is left as it was.

mod common;

use common::*;
use trident_core::HostTensor;
use trident_runtime::args::{Arg, ArgValue, Backend};
use trident_runtime::launch::launch;
use trident_runtime::KernelProgram;

const SRC: &str = r#"import triton
import triton.language as tl


@triton.jit
def k(io, params, BLOCK: tl.constexpr):
    x, out = io
    n, scale = params
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=m) * scale, mask=m)
"#;

fn tensor_of(a: &Arg) -> &HostTensor {
    match &a.value {
        ArgValue::Tensor(t) => t,
        v => panic!("not a tensor: {v:?}"),
    }
}

#[test]
fn tensors_written_through_a_tuple_come_back_in_the_tuple() {
    let dir = TempDir::new("tuples");
    let path = dir.path().join("t.py");
    std::fs::write(&path, SRC).unwrap();
    let prog = KernelProgram::load(&path).unwrap();
    let kernel = prog.kernel(Some("k")).unwrap();
    let s = session(dir.path());
    for backend in [Backend::Interp, Backend::Emu] {
        let base = args(&["x=randn:f32:16", "out=empty:f32:16", "BLOCK=16"], seed());
        let (x, out) = (base[0].clone(), base[1].clone());
        let n = 13;
        let tuple = |name: &str, items: Vec<ArgValue>| Arg {
            name: name.into(),
            text: format!("{name}=(...)"),
            value: ArgValue::Tuple(items),
        };
        let mut a = vec![
            tuple("io", vec![x.value.clone(), out.value.clone()]),
            tuple("params", vec![ArgValue::Int(n), ArgValue::Float(2.5)]),
            base[2].clone(),
        ];
        launch(&prog, kernel, &mut a, &opts(&s, backend, "1")).unwrap_or_else(|e| panic!("{backend:?}: {e}"));
        let ArgValue::Tuple(io) = &a[0].value else { panic!("the tuple stays a tuple") };
        let got = tensor_of(&Arg { name: "out".into(), text: String::new(), value: io[1].clone() }).to_f64_vec();
        let want = tensor_of(&x).to_f64_vec();
        for i in 0..16 {
            if i < n as usize {
                assert_eq!(got[i], (want[i] as f32 * 2.5) as f64, "{backend:?} element {i}");
            } else {
                assert!(got[i].is_nan(), "{backend:?} element {i} untouched");
            }
        }
        // A failing launch (an element of the wrong kind) leaves the tuple as it was.
        let mut bad = vec![
            tuple("io", vec![x.value.clone(), out.value.clone()]),
            tuple("params", vec![ArgValue::Int(n), ArgValue::Str("no".into())]),
            base[2].clone(),
        ];
        let e = launch(&prog, kernel, &mut bad, &opts(&s, backend, "1")).unwrap_err();
        assert!(e.text.contains("params[1]"), "{e}");
        let ArgValue::Tuple(io) = &bad[0].value else { panic!() };
        let untouched = tensor_of(&Arg { name: "out".into(), text: String::new(), value: io[1].clone() }).to_f64_vec();
        assert!(untouched.iter().all(|v| v.is_nan()));
    }
}
