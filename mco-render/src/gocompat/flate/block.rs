//! Blocks as Go's `huffmanBitWriter` writes them for levels 7 to 9 (`writeBlockDynamic`).
//!
//! Each batch of tokens becomes a stored, fixed or dynamic block, whichever Go's estimates
//! make smallest; short batches are the only ones offered the fixed code. A dynamic block
//! written before all input is in stays open: its end-of-block code is owed, and the next
//! batch may continue it with the same table when Go's estimate of a fresh table (the last
//! header's size, the entropy of the batch, a penalty) does not beat reusing it. Batches
//! written while closing (`sync`) always end their block. The stream ends with an empty
//! final fixed block, 10 bits instead of a 5-byte stored one.

use super::bits::BitWriter;
use super::huffman::{self, Code};
use super::tokens::{
    distance_symbol, length_symbol, Token, Tokens, DISTANCE_BASE, DISTANCE_EXTRA, LENGTH_BASE,
    LENGTH_EXTRA,
};

/// The largest stored block.
const MAX_STORED: usize = 65_535;
const END_OF_BLOCK: usize = 256;
const LITERAL_SYMBOLS: usize = 286;
const DISTANCE_SYMBOLS: usize = 30;
/// Only batches with fewer tokens than this are costed with the fixed code.
const FIXED_CANDIDATE_TOKENS: usize = 250;
/// A fresh table's estimate is raised by 1/2^8 of itself (levels 7 to 9).
const NEW_TABLE_PENALTY_SHIFT: u32 = 8;

/// The order in which a dynamic header lists the code-length code's lengths.
const CODE_LENGTH_ORDER: [usize; 19] = [
    16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
];

/// The deflate stream being written, and the dynamic block left open, if any.
pub(super) struct BlockWriter {
    w: BitWriter,
    lit_codes: Vec<Code>,
    dist_codes: Vec<Code>,
    /// Header bits of the open block (its end-of-block code not yet written); 0: none open.
    open_header: usize,
    fixed_lit: Vec<Code>,
    fixed_dist: Vec<Code>,
}

impl BlockWriter {
    pub(super) fn new(capacity: usize) -> Self {
        BlockWriter {
            w: BitWriter::with_capacity(capacity),
            lit_codes: Vec::new(),
            dist_codes: Vec::new(),
            open_header: 0,
            fixed_lit: huffman::fixed_literals(),
            fixed_dist: huffman::fixed_distances(),
        }
    }

    /// Ends the open block, if any.
    fn close_open(&mut self) {
        if self.open_header > 0 {
            let eob = self.lit_codes[END_OF_BLOCK];
            self.w.put(u32::from(eob.bits), u32::from(eob.len));
            self.open_header = 0;
        }
    }

    /// Whether the open table has a code for every symbol the batch uses.
    fn covers(&self, t: &Tokens) -> bool {
        let has = |codes: &[Code], counts: &[u16]| {
            codes.iter().zip(counts).all(|(c, &n)| n == 0 || c.len > 0)
        };
        has(&self.lit_codes[..256], &t.literals)
            && has(&self.lit_codes[256..], &t.lengths)
            && has(&self.dist_codes, &t.distances)
    }

    /// Writes a batch of tokens. `raw` is the input they stand for, if the matcher's window
    /// still holds all of it (only then can the batch be stored); `sync` when closing.
    pub(super) fn write_block(&mut self, t: &mut Tokens, raw: Option<&[u8]>, sync: bool) {
        // The end-of-block symbol always needs a code; while closing it is also a token.
        t.lengths[0] = 1;
        let count = t.len() + usize::from(sync);
        if self.open_header > 0 && !self.covers(t) {
            self.close_open();
        }

        let mut lit_freq = [0u32; LITERAL_SYMBOLS];
        for (f, &n) in lit_freq.iter_mut().zip(t.literals.iter().chain(&t.lengths)) {
            *f = u32::from(n);
        }
        let mut dist_freq = [0u32; DISTANCE_SYMBOLS];
        for (f, &n) in dist_freq.iter_mut().zip(&t.distances) {
            *f = u32::from(n);
        }
        let lit_count = used_prefix(&lit_freq);
        let mut dist_count = used_prefix(&dist_freq);
        if dist_count == 0 {
            // A dynamic header must describe at least one distance code; Go counts a phantom
            // distance 1, in the size estimates as well.
            dist_freq[0] = 1;
            dist_count = 1;
        }

        let stored = raw.filter(|r| r.len() <= MAX_STORED);
        let stored_size = stored.map(|r| (r.len() + 5) * 8);
        let extra = if stored.is_some() || self.open_header > 0 {
            extra_bits(&lit_freq, &dist_freq)
        } else {
            0
        };
        let fixed_size = 3
            + huffman::cost(&self.fixed_lit, &lit_freq)
            + huffman::cost(&self.fixed_dist, &dist_freq)
            + extra;
        let fixed_candidate = count < FIXED_CANDIDATE_TOKENS;

        if self.open_header > 0 {
            let mut fresh = self.open_header + t.estimated_bits(count);
            fresh +=
                usize::from(self.lit_codes[END_OF_BLOCK].len) + (fresh >> NEW_TABLE_PENALTY_SHIFT);
            let reuse = huffman::cost(&self.lit_codes, &lit_freq)
                + huffman::cost(&self.dist_codes, &dist_freq)
                + extra;
            let size = if fresh < reuse {
                self.close_open();
                fresh
            } else {
                reuse
            };
            if fixed_candidate && fixed_size + 7 < size {
                match (stored, stored_size) {
                    (Some(raw), Some(s)) if s <= size => self.write_stored(raw),
                    _ => self.write_fixed(t),
                }
                return;
            }
            if let (Some(raw), Some(s)) = (stored, stored_size) {
                if s <= size {
                    self.write_stored(raw);
                    return;
                }
            }
        }

        if self.open_header == 0 {
            let lit_codes = huffman::build(&lit_freq, 15);
            let dist_codes = huffman::build(&dist_freq, 15);
            let header = DynamicHeader::new(&lit_codes[..lit_count], &dist_codes[..dist_count]);
            let size = header.size()
                + huffman::cost(&lit_codes, &lit_freq)
                + huffman::cost(&dist_codes, &dist_freq)
                + extra;
            if fixed_candidate && fixed_size <= size {
                match (stored, stored_size) {
                    (Some(raw), Some(s)) if s <= fixed_size => self.write_stored(raw),
                    _ => self.write_fixed(t),
                }
                return;
            }
            if let (Some(raw), Some(s)) = (stored, stored_size) {
                if s <= size {
                    self.write_stored(raw);
                    return;
                }
            }
            self.w.put(0b100, 3);
            header.write(&mut self.w);
            self.lit_codes = lit_codes;
            self.dist_codes = dist_codes;
            if !sync {
                self.open_header = header.size();
            }
        }
        if sync {
            self.open_header = 0;
        }
        write_tokens(
            &mut self.w,
            &t.list,
            &self.lit_codes,
            &self.dist_codes,
            sync,
        );
    }

    /// A non-final stored block.
    fn write_stored(&mut self, raw: &[u8]) {
        self.close_open();
        self.w.put(0, 3);
        self.w.align();
        let len = raw.len() as u16;
        self.w.put(u32::from(len), 16);
        self.w.put(u32::from(!len), 16);
        self.w.put_bytes(raw);
    }

    /// A non-final fixed-code block, ended.
    fn write_fixed(&mut self, t: &Tokens) {
        self.close_open();
        self.w.put(0b010, 3);
        write_tokens(
            &mut self.w,
            &t.list,
            &self.fixed_lit,
            &self.fixed_dist,
            true,
        );
    }

    /// Ends the stream: the open block, then an empty final fixed block.
    pub(super) fn finish(mut self) -> Vec<u8> {
        self.close_open();
        self.w.put(0b011, 3);
        self.w.put(0, 7);
        self.w.finish()
    }
}

fn used_prefix(freq: &[u32]) -> usize {
    freq.iter().rposition(|&f| f != 0).map_or(0, |i| i + 1)
}

fn extra_bits(lit_freq: &[u32], dist_freq: &[u32]) -> usize {
    let lengths: usize = lit_freq[END_OF_BLOCK + 1..]
        .iter()
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

fn write_tokens(w: &mut BitWriter, tokens: &[Token], lit: &[Code], dist: &[Code], end: bool) {
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
    if end {
        put_code(w, lit[END_OF_BLOCK]);
    }
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

    #[test]
    fn an_empty_stream_is_one_final_fixed_block() {
        assert_eq!(BlockWriter::new(0).finish(), [0x03, 0x00]);
    }
}
