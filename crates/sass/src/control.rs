//! The control bits of a Volta-and-later SASS instruction (sm_70 … sm_90a): 21 bits at
//! bits 105–125 of the 128-bit word, which tell the hardware how to schedule it — the
//! scheduling `ptxas` did, and what a schedule search rewrites.
//!
//! | bits (of the word) | field | meaning |
//! |---|---|---|
//! | 105–108 | stall | cycles before the warp's next instruction may issue |
//! | 109 | yield | the yield hint, as encoded |
//! | 110–112 | write scoreboard | the scoreboard (0–5) this instruction's variable-latency result sets; 7: none |
//! | 113–115 | read scoreboard | the scoreboard released when its source registers have been read; 7: none |
//! | 116–121 | wait mask | scoreboards (bit *i*: SB*i*) this instruction waits for before issuing |
//! | 122–125 | reuse | operand-reuse cache flags, one per source slot |
//!
//! The layout follows the public reverse-engineering of these encodings (maxas,
//! CuAssembler, "Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking");
//! the crate's tests check it on every instruction `ptxas` makes from the corpus: reuse
//! flags against the `.reuse` operands `nvdisasm` prints, scoreboards against the loads
//! whose results are waited for.

/// The decoded control bits.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Control {
    pub stall: u8,
    pub yield_bit: bool,
    /// 0–5, or `None` (encoded 7).
    pub write_sb: Option<u8>,
    pub read_sb: Option<u8>,
    /// Bit *i*: wait for scoreboard *i*.
    pub wait: u8,
    pub reuse: u8,
}

const SHIFT: u32 = 105 - 64;

impl Control {
    /// From the high 64 bits of an instruction.
    pub fn decode(hi: u64) -> Control {
        let c = (hi >> SHIFT) & 0x1f_ffff;
        let sb = |v: u64| (v != 7).then_some(v as u8);
        Control {
            stall: (c & 0xf) as u8,
            yield_bit: (c >> 4) & 1 == 1,
            write_sb: sb((c >> 5) & 7),
            read_sb: sb((c >> 8) & 7),
            wait: ((c >> 11) & 0x3f) as u8,
            reuse: ((c >> 17) & 0xf) as u8,
        }
    }

    /// Puts these bits into the high 64 bits of an instruction (the others kept).
    pub fn encode(&self, hi: u64) -> u64 {
        let sb = |v: Option<u8>| v.map_or(7, |x| (x & 7) as u64);
        let c = (self.stall as u64 & 0xf)
            | (self.yield_bit as u64) << 4
            | sb(self.write_sb) << 5
            | sb(self.read_sb) << 8
            | (self.wait as u64 & 0x3f) << 11
            | (self.reuse as u64 & 0xf) << 17;
        (hi & !(0x1f_ffff << SHIFT)) | c << SHIFT
    }

    /// `W1:R-:B--2---:S04:Y` — write and read scoreboards, wait mask (SB0 on the left),
    /// stall, yield bit, reuse flags (`u` + mask) when any.
    pub fn text(&self) -> String {
        let sb = |v: Option<u8>| v.map_or("-".to_string(), |x| x.to_string());
        let wait: String = (0..6).map(|i| if self.wait >> i & 1 == 1 { char::from(b'0' + i) } else { '-' }).collect();
        let mut s = format!("W{}:R{}:B{wait}:S{:02}", sb(self.write_sb), sb(self.read_sb), self.stall);
        if self.yield_bit {
            s.push_str(":Y");
        }
        if self.reuse != 0 {
            s.push_str(&format!(":u{:x}", self.reuse));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_round_trips_and_the_rest_of_the_word_is_kept() {
        let hi = 0x0000_0001_0203_0405u64 | 1 << 63 | 1 << 40;
        for stall in [0, 1, 7, 15] {
            for sb in [None, Some(0), Some(5)] {
                let c = Control {
                    stall,
                    yield_bit: stall % 2 == 0,
                    write_sb: sb,
                    read_sb: Some(2),
                    wait: 0b101001,
                    reuse: 0b1010,
                };
                let w = c.encode(hi);
                assert_eq!(Control::decode(w), c);
                assert_eq!(w & !(0x1f_ffff << SHIFT), hi & !(0x1f_ffff << SHIFT), "other bits untouched");
            }
        }
        let none = Control { stall: 4, yield_bit: true, write_sb: None, read_sb: None, wait: 0, reuse: 0 };
        assert_eq!(none.text(), "W-:R-:B------:S04:Y");
    }
}
