//! `dot`: block matrix multiply-accumulate, `acc + a @ b`, 2-D or batched 3-D.
//!
//! * f16/bf16/fp8 inputs are widened exactly to f32 and multiplied with
//!   `matrixmultiply`'s sgemm, accumulating in f32 on top of `acc`.
//! * f32 inputs: `precision = tf32` first rounds each input to tf32 (10 mantissa
//!   bits, nearest with ties away from zero, as `cvt.rna.tf32.f32`) like the
//!   tensor cores; `ieee` and `tf32x3` multiply the exact f32 values (tf32x3's
//!   three-pass split is meant to be ~exact f32).
//! * f64 inputs: dgemm.
//! * 8-bit integer inputs: exact integer products accumulated with wrap-around at
//!   the accumulator width (i32).
//! * A narrower accumulator (e.g. f16 `out_dtype`) is accumulated in f32 and rounded
//!   once to its type at the end of the op (the GPU's f16-accumulating MMA rounds
//!   more often; results can differ in the last bits).

use crate::error::Fault;
use crate::float::{round_slice, tf32_rna};
use crate::value::{wrap_all, Data, Tensor};
use trident_core::DType;
use trident_ir::{InputPrecision, Type};

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
            Ok(std::borrow::Cow::Owned(v.iter().map(|&x| tf32_rna(x)).collect()))
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
