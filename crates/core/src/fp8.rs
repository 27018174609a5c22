//! The two fp8 formats Triton exposes, encoded and decoded exactly.
//!
//! `half` covers f16/bf16; no maintained crate covers fp8 with the saturating
//! round-to-nearest-even the GPU's `cvt.rn.satfinite` performs, so we write the
//! two small formats out here.

/// Parameters of a small float format.
#[derive(Copy, Clone, Debug)]
struct Format {
    mbits: i32,
    bias: i32,
    /// e4m3fn style: no infinities, only the all-ones pattern is NaN.
    finite_only: bool,
}

const E4M3: Format = Format { mbits: 3, bias: 7, finite_only: true };
const E5M2: Format = Format { mbits: 2, bias: 15, finite_only: false };

impl Format {
    fn max_finite(self) -> f64 {
        if self.finite_only {
            // 0b0_1111_110: exponent 15-7 = 8, mantissa 1.75
            448.0
        } else {
            // 0b0_11110_11: exponent 30-15 = 15, mantissa 1.75
            57344.0
        }
    }

    fn nan(self) -> u8 {
        0x7f
    }

    fn inf(self) -> u8 {
        // only meaningful for e5m2
        0x7c
    }

    fn decode(self, bits: u8) -> f64 {
        let sign = if bits & 0x80 != 0 { -1.0 } else { 1.0 };
        let ebits = 7 - self.mbits;
        let e = ((bits & 0x7f) >> self.mbits) as i32;
        let m = (bits as i32) & ((1 << self.mbits) - 1);
        let emax_field = (1 << ebits) - 1;
        if self.finite_only {
            if e == emax_field && m == (1 << self.mbits) - 1 {
                return f64::NAN;
            }
        } else if e == emax_field {
            return if m == 0 { sign * f64::INFINITY } else { f64::NAN };
        }
        if e == 0 {
            sign * (m as f64) * 2f64.powi(1 - self.bias - self.mbits)
        } else {
            sign * (1.0 + m as f64 / (1 << self.mbits) as f64) * 2f64.powi(e - self.bias)
        }
    }

    /// Round to nearest even. With `saturate`, values beyond the largest finite
    /// (including infinities) become the largest finite value, as `cvt.rn.satfinite` does.
    fn encode(self, x: f64, saturate: bool) -> u8 {
        if x.is_nan() {
            return self.nan();
        }
        let sign: u8 = if x.is_sign_negative() { 0x80 } else { 0 };
        let a = x.abs();
        if a.is_infinite() {
            return if saturate {
                sign | self.encode(self.max_finite(), false)
            } else if self.finite_only {
                sign | self.nan()
            } else {
                sign | self.inf()
            };
        }
        let emin = 1 - self.bias;
        let e = if a == 0.0 { emin } else { (a.log2().floor() as i32).max(emin) };
        // Guard against log2 rounding at exact powers of two.
        let e = if a >= 2f64.powi(e + 1) {
            e + 1
        } else if e > emin && a < 2f64.powi(e) {
            e - 1
        } else {
            e
        };
        let quantum = 2f64.powi(e - self.mbits);
        let rounded = (a / quantum).round_ties_even() * quantum;
        if rounded > self.max_finite() {
            return if saturate {
                sign | self.encode(self.max_finite(), false)
            } else if self.finite_only {
                sign | self.nan()
            } else {
                sign | self.inf()
            };
        }
        if rounded == 0.0 {
            return sign;
        }
        let re = (rounded.log2().floor() as i32).max(emin);
        let re = if rounded >= 2f64.powi(re + 1) { re + 1 } else { re };
        if rounded < 2f64.powi(emin) {
            // subnormal: exponent field 0
            let m = (rounded / 2f64.powi(emin - self.mbits)) as u8;
            return sign | m;
        }
        let m = ((rounded / 2f64.powi(re) - 1.0) * (1 << self.mbits) as f64) as u8;
        sign | (((re + self.bias) as u8) << self.mbits) | m
    }
}

/// Decodes an `f8e4m3` (e4m3fn) byte.
pub fn e4m3_to_f64(bits: u8) -> f64 {
    E4M3.decode(bits)
}

/// Decodes an `f8e5m2` byte.
pub fn e5m2_to_f64(bits: u8) -> f64 {
    E5M2.decode(bits)
}

/// Encodes to `f8e4m3`, rounding to nearest even; `saturate` clamps to ±448 instead of NaN.
pub fn f64_to_e4m3(x: f64, saturate: bool) -> u8 {
    E4M3.encode(x, saturate)
}

/// Encodes to `f8e5m2`, rounding to nearest even; `saturate` clamps to ±57344 instead of ±inf.
pub fn f64_to_e5m2(x: f64, saturate: bool) -> u8 {
    E5M2.encode(x, saturate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_round_trips() {
        for b in 0..=255u8 {
            for (dec, enc) in
                [(e4m3_to_f64 as fn(u8) -> f64, f64_to_e4m3 as fn(f64, bool) -> u8), (e5m2_to_f64, f64_to_e5m2)]
            {
                let v = dec(b);
                if v.is_nan() {
                    assert!(dec(enc(v, false)).is_nan());
                } else {
                    assert_eq!(enc(v, false), b, "code {b:#04x} value {v}");
                }
            }
        }
    }

    #[test]
    fn rounding_and_saturation() {
        assert_eq!(e4m3_to_f64(f64_to_e4m3(1.0 + 1.0 / 16.0, false)), 1.0); // tie → even
        assert_eq!(e4m3_to_f64(f64_to_e4m3(1.0 + 3.0 / 16.0, false)), 1.25); // tie → even (up)
        assert_eq!(e4m3_to_f64(f64_to_e4m3(1000.0, true)), 448.0);
        assert!(e4m3_to_f64(f64_to_e4m3(1000.0, false)).is_nan());
        assert_eq!(e5m2_to_f64(f64_to_e5m2(1e6, false)), f64::INFINITY);
        assert_eq!(e5m2_to_f64(f64_to_e5m2(-1e6, true)), -57344.0);
        assert_eq!(e4m3_to_f64(0x01), 2f64.powi(-9));
    }
}
