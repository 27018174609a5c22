//! Math functions as PTX instruction sequences.
//!
//! f32 functions follow Triton's choices: `exp`/`exp2`/`log`/`log2` use the hardware
//! approximations (`ex2.approx`, `lg2.approx`) with the ln2/log2(e) scaling, `sqrt`
//! and `rsqrt` the approximate instructions, `sqrt_rn` and division IEEE forms. The
//! libdevice-style functions (trigonometric, hyperbolic, inverse, error functions)
//! are written here as range reductions plus polynomials; their measured errors are
//! listed in the crate README. f16/bf16 compute in f32 and round once.

use super::emitter::{Emitter, Res};
use super::regs::{Reg, RegClass};
use trident_ir::{DType, Rounding, UnaryOp};

/// Numerical Recipes' `erfcc` coefficients: erfc(x) = t exp(-x^2 + P(t)), t = 1/(1 + x/2).
const ERFC_COEFFS: [f64; 10] = [
    -1.265_512_2,
    1.000_023_7,
    0.374_091_96,
    0.096_784_18,
    -0.186_288_06,
    0.278_868_07,
    -1.135_203_98,
    1.488_515_87,
    -0.822_152_23,
    0.170_872_77,
];

/// ln 2 rounded to 16 significant bits (k * LN2_HI is exact for |k| < 2^8).
const LN2_HI: f32 = f32::from_bits(0x3F31_7200);
/// log10(2) rounded to 13 significant bits.
const LOG10_2_HI: f32 = f32::from_bits(0x3E9A_2000);

/// f32 immediate in PTX's hexadecimal form.
pub fn f32_imm(v: f32) -> String {
    format!("0f{:08X}", v.to_bits())
}

pub fn f64_imm(v: f64) -> String {
    format!("0d{:016X}", v.to_bits())
}

impl Emitter<'_> {
    fn f(&mut self) -> Reg {
        self.new_reg(RegClass::B32)
    }

    fn p(&mut self) -> Reg {
        self.new_reg(RegClass::Pred)
    }

    /// `op.f32 d, a, b` into a fresh register.
    fn f2(&mut self, op: &str, a: impl std::fmt::Display, b: impl std::fmt::Display) -> Reg {
        let r = self.f();
        self.ins(format!("{op}.f32 {r}, {a}, {b}"));
        r
    }

    fn f1(&mut self, op: &str, a: impl std::fmt::Display) -> Reg {
        let r = self.f();
        self.ins(format!("{op}.f32 {r}, {a}"));
        r
    }

    fn fma3(&mut self, a: impl std::fmt::Display, b: impl std::fmt::Display, c: impl std::fmt::Display) -> Reg {
        let r = self.f();
        self.ins(format!("fma.rn.f32 {r}, {a}, {b}, {c}"));
        r
    }

    /// Horner evaluation of `c[0] + c[1] x + c[2] x^2 + ...`.
    fn poly(&mut self, x: Reg, c: &[f32]) -> Reg {
        let mut acc = self.f();
        let n = c.len();
        self.ins(format!("mov.b32 {acc}, {}", f32_imm(c[n - 1])));
        for &k in c[..n - 1].iter().rev() {
            acc = self.fma3(acc, x, f32_imm(k));
        }
        acc
    }

    pub fn float_unary(&mut self, op: UnaryOp, d: DType, a: Reg) -> Res<Reg> {
        use UnaryOp::*;
        let pred_result = matches!(op, IsNan | IsInf | IsFinite | Signbit);
        if d == DType::F64 {
            return self.f64_unary(op, a);
        }
        if d != DType::F32 {
            let x = self.widen_f32(d, a)?;
            let y = self.float_unary(op, DType::F32, x)?;
            return if pred_result { Ok(y) } else { self.narrow_f32(d, y, Rounding::Rtne) };
        }
        let x = a;
        Ok(match op {
            Neg => self.f1("neg", x),
            Abs => self.f1("abs", x),
            // `.ftz` as Triton: without it ptxas wraps every MUFU.EX2 in a range test and two
            // scaling multiplies to produce subnormal results (below 2^-126, flushed to 0 here).
            Exp => {
                let t = self.f2("mul", x, f32_imm(std::f32::consts::LOG2_E));
                self.f1("ex2.approx.ftz", t)
            }
            Exp2 => self.f1("ex2.approx.ftz", x),
            Exp10 => self.exp10_acc(x),
            // Accurate logarithms: `lg2.approx` has an absolute error of about 2^-22, which is
            // a huge relative error near 1.
            Log => self.log_dd(x).0,
            Log2 => self.log_scaled(x, std::f64::consts::LOG2_E),
            Log10 => self.log_scaled(x, std::f64::consts::LOG10_E),
            Sqrt => self.f1("sqrt.approx", x),
            SqrtRn => self.f1("sqrt.rn", x),
            Rsqrt => self.f1("rsqrt.approx", x),
            Floor => self.f1("cvt.rmi.f32", x),
            Ceil => self.f1("cvt.rpi.f32", x),
            Trunc => self.f1("cvt.rzi.f32", x),
            Rint => self.f1("cvt.rni.f32", x),
            Round => self.round_half_away(x),
            IsNan => {
                let p = self.p();
                self.ins(format!("setp.nan.f32 {p}, {x}, {x}"));
                p
            }
            IsInf | IsFinite => {
                let ab = self.f1("abs", x);
                let p = self.p();
                let c = if op == IsInf { "eq" } else { "lt" };
                self.ins(format!("setp.{c}.f32 {p}, {ab}, 0f7F800000"));
                p
            }
            Signbit => {
                let p = self.p();
                self.ins(format!("setp.lt.s32 {p}, {x}, 0"));
                p
            }
            Expm1 => self.expm1(x),
            Log1p => self.log1p(x),
            Sin | Cos | Tan => self.trig(op, x),
            Asin | Acos => self.asin_acos(op, x),
            Atan => self.atan(x),
            Sinh | Cosh | Tanh => self.hyperbolic(op, x),
            Asinh | Acosh | Atanh => self.inverse_hyperbolic(op, x),
            Erf | Erfc => self.erf(op, x),
            Cbrt => self.cbrt(x),
            Not | Popc | Clz => return Err(self.err(format!("`{}` is not supported on floats", op.name()))),
        })
    }

    fn round_half_away(&mut self, x: Reg) -> Reg {
        // t = trunc(|x|); t + 1 when the fraction is >= 0.5 (exact: |x| - t is exact).
        let ax = self.f1("abs", x);
        let t = self.f1("cvt.rzi.f32", ax);
        let fr = self.f2("sub", ax, t);
        let p = self.p();
        self.ins(format!("setp.ge.f32 {p}, {fr}, 0f3F000000"));
        let t1 = self.f2("add", t, "0f3F800000");
        let r = self.f();
        self.ins(format!("selp.f32 {r}, {t1}, {t}, {p}"));
        // Put the sign back (keeps -0.0 and NaN payloads sensible).
        let s = self.f();
        self.ins(format!("and.b32 {s}, {x}, 0x80000000"));
        let o = self.f();
        self.ins(format!("or.b32 {o}, {r}, {s}"));
        o
    }

    /// `k = rint(x / ln2)` (clamped so that 2^k scaling stays representable) and
    /// `r = x - k ln2` with ln2 in two parts (exact first product): |r| <= ln2/2.
    fn reduce_ln2(&mut self, x: Reg, lo: f32, hi: f32) -> (Reg, Reg) {
        let c1 = self.f2("max", x, f32_imm(lo));
        let c = self.f2("min", c1, f32_imm(hi));
        let t = self.f2("mul", c, f32_imm(std::f32::consts::LOG2_E));
        let k = self.f1("cvt.rni.f32", t);
        let r1 = self.fma3(k, f32_imm(-LN2_HI), c);
        let r = self.fma3(k, f32_imm(-1.428_606_765_330_187e-6_f64 as f32), r1);
        (k, r)
    }

    /// 2^k for an integral float k in [-126, 127] (exact, built from the exponent bits).
    fn pow2i(&mut self, k: Reg, extra: i32) -> Reg {
        let ki = self.new_reg(RegClass::B32);
        self.ins(format!("cvt.rzi.s32.f32 {ki}, {k}"));
        let b = self.new_reg(RegClass::B32);
        self.ins(format!("add.s32 {b}, {ki}, {}", 127 + extra));
        self.ins(format!("shl.b32 {b}, {b}, 23"));
        b
    }

    /// e^x * 2^scale to about one ulp on all of f32 (NaN, overflow to inf and underflow to 0
    /// included): Cody-Waite reduction, degree-7 Taylor polynomial, exact scaling in two halves.
    fn exp_core(&mut self, x: Reg, scale: i32) -> Reg {
        let (k, r) = self.reduce_ln2(x, -104.0, 89.0);
        let p = self.poly(r, &[1.0, 1.0, 0.5, 1.0 / 6.0, 1.0 / 24.0, 1.0 / 120.0, 1.0 / 720.0, 1.0 / 5040.0]);
        // k in [-150, 128]: 2^k = 2^(k/2) * 2^(k - k/2), both factors normal.
        self.times_pow2_keeping_nan(p, k, scale, x)
    }

    /// `p * 2^k` (times 2^`scale` inside `pow2i`) as two factors 2^(k/2) and 2^(k - k/2), both
    /// normal for k in [-150, 128]; NaN `x` passes through.
    fn times_pow2_keeping_nan(&mut self, p: Reg, k: Reg, scale: i32, x: Reg) -> Reg {
        let kh = self.f2("mul", k, "0f3F000000");
        let k1 = self.f1("cvt.rzi.f32", kh);
        let k2 = self.f2("sub", k, k1);
        let s1 = self.pow2i(k1, scale);
        let s2 = self.pow2i(k2, 0);
        let a = self.f2("mul", p, s1);
        let out = self.f2("mul", a, s2);
        let nan = self.p();
        self.ins(format!("setp.nan.f32 {nan}, {x}, {x}"));
        let r2 = self.f();
        self.ins(format!("selp.f32 {r2}, {x}, {out}, {nan}"));
        r2
    }

    /// 10^x = 2^k * e^(r ln10), k = rint(x log2(10)), r = x - k log10(2) in two parts.
    fn exp10_acc(&mut self, x: Reg) -> Reg {
        let c1 = self.f2("max", x, f32_imm(-46.0));
        let c = self.f2("min", c1, f32_imm(39.0));
        let t = self.f2("mul", c, f32_imm(std::f32::consts::LOG2_10));
        let k = self.f1("cvt.rni.f32", t);
        let r1 = self.fma3(k, f32_imm(-LOG10_2_HI), c);
        let r = self.fma3(k, f32_imm(-4.605_038_981_195_214e-6_f64 as f32), r1);
        let y = self.f2("mul", r, f32_imm(std::f32::consts::LN_10));
        let p = self
            .poly(y, &[1.0, 1.0, 0.5, 1.0 / 6.0, 1.0 / 24.0, 1.0 / 120.0, 1.0 / 720.0, 1.0 / 5040.0, 1.0 / 40320.0]);
        self.times_pow2_keeping_nan(p, k, 0, x)
    }

    /// e^x - 1 without cancellation: 2^k (e^r - 1) + (2^k - 1), e^r - 1 by its Taylor series.
    fn expm1(&mut self, x: Reg) -> Reg {
        let (k, r) = self.reduce_ln2(x, -100.0, 89.0);
        // e^r - 1 = r + r^2 (1/2 + r/6 + ...), |r| <= 0.35.
        let q = self.poly(
            r,
            &[0.5, 1.0 / 6.0, 1.0 / 24.0, 1.0 / 120.0, 1.0 / 720.0, 1.0 / 5040.0, 1.0 / 40320.0, 1.0 / 362_880.0],
        );
        let r2 = self.f2("mul", r, r);
        let em1 = self.fma3(r2, q, r);
        // 2^k with k in [-100, 128]: one factor (2^128 is inf, the right answer there).
        let s = self.pow2i(k, 0);
        let big = self.p();
        self.ins(format!("setp.ge.f32 {big}, {k}, 0f43000000"));
        self.ins(format!("@{big} mov.b32 {s}, 0f7F800000"));
        let sm1 = self.f2("sub", s, "0f3F800000");
        let out = self.fma3(s, em1, sm1);
        // Tiny |x|: x itself (keeps -0.0 and subnormals exact).
        let ax = self.f1("abs", x);
        let tiny = self.p();
        self.ins(format!("setp.lt.f32 {tiny}, {ax}, 0f33000000"));
        let nan = self.p();
        self.ins(format!("setp.nan.or.f32 {nan}, {x}, {x}, {tiny}"));
        let res = self.f();
        self.ins(format!("selp.f32 {res}, {x}, {out}, {nan}"));
        res
    }

    /// x = m 2^e for the logarithms, with m in [sqrt(1/2), sqrt(2)): returns (m, e as f32).
    /// Subnormals are scaled by 2^23 first (and e corrected by -23).
    fn split_log_argument(&mut self, x: Reg) -> (Reg, Reg) {
        let sub = self.p();
        self.ins(format!("setp.lt.f32 {sub}, {x}, 0f00800000"));
        let xs = self.f2("mul", x, "0f4B000000");
        let xx = self.f();
        self.ins(format!("selp.f32 {xx}, {xs}, {x}, {sub}"));
        // Subtracting the bits of sqrt(1/2) puts the exponent boundary at sqrt(1/2).
        let b = self.new_reg(RegClass::B32);
        self.ins(format!("sub.s32 {b}, {xx}, 0x3F3504F3"));
        let e = self.new_reg(RegClass::B32);
        self.ins(format!("shr.s32 {e}, {b}, 23"));
        let mb = self.new_reg(RegClass::B32);
        self.ins(format!("shl.b32 {mb}, {e}, 23"));
        self.ins(format!("sub.s32 {mb}, {xx}, {mb}"));
        let ef = self.f();
        self.ins(format!("cvt.rn.f32.s32 {ef}, {e}"));
        let adj = self.f();
        self.ins(format!("selp.f32 {adj}, 0fC1B80000, 0f00000000, {sub}"));
        (mb, self.f2("add", ef, adj))
    }

    /// Natural logarithm to about one ulp: x = m 2^e with m in [sqrt(1/2), sqrt(2)),
    /// log(m) = 2 atanh(s), s = (m-1)/(m+1), as an odd series in s.
    fn log_acc(&mut self, x: Reg) -> Reg {
        let (mb, ef2) = self.split_log_argument(x);
        let fm = self.f2("sub", mb, "0f3F800000");
        let den = self.f2("add", mb, "0f3F800000");
        let sv = self.f2("div.rn", fm, den);
        let z = self.f2("mul", sv, sv);
        // log(m) = f - s (f - 2 s P(z)) form: f - s*f + 2 s^3 (1/3 + z/5 + ...) computed as 2s + s z Q(z).
        let q = self.poly(z, &[2.0 / 3.0, 2.0 / 5.0, 2.0 / 7.0, 2.0 / 9.0, 2.0 / 11.0]);
        let sz = self.f2("mul", sv, z);
        let two_s = self.f2("add", sv, sv);
        let lm = self.fma3(sz, q, two_s);
        let hi = self.fma3(ef2, f32_imm(LN2_HI), lm);
        let res = self.fma3(ef2, f32_imm(1.428_606_765_330_187e-6_f64 as f32), hi);
        // Specials: 0 → -inf, negative → NaN, inf and NaN pass through.
        let out = self.f();
        let z0 = self.p();
        self.ins(format!("setp.eq.f32 {z0}, {x}, 0f00000000"));
        let neg = self.p();
        self.ins(format!("setp.lt.f32 {neg}, {x}, 0f00000000"));
        let spec = self.p();
        self.ins(format!("setp.nan.f32 {spec}, {x}, {x}"));
        let inf = self.p();
        self.ins(format!("setp.eq.or.f32 {inf}, {x}, 0f7F800000, {spec}"));
        self.ins(format!("selp.f32 {out}, {x}, {res}, {inf}"));
        self.ins(format!("@{z0} mov.b32 {out}, 0fFF800000"));
        self.ins(format!("@{neg} mov.b32 {out}, 0f7FFFFFFF"));
        out
    }

    /// log(x) for finite positive x as hi + lo with about 2^-40 relative error
    /// (for `pow`; zero, infinity and NaN give what `log_acc` gives in hi).
    fn log_dd(&mut self, x: Reg) -> (Reg, Reg) {
        let (mb, ef2) = self.split_log_argument(x);
        // f = m - 1 exactly; log(1+f) = f + c with c = -f^2/2 + s (f^2/2 + R), s = f/(2+f).
        let f = self.f2("sub", mb, "0f3F800000");
        let den = self.f2("add", f, "0f40000000");
        let sv = self.f2("div.rn", f, den);
        let z = self.f2("mul", sv, sv);
        let rr = self.poly(z, &[2.0 / 3.0, 2.0 / 5.0, 2.0 / 7.0, 2.0 / 9.0, 2.0 / 11.0]);
        let r = self.f2("mul", rr, z);
        let hfsq = self.f2("mul", f, f);
        let hf = self.f2("mul", hfsq, "0f3F000000");
        let inner = self.f2("add", hf, r);
        let nhf = self.f1("neg", hf);
        let c = self.fma3(sv, inner, nhf);
        // (hi, lo) = f + c, then + e*ln2 (ln2_hi*e exact).
        let h1 = self.f2("add", f, c);
        let d1 = self.f2("sub", f, h1);
        let l1 = self.f2("add", d1, c);
        let eh = self.f2("mul", ef2, f32_imm(LN2_HI));
        let h2 = self.f2("add", eh, h1);
        let d2 = self.f2("sub", h2, eh);
        let d3 = self.f2("sub", h1, d2);
        let l2 = self.f2("add", l1, d3);
        let l3 = self.fma3(ef2, f32_imm(1.428_606_765_330_187e-6_f64 as f32), l2);
        // Renormalise.
        let hi = self.f2("add", h2, l3);
        let d4 = self.f2("sub", h2, hi);
        let lo = self.f2("add", d4, l3);
        // Zero/inf/NaN: hi carries the special value (from the accurate log), lo is 0.
        let spec = self.p();
        let z0 = self.p();
        self.ins(format!("setp.eq.f32 {z0}, {x}, 0f00000000"));
        self.ins(format!("setp.eq.or.f32 {spec}, {x}, 0f7F800000, {z0}"));
        let nan = self.p();
        self.ins(format!("setp.nan.or.f32 {nan}, {x}, {x}, {spec}"));
        let sp = self.log_acc(x);
        let h = self.f();
        self.ins(format!("selp.f32 {h}, {sp}, {hi}, {nan}"));
        let l = self.f();
        self.ins(format!("selp.f32 {l}, 0f00000000, {lo}, {nan}"));
        (h, l)
    }

    /// `c * log(x)` with the product in double-f32 (exact results stay exact: log2(8) = 3).
    fn log_scaled(&mut self, x: Reg, c: f64) -> Reg {
        let (hi, lo) = self.log_dd(x);
        let ch = c as f32;
        let cl = (c - ch as f64) as f32;
        let p = self.f2("mul", hi, f32_imm(ch));
        let np = self.f1("neg", p);
        let pe = self.fma3(hi, f32_imm(ch), np);
        let t1 = self.fma3(lo, f32_imm(ch), pe);
        let t2 = self.fma3(hi, f32_imm(cl), t1);
        let r = self.f2("add", p, t2);
        // Specials (0, negatives, inf, NaN) come through hi unscaled-safe: p carries them.
        let fin = self.p();
        let ah = self.f1("abs", hi);
        self.ins(format!("setp.lt.f32 {fin}, {ah}, 0f7F800000"));
        let out = self.f();
        self.ins(format!("selp.f32 {out}, {r}, {p}, {fin}"));
        out
    }

    fn log1p(&mut self, x: Reg) -> Reg {
        // u = 1 + x; log1p(x) = log(u) * x / (u - 1) corrects the rounding of u (u != 1).
        let u = self.f2("add", x, "0f3F800000");
        let l = self.log_acc(u);
        let um1 = self.f2("sub", u, "0f3F800000");
        let q = self.f2("div.rn", x, um1);
        let corr = self.f2("mul", l, q);
        // u == 1: log1p(x) = x; u infinite: the log itself.
        let one = self.p();
        self.ins(format!("setp.eq.f32 {one}, {u}, 0f3F800000"));
        let inf = self.p();
        self.ins(format!("setp.eq.f32 {inf}, {u}, 0f7F800000"));
        let r = self.f();
        self.ins(format!("selp.f32 {r}, {x}, {corr}, {one}"));
        self.ins(format!("@{inf} mov.b32 {r}, {l}"));
        r
    }

    /// sin/cos/tan with a three-constant Cody-Waite reduction by pi/2 and minimax
    /// polynomials on [-pi/4, pi/4].
    fn trig(&mut self, op: UnaryOp, x: Reg) -> Reg {
        // k = rint(x * 2/pi); r = x - k*pi/2 in f64 with pi/2 as two doubles. An f32
        // Cody-Waite split rounds its middle step at the size of k*pi/2's third part, which
        // near a zero of sin (x ~ 8598.54 = 2737 pi) left errors of 5 ulp; here the first
        // fma is exact up to one rounding of a result below pi/4, the second adds ~1e-16 k.
        let t = self.f2("mul", x, f32_imm(std::f32::consts::FRAC_2_PI));
        let k = self.f1("cvt.rni.f32", t);
        let (xd, kd, r1, rd) = (
            self.new_reg(RegClass::B64),
            self.new_reg(RegClass::B64),
            self.new_reg(RegClass::B64),
            self.new_reg(RegClass::B64),
        );
        self.ins(format!("cvt.f64.f32 {xd}, {x}"));
        self.ins(format!("cvt.f64.f32 {kd}, {k}"));
        self.ins(format!("fma.rn.f64 {r1}, {kd}, {}, {xd}", f64_imm(-std::f64::consts::FRAC_PI_2)));
        // pi/2 - f64(pi/2).
        self.ins(format!("fma.rn.f64 {rd}, {kd}, {}, {r1}", f64_imm(-6.123_233_995_736_766e-17)));
        let r = self.f();
        self.ins(format!("cvt.rn.f32.f64 {r}, {rd}"));
        let q = self.new_reg(RegClass::B32);
        self.ins(format!("cvt.rni.s32.f32 {q}, {t}"));
        let r2v = self.f2("mul", r, r);
        // sin(r) = r + r^3 (s1 + s2 r^2 + s3 r^4 + s4 r^6), cos(r) = 1 - r^2/2 + r^4 (c1 + c2 r^2 + c3 r^4)
        let ps = self.poly(r2v, &[-1.666_666_6e-1, 8.333_331e-3, -1.984_087e-4, 2.752_6e-6]);
        let r3 = self.f2("mul", r2v, r);
        let sin_r = self.fma3(ps, r3, r);
        let pc = self.poly(r2v, &[4.166_666_4e-2, -1.388_883_6e-3, 2.480_149e-5, -2.726_6e-7]);
        let r4 = self.f2("mul", r2v, r2v);
        let half = self.fma3(r2v, f32_imm(-0.5), "0f3F800000");
        let cos_r = self.fma3(pc, r4, half);
        // Quadrant: sin(x) = [sin r, cos r, -sin r, -cos r][q & 3]; cos(x) = sin(x + pi/2).
        let qq = self.new_reg(RegClass::B32);
        if op == UnaryOp::Cos {
            self.ins(format!("add.s32 {qq}, {q}, 1"));
        } else {
            self.ins(format!("mov.b32 {qq}, {q}"));
        }
        let odd = self.p();
        let b = self.new_reg(RegClass::B32);
        self.ins(format!("and.b32 {b}, {qq}, 1"));
        self.ins(format!("setp.ne.u32 {odd}, {b}, 0"));
        let neg = self.p();
        let b2 = self.new_reg(RegClass::B32);
        self.ins(format!("and.b32 {b2}, {qq}, 2"));
        self.ins(format!("setp.ne.u32 {neg}, {b2}, 0"));
        if op == UnaryOp::Tan {
            // tan = sin/cos, with the odd quadrants swapping to -cos/sin.
            let num = self.f();
            let den = self.f();
            self.ins(format!("selp.f32 {num}, {cos_r}, {sin_r}, {odd}"));
            self.ins(format!("selp.f32 {den}, {sin_r}, {cos_r}, {odd}"));
            let v = self.f2("div.rn", num, den);
            let nv = self.f1("neg", v);
            let out = self.f();
            self.ins(format!("selp.f32 {out}, {nv}, {v}, {odd}"));
            return out;
        }
        let v = self.f();
        self.ins(format!("selp.f32 {v}, {cos_r}, {sin_r}, {odd}"));
        let nv = self.f1("neg", v);
        let out = self.f();
        self.ins(format!("selp.f32 {out}, {nv}, {v}, {neg}"));
        out
    }

    /// atan on all of f32: reduce |x| to [0, 1] by 1/x, then to [0, tan(pi/12)]-ish with
    /// the classic two-range split, then an odd polynomial.
    fn atan(&mut self, x: Reg) -> Reg {
        let ax = self.f1("abs", x);
        let big = self.p();
        self.ins(format!("setp.gt.f32 {big}, {ax}, 0f3F800000"));
        let inv = self.f2("div.rn", "0f3F800000", ax);
        let y = self.f();
        self.ins(format!("selp.f32 {y}, {inv}, {ax}, {big}"));
        // y in [0, 1]: atan(y) = pi/4 + atan((y-1)/(y+1)) when y > tan(pi/8).
        let mid = self.p();
        self.ins(format!("setp.gt.f32 {mid}, {y}, {}", f32_imm(0.414_213_57)));
        let ym = self.f2("sub", y, "0f3F800000");
        let yp = self.f2("add", y, "0f3F800000");
        let z1 = self.f2("div.rn", ym, yp);
        let z = self.f();
        self.ins(format!("selp.f32 {z}, {z1}, {y}, {mid}"));
        let z2 = self.f2("mul", z, z);
        let p = self.poly(z2, &[-3.333_295e-1, 1.997_771_1e-1, -1.387_768_9e-1, 8.053_744_5e-2]);
        let z3 = self.f2("mul", z2, z);
        let at = self.fma3(p, z3, z);
        let off = self.f();
        self.ins(format!("selp.f32 {off}, {}, 0f00000000, {mid}", f32_imm(std::f32::consts::FRAC_PI_4)));
        let a1 = self.f2("add", at, off);
        let a2 = self.f2("sub", f32_imm(std::f32::consts::FRAC_PI_2), a1);
        let a = self.f();
        self.ins(format!("selp.f32 {a}, {a2}, {a1}, {big}"));
        self.copysign(a, x)
    }

    fn copysign(&mut self, mag: Reg, sign: Reg) -> Reg {
        let s = self.f();
        self.ins(format!("and.b32 {s}, {sign}, 0x80000000"));
        let m = self.f();
        self.ins(format!("and.b32 {m}, {mag}, 0x7FFFFFFF"));
        let o = self.f();
        self.ins(format!("or.b32 {o}, {m}, {s}"));
        o
    }

    fn asin_acos(&mut self, op: UnaryOp, x: Reg) -> Reg {
        // asin(x) = atan2(x, sqrt((1-x)(1+x))); acos(x) = atan2(sqrt((1-x)(1+x)), x).
        let om = self.f2("sub", "0f3F800000", x);
        let op_ = self.f2("add", "0f3F800000", x);
        let prod = self.f2("mul", om, op_);
        let s = self.f1("sqrt.rn", prod);
        if op == UnaryOp::Asin {
            self.atan2_f32(x, s)
        } else {
            self.atan2_f32(s, x)
        }
    }

    fn atan2_f32(&mut self, y: Reg, x: Reg) -> Reg {
        // atan(y/x) corrected by quadrant; x == 0 and infinities handled by the division's inf/nan.
        let q = self.f2("div.rn", y, x);
        let a = self.atan(q);
        let xneg = self.p();
        self.ins(format!("setp.lt.f32 {xneg}, {x}, 0f00000000"));
        // Also x == -0.0 counts as negative for atan2.
        let xsign = self.p();
        self.ins(format!("setp.lt.s32 {xsign}, {x}, 0"));
        let ypi = self.copysign_imm(std::f32::consts::PI, y);
        let a2 = self.f2("add", a, ypi);
        let r = self.f();
        self.ins(format!("selp.f32 {r}, {a2}, {a}, {xsign}"));
        let _ = xneg;
        // Both zero: atan2(+-0, +0) = +-0, atan2(+-0, -0) = +-pi.
        let yz = self.p();
        self.ins(format!("setp.eq.f32 {yz}, {y}, 0f00000000"));
        let zero_res = self.f();
        let signed_zero = self.copysign_imm(0.0, y);
        self.ins(format!("selp.f32 {zero_res}, {ypi}, {signed_zero}, {xsign}"));
        let out = self.f();
        self.ins(format!("selp.f32 {out}, {zero_res}, {r}, {yz}"));
        // Both infinite: +-pi/4 or +-3pi/4.
        let ay = self.f1("abs", y);
        let ax = self.f1("abs", x);
        let yi = self.p();
        let xi = self.p();
        self.ins(format!("setp.eq.f32 {yi}, {ay}, 0f7F800000"));
        self.ins(format!("setp.eq.f32 {xi}, {ax}, 0f7F800000"));
        let both = self.p();
        self.ins(format!("and.pred {both}, {yi}, {xi}"));
        let qi = self.f();
        self.ins(format!(
            "selp.f32 {qi}, {}, {}, {xsign}",
            f32_imm(3.0 * std::f32::consts::FRAC_PI_4),
            f32_imm(std::f32::consts::FRAC_PI_4)
        ));
        let qs = self.copysign(qi, y);
        let fin = self.f();
        self.ins(format!("selp.f32 {fin}, {qs}, {out}, {both}"));
        fin
    }

    fn copysign_imm(&mut self, v: f32, sign: Reg) -> Reg {
        let m = self.f();
        self.ins(format!("mov.b32 {m}, {}", f32_imm(v)));
        self.copysign(m, sign)
    }

    fn hyperbolic(&mut self, op: UnaryOp, x: Reg) -> Reg {
        let ax = self.f1("abs", x);
        match op {
            UnaryOp::Tanh => {
                // tanh(x) = -expm1(-2|x|) / (expm1(-2|x|) + 2), sign restored.
                let m2 = self.f2("mul", ax, "0fC0000000");
                let e = self.expm1(m2);
                let den = self.f2("add", e, "0f40000000");
                let ne = self.f1("neg", e);
                let t = self.f2("div.rn", ne, den);
                self.copysign(t, x)
            }
            _ => {
                // Large |x|: e^|x| / 2 (e^-|x| is below half an ulp) computed with the scale folded in.
                let big = self.exp_core(ax, -1);
                let small = if op == UnaryOp::Sinh {
                    // sinh = (u + u/(u+1)) / 2, u = expm1(|x|).
                    let u = self.expm1(ax);
                    let u1 = self.f2("add", u, "0f3F800000");
                    let q = self.f2("div.rn", u, u1);
                    let s = self.f2("add", u, q);
                    self.f2("mul", s, "0f3F000000")
                } else {
                    // cosh = (e + 1/e) / 2.
                    let e = self.exp_core(ax, 0);
                    let inv = self.f2("div.rn", "0f3F800000", e);
                    let s = self.f2("add", e, inv);
                    self.f2("mul", s, "0f3F000000")
                };
                let p = self.p();
                self.ins(format!("setp.gt.f32 {p}, {ax}, 0f41100000"));
                let r = self.f();
                self.ins(format!("selp.f32 {r}, {big}, {small}, {p}"));
                if op == UnaryOp::Sinh {
                    self.copysign(r, x)
                } else {
                    r
                }
            }
        }
    }

    fn inverse_hyperbolic(&mut self, op: UnaryOp, x: Reg) -> Reg {
        match op {
            UnaryOp::Asinh => {
                // asinh(x) = sign * log1p(|x| + x^2 / (1 + sqrt(1 + x^2))).
                let ax = self.f1("abs", x);
                let x2 = self.f2("mul", ax, ax);
                let s = self.f2("add", x2, "0f3F800000");
                let r = self.f1("sqrt.rn", s);
                let d = self.f2("add", r, "0f3F800000");
                let q = self.f2("div.rn", x2, d);
                let a = self.f2("add", ax, q);
                let l = self.log1p(a);
                self.copysign(l, x)
            }
            UnaryOp::Acosh => {
                // acosh(x) = log1p(t + sqrt(2t + t^2)), t = x - 1.
                let t = self.f2("sub", x, "0f3F800000");
                let t2 = self.f2("mul", t, t);
                let s = self.fma3(t, "0f40000000", t2);
                let r = self.f1("sqrt.rn", s);
                let a = self.f2("add", t, r);
                self.log1p(a)
            }
            _ => {
                // atanh(|x|) = 0.5 * log1p(2|x| / (1 - |x|)) (no cancellation for x >= 0), sign restored.
                let ax = self.f1("abs", x);
                let om = self.f2("sub", "0f3F800000", ax);
                let tx = self.f2("add", ax, ax);
                let q = self.f2("div.rn", tx, om);
                let l = self.log1p(q);
                let h = self.f2("mul", l, "0f3F000000");
                self.copysign(h, x)
            }
        }
    }

    fn erf(&mut self, op: UnaryOp, x: Reg) -> Reg {
        // |x| < 0.84375: erf(x) = x + x*P(x^2) (odd series, truncated Taylor to degree 15).
        // Otherwise erfc(|x|) = exp(-x^2) * R(|x|) from a rational fit in t = 1/(1 + 0.5|x|)
        // (Numerical Recipes' erfcc form, relative error ~1.2e-7).
        let ax = self.f1("abs", x);
        let x2 = self.f2("mul", x, x);
        let c: Vec<f32> = {
            // erf(x)/x = 2/sqrt(pi) * sum (-1)^n x^(2n) / (n! (2n+1))
            let mut v = vec![];
            let mut fact = 1.0f64;
            for n in 0..9 {
                if n > 0 {
                    fact *= n as f64;
                }
                let term = (if n % 2 == 0 { 1.0 } else { -1.0 }) / (fact * (2 * n + 1) as f64);
                v.push((term * std::f64::consts::FRAC_2_SQRT_PI) as f32);
            }
            v
        };
        let ps = self.poly(x2, &c);
        let small_erf = self.f2("mul", ps, x);
        let t0 = self.fma3(ax, "0f3F000000", "0f3F800000");
        let t = self.f2("div.rn", "0f3F800000", t0);
        let r = self.poly(t, &ERFC_COEFFS.map(|c: f64| c as f32));
        // exp(-x^2 + R) with x^2 = hi + lo exactly: exp(-hi) * exp(R - lo), each accurate.
        let lo = self.new_reg(RegClass::B32);
        let nx2 = self.f1("neg", x2);
        self.ins(format!("fma.rn.f32 {lo}, {x}, {x}, {nx2}"));
        let e1 = self.exp_core(nx2, 0);
        let rl = self.f2("sub", r, lo);
        let e2 = self.exp_core(rl, 0);
        let ex = self.f2("mul", e1, e2);
        let erfc_big = self.f2("mul", t, ex);
        let small = self.p();
        self.ins(format!("setp.lt.f32 {small}, {ax}, {}", f32_imm(0.84375)));
        let xneg = self.p();
        self.ins(format!("setp.lt.f32 {xneg}, {x}, 0f00000000"));
        if op == UnaryOp::Erf {
            let one_minus = self.f2("sub", "0f3F800000", erfc_big);
            let big_erf = self.copysign(one_minus, x);
            let r = self.f();
            self.ins(format!("selp.f32 {r}, {small_erf}, {big_erf}, {small}"));
            r
        } else {
            // erfc(x) = 1 - erf(x) near 0; erfc(-|x|) = 2 - erfc(|x|).
            let near = self.f2("sub", "0f3F800000", small_erf);
            let neg_big = self.f2("sub", "0f40000000", erfc_big);
            let big = self.f();
            self.ins(format!("selp.f32 {big}, {neg_big}, {erfc_big}, {xneg}"));
            let r = self.f();
            self.ins(format!("selp.f32 {r}, {near}, {big}, {small}"));
            r
        }
    }

    fn cbrt(&mut self, x: Reg) -> Reg {
        // y = 2^(log2|x| / 3), then one Newton step y -= (y - |x|/y^2) / 3.
        let ax = self.f1("abs", x);
        let l = self.f1("lg2.approx", ax);
        let l3 = self.f2("mul", l, f32_imm(1.0 / 3.0));
        let y = self.f1("ex2.approx", l3);
        let y2 = self.f2("mul", y, y);
        let q = self.f2("div.rn", ax, y2);
        let dlt = self.f2("sub", y, q);
        let y1 = self.fma3(dlt, f32_imm(-1.0 / 3.0), y);
        // Zero and infinity pass through (the Newton step would give NaN).
        let special = self.p();
        let z = self.p();
        self.ins(format!("setp.eq.f32 {z}, {ax}, 0f00000000"));
        self.ins(format!("setp.eq.or.f32 {special}, {ax}, 0f7F800000, {z}"));
        let r = self.f();
        self.ins(format!("selp.f32 {r}, {ax}, {y1}, {special}"));
        self.copysign(r, x)
    }

    pub fn fmod(&mut self, d: DType, a: Reg, b: Reg) -> Res<Reg> {
        if d == DType::F64 {
            return Ok(self.fmod_f64(a, b));
        }
        if d != DType::F32 {
            let x = self.widen_f32(d, a)?;
            let y = self.widen_f32(d, b)?;
            let r = self.fmod(DType::F32, x, y)?;
            return self.narrow_f32(d, r, Rounding::Rtne);
        }
        // a - trunc(a/b)*b (as LLVM expands frem), fused for one rounding.
        let q = self.f2("div.rn", a, b);
        let t = self.f1("cvt.rzi.f32", q);
        let nt = self.f1("neg", t);
        let r = self.fma3(nt, b, a);
        // Keep the sign of the dividend for zero results.
        Ok(self.copysign(r, a))
    }

    pub fn pow(&mut self, d: DType, a: Reg, b: Reg) -> Res<Reg> {
        if d == DType::F64 {
            return Ok(self.pow_f64(a, b));
        }
        if d != DType::F32 {
            let x = self.widen_f32(d, a)?;
            let y = self.widen_f32(d, b)?;
            let r = self.pow(DType::F32, x, y)?;
            return self.narrow_f32(d, r, Rounding::Rtne);
        }
        // |a|^b = e^(b log|a|) with log|a| as a double-f32 (hi + lo) and the product split
        // exactly; negative a with an odd integer b flips the sign; negative a with a
        // non-integer b is NaN; a^0 = 1.
        let ax = self.f1("abs", a);
        let (lh, ll) = self.log_dd(ax);
        let th = self.f2("mul", b, lh);
        let nth = self.f1("neg", th);
        let te = self.fma3(b, lh, nth);
        let tl = self.fma3(b, ll, te);
        let er = self.exp_core(th, 0);
        let m0 = self.fma3(er, tl, er);
        // Overflow/underflow and infinities: the plain exponential of the rounded product.
        let fin = self.p();
        let ath = self.f1("abs", th);
        self.ins(format!("setp.lt.f32 {fin}, {ath}, 0f42B00000"));
        let m = self.f();
        self.ins(format!("selp.f32 {m}, {m0}, {er}, {fin}"));
        let bi = self.f1("cvt.rzi.f32", b);
        let is_int = self.p();
        self.ins(format!("setp.eq.f32 {is_int}, {bi}, {b}"));
        let half = self.f2("mul", b, "0f3F000000");
        let hi = self.f1("cvt.rzi.f32", half);
        let even = self.p();
        self.ins(format!("setp.eq.f32 {even}, {hi}, {half}"));
        let aneg = self.p();
        self.ins(format!("setp.lt.f32 {aneg}, {a}, 0f00000000"));
        let nm = self.f1("neg", m);
        let odd_neg = self.p();
        self.ins(format!("and.pred {odd_neg}, {aneg}, !{even}"));
        let r1 = self.f();
        self.ins(format!("selp.f32 {r1}, {nm}, {m}, {odd_neg}"));
        let bad = self.p();
        self.ins(format!("and.pred {bad}, {aneg}, !{is_int}"));
        let r2 = self.f();
        self.ins(format!("selp.f32 {r2}, 0f7FFFFFFF, {r1}, {bad}"));
        let b0 = self.p();
        self.ins(format!("setp.eq.f32 {b0}, {b}, 0f00000000"));
        let r3 = self.f();
        self.ins(format!("selp.f32 {r3}, 0f3F800000, {r2}, {b0}"));
        Ok(r3)
    }

    pub fn atan2(&mut self, d: DType, a: Reg, b: Reg) -> Res<Reg> {
        if d == DType::F64 {
            return Ok(self.atan2_f64(a, b));
        }
        if d != DType::F32 {
            let x = self.widen_f32(d, a)?;
            let y = self.widen_f32(d, b)?;
            let r = self.atan2(DType::F32, x, y)?;
            return self.narrow_f32(d, r, Rounding::Rtne);
        }
        Ok(self.atan2_f32(a, b))
    }

    pub fn hypot(&mut self, d: DType, a: Reg, b: Reg) -> Res<Reg> {
        if d == DType::F64 {
            return Ok(self.hypot_f64(a, b));
        }
        if d != DType::F32 {
            let x = self.widen_f32(d, a)?;
            let y = self.widen_f32(d, b)?;
            let r = self.hypot(DType::F32, x, y)?;
            return self.narrow_f32(d, r, Rounding::Rtne);
        }
        // sqrt(a² + b²) in f64, rounded once to f32: no f32 input can overflow or underflow
        // it there, and the result is within 0.5 ulp plus a double rounding (the f32
        // formula m·√(1+(n/m)²) collected four roundings: up to ~2 ulp, which random tests
        // occasionally saw exceed its stated bound).
        let aa = self.f1("abs", a);
        let ab = self.f1("abs", b);
        let m = self.f2("max", aa, ab);
        let (ad, bd, sq, rd) = (
            self.new_reg(RegClass::B64),
            self.new_reg(RegClass::B64),
            self.new_reg(RegClass::B64),
            self.new_reg(RegClass::B64),
        );
        self.ins(format!("cvt.f64.f32 {ad}, {a}"));
        self.ins(format!("cvt.f64.f32 {bd}, {b}"));
        let aa2 = self.new_reg(RegClass::B64);
        self.ins(format!("mul.rn.f64 {aa2}, {ad}, {ad}"));
        self.ins(format!("fma.rn.f64 {sq}, {bd}, {bd}, {aa2}"));
        self.ins(format!("sqrt.rn.f64 {rd}, {sq}"));
        let h = self.f();
        self.ins(format!("cvt.rn.f32.f64 {h}, {rd}"));
        // An infinite operand gives inf even with a NaN (`max` ignores the NaN).
        let inf = self.p();
        self.ins(format!("setp.eq.f32 {inf}, {m}, 0f7F800000"));
        let out = self.f();
        self.ins(format!("selp.f32 {out}, 0f7F800000, {h}, {inf}"));
        Ok(out)
    }

    fn f64_unary(&mut self, op: UnaryOp, x: Reg) -> Res<Reg> {
        use UnaryOp::*;
        let r = self.new_reg(RegClass::B64);
        match op {
            Neg => self.ins(format!("neg.f64 {r}, {x}")),
            Abs => self.ins(format!("abs.f64 {r}, {x}")),
            Sqrt | SqrtRn => self.ins(format!("sqrt.rn.f64 {r}, {x}")),
            Rsqrt => {
                let s = self.new_reg(RegClass::B64);
                self.ins(format!("sqrt.rn.f64 {s}, {x}"));
                self.ins(format!("rcp.rn.f64 {r}, {s}"));
            }
            Floor => self.ins(format!("cvt.rmi.f64.f64 {r}, {x}")),
            Ceil => self.ins(format!("cvt.rpi.f64.f64 {r}, {x}")),
            Trunc => self.ins(format!("cvt.rzi.f64.f64 {r}, {x}")),
            Rint => self.ins(format!("cvt.rni.f64.f64 {r}, {x}")),
            IsNan | IsInf | IsFinite | Signbit => {
                let p = self.p();
                match op {
                    IsNan => self.ins(format!("setp.nan.f64 {p}, {x}, {x}")),
                    IsInf | IsFinite => {
                        let a = self.new_reg(RegClass::B64);
                        self.ins(format!("abs.f64 {a}, {x}"));
                        let c = if op == IsInf { "eq" } else { "lt" };
                        self.ins(format!("setp.{c}.f64 {p}, {a}, 0d7FF0000000000000"));
                    }
                    _ => self.ins(format!("setp.lt.s64 {p}, {x}, 0")),
                }
                return Ok(p);
            }
            _ => {
                if let Some(r) = self.f64_math(op, x) {
                    return r;
                }
                return Err(self.err(format!(
                    "f64 `{}` is not supported by the GPU backend (f64 has arithmetic, sqrt, rsqrt, the \
                     rounding functions, the exponentials and logarithms, the trigonometric and hyperbolic \
                     functions and their inverses, erf, erfc and cbrt)",
                    op.name()
                )));
            }
        }
        Ok(r)
    }

    // ---- fp8 ----

    /// fp8 (low byte of a 16-bit register) → f32, exact.
    pub fn fp8_to_f32(&mut self, d: DType, a: Reg) -> Res<Reg> {
        // Rebuild the f32 bits: sign, exponent rebiased, mantissa shifted; subnormals
        // by scaling the integer mantissa.
        let (mbits, bias) = if d == DType::F8E4M3 { (3u32, 7i32) } else { (2, 15) };
        let w = self.new_reg(RegClass::B32);
        self.ins(format!("cvt.u32.u16 {w}, {a}"));
        let sign = self.new_reg(RegClass::B32);
        self.ins(format!("and.b32 {sign}, {w}, 128"));
        self.ins(format!("shl.b32 {sign}, {sign}, 24"));
        let mag = self.new_reg(RegClass::B32);
        self.ins(format!("and.b32 {mag}, {w}, 127"));
        let exp = self.new_reg(RegClass::B32);
        self.ins(format!("shr.u32 {exp}, {mag}, {mbits}"));
        let man = self.new_reg(RegClass::B32);
        self.ins(format!("and.b32 {man}, {mag}, {}", (1 << mbits) - 1));
        // Normal: bits = (exp - bias + 127) << 23 | man << (23 - mbits).
        let nb = self.new_reg(RegClass::B32);
        self.ins(format!("shl.b32 {nb}, {mag}, {}", 23 - mbits));
        self.ins(format!("add.s32 {nb}, {nb}, {}", ((127 - bias) as u32) << 23));
        // Subnormal (exp == 0): man * 2^(1 - bias - mbits).
        let sub = self.f();
        self.ins(format!("cvt.rn.f32.u32 {sub}, {man}"));
        let scale = f32_imm(2f32.powi(1 - bias - mbits as i32));
        self.ins(format!("mul.f32 {sub}, {sub}, {scale}"));
        let is_sub = self.p();
        self.ins(format!("setp.eq.u32 {is_sub}, {exp}, 0"));
        let v = self.f();
        self.ins(format!("selp.b32 {v}, {sub}, {nb}, {is_sub}"));
        // Specials: e4m3fn has NaN at mag 0x7F only; e5m2 has inf/NaN at exp 31.
        if d == DType::F8E4M3 {
            let nan = self.p();
            self.ins(format!("setp.eq.u32 {nan}, {mag}, 127"));
            self.ins(format!("@{nan} mov.b32 {v}, 0x7FFFFFFF"));
        } else {
            let sp = self.p();
            self.ins(format!("setp.eq.u32 {sp}, {exp}, 31"));
            let t = self.new_reg(RegClass::B32);
            self.ins(format!("shl.b32 {t}, {man}, 21"));
            self.ins(format!("or.b32 {t}, {t}, 0x7F800000"));
            self.ins(format!("@{sp} mov.b32 {v}, {t}"));
        }
        let out = self.f();
        self.ins(format!("or.b32 {out}, {v}, {sign}"));
        Ok(out)
    }

    /// f32 → fp8, round to nearest even (or toward zero), saturating to the largest
    /// finite value (NaN stays NaN), as `cvt ... .satfinite` does.
    pub fn f32_to_fp8(&mut self, d: DType, a: Reg, rz: bool) -> Res<Reg> {
        if self.opts.target.capability() >= 89 && !rz {
            let ty = if d == DType::F8E4M3 { "e4m3x2" } else { "e5m2x2" };
            let h = self.new_reg(RegClass::B16);
            let zero = self.f();
            self.ins(format!("mov.b32 {zero}, 0f00000000"));
            self.ins(format!("cvt.rn.satfinite.{ty}.f32 {h}, {zero}, {a}"));
            let out = self.new_reg(RegClass::B16);
            self.ins(format!("and.b16 {out}, {h}, 255"));
            return Ok(out);
        }
        let (mbits, bias, max_bits) = if d == DType::F8E4M3 { (3u32, 7i32, 0x7Eu32) } else { (2, 15, 0x7B) };
        let w = a;
        let sign = self.new_reg(RegClass::B32);
        self.ins(format!("shr.u32 {sign}, {w}, 24"));
        self.ins(format!("and.b32 {sign}, {sign}, 128"));
        let ax = self.f1("abs", w);
        // Values below the smallest normal are rounded as fixed point: |x| * 2^(bias - 1 + mbits),
        // rounded to an integer, is the subnormal mantissa (exponent field 0), and 2^mbits
        // rolls over into the first normal exponent naturally.
        let scaled = self.f2("mul", ax, f32_imm(2f32.powi(bias - 1 + mbits as i32)));
        let sub_i = self.new_reg(RegClass::B32);
        let rnd = if rz { "rzi" } else { "rni" };
        self.ins(format!("cvt.{rnd}.u32.f32 {sub_i}, {scaled}"));
        // Normal: drop 23 - mbits mantissa bits with round-to-nearest-even on the f32 bits.
        let drop = 23 - mbits;
        let bits = self.new_reg(RegClass::B32);
        self.ins(format!("mov.b32 {bits}, {ax}"));
        if !rz {
            let lsb = self.new_reg(RegClass::B32);
            self.ins(format!("shr.u32 {lsb}, {bits}, {drop}"));
            self.ins(format!("and.b32 {lsb}, {lsb}, 1"));
            self.ins(format!("add.u32 {bits}, {bits}, {}", (1u32 << (drop - 1)) - 1));
            self.ins(format!("add.u32 {bits}, {bits}, {lsb}"));
        }
        let n = self.new_reg(RegClass::B32);
        self.ins(format!("shr.u32 {n}, {bits}, {drop}"));
        self.ins(format!("sub.s32 {n}, {n}, {}", ((127 - bias) as u32) << mbits));
        let is_sub = self.p();
        self.ins(format!("setp.lt.f32 {is_sub}, {ax}, {}", f32_imm(2f32.powi(1 - bias))));
        let m = self.new_reg(RegClass::B32);
        self.ins(format!("selp.b32 {m}, {sub_i}, {n}, {is_sub}"));
        // Saturate (also infinities), NaN → canonical NaN.
        self.ins(format!("min.u32 {m}, {m}, {max_bits}"));
        let nan = self.p();
        self.ins(format!("setp.nan.f32 {nan}, {ax}, {ax}"));
        // 0x7F is NaN in both formats (e4m3fn: the one NaN; e5m2: all-ones exponent and mantissa).
        self.ins(format!("@{nan} mov.b32 {m}, 127"));
        self.ins(format!("or.b32 {m}, {m}, {sign}"));
        let out = self.new_reg(RegClass::B16);
        self.ins(format!("cvt.u16.u32 {out}, {m}"));
        Ok(out)
    }

    /// f16 → e5m2 directly (e5m2 is f16 with the low 8 mantissa bits rounded off).
    pub fn f16_to_e5m2(&mut self, a: Reg, rnd: Rounding) -> Res<Reg> {
        let x = self.widen_f32(DType::F16, a)?;
        self.f32_to_fp8(DType::F8E5M2, x, rnd == Rounding::Rtz)
    }
}
