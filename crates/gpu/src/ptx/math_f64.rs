//! f64 math functions as PTX instruction sequences: the exponentials and logarithms, the
//! trigonometric and hyperbolic functions and their inverses, the error functions, cbrt. PTX has no f64 approximations of these
//! (only `rcp`/`sqrt`/`rsqrt`), so each is a range reduction plus a polynomial in `fma.rn.f64`,
//! with the reduction's constants in two or three parts so that it adds no error of its own:
//!
//! * `exp`, `exp2`, `exp10`: x = k ln2 + r (|r| <= ln2/2), e^r by its Taylor series to r^13
//!   (truncation below 2^-56), times 2^k in two exact halves (overflow to inf, gradual
//!   underflow to 0).
//! * `log`, `log2`, `log10`: x = m 2^e with m in [sqrt(1/2), sqrt(2)); log m = 2 atanh(s),
//!   s = (m - 1)/(m + 1) (|s| <= 0.1716), the odd series to s^25, arranged as
//!   f - s (f - s^2 q) (f = m - 1 exact) and carried in two parts; `e` added last and exactly,
//!   so that log2 of a power of two is that integer.
//! * `sin`, `cos`, `tan`: x = k pi/2 + r, |r| <= pi/4; for |x| < 2^20 with pi/2 in three parts
//!   (Cody-Waite), beyond that by Payne-Hanek: x's 53-bit significand times a 192-bit window of
//!   2/pi's bits (the window chosen by x's exponent from a 1280-bit table) gives the quadrant and
//!   the reduced angle to about 2^-120; then the Taylor series of sin and cos to r^19.
//! * `erf`, `erfc`: for |x| < 1 erf by its Taylor series (to x^39); for x >= 0.5
//!   erfc(x) = exp(-x^2) g(x), g a polynomial per interval fitted in 60-digit arithmetic
//!   (`scripts/f64_erfc_fit.py`, relative error below 8e-17), exp(-x^2) with x^2 in two parts;
//!   erf(x) = 1 - erfc(x) from 1 on, erfc(x) = 1 - erf(x) below 0.5.
//! * the rest from these: `expm1` (2^k (e^r - 1) + (2^k - 1)), `log1p` (log(1 + x) corrected
//!   by what rounding 1 + x lost), the hyperbolic functions from `expm1`, `atan` by two
//!   reductions and a series, `asin`/`acos` through `atan`, the inverse hyperbolics through
//!   `log1p`, `cbrt` by Newton steps.
//!
//! Errors measured against mpmath are in the crate README ("f64 math").

use super::emitter::{Emitter, Res};
use super::math::f64_imm;
use super::regs::{Reg, RegClass};
use trident_ir::UnaryOp;

/// The constants' double values; `_LO` the rest to about 2^-106.
const LN2_HI: f64 = std::f64::consts::LN_2;
const LN2_LO: f64 = 2.3190468138462996e-17;
const LOG2_E: f64 = std::f64::consts::LOG2_E;
const LOG2_E_LO: f64 = 2.0355273740931033e-17;
const LN10_HI: f64 = std::f64::consts::LN_10;
const LN10_LO: f64 = -2.1707562233822494e-16;
const LOG10_2_HI: f64 = std::f64::consts::LOG10_2;
const LOG10_2_LO: f64 = -2.8037281277851704e-18;
const LOG10_E: f64 = std::f64::consts::LOG10_E;
const LOG10_E_LO: f64 = 1.098319650216765e-17;
const LOG2_10: f64 = std::f64::consts::LOG2_10;
const PIO2_1: f64 = std::f64::consts::FRAC_PI_2;
const PIO2_2: f64 = 6.123233995736766e-17;
const PIO2_3: f64 = -1.4973849048591698e-33;
const TWO_OVER_PI: f64 = std::f64::consts::FRAC_2_PI;

/// The first 1280 bits of 2/pi after the binary point, most significant first.
const TWO_OVER_PI_BITS: [u64; 20] = [
    0xA2F9836E4E441529,
    0xFC2757D1F534DDC0,
    0xDB6295993C439041,
    0xFE5163ABDEBBC561,
    0xB7246E3A424DD2E0,
    0x06492EEA09D1921C,
    0xFE1DEB1CB129A73E,
    0xE88235F52EBB4484,
    0xE99C7026B45F7E41,
    0x3991D639835339F4,
    0x9C845F8BBDF9283B,
    0x1FF897FFDE05980F,
    0xEF2F118B5A0A6D1F,
    0x6D367ECF27CB09B7,
    0x4F463F669E5FEA2D,
    0x7527BAC7EBE5F17B,
    0x3D0739F78A5292EA,
    0x6BFB5FB11F8D5D08,
    0x56033046FC7B6BAB,
    0xF0CFBC209AF4361D,
];

/// 1/n! for n = 0..=13: e^r for |r| <= ln2/2 to below 2^-56.
const EXP_TAYLOR: [f64; 14] = [
    1.0,
    1.0,
    0.5,
    1.0 / 6.0,
    1.0 / 24.0,
    1.0 / 120.0,
    1.0 / 720.0,
    1.0 / 5040.0,
    1.0 / 40320.0,
    1.0 / 362880.0,
    1.0 / 3628800.0,
    1.0 / 39916800.0,
    1.0 / 479001600.0,
    1.0 / 6227020800.0,
];

/// erfc(x) = exp(-x^2) g(x): per interval [a, b), g as a polynomial in x - c (c = (a + b) / 2),
/// lowest power first (`scripts/f64_erfc_fit.py`; its largest relative error in the comment).
const ERFC_G: &[(f64, f64, f64, &[f64])] = &[
    // [0.5, 0.75): degree 11, max relative error 6.06e-17
    (
        0.5,
        0.75,
        0.625,
        &[
            0.5568138808733625,
            -0.43236181600380946,
            0.286587745870984,
            -0.16882964988963145,
            0.0905346073431822,
            -0.04489820811899434,
            0.020824409581205183,
            -0.0091094151496145,
            0.003782695592344603,
            -0.0014989110049978508,
            0.0005726279630028807,
            -0.00020902552235554318,
        ],
    ),
    // [0.75, 1): degree 11, max relative error 4.61e-17
    (
        0.75,
        1.0,
        0.875,
        &[
            0.464311583202669,
            -0.3158338964908418,
            0.18795692377318324,
            -0.10091439212620508,
            0.049828415330766374,
            -0.022925811484302092,
            0.009922776927405338,
            -0.004069537716571997,
            0.0015904622736063875,
            -0.0005950744833733481,
            0.0002151254639998011,
            -7.453699259223779e-05,
        ],
    ),
    // [1, 1.5): degree 13, max relative error 1.04e-17
    (
        1.0,
        1.5,
        1.25,
        &[
            0.3678229164523611,
            -0.20882187596460985,
            0.10679557149659845,
            -0.05021827439590747,
            0.022011364250946238,
            -0.009081627632959959,
            0.003553109894683297,
            -0.0013257829272368543,
            0.0004739707006153454,
            -0.00016296012111131222,
            5.404491508514403e-05,
            -1.7341459254977562e-05,
            5.501701839828387e-06,
            -1.6610767030625112e-06,
        ],
    ),
    // [1.5, 2): degree 13, max relative error 3.63e-17
    (
        1.5,
        2.0,
        1.75,
        &[
            0.2849722347374364,
            -0.1309763455144852,
            0.05576363008708723,
            -0.022259995241388317,
            0.008404319207340187,
            -0.0030209746514281146,
            0.001039204521356914,
            -0.00034353335318474803,
            0.0001095053381684006,
            -3.375536830552878e-05,
            1.0085518680104132e-05,
            -2.92763224927802e-06,
            8.406449608561853e-07,
            -2.3131132443809953e-07,
        ],
    ),
    // [2, 2.5): degree 11, max relative error 6.54e-17
    (
        2.0,
        2.5,
        2.25,
        &[
            0.23108725873039188,
            -0.08848650280874916,
            0.03199262741071133,
            -0.01100206075644132,
            0.003618995353412228,
            -0.0011437284834158552,
            0.00034853548657863694,
            -0.00010272109738856212,
            2.9351258247733288e-05,
            -8.149782924354094e-06,
            2.231245263514302e-06,
            -5.87733047014231e-07,
        ],
    ),
    // [2.5, 3): degree 11, max relative error 7.47e-17
    (
        2.5,
        3.0,
        2.75,
        &[
            0.1936620962790687,
            -0.06323763756063484,
            0.019758592987323922,
            -0.00593433789699822,
            0.0017195818850920229,
            -0.00048219508493557863,
            0.00013118181398551857,
            -3.469861268087721e-05,
            8.9397412471962e-06,
            -2.2472777663401355e-06,
            5.578635457508167e-07,
            -1.3398343333976e-07,
        ],
    ),
    // [3, 4): degree 13, max relative error 1.63e-17
    (
        3.0,
        4.0,
        3.5,
        &[
            0.1552936556088943,
            -0.041323577833252495,
            0.01066113319251011,
            -0.002673074439643561,
            0.0006526863269086787,
            -0.0001554689182328899,
            3.6181703647369664e-05,
            -8.237986419511217e-06,
            1.8371959965058951e-06,
            -4.017414059460916e-07,
            8.617207083202206e-08,
            -1.816709921028992e-08,
            3.904660027946148e-09,
            -7.952076959606247e-10,
        ],
    ),
    // [4, 5): degree 13, max relative error 6.64e-17
    (
        4.0,
        5.0,
        4.5,
        &[
            0.12248480427384142,
            -0.026015928630939815,
            0.005413125434612216,
            -0.0011045761167898017,
            0.0002212664545309336,
            -4.355082856393897e-05,
            8.42924195260638e-06,
            -1.605497013589794e-06,
            3.0112686390069487e-07,
            -5.565085307376166e-08,
            1.0136576298634514e-08,
            -1.8217866412269658e-09,
            3.3190334902930086e-10,
            -5.808233719088603e-11,
        ],
    ),
    // [5, 6.5): degree 13, max relative error 2.90e-17
    (
        5.0,
        6.5,
        5.75,
        &[
            0.09669877816971392,
            -0.016343218143802483,
            0.0027252738428494325,
            -0.00044859569827802653,
            7.292428888115837e-05,
            -1.1712414898619478e-05,
            1.8593010097708208e-06,
            -2.9183820234711446e-07,
            4.530814969628177e-08,
            -6.959630813831958e-09,
            1.0572374845119891e-09,
            -1.5912535585527579e-10,
            2.476807440495888e-11,
            -3.653591837089912e-12,
        ],
    ),
    // [6.5, 8.5): degree 13, max relative error 5.23e-17
    (
        6.5,
        8.5,
        7.5,
        &[
            0.07457369306287669,
            -0.00977377115236233,
            0.0012704094201590097,
            -0.00016380033411211037,
            2.095345716241441e-05,
            -2.6597621679384736e-06,
            3.3508028099238477e-07,
            -4.190282944650172e-08,
            5.202322140102903e-09,
            -6.413044409063115e-10,
            7.842394439571499e-11,
            -9.535498144881305e-12,
            1.2122884845897092e-12,
            -1.453612838277073e-13,
        ],
    ),
    // [8.5, 12): degree 17, max relative error 5.79e-17
    (
        8.5,
        12.0,
        10.25,
        &[
            0.05478458695295453,
            -0.005295134559944755,
            0.0005094577135207966,
            -4.879533090439111e-05,
            4.652785875395345e-06,
            -4.4171027264154036e-07,
            4.1751860268346666e-08,
            -3.92962995432862e-09,
            3.682883172585362e-10,
            -3.437217522937443e-11,
            3.194696543527352e-12,
            -2.9571886233652174e-13,
            2.7267299036556784e-14,
            -2.503818786764823e-15,
            2.276436380786998e-16,
            -2.074193272960366e-17,
            2.12016749612548e-18,
            -1.9152252332429607e-19,
        ],
    ),
    // [12, 27): degree 23, max relative error 4.89e-17
    (
        12.0,
        27.0,
        19.5,
        &[
            0.028894903811938218,
            -0.0014779184299220857,
            7.54944284575504e-05,
            -3.851383333275346e-06,
            1.9622672933792437e-07,
            -9.984844453854897e-09,
            5.074208301399516e-10,
            -2.575379518745047e-11,
            1.3054558425830921e-12,
            -6.608962884897138e-14,
            3.3416316492074846e-15,
            -1.6874700670397885e-16,
            8.509827230014943e-18,
            -4.2866060899785205e-19,
            2.1606445484368784e-20,
            -1.0856429128821064e-21,
            5.333965710559818e-23,
            -2.6742010423665574e-24,
            1.5514950186053737e-25,
            -7.749229906573177e-27,
            1.3615047929511054e-28,
            -6.857640950807349e-30,
            2.0409819738106973e-30,
            -1.0133529470028014e-31,
        ],
    ),
];

impl Emitter<'_> {
    fn d(&mut self) -> Reg {
        self.new_reg(RegClass::B64)
    }

    /// `op.f64 d, a, b` into a fresh register.
    fn d2(&mut self, op: &str, a: impl std::fmt::Display, b: impl std::fmt::Display) -> Reg {
        let r = self.d();
        self.ins(format!("{op}.f64 {r}, {a}, {b}"));
        r
    }

    fn d1(&mut self, op: &str, a: impl std::fmt::Display) -> Reg {
        let r = self.d();
        self.ins(format!("{op}.f64 {r}, {a}"));
        r
    }

    fn dfma(&mut self, a: impl std::fmt::Display, b: impl std::fmt::Display, c: impl std::fmt::Display) -> Reg {
        let r = self.d();
        self.ins(format!("fma.rn.f64 {r}, {a}, {b}, {c}"));
        r
    }

    fn dsel(&mut self, a: impl std::fmt::Display, b: impl std::fmt::Display, p: Reg) -> Reg {
        let r = self.d();
        self.ins(format!("selp.f64 {r}, {a}, {b}, {p}"));
        r
    }

    fn dsetp(&mut self, cmp: &str, a: impl std::fmt::Display, b: impl std::fmt::Display) -> Reg {
        let p = self.new_reg(RegClass::Pred);
        self.ins(format!("setp.{cmp}.f64 {p}, {a}, {b}"));
        p
    }

    /// `v`, negated where `x < 0` (odd functions computed on |x|; -0.0 and NaN keep `v`).
    fn negated_where_negative(&mut self, v: Reg, x: Reg) -> Reg {
        let neg = self.dsetp("lt", x, f64_imm(0.0));
        let nv = self.d1("neg", v);
        self.dsel(nv, v, neg)
    }

    /// Horner evaluation of `c[0] + c[1] x + c[2] x^2 + ...` in f64.
    fn dpoly(&mut self, x: Reg, c: &[f64]) -> Reg {
        let mut acc = self.d();
        let n = c.len();
        self.ins(format!("mov.b64 {acc}, {}", f64_imm(c[n - 1])));
        for &k in c[..n - 1].iter().rev() {
            acc = self.dfma(acc, x, f64_imm(k));
        }
        acc
    }

    /// The f64 functions written here; `None` for the ones that are not.
    pub(super) fn f64_math(&mut self, op: UnaryOp, x: Reg) -> Option<Res<Reg>> {
        use UnaryOp::*;
        Some(Ok(match op {
            Exp => self.exp_f64(x, Base::E),
            Exp2 => self.exp_f64(x, Base::Two),
            Exp10 => self.exp_f64(x, Base::Ten),
            Log => self.log_f64(x, Base::E),
            Log2 => self.log_f64(x, Base::Two),
            Log10 => self.log_f64(x, Base::Ten),
            Sin | Cos | Tan => self.trig_f64(op, x),
            Erf => self.erf_f64(x, false),
            Erfc => self.erf_f64(x, true),
            Expm1 => self.expm1_f64(x),
            Log1p => self.log1p_f64(x),
            Sinh | Cosh | Tanh => self.hyperbolic_f64(op, x),
            Atan => self.atan_f64(x),
            Asin => self.asin_f64(x),
            Acos => self.acos_f64(x),
            Asinh | Acosh | Atanh => self.inverse_hyperbolic_f64(op, x),
            Cbrt => self.cbrt_f64(x),
            Round => self.round_f64(x),
            _ => return None,
        }))
    }

    /// `p * 2^k` for an integral f64 `k` in [-2200, 2200]: two factors 2^(k/2) and 2^(k - k/2),
    /// each a normal number built from its exponent bits, so that the product overflows to inf
    /// and underflows gradually as the exact result would.
    fn times_pow2_f64(&mut self, p: Reg, k: Reg) -> Reg {
        let kh = self.d2("mul", k, f64_imm(0.5));
        let k1 = self.d1("cvt.rzi.f64", kh);
        let k2 = self.d2("sub", k, k1);
        let mut acc = p;
        for half in [k1, k2] {
            let i = self.d();
            self.ins(format!("cvt.rzi.s64.f64 {i}, {half}"));
            self.ins(format!("add.s64 {i}, {i}, 1023"));
            self.ins(format!("shl.b64 {i}, {i}, 52"));
            acc = self.d2("mul", acc, i);
        }
        acc
    }

    /// e^x, 2^x or 10^x.
    fn exp_f64(&mut self, x: Reg, base: Base) -> Reg {
        self.exp_f64_scaled(x, base, 0)
    }

    /// `base^x * 2^scale` (|scale| small), without overflowing in between.
    fn exp_f64_scaled(&mut self, x: Reg, base: Base, scale: i32) -> Reg {
        // Past these every result is inf or 0; clamping keeps k an exact small integer.
        let lim = match base {
            Base::E => 760.0,
            Base::Two => 1100.0,
            Base::Ten => 330.0,
        };
        let c1 = self.d2("max", x, f64_imm(-lim));
        let c = self.d2("min", c1, f64_imm(lim));
        let (k, r, r_lo) = match base {
            Base::E => {
                let t = self.d2("mul", c, f64_imm(LOG2_E));
                let k = self.d1("cvt.rni.f64", t);
                let nk = self.d1("neg", k);
                let r1 = self.dfma(nk, f64_imm(LN2_HI), c);
                let r = self.dfma(nk, f64_imm(LN2_LO), r1);
                (k, r, None)
            }
            Base::Two => {
                // r = (x - k) ln2 in two parts: x - k is exact.
                let k = self.d1("cvt.rni.f64", c);
                let t = self.d2("sub", c, k);
                let r = self.d2("mul", t, f64_imm(LN2_HI));
                let nr = self.neg_of(r);
                let e = self.dfma(t, f64_imm(LN2_HI), nr);
                let lo = self.dfma(t, f64_imm(LN2_LO), e);
                (k, r, Some(lo))
            }
            Base::Ten => {
                // x = k log10(2) + t, then r = t ln10 in two parts.
                let u = self.d2("mul", c, f64_imm(LOG2_10));
                let k = self.d1("cvt.rni.f64", u);
                let nk = self.d1("neg", k);
                let t1 = self.dfma(nk, f64_imm(LOG10_2_HI), c);
                let t = self.dfma(nk, f64_imm(LOG10_2_LO), t1);
                let r = self.d2("mul", t, f64_imm(LN10_HI));
                let nr = self.neg_of(r);
                let e = self.dfma(t, f64_imm(LN10_HI), nr);
                let lo = self.dfma(t, f64_imm(LN10_LO), e);
                (k, r, Some(lo))
            }
        };
        let mut p = self.dpoly(r, &EXP_TAYLOR);
        if let Some(lo) = r_lo {
            // e^(r + lo) = e^r (1 + lo).
            p = self.dfma(p, lo, p);
        }
        let k = if scale == 0 { k } else { self.d2("add", k, f64_imm(scale as f64)) };
        let out = self.times_pow2_f64(p, k);
        // NaN in, NaN out (the clamp's max/min dropped it).
        let nan = self.dsetp("nan", x, x);
        self.dsel(x, out, nan)
    }

    /// A fresh register holding `-r` (for `fma(a, b, -r)`).
    fn neg_of(&mut self, r: Reg) -> Reg {
        self.d1("neg", r)
    }

    /// ln x, log2 x or log10 x.
    /// |x| = m 2^e with m in [sqrt(1/2), sqrt(2)) (subnormals scaled by 2^54 first): (m, e as
    /// an f64). Meaningless for 0, inf and NaN; the callers select their results there.
    fn split_log_argument_f64(&mut self, x: Reg) -> (Reg, Reg) {
        let ax = self.d1("abs", x);
        let sub = self.dsetp("lt", ax, f64_imm(f64::MIN_POSITIVE));
        let xs = self.d2("mul", ax, f64_imm(2f64.powi(54)));
        let xn = self.dsel(xs, ax, sub);
        let ebits = self.d();
        self.ins(format!("shr.u64 {ebits}, {xn}, 52"));
        let mbits = self.d();
        self.ins(format!("and.b64 {mbits}, {xn}, 0x000FFFFFFFFFFFFF"));
        self.ins(format!("or.b64 {mbits}, {mbits}, 0x3FF0000000000000"));
        // m in [1, 2); above sqrt(2) take m/2 and e + 1.
        let big = self.dsetp("gt", mbits, f64_imm(std::f64::consts::SQRT_2));
        let mh = self.d2("mul", mbits, f64_imm(0.5));
        let m = self.dsel(mh, mbits, big);
        let ei = self.d();
        self.ins(format!("cvt.rn.f64.s64 {ei}, {ebits}"));
        let bias = self.dsel(f64_imm(-1023.0 - 54.0), f64_imm(-1023.0), sub);
        let e0 = self.d2("add", ei, bias);
        let one = self.dsel(f64_imm(1.0), f64_imm(0.0), big);
        let e = self.d2("add", e0, one);
        (m, e)
    }

    fn log_f64(&mut self, x: Reg, base: Base) -> Reg {
        let (m, e) = self.split_log_argument_f64(x);
        // log m = 2 atanh(s) = 2s + s z q(z), s = (m - 1)/(m + 1), z = s^2; as 2s = f - s f,
        // log m = f - s (f - z q): f = m - 1 is exact and the correction is about f^2/2, so
        // its rounding hardly shows; (lm, lm_lo) is that difference in two parts.
        let f = self.d2("sub", m, f64_imm(1.0));
        let den = self.d2("add", m, f64_imm(1.0));
        let s = self.d2("div.rn", f, den);
        let z = self.d2("mul", s, s);
        let q: Vec<f64> = (1..=12).map(|n| 2.0 / (2 * n + 1) as f64).collect();
        let qz = self.dpoly(z, &q);
        let nz = self.d1("neg", z);
        let fq = self.dfma(nz, qz, f);
        let corr = self.d2("mul", s, fq);
        let lm = self.d2("sub", f, corr);
        let back = self.d2("sub", f, lm);
        let lm_lo = self.d2("sub", back, corr);
        // ln x = e ln2 + lm; log_b x = e log_b(2) + lm log_b(e), each product in two parts.
        let out = match base {
            Base::E => {
                let t0 = self.dfma(e, f64_imm(LN2_LO), lm_lo);
                let t = self.d2("add", lm, t0);
                self.dfma(e, f64_imm(LN2_HI), t)
            }
            Base::Two | Base::Ten => {
                let (c_hi, c_lo) = if base == Base::Two { (LOG2_E, LOG2_E_LO) } else { (LOG10_E, LOG10_E_LO) };
                let hi = self.d2("mul", lm, f64_imm(c_hi));
                let nhi = self.d1("neg", hi);
                let err = self.dfma(lm, f64_imm(c_hi), nhi);
                let l1 = self.dfma(lm, f64_imm(c_lo), err);
                let lo = self.dfma(lm_lo, f64_imm(c_hi), l1);
                if base == Base::Two {
                    let t = self.d2("add", hi, lo);
                    self.d2("add", e, t)
                } else {
                    let l2 = self.dfma(e, f64_imm(LOG10_2_LO), lo);
                    let t = self.d2("add", hi, l2);
                    self.dfma(e, f64_imm(LOG10_2_HI), t)
                }
            }
        };
        // x = 0: -inf; x < 0: NaN; x = inf: inf; NaN: NaN.
        let zero = self.dsetp("eq", x, f64_imm(0.0));
        let a = self.dsel(f64_imm(f64::NEG_INFINITY), out, zero);
        let inf = self.dsetp("eq", x, f64_imm(f64::INFINITY));
        let b = self.dsel(f64_imm(f64::INFINITY), a, inf);
        let bad = self.dsetp("ltu", x, f64_imm(0.0));
        self.dsel(f64_imm(f64::NAN), b, bad)
    }

    /// sin, cos or tan: (quadrant, reduced angle), then the quadrant's polynomial.
    fn trig_f64(&mut self, op: UnaryOp, x: Reg) -> Reg {
        let ax = self.d1("abs", x);
        // Cody-Waite for |x| < 2^20: k = rint(|x| 2/pi), r = |x| - k pi/2 in three parts.
        let t = self.d2("mul", ax, f64_imm(TWO_OVER_PI));
        let k = self.d1("cvt.rni.f64", t);
        let nk = self.d1("neg", k);
        let r1 = self.dfma(nk, f64_imm(PIO2_1), ax);
        let r2 = self.dfma(nk, f64_imm(PIO2_2), r1);
        let r = self.dfma(nk, f64_imm(PIO2_3), r2);
        let q = self.new_reg(RegClass::B32);
        self.ins(format!("cvt.rni.s32.f64 {q}, {k}"));
        // Beyond: Payne-Hanek, on the lanes that need it.
        let large = self.dsetp("ge", ax, f64_imm(2f64.powi(20)));
        let skip = self.new_label("f64_trig_small");
        self.ins(format!("@!{large} bra {skip}"));
        self.payne_hanek(ax, q, r);
        self.label(&skip);
        // |x| < 0: reduce |x| and mirror: x = -(k pi/2 + r) = (-k) pi/2 + (-r).
        let neg = self.dsetp("lt", x, f64_imm(0.0));
        let rs = self.d1("neg", r);
        let rr = self.dsel(rs, r, neg);
        let qn = self.new_reg(RegClass::B32);
        self.ins(format!("neg.s32 {qn}, {q}"));
        let qq = self.new_reg(RegClass::B32);
        self.ins(format!("selp.b32 {qq}, {qn}, {q}, {neg}"));
        // sin r = r + r^3 S(r^2), cos r = 1 + r^2 C(r^2): Taylor to r^19 / r^18.
        let z = self.d2("mul", rr, rr);
        let sc: Vec<f64> = (1..=9).map(|n| (if n % 2 == 1 { -1.0 } else { 1.0 }) / fact(2 * n + 1)).collect();
        let cc: Vec<f64> = (1..=9).map(|n| (if n % 2 == 1 { -1.0 } else { 1.0 }) / fact(2 * n)).collect();
        let ps = self.dpoly(z, &sc);
        let r3 = self.d2("mul", z, rr);
        let sin_r = self.dfma(ps, r3, rr);
        let pc = self.dpoly(z, &cc);
        let cos_r = self.dfma(pc, z, f64_imm(1.0));
        let qc = self.new_reg(RegClass::B32);
        if op == UnaryOp::Cos {
            self.ins(format!("add.s32 {qc}, {qq}, 1"));
        } else {
            self.ins(format!("mov.b32 {qc}, {qq}"));
        }
        let odd = self.new_reg(RegClass::Pred);
        let b = self.new_reg(RegClass::B32);
        self.ins(format!("and.b32 {b}, {qc}, 1"));
        self.ins(format!("setp.ne.u32 {odd}, {b}, 0"));
        let out = if op == UnaryOp::Tan {
            // tan = sin/cos; odd quadrants: -cos/sin.
            let num = self.dsel(cos_r, sin_r, odd);
            let den = self.dsel(sin_r, cos_r, odd);
            let v = self.d2("div.rn", num, den);
            let nv = self.d1("neg", v);
            self.dsel(nv, v, odd)
        } else {
            let negq = self.new_reg(RegClass::Pred);
            let b2 = self.new_reg(RegClass::B32);
            self.ins(format!("and.b32 {b2}, {qc}, 2"));
            self.ins(format!("setp.ne.u32 {negq}, {b2}, 0"));
            let v = self.dsel(cos_r, sin_r, odd);
            let nv = self.d1("neg", v);
            self.dsel(nv, v, negq)
        };
        // inf and NaN: NaN (the reduction made garbage of them).
        let fin = self.dsetp("lt", ax, f64_imm(f64::INFINITY));
        self.dsel(out, f64_imm(f64::NAN), fin)
    }

    /// Payne-Hanek reduction of `ax` = |x| >= 2^20 (finite or not): overwrites `q` (the
    /// quadrant mod 4) and `r` (the angle in [-pi/4, pi/4]).
    ///
    /// ax = M 2^E (M the 53-bit significand). x 2/pi mod 4 = M 2^E sum b_i 2^-i mod 4 needs
    /// 2/pi's bits from i = E - 1 (earlier ones add multiples of 4): the 192-bit window W of
    /// bits E - 1 .. E + 190 gives x 2/pi mod 4 = (M W mod 2^192) / 2^190, to 2^-138.
    fn payne_hanek(&mut self, ax: Reg, q: Reg, r: Reg) {
        let bits = self.d();
        self.ins(format!("mov.b64 {bits}, {ax}"));
        let ex = self.d();
        self.ins(format!("shr.u64 {ex}, {bits}, 52"));
        let m = self.d();
        self.ins(format!("and.b64 {m}, {bits}, 0x000FFFFFFFFFFFFF"));
        self.ins(format!("or.b64 {m}, {m}, 0x0010000000000000"));
        // inf/NaN (exponent 2047): any window; the caller returns NaN for them.
        self.ins(format!("min.u64 {ex}, {ex}, 2046"));
        // E = ex - 1075; the window starts at bit E - 1 of 2/pi, i.e. bit E + 62 = ex - 1013 of
        // the table with a zero word in front (bit 64 is 2/pi's first). ex >= 1043 here.
        let pos = self.d();
        self.ins(format!("sub.s64 {pos}, {ex}, 1013"));
        let w = self.d();
        self.ins(format!("shr.u64 {w}, {pos}, 6"));
        let sh = self.new_reg(RegClass::B32);
        let sh64 = self.d();
        self.ins(format!("and.b64 {sh64}, {pos}, 63"));
        self.ins(format!("cvt.u32.u64 {sh}, {sh64}"));
        let rsh = self.new_reg(RegClass::B32);
        self.ins(format!("sub.u32 {rsh}, 64, {sh}"));
        // Table words w .. w+3 of [0, TWO_OVER_PI_BITS...] by comparison chains.
        let mut words = vec![];
        for j in 0..4u64 {
            let acc = self.d();
            self.ins(format!("mov.b64 {acc}, 0"));
            let idx = self.d();
            self.ins(format!("add.u64 {idx}, {w}, {j}"));
            for (t, &word) in TWO_OVER_PI_BITS.iter().enumerate() {
                let p = self.new_reg(RegClass::Pred);
                self.ins(format!("setp.eq.u64 {p}, {idx}, {}", t + 1));
                self.ins(format!("@{p} mov.b64 {acc}, {word:#018x}"));
            }
            words.push(acc);
        }
        // The window: three words starting `sh` bits into word w (shr by 64 gives 0).
        let mut win = vec![];
        for j in 0..3 {
            let (a, b) = (words[j], words[j + 1]);
            let hi = self.d();
            self.ins(format!("shl.b64 {hi}, {a}, {sh}"));
            let lo = self.d();
            self.ins(format!("shr.u64 {lo}, {b}, {rsh}"));
            let v = self.d();
            self.ins(format!("or.b64 {v}, {hi}, {lo}"));
            win.push(v);
        }
        // Q = M W mod 2^192 in three words (q0 least significant).
        let mul = |e: &mut Self, how: &str, a: Reg, b: Reg| {
            let r = e.d();
            e.ins(format!("mul.{how}.u64 {r}, {a}, {b}"));
            r
        };
        let q0 = mul(self, "lo", m, win[2]);
        let h2 = mul(self, "hi", m, win[2]);
        let l1 = mul(self, "lo", m, win[1]);
        let h1 = mul(self, "hi", m, win[1]);
        let l0 = mul(self, "lo", m, win[0]);
        let q1 = self.d();
        self.ins(format!("add.u64 {q1}, {h2}, {l1}"));
        let carry = self.new_reg(RegClass::Pred);
        self.ins(format!("setp.lt.u64 {carry}, {q1}, {h2}"));
        let q2 = self.d();
        self.ins(format!("add.u64 {q2}, {h1}, {l0}"));
        self.ins(format!("@{carry} add.u64 {q2}, {q2}, 1"));
        // Round to the nearest quadrant: add half a quadrant (bit 189), take the top two bits.
        self.ins(format!("add.u64 {q2}, {q2}, 0x2000000000000000"));
        let qu = self.d();
        self.ins(format!("shr.u64 {qu}, {q2}, 62"));
        self.ins(format!("cvt.u32.u64 {q}, {qu}"));
        // The fraction (bits 189..0, offset by half a quadrant) as a signed 64-bit top part and
        // an unsigned next 64 bits: r (in quadrants) = D 2^-64 + L 2^-128.
        let top = self.d();
        self.ins(format!("shl.b64 {top}, {q2}, 2"));
        let t2 = self.d();
        self.ins(format!("shr.u64 {t2}, {q1}, 62"));
        self.ins(format!("or.b64 {top}, {top}, {t2}"));
        self.ins(format!("xor.b64 {top}, {top}, 0x8000000000000000"));
        let next = self.d();
        self.ins(format!("shl.b64 {next}, {q1}, 2"));
        let t3 = self.d();
        self.ins(format!("shr.u64 {t3}, {q0}, 62"));
        self.ins(format!("or.b64 {next}, {next}, {t3}"));
        let dh = self.d();
        self.ins(format!("cvt.rn.f64.s64 {dh}, {top}"));
        let dl = self.d();
        self.ins(format!("cvt.rn.f64.u64 {dl}, {next}"));
        let lo = self.d2("mul", dl, f64_imm(2f64.powi(-128)));
        let turns = self.dfma(dh, f64_imm(2f64.powi(-64)), lo);
        // Quadrants to radians with pi/2 in two parts.
        let rl = self.d2("mul", turns, f64_imm(PIO2_2));
        let rad = self.dfma(turns, f64_imm(PIO2_1), rl);
        self.ins(format!("mov.b64 {r}, {rad}"));
    }

    /// erf(x), or erfc(x) when `complement`.
    fn erf_f64(&mut self, x: Reg, complement: bool) -> Reg {
        let ax = self.d1("abs", x);
        // |x| < 1: erf x = x P(x^2), P the Taylor series (2/sqrt(pi)) sum (-1)^n x^2n / (n! (2n+1)).
        let z = self.d2("mul", x, x);
        let c: Vec<f64> = (0..20)
            .map(|n| {
                let s = if n % 2 == 0 { 1.0 } else { -1.0 };
                s * std::f64::consts::FRAC_2_SQRT_PI / (fact(n) * (2 * n + 1) as f64)
            })
            .collect();
        let p = self.dpoly(z, &c);
        let small = self.d2("mul", x, p);
        // |x| >= 0.5: erfc |x| = exp(-x^2) g(|x|), g piecewise; beyond the table erfc is 0.
        let g = self.d();
        self.ins(format!("mov.b64 {g}, 0d0000000000000000"));
        let done = self.new_label("f64_erfc_done");
        for &(lo, hi, mid, coeffs) in ERFC_G {
            let next = self.new_label("f64_erfc_next");
            let out = self.dsetp("ltu", ax, f64_imm(lo));
            let past = self.dsetp("geu", ax, f64_imm(hi));
            let skip = self.new_reg(RegClass::Pred);
            self.ins(format!("or.pred {skip}, {out}, {past}"));
            self.ins(format!("@{skip} bra {next}"));
            let t = self.d2("sub", ax, f64_imm(mid));
            let v = self.dpoly(t, coeffs);
            self.ins(format!("mov.b64 {g}, {v}"));
            self.ins(format!("bra {done}"));
            self.label(&next);
        }
        self.label(&done);
        // exp(-x^2) with x^2 = hi + lo: exp(-hi) (1 - lo).
        let sq = self.d2("mul", ax, ax);
        let nsq = self.d1("neg", sq);
        let sq_lo = self.dfma(ax, ax, nsq);
        let e = self.exp_f64(nsq, Base::E);
        let nlo = self.d1("neg", sq_lo);
        let e2 = self.dfma(e, nlo, e);
        let erfc_g = self.d2("mul", e2, g);
        // Past the table (and at inf, where x^2's low part is NaN) erfc is 0.
        let last = ERFC_G[ERFC_G.len() - 1].1;
        let past = self.dsetp("ge", ax, f64_imm(last));
        let erfc_abs = self.dsel(f64_imm(0.0), erfc_g, past);
        // erf takes its series below 1, erfc below 0.5 (1 - erf x loses bits above: erfc(1) is
        // 0.16), so the table starts at 0.5.
        let is_small = self.dsetp("lt", ax, f64_imm(if complement { 0.5 } else { 1.0 }));
        let neg = self.dsetp("lt", x, f64_imm(0.0));
        let out = if complement {
            // erfc x: 1 - erf x below 0.5; erfc |x| above, 2 - erfc |x| below -0.5.
            let one_minus = self.d2("sub", f64_imm(1.0), small);
            let two_minus = self.d2("sub", f64_imm(2.0), erfc_abs);
            let big = self.dsel(two_minus, erfc_abs, neg);
            self.dsel(one_minus, big, is_small)
        } else {
            // erf x = sign(x) (1 - erfc |x|) for |x| >= 1.
            let one_minus = self.d2("sub", f64_imm(1.0), erfc_abs);
            let signed = self.d1("neg", one_minus);
            let big = self.dsel(signed, one_minus, neg);
            self.dsel(small, big, is_small)
        };
        let nan = self.dsetp("nan", x, x);
        self.dsel(x, out, nan)
    }

    /// e^x - 1: x = k ln2 + r, e^r - 1 = r + r^2 q(r) (Taylor to r^15), then
    /// 2^k (e^r - 1) + (2^k - 1); past 700 e^x itself (the scaling would overflow first).
    fn expm1_f64(&mut self, x: Reg) -> Reg {
        let c1 = self.d2("max", x, f64_imm(-60.0));
        let c = self.d2("min", c1, f64_imm(700.0));
        let t = self.d2("mul", c, f64_imm(LOG2_E));
        let k = self.d1("cvt.rni.f64", t);
        let nk = self.d1("neg", k);
        let r1 = self.dfma(nk, f64_imm(LN2_HI), c);
        let r = self.dfma(nk, f64_imm(LN2_LO), r1);
        let q: Vec<f64> = (2..=15).map(|n| 1.0 / fact(n)).collect();
        let qr = self.dpoly(r, &q);
        let r2 = self.d2("mul", r, r);
        let em1 = self.dfma(r2, qr, r);
        // 2^k for k in [-87, 1010]: one factor from the exponent bits.
        let ki = self.d();
        self.ins(format!("cvt.rzi.s64.f64 {ki}, {k}"));
        self.ins(format!("add.s64 {ki}, {ki}, 1023"));
        self.ins(format!("shl.b64 {ki}, {ki}, 52"));
        let sm1 = self.d2("sub", ki, f64_imm(1.0));
        let out = self.dfma(ki, em1, sm1);
        let e = self.exp_f64(x, Base::E);
        let big = self.dsetp("gt", x, f64_imm(700.0));
        let o1 = self.dsel(e, out, big);
        let nan = self.dsetp("nan", x, x);
        self.dsel(x, o1, nan)
    }

    /// log(1 + x) = log(u) + (x - (u - 1)) / u with u = 1 + x rounded: the quotient puts back
    /// what the rounding of u lost; x itself where u is 1.
    fn log1p_f64(&mut self, x: Reg) -> Reg {
        let u = self.d2("add", x, f64_imm(1.0));
        let l = self.log_f64(u, Base::E);
        let um1 = self.d2("sub", u, f64_imm(1.0));
        let c = self.d2("sub", x, um1);
        let cu = self.d2("div.rn", c, u);
        let out = self.d2("add", l, cu);
        // u = 1 (tiny x), u = inf (huge x: the correction is NaN), u <= 0: log's answer alone.
        let one = self.dsetp("eq", u, f64_imm(1.0));
        let o1 = self.dsel(x, out, one);
        let fin = self.dsetp("lt", u, f64_imm(f64::INFINITY));
        let pos = self.dsetp("gt", u, f64_imm(0.0));
        let plain = self.new_reg(RegClass::Pred);
        self.ins(format!("and.pred {plain}, {fin}, {pos}"));
        self.dsel(o1, l, plain)
    }

    /// sinh, cosh, tanh from e^|x| - 1 (no cancellation near 0); past 22 from e^|x| / 2 (the
    /// other exponential is below an ulp), scaled so that it does not overflow early.
    fn hyperbolic_f64(&mut self, op: UnaryOp, x: Reg) -> Reg {
        let ax = self.d1("abs", x);
        let big = self.dsetp("ge", ax, f64_imm(22.0));
        let out = if op == UnaryOp::Tanh {
            // tanh |x| = e / (e + 2), e = e^(2|x|) - 1; 1 past 22.
            let a2 = self.d2("add", ax, ax);
            let e = self.expm1_f64(a2);
            let den = self.d2("add", e, f64_imm(2.0));
            let v = self.d2("div.rn", e, den);
            self.dsel(f64_imm(1.0), v, big)
        } else {
            let e = self.expm1_f64(ax);
            let e1 = self.d2("add", e, f64_imm(1.0));
            let half_big = self.exp_f64_scaled(ax, Base::E, -1);
            let v = if op == UnaryOp::Sinh {
                // (e + e / (e + 1)) / 2
                let q = self.d2("div.rn", e, e1);
                let sum = self.d2("add", e, q);
                self.d2("mul", sum, f64_imm(0.5))
            } else {
                // e^|x| / 2 + 1 / (2 e^|x|)
                let inv = self.d2("div.rn", f64_imm(0.5), e1);
                self.dfma(e1, f64_imm(0.5), inv)
            };
            self.dsel(half_big, v, big)
        };
        let res = if op == UnaryOp::Cosh {
            out
        } else {
            // Odd: the sign of x (and -0.0 stays -0.0).
            self.negated_where_negative(out, x)
        };
        let nan = self.dsetp("nan", x, x);
        self.dsel(x, res, nan)
    }

    /// atan of t in [0, 1]: above tan(pi/12), pi/6 + atan((t sqrt3 - 1) / (t + sqrt3)); then
    /// the Taylor series to t^29 (|t| <= 0.268). Returns (hi, lo) with the constant's low part.
    fn atan_01(&mut self, t: Reg) -> (Reg, Reg) {
        let sqrt3 = 3f64.sqrt();
        let mid = self.dsetp("gt", t, f64_imm(0.267_949_192_431_122_7));
        let num = self.dfma(t, f64_imm(sqrt3), f64_imm(-1.0));
        let den = self.d2("add", t, f64_imm(sqrt3));
        let red = self.d2("div.rn", num, den);
        let y = self.dsel(red, t, mid);
        let z = self.d2("mul", y, y);
        let c: Vec<f64> = (1..=14).map(|n| (if n % 2 == 1 { -1.0 } else { 1.0 }) / (2 * n + 1) as f64).collect();
        let p = self.dpoly(z, &c);
        let yz = self.d2("mul", y, z);
        let a = self.dfma(yz, p, y);
        // pi/6 in two parts.
        let (pi6, pi6_lo) = (std::f64::consts::FRAC_PI_6, -5.360_408_832_255_455e-17);
        let base = self.dsel(f64_imm(pi6), f64_imm(0.0), mid);
        let base_lo = self.dsel(f64_imm(pi6_lo), f64_imm(0.0), mid);
        let lo = self.d2("add", a, base_lo);
        (base, lo)
    }

    fn atan_f64(&mut self, x: Reg) -> Reg {
        let ax = self.d1("abs", x);
        let big = self.dsetp("gt", ax, f64_imm(1.0));
        let inv = self.d2("div.rn", f64_imm(1.0), ax);
        let t = self.dsel(inv, ax, big);
        let (hi, lo) = self.atan_01(t);
        let a = self.d2("add", hi, lo);
        // |x| > 1: pi/2 - atan(1/|x|), pi/2 in two parts.
        let nlo = self.d1("neg", lo);
        let r0 = self.d2("add", nlo, f64_imm(PIO2_2));
        let r1 = self.d2("sub", f64_imm(PIO2_1), hi);
        let comp = self.d2("add", r1, r0);
        let v = self.dsel(comp, a, big);
        let out = self.negated_where_negative(v, x);
        let nan = self.dsetp("nan", x, x);
        self.dsel(x, out, nan)
    }

    /// asin x = atan(x / sqrt((1 - x)(1 + x))).
    fn asin_f64(&mut self, x: Reg) -> Reg {
        let a = self.d2("sub", f64_imm(1.0), x);
        let b = self.d2("add", f64_imm(1.0), x);
        let ab = self.d2("mul", a, b);
        let s = self.d1("sqrt.rn", ab);
        let q = self.d2("div.rn", x, s);
        let out = self.atan_f64(q);
        // |x| = 1 gives x / 0 = inf, atan(inf) = pi/2: right. |x| > 1: sqrt of a negative, NaN.
        let ax = self.d1("abs", x);
        let bad = self.dsetp("gtu", ax, f64_imm(1.0));
        self.dsel(f64_imm(f64::NAN), out, bad)
    }

    /// acos x = 2 atan(sqrt((1 - x) / (1 + x))), accurate at both ends.
    fn acos_f64(&mut self, x: Reg) -> Reg {
        let a = self.d2("sub", f64_imm(1.0), x);
        let b = self.d2("add", f64_imm(1.0), x);
        let q = self.d2("div.rn", a, b);
        let s = self.d1("sqrt.rn", q);
        let t = self.atan_f64(s);
        let out = self.d2("add", t, t);
        let ax = self.d1("abs", x);
        let bad = self.dsetp("gtu", ax, f64_imm(1.0));
        self.dsel(f64_imm(f64::NAN), out, bad)
    }

    /// asinh, acosh, atanh through log1p (and log for huge arguments, where x^2 overflows).
    fn inverse_hyperbolic_f64(&mut self, op: UnaryOp, x: Reg) -> Reg {
        let huge = 2f64.powi(28);
        match op {
            UnaryOp::Asinh => {
                // sign(x) log1p(|x| + x^2 / (1 + sqrt(1 + x^2))); past 2^28 log|x| + ln2.
                let ax = self.d1("abs", x);
                let x2 = self.d2("mul", ax, ax);
                let s0 = self.d2("add", x2, f64_imm(1.0));
                let s = self.d1("sqrt.rn", s0);
                let s1 = self.d2("add", s, f64_imm(1.0));
                let q = self.d2("div.rn", x2, s1);
                let arg = self.d2("add", ax, q);
                let small = self.log1p_f64(arg);
                let l = self.log_f64(ax, Base::E);
                let large = self.d2("add", l, f64_imm(LN2_HI));
                let is_big = self.dsetp("gt", ax, f64_imm(huge));
                let v = self.dsel(large, small, is_big);
                let out = self.negated_where_negative(v, x);
                let nan = self.dsetp("nan", x, x);
                self.dsel(x, out, nan)
            }
            UnaryOp::Acosh => {
                // log1p((x - 1) + sqrt((x - 1)(x + 1))); past 2^28 log x + ln2; NaN below 1.
                let xm1 = self.d2("sub", x, f64_imm(1.0));
                let xp1 = self.d2("add", x, f64_imm(1.0));
                let pr = self.d2("mul", xm1, xp1);
                let s = self.d1("sqrt.rn", pr);
                let arg = self.d2("add", xm1, s);
                let small = self.log1p_f64(arg);
                let l = self.log_f64(x, Base::E);
                let large = self.d2("add", l, f64_imm(LN2_HI));
                let is_big = self.dsetp("gt", x, f64_imm(huge));
                let v = self.dsel(large, small, is_big);
                let bad = self.dsetp("ltu", x, f64_imm(1.0));
                self.dsel(f64_imm(f64::NAN), v, bad)
            }
            _ => {
                // atanh x = sign(x) log1p(2|x| / (1 - |x|)) / 2.
                let ax = self.d1("abs", x);
                let two = self.d2("add", ax, ax);
                let den = self.d2("sub", f64_imm(1.0), ax);
                let q = self.d2("div.rn", two, den);
                let l = self.log1p_f64(q);
                let v = self.d2("mul", l, f64_imm(0.5));
                let out = self.negated_where_negative(v, x);
                let bad = self.dsetp("gtu", ax, f64_imm(1.0));
                self.dsel(f64_imm(f64::NAN), out, bad)
            }
        }
    }

    /// cbrt: a first guess from the exponent bits divided by 3, four Newton steps on
    /// r^3 = |x| (each doubling the correct digits), the last one with the residual in fma.
    fn cbrt_f64(&mut self, x: Reg) -> Reg {
        let ax = self.d1("abs", x);
        // Subnormals scaled by 2^54 (cube root 2^18).
        let sub = self.dsetp("lt", ax, f64_imm(f64::MIN_POSITIVE));
        let xs = self.d2("mul", ax, f64_imm(2f64.powi(54)));
        let a = self.dsel(xs, ax, sub);
        // bits/3 + (2/3) 1023 << 52: within a few percent of a^(1/3).
        let bits = self.d();
        self.ins(format!("mov.b64 {bits}, {a}"));
        self.ins(format!("div.u64 {bits}, {bits}, 3"));
        self.ins(format!("add.u64 {bits}, {bits}, {}", 682u64 << 52));
        let mut r = bits;
        for _ in 0..4 {
            // r -= (r^3 - a) / (3 r^2)
            let r2 = self.d2("mul", r, r);
            let nr2 = self.d1("neg", r2);
            let e = self.dfma(nr2, r, a);
            let three = self.d2("mul", r2, f64_imm(3.0));
            let step = self.d2("div.rn", e, three);
            r = self.d2("add", r, step);
        }
        let unscale = self.d2("mul", r, f64_imm(2f64.powi(-18)));
        let v = self.dsel(unscale, r, sub);
        let out = self.negated_where_negative(v, x);
        // 0, inf, NaN: themselves.
        let zero = self.dsetp("eq", x, f64_imm(0.0));
        let inf = self.dsetp("equ", ax, f64_imm(f64::INFINITY));
        let keep = self.new_reg(RegClass::Pred);
        self.ins(format!("or.pred {keep}, {zero}, {inf}"));
        self.dsel(x, out, keep)
    }

    /// Round half away from zero: trunc(|x|), plus one where the fraction (exact) is >= 1/2,
    /// with x's sign put back.
    fn round_f64(&mut self, x: Reg) -> Reg {
        let ax = self.d1("abs", x);
        let t = self.d1("cvt.rzi.f64", ax);
        let fr = self.d2("sub", ax, t);
        let up = self.dsetp("ge", fr, f64_imm(0.5));
        let t1 = self.d2("add", t, f64_imm(1.0));
        let r = self.dsel(t1, t, up);
        let sign = self.d();
        self.ins(format!("and.b64 {sign}, {x}, 0x8000000000000000"));
        let out = self.d();
        self.ins(format!("or.b64 {out}, {r}, {sign}"));
        // NaN and inf: themselves.
        let keep = self.dsetp("equ", ax, f64_imm(f64::INFINITY));
        self.dsel(x, out, keep)
    }

    /// ln |x| as a double-double (hi, lo) for pow, to about 2^-70: x = m 2^e, log m = 2 atanh(s)
    /// with s = f / (2 + f) carried in two parts (the quotient's remainder by fma), e ln2 with
    /// ln2 split so that e times its high part is exact. Finite positive normal-or-subnormal x;
    /// the caller handles 0, inf and NaN.
    fn log_dd_f64(&mut self, x: Reg) -> (Reg, Reg) {
        let (m, e) = self.split_log_argument_f64(x);
        let f = self.d2("sub", m, f64_imm(1.0));
        // den = 2 + f in two parts (|f| < 2: the two-sum is exact), s = f / den in two parts.
        let den = self.d2("add", f, f64_imm(2.0));
        let t0 = self.d2("sub", f64_imm(2.0), den);
        let den_lo = self.d2("add", t0, f);
        let s = self.d2("div.rn", f, den);
        let ns = self.d1("neg", s);
        let r0 = self.dfma(ns, den, f);
        let r1 = self.dfma(ns, den_lo, r0);
        let s_lo = self.d2("div.rn", r1, den);
        // log m = 2 s + 2 s_lo + s z q(z).
        let z = self.d2("mul", s, s);
        let q: Vec<f64> = (1..=12).map(|n| 2.0 / (2 * n + 1) as f64).collect();
        let qz = self.dpoly(z, &q);
        let sz = self.d2("mul", s, z);
        let cubic = self.d2("mul", sz, qz);
        let tail = self.dfma(s_lo, f64_imm(2.0), cubic);
        let two_s = self.d2("add", s, s);
        let mh2 = self.d2("add", two_s, tail);
        let back = self.d2("sub", two_s, mh2);
        let ml = self.d2("add", back, tail);
        // + e ln2: e * LN2_42 is exact (|e| < 2^11, 42 significant bits).
        const LN2_42: f64 = 0.6931471805598903;
        const LN2_42_LO: f64 = 5.497923018708371e-14;
        let a = self.d2("mul", e, f64_imm(LN2_42));
        let hi = self.d2("add", a, mh2);
        // Two-sum of a and mh2 (either may be larger).
        let bv = self.d2("sub", hi, a);
        let av = self.d2("sub", hi, bv);
        let ea = self.d2("sub", a, av);
        let eb = self.d2("sub", mh2, bv);
        let err = self.d2("add", ea, eb);
        let l1 = self.dfma(e, f64_imm(LN2_42_LO), ml);
        let lo0 = self.d2("add", err, l1);
        // Renormalise.
        let h2 = self.d2("add", hi, lo0);
        let d0 = self.d2("sub", hi, h2);
        let lo = self.d2("add", d0, lo0);
        (h2, lo)
    }

    /// x^y with IEEE pow's special cases: e^(y ln|x|) with ln|x| and the product in two parts,
    /// the sign from an odd integer y, NaN for a finite negative x and a non-integer y.
    pub(super) fn pow_f64(&mut self, x: Reg, y: Reg) -> Reg {
        let (lh, ll) = self.log_dd_f64(x);
        let ph = self.d2("mul", y, lh);
        let nph = self.d1("neg", ph);
        let pe = self.dfma(y, lh, nph);
        let pl = self.dfma(y, ll, pe);
        let e = self.exp_f64(ph, Base::E);
        let corrected = self.dfma(e, pl, e);
        // Where the exponent or the result is not finite the correction is NaN (inf × 0).
        let aph = self.d1("abs", ph);
        let fin0 = self.dsetp("lt", aph, f64_imm(f64::INFINITY));
        let efin = self.dsetp("lt", e, f64_imm(f64::INFINITY));
        let fin = self.new_reg(RegClass::Pred);
        self.ins(format!("and.pred {fin}, {fin0}, {efin}"));
        let mag0 = self.dsel(corrected, e, fin);
        // |x| = 0 or inf: ln is -inf or inf (log_dd gives garbage there).
        let ax = self.d1("abs", x);
        let zero = self.dsetp("eq", ax, f64_imm(0.0));
        let inf = self.dsetp("eq", ax, f64_imm(f64::INFINITY));
        let ypos = self.dsetp("gt", y, f64_imm(0.0));
        // 0^y: 0 for y > 0, inf for y < 0; inf^y: inf for y > 0, 0 for y < 0.
        let z_or_i = self.new_reg(RegClass::Pred);
        self.ins(format!("or.pred {z_or_i}, {zero}, {inf}"));
        let big = self.new_reg(RegClass::Pred);
        self.ins(format!("xor.pred {big}, {zero}, {ypos}"));
        let special = self.dsel(f64_imm(f64::INFINITY), f64_imm(0.0), big);
        let mag = self.dsel(special, mag0, z_or_i);
        // The sign: x negative (or -0) and y an odd integer.
        let yt = self.d1("cvt.rzi.f64", y);
        let is_int = self.dsetp("eq", yt, y);
        let yh = self.d2("mul", y, f64_imm(0.5));
        let yht = self.d1("cvt.rzi.f64", yh);
        let half_int = self.dsetp("eq", yht, yh);
        let odd = self.new_reg(RegClass::Pred);
        self.ins(format!("and.pred {odd}, {is_int}, !{half_int}"));
        let xneg = self.new_reg(RegClass::Pred);
        self.ins(format!("setp.lt.s64 {xneg}, {x}, 0"));
        let flip = self.new_reg(RegClass::Pred);
        self.ins(format!("and.pred {flip}, {xneg}, {odd}"));
        let nmag = self.d1("neg", mag);
        let signed = self.dsel(nmag, mag, flip);
        // A finite negative x with a non-integer y: NaN (y = inf counts as an integer here).
        let xlt = self.dsetp("lt", x, f64_imm(0.0));
        let xfin = self.new_reg(RegClass::Pred);
        self.ins(format!("and.pred {xfin}, {xlt}, !{inf}"));
        let bad = self.new_reg(RegClass::Pred);
        self.ins(format!("and.pred {bad}, {xfin}, !{is_int}"));
        let r1 = self.dsel(f64_imm(f64::NAN), signed, bad);
        // |x| = 1 with y = ±inf: 1 (and -1 then too).
        let one = self.dsetp("eq", ax, f64_imm(1.0));
        let ay = self.d1("abs", y);
        let yinf = self.dsetp("eq", ay, f64_imm(f64::INFINITY));
        let one_inf = self.new_reg(RegClass::Pred);
        self.ins(format!("and.pred {one_inf}, {one}, {yinf}"));
        let r2 = self.dsel(f64_imm(1.0), r1, one_inf);
        // y = ±inf otherwise: |x| < 1 gives 0 for +inf and inf for -inf; |x| > 1 the reverse.
        let small = self.dsetp("lt", ax, f64_imm(1.0));
        let want_inf = self.new_reg(RegClass::Pred);
        self.ins(format!("xor.pred {want_inf}, {small}, {ypos}"));
        let yinf_v = self.dsel(f64_imm(f64::INFINITY), f64_imm(0.0), want_inf);
        let yinf_other = self.new_reg(RegClass::Pred);
        self.ins(format!("and.pred {yinf_other}, {yinf}, !{one}"));
        let r3 = self.dsel(yinf_v, r2, yinf_other);
        // NaN in, NaN out — but x^0 = 1 and 1^y = 1 whatever the other is.
        let nan = self.new_reg(RegClass::Pred);
        self.ins(format!("setp.nan.f64 {nan}, {x}, {y}"));
        let r4 = self.dsel(f64_imm(f64::NAN), r3, nan);
        let y0 = self.dsetp("eq", y, f64_imm(0.0));
        let x1 = self.dsetp("eq", x, f64_imm(1.0));
        let unit = self.new_reg(RegClass::Pred);
        self.ins(format!("or.pred {unit}, {y0}, {x1}"));
        self.dsel(f64_imm(1.0), r4, unit)
    }

    /// atan2(y, x): atan of the smaller over the larger magnitude (pi/2 minus it when y is
    /// larger), pi minus that for a negative x (or -0), y's sign; both infinite or both zero
    /// as IEEE's atan2.
    pub(super) fn atan2_f64(&mut self, y: Reg, x: Reg) -> Reg {
        let (ax, ay) = (self.d1("abs", x), self.d1("abs", y));
        let swap = self.dsetp("gt", ay, ax);
        let num = self.dsel(ax, ay, swap);
        let den = self.dsel(ay, ax, swap);
        let q0 = self.d2("div.rn", num, den);
        // 0/0 and inf/inf: 0 and 1 (atan2(±0, ±0), atan2(±inf, ±inf)).
        let both0 = self.dsetp("eq", den, f64_imm(0.0));
        let q1 = self.dsel(f64_imm(0.0), q0, both0);
        let binf = self.dsetp("eq", num, f64_imm(f64::INFINITY));
        let q = self.dsel(f64_imm(1.0), q1, binf);
        let (hi, lo) = self.atan_01(q);
        let a = self.d2("add", hi, lo);
        // y larger: pi/2 - atan(q).
        let nlo = self.d1("neg", lo);
        let c0 = self.d2("add", nlo, f64_imm(PIO2_2));
        let c1 = self.d2("sub", f64_imm(PIO2_1), hi);
        let comp = self.d2("add", c1, c0);
        let v = self.dsel(comp, a, swap);
        // x negative (sign bit set): pi - v, pi in two parts.
        let xneg = self.new_reg(RegClass::Pred);
        self.ins(format!("setp.lt.s64 {xneg}, {x}, 0"));
        let pi_lo = 1.2246467991473532e-16;
        let w0 = self.d2("sub", f64_imm(pi_lo), v);
        let w = self.d2("add", w0, f64_imm(std::f64::consts::PI));
        let r = self.dsel(w, v, xneg);
        // y's sign (also for y = -0).
        let yneg = self.new_reg(RegClass::Pred);
        self.ins(format!("setp.lt.s64 {yneg}, {y}, 0"));
        let nr = self.d1("neg", r);
        let out = self.dsel(nr, r, yneg);
        let nan = self.new_reg(RegClass::Pred);
        self.ins(format!("setp.nan.f64 {nan}, {x}, {y}"));
        self.dsel(f64_imm(f64::NAN), out, nan)
    }

    /// hypot(x, y) = sqrt(x^2 + y^2) with the sum in one fma, the inputs scaled by a power of
    /// two first where the squares would overflow or underflow; inf if either is infinite.
    pub(super) fn hypot_f64(&mut self, x: Reg, y: Reg) -> Reg {
        let (ax, ay) = (self.d1("abs", x), self.d1("abs", y));
        let m = self.d2("max", ax, ay);
        let huge = self.dsetp("gt", m, f64_imm(2f64.powi(500)));
        let tiny = self.dsetp("lt", m, f64_imm(2f64.powi(-500)));
        let s0 = self.dsel(f64_imm(2f64.powi(-600)), f64_imm(1.0), huge);
        let scale = self.dsel(f64_imm(2f64.powi(600)), s0, tiny);
        let unscale0 = self.dsel(f64_imm(2f64.powi(600)), f64_imm(1.0), huge);
        let unscale = self.dsel(f64_imm(2f64.powi(-600)), unscale0, tiny);
        let xs = self.d2("mul", ax, scale);
        let ys = self.d2("mul", ay, scale);
        let yy = self.d2("mul", ys, ys);
        let sum = self.dfma(xs, xs, yy);
        let r = self.d1("sqrt.rn", sum);
        let out = self.d2("mul", r, unscale);
        let inf = self.dsetp("eq", m, f64_imm(f64::INFINITY));
        self.dsel(f64_imm(f64::INFINITY), out, inf)
    }

    /// a - trunc(a / b) b in one fma, as the f32 form (and LLVM's expansion of `frem`), with
    /// the dividend's sign on a zero result. (It was the f32 form, widened and narrowed back.)
    pub(super) fn fmod_f64(&mut self, a: Reg, b: Reg) -> Reg {
        let q = self.d2("div.rn", a, b);
        let t = self.d1("cvt.rzi.f64", q);
        let nt = self.d1("neg", t);
        let r = self.dfma(nt, b, a);
        let mag = self.d();
        self.ins(format!("and.b64 {mag}, {r}, 0x7FFFFFFFFFFFFFFF"));
        let sign = self.d();
        self.ins(format!("and.b64 {sign}, {a}, 0x8000000000000000"));
        let out = self.d();
        self.ins(format!("or.b64 {out}, {mag}, {sign}"));
        out
    }
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum Base {
    E,
    Two,
    Ten,
}

fn fact(n: usize) -> f64 {
    (1..=n).map(|k| k as f64).product()
}
