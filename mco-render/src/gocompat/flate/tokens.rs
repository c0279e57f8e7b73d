//! The matcher's output for one block: literals and matches, with the histograms the block
//! writer sizes its choices from, and Go's entropy estimate of that block.

/// A byte, or a copy of `length` (4..=258) bytes from `distance` (1..=32768) back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Token {
    Literal(u8),
    Match { length: u16, distance: u16 },
}

/// First length of each length symbol (257..=285) and its extra bits.
pub(super) const LENGTH_BASE: [u16; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
    163, 195, 227, 258,
];
pub(super) const LENGTH_EXTRA: [u8; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];
/// First distance of each distance symbol and its extra bits.
pub(super) const DISTANCE_BASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
    2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
];
pub(super) const DISTANCE_EXTRA: [u8; 30] = [
    0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13,
    13,
];

/// The index of the last base not above `value`.
fn bucket(bases: &[u16], value: u16) -> usize {
    bases.partition_point(|&b| b <= value).saturating_sub(1)
}

/// The length symbol of `length`, counted from 257.
pub(super) fn length_symbol(length: u16) -> usize {
    bucket(&LENGTH_BASE, length)
}

pub(super) fn distance_symbol(distance: u16) -> usize {
    bucket(&DISTANCE_BASE, distance)
}

/// A block's tokens and histograms; `lengths[0]` is the end-of-block symbol's count.
#[derive(Debug, Clone)]
pub(super) struct Tokens {
    pub(super) list: Vec<Token>,
    pub(super) literals: [u16; 256],
    /// Symbols 256..=285, from end of block on.
    pub(super) lengths: [u16; 30],
    pub(super) distances: [u16; 30],
}

impl Tokens {
    pub(super) fn with_capacity(n: usize) -> Self {
        Tokens {
            list: Vec::with_capacity(n),
            literals: [0; 256],
            lengths: [0; 30],
            distances: [0; 30],
        }
    }

    pub(super) fn len(&self) -> usize {
        self.list.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub(super) fn literal(&mut self, b: u8) {
        self.list.push(Token::Literal(b));
        self.literals[usize::from(b)] += 1;
    }

    pub(super) fn copy(&mut self, length: usize, distance: usize) {
        let (length, distance) = (length as u16, distance as u16);
        self.list.push(Token::Match { length, distance });
        self.lengths[1 + length_symbol(length)] += 1;
        self.distances[distance_symbol(distance)] += 1;
    }

    pub(super) fn clear(&mut self) {
        self.list.clear();
        self.literals = [0; 256];
        self.lengths = [0; 30];
        self.distances = [0; 30];
    }

    /// Go's guess at the bits an optimal code would spend on this block (`tokens` counts
    /// the end-of-block token when the block has one): a Shannon estimate with a polynomial
    /// log2 in single precision, each symbol charged 1 to 15 bits, plus the extra bits.
    /// Reproduced operation by operation, since it decides whether a block keeps the
    /// previous block's Huffman table.
    pub(super) fn estimated_bits(&self, tokens: usize) -> usize {
        let charge = |count: u16, inv_total: f32| {
            let n = f32::from(count);
            (-fast_log2(n * inv_total)).clamp(1.0, 15.0) * n
        };
        let mut shannon = 0f32;
        let mut extra = 0usize;
        let mut matches = 0usize;
        if tokens > 0 {
            let inv_total = 1.0 / tokens as f32;
            for &v in self.literals.iter().filter(|&&v| v > 0) {
                shannon += charge(v, inv_total);
            }
            shannon += 15.0;
            for (sym, &v) in self.lengths[1..].iter().enumerate() {
                if v > 0 {
                    shannon += charge(v, inv_total);
                    extra += usize::from(LENGTH_EXTRA[sym]) * usize::from(v);
                    matches += usize::from(v);
                }
            }
        }
        if matches > 0 {
            let inv_total = 1.0 / matches as f32;
            for (sym, &v) in self.distances.iter().enumerate() {
                if v > 0 {
                    shannon += charge(v, inv_total);
                    extra += usize::from(DISTANCE_EXTRA[sym]) * usize::from(v);
                }
            }
        }
        shannon as usize + extra
    }
}

/// log2 from the float's exponent and a quadratic fit of its mantissa in [1, 2). The
/// coefficients are Go's, digit for digit.
#[allow(clippy::excessive_precision)]
fn fast_log2(val: f32) -> f32 {
    let bits = val.to_bits() as i32;
    let exponent = (((bits >> 23) & 255) - 128) as f32;
    let mantissa = f32::from_bits(((bits & !0x7f80_0000) | (127 << 23)) as u32);
    exponent + (((-0.344_848_43_f32) * mantissa + 2.024_665_78_f32) * mantissa - 0.674_877_59_f32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbols() {
        assert_eq!(length_symbol(3), 0);
        assert_eq!(length_symbol(10), 7);
        assert_eq!(length_symbol(11), 8);
        assert_eq!(length_symbol(257), 27);
        assert_eq!(length_symbol(258), 28);
        assert_eq!(distance_symbol(1), 0);
        assert_eq!(distance_symbol(4), 3);
        assert_eq!(distance_symbol(6), 4);
        assert_eq!(distance_symbol(32_768), 29);
    }

    #[test]
    fn fast_log2_is_close() {
        for v in [0.001f32, 0.25, 0.5, 0.7, 1.0] {
            assert!((fast_log2(v) - v.log2()).abs() < 0.01, "{v}");
        }
    }
}
