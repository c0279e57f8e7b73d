//! One deflate block from the matcher's tokens, in whichever form Go's `huffmanBitWriter`
//! estimates smallest: stored, fixed Huffman or dynamic Huffman.

use super::bits::BitWriter;
use super::huffman::{self, Code};

/// What the matcher emits: a byte, or a copy of `length` (4..=258) bytes from `distance`
/// (1..=32768) back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Token {
    Literal(u8),
    Match { length: u16, distance: u16 },
}

/// The largest stored block.
pub(super) const MAX_STORED: usize = 65_535;

const END_OF_BLOCK: usize = 256;
const LITERAL_SYMBOLS: usize = 286;
const DISTANCE_SYMBOLS: usize = 30;

/// Lengths 3..=258 per length symbol (257..=285): the first length and its extra bits.
const LENGTH_BASE: [u16; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
    163, 195, 227, 258,
];
const LENGTH_EXTRA: [u8; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];
const DISTANCE_BASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
    2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
];
const DISTANCE_EXTRA: [u8; 30] = [
    0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13,
    13,
];

/// The order in which a dynamic header lists the code-length code's lengths.
const CODE_LENGTH_ORDER: [usize; 19] = [
    16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
];

/// The index of the last base not above `value`.
fn bucket(bases: &[u16], value: u16) -> usize {
    bases.partition_point(|&b| b <= value).saturating_sub(1)
}

fn length_symbol(length: u16) -> usize {
    bucket(&LENGTH_BASE, length)
}

fn distance_symbol(distance: u16) -> usize {
    bucket(&DISTANCE_BASE, distance)
}

/// Writes `tokens` as one non-final block. `raw` is the input the tokens stand for, when the
/// matcher still has all of it in its window; only then is a stored block considered.
pub(super) fn write_block(w: &mut BitWriter, tokens: &[Token], raw: Option<&[u8]>) {
    let mut lit_freq = [0u32; LITERAL_SYMBOLS];
    let mut dist_freq = [0u32; DISTANCE_SYMBOLS];
    for t in tokens {
        match *t {
            Token::Literal(b) => lit_freq[usize::from(b)] += 1,
            Token::Match { length, distance } => {
                lit_freq[END_OF_BLOCK + 1 + length_symbol(length)] += 1;
                dist_freq[distance_symbol(distance)] += 1;
            }
        }
    }
    lit_freq[END_OF_BLOCK] += 1;
    let lit_count = used_prefix(&lit_freq);
    let mut dist_count = used_prefix(&dist_freq);
    if dist_count == 0 {
        // A dynamic header must describe at least one distance code; Go counts a phantom
        // distance 1, in the size estimates as well.
        dist_freq[0] = 1;
        dist_count = 1;
    }
    let lit_codes = huffman::build(&lit_freq, 15);
    let dist_codes = huffman::build(&dist_freq, 15);

    let stored = raw.filter(|r| r.len() <= MAX_STORED);
    // Extra bits cost the same in both Huffman forms, so Go only counts them when a stored
    // block competes (and compares the two Huffman forms without them otherwise).
    let extra = if stored.is_some() {
        extra_bits(&lit_freq[..lit_count], &dist_freq[..dist_count])
    } else {
        0
    };

    let fixed_lit = huffman::fixed_literals();
    let fixed_dist = huffman::fixed_distances();
    let fixed_size =
        3 + huffman::cost(&fixed_lit, &lit_freq) + huffman::cost(&fixed_dist, &dist_freq) + extra;

    let header = DynamicHeader::new(&lit_codes[..lit_count], &dist_codes[..dist_count]);
    let dynamic_size = header.size()
        + huffman::cost(&lit_codes, &lit_freq)
        + huffman::cost(&dist_codes, &dist_freq)
        + extra;

    let (best, dynamic) = if dynamic_size < fixed_size {
        (dynamic_size, true)
    } else {
        (fixed_size, false)
    };
    if let Some(raw) = stored {
        if (raw.len() + 5) * 8 < best {
            write_stored(w, raw, false);
            return;
        }
    }
    if dynamic {
        w.put(0b100, 3);
        header.write(w);
        write_tokens(w, tokens, &lit_codes, &dist_codes);
    } else {
        w.put(0b010, 3);
        write_tokens(w, tokens, &fixed_lit, &fixed_dist);
    }
}

/// A stored block: header bits, padding to a byte, length and its complement, the bytes.
pub(super) fn write_stored(w: &mut BitWriter, raw: &[u8], last: bool) {
    w.put(u32::from(last), 3);
    w.align();
    let len = raw.len() as u16;
    w.put(u32::from(len), 16);
    w.put(u32::from(!len), 16);
    w.put_bytes(raw);
}

fn used_prefix(freq: &[u32]) -> usize {
    freq.iter().rposition(|&f| f != 0).map_or(0, |i| i + 1)
}

fn extra_bits(lit_freq: &[u32], dist_freq: &[u32]) -> usize {
    let lengths: usize = lit_freq
        .iter()
        .skip(END_OF_BLOCK + 1)
        .zip(LENGTH_EXTRA)
        .map(|(&f, e)| f as usize * usize::from(e))
        .sum();
    let distances: usize = dist_freq
        .iter()
        .zip(DISTANCE_EXTRA)
        .map(|(&f, e)| f as usize * usize::from(e))
        .sum();
    lengths + distances
}

fn write_tokens(w: &mut BitWriter, tokens: &[Token], lit: &[Code], dist: &[Code]) {
    let put_code = |w: &mut BitWriter, c: Code| w.put(u32::from(c.bits), u32::from(c.len));
    for t in tokens {
        match *t {
            Token::Literal(b) => put_code(w, lit[usize::from(b)]),
            Token::Match { length, distance } => {
                let ls = length_symbol(length);
                put_code(w, lit[END_OF_BLOCK + 1 + ls]);
                w.put(
                    u32::from(length - LENGTH_BASE[ls]),
                    u32::from(LENGTH_EXTRA[ls]),
                );
                let ds = distance_symbol(distance);
                put_code(w, dist[ds]);
                w.put(
                    u32::from(distance - DISTANCE_BASE[ds]),
                    u32::from(DISTANCE_EXTRA[ds]),
                );
            }
        }
    }
    put_code(w, lit[END_OF_BLOCK]);
}

/// The code lengths of a dynamic block, run-length encoded (RFC 1951 section 3.2.7) as Go
/// does it, and the Huffman code (at most 7 bits) for that encoding.
struct DynamicHeader {
    lit_count: usize,
    dist_count: usize,
    /// (symbol 0..=18, its repeat count's extra bits)
    runs: Vec<(u8, u8)>,
    freq: [u32; 19],
    codes: Vec<Code>,
    /// How many code-length code lengths the header lists (trailing zeros dropped, at least 4).
    listed: usize,
}

impl DynamicHeader {
    fn new(lit: &[Code], dist: &[Code]) -> Self {
        let lengths: Vec<u8> = lit.iter().chain(dist).map(|c| c.len).collect();
        let runs = run_length(&lengths);
        let mut freq = [0u32; 19];
        for &(sym, _) in &runs {
            freq[usize::from(sym)] += 1;
        }
        let codes = huffman::build(&freq, 7);
        let listed = CODE_LENGTH_ORDER
            .iter()
            .rposition(|&s| freq[s] != 0)
            .map_or(4, |i| (i + 1).max(4));
        DynamicHeader {
            lit_count: lit.len(),
            dist_count: dist.len(),
            runs,
            freq,
            codes,
            listed,
        }
    }

    /// Bits of the header, from the block type on.
    fn size(&self) -> usize {
        3 + 5
            + 5
            + 4
            + 3 * self.listed
            + huffman::cost(&self.codes, &self.freq)
            + 2 * self.freq[16] as usize
            + 3 * self.freq[17] as usize
            + 7 * self.freq[18] as usize
    }

    /// Everything after the block type bits.
    fn write(&self, w: &mut BitWriter) {
        w.put((self.lit_count - 257) as u32, 5);
        w.put((self.dist_count - 1) as u32, 5);
        w.put((self.listed - 4) as u32, 4);
        for &sym in &CODE_LENGTH_ORDER[..self.listed] {
            w.put(u32::from(self.codes[sym].len), 3);
        }
        for &(sym, extra) in &self.runs {
            let c = self.codes[usize::from(sym)];
            w.put(u32::from(c.bits), u32::from(c.len));
            match sym {
                16 => w.put(u32::from(extra), 2),
                17 => w.put(u32::from(extra), 3),
                18 => w.put(u32::from(extra), 7),
                _ => {}
            }
        }
    }
}

/// Go's run-length encoding of code lengths: a non-zero length is written once and then
/// repeated with 16 (3..=6 copies) while at least three copies remain; zeros use 18
/// (11..=138) and then 17 (3..=10); shorter leftovers are written out.
fn run_length(lengths: &[u8]) -> Vec<(u8, u8)> {
    let mut runs = Vec::new();
    for group in lengths.chunk_by(|a, b| a == b) {
        let len = group[0];
        let mut left = group.len();
        if len != 0 {
            runs.push((len, 0));
            left -= 1;
            while left >= 3 {
                let n = left.min(6);
                runs.push((16, (n - 3) as u8));
                left -= n;
            }
        } else {
            while left >= 11 {
                let n = left.min(138);
                runs.push((18, (n - 11) as u8));
                left -= n;
            }
            if left >= 3 {
                runs.push((17, (left - 3) as u8));
                left = 0;
            }
        }
        runs.extend(std::iter::repeat_n((len, 0), left));
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_and_distance_symbols() {
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
    fn runs_of_lengths() {
        let mut lengths = vec![8; 8];
        lengths.extend([0; 150]);
        lengths.extend([5, 5, 0, 0, 0]);
        assert_eq!(
            run_length(&lengths),
            [
                (8, 0),
                (16, 3),
                (8, 0),
                (18, 127),
                (18, 1),
                (5, 0),
                (5, 0),
                (17, 0)
            ]
        );
    }
}
