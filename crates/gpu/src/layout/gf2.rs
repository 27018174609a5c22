//! Linear algebra over GF(2) on bit vectors (`u64`), the arithmetic of linear layouts.
//!
//! A vector is a flat tensor coordinate (or a memory offset); addition is XOR.

/// Reduces a set of vectors to an echelon basis; each entry keeps the mask of input
/// vectors (by index) whose XOR gives it, so that solutions can be traced back.
#[derive(Clone, Debug, Default)]
pub struct Echelon {
    /// (pivot bit, vector, combination mask over the inputs)
    rows: Vec<(u32, u64, u64)>,
    /// Number of inputs seen (dependent ones included), for the combination masks.
    inputs: u32,
}

impl Echelon {
    /// Echelon form of `vectors` (at most 64 of them).
    pub fn new(vectors: &[u64]) -> Echelon {
        let mut e = Echelon::default();
        for &v in vectors {
            e.push(v);
        }
        e
    }

    /// Adds the next input vector; returns false when it is zero or dependent on earlier ones.
    pub fn push(&mut self, v: u64) -> bool {
        let combo = 1u64.checked_shl(self.inputs).unwrap_or(0);
        self.inputs += 1;
        self.insert(v, combo)
    }

    fn reduce(&self, mut v: u64, mut combo: u64) -> (u64, u64) {
        for &(pivot, row, rc) in &self.rows {
            if v >> pivot & 1 == 1 {
                v ^= row;
                combo ^= rc;
            }
        }
        (v, combo)
    }

    /// Adds a vector; returns false when it is dependent on those already present.
    fn insert(&mut self, v: u64, combo: u64) -> bool {
        let (v, combo) = self.reduce(v, combo);
        if v == 0 {
            return false;
        }
        let pivot = 63 - v.leading_zeros();
        // Keep rows fully reduced on pivots so that `reduce` is a single pass.
        for row in &mut self.rows {
            if row.1 >> pivot & 1 == 1 {
                row.1 ^= v;
                row.2 ^= combo;
            }
        }
        self.rows.push((pivot, v, combo));
        true
    }

    pub fn rank(&self) -> usize {
        self.rows.len()
    }

    /// The inputs (as a bit mask over their indices) whose XOR is `target`, if any.
    pub fn solve(&self, target: u64) -> Option<u64> {
        let (rest, combo) = self.reduce(target, 0);
        (rest == 0).then_some(combo)
    }
}

/// Rank of a set of vectors.
pub fn rank(vectors: &[u64]) -> usize {
    Echelon::new(vectors).rank()
}

/// XOR of the vectors selected by the bits of `index`.
pub fn combine(bases: &[u64], index: u64) -> u64 {
    let mut acc = 0;
    for (i, &b) in bases.iter().enumerate() {
        if index >> i & 1 == 1 {
            acc ^= b;
        }
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solves_combinations() {
        let v = [0b0011, 0b0110, 0b1000];
        let e = Echelon::new(&v);
        assert_eq!(e.rank(), 3);
        let m = e.solve(0b1101).unwrap();
        assert_eq!(combine(&v, m), 0b1101);
        assert!(e.solve(0b10000).is_none());
        assert_eq!(rank(&[1, 2, 3]), 2);
        assert_eq!(rank(&[0, 0]), 0);
    }
}
