//! The LZ77 half of Go's `compress/flate` at level 9 (the lazy matcher Go took from
//! klauspost/compress): hash chains over 4-byte prefixes, matches chosen by an estimated
//! gain in bits rather than by length alone, a second look for a longer match ending where
//! the chosen one ends, skipping through long runs without matches, and the points where
//! batches of tokens go to the block writer.
//!
//! Positions here are offsets into the whole input. Go keeps a 64 KiB window that slides by
//! 32 KiB; what of that shows in the output is kept explicitly: `base`, the input offset of the
//! window's first byte (matches never reach before it), and whether a batch's input is still
//! in the window when the batch ends (if not, it cannot be stored).

use super::block::BlockWriter;
use super::huffman;
use super::tokens::{distance_symbol, length_symbol, Tokens, DISTANCE_EXTRA, LENGTH_EXTRA};

const WINDOW: usize = 1 << 15;
const MIN_MATCH: usize = 4;
const MAX_MATCH: usize = 258;
const MAX_BATCH_TOKENS: usize = 1 << 15;
const HASH_BITS: u32 = 17;
const HASH_MUL: u32 = 2_654_435_761;

/// Level 9's search parameters.
const LAZY: usize = 258;
const NICE: usize = 258;
const CHAIN: usize = 1024;
/// A match must save more than this many bits (as estimated) to be taken.
const MIN_GAIN: i64 = 4;
/// The estimated cost of a match beyond its extra bits.
const MATCH_COST: i64 = 3;
/// How far into a match the second look starts.
const RECHECK: usize = 2;

/// Runs Go's `Write(data)` then `Close()` through the matcher into `out`.
pub(super) fn tokenize(data: &[u8], out: &mut BlockWriter) {
    let mut m = Matcher::new(data);
    // The whole input arrives in one Write: the window fills to 64 KiB, the matcher runs
    // until less than MIN_MATCH + MAX_MATCH bytes are left ahead of it (always past the point
    // where the window slides), the window slides by 32 KiB and refills.
    m.window_end = data.len().min(2 * WINDOW);
    while m.window_end < data.len() {
        m.run(false, out);
        m.slide();
        m.window_end = data.len().min(m.base + 2 * WINDOW);
    }
    m.run(true, out);
}

struct Matcher<'a> {
    data: &'a [u8],
    /// Input offset of the window's first byte.
    base: usize,
    /// End of the input copied into the window so far.
    window_end: usize,
    /// The next position to look at.
    index: usize,
    /// Where the pending batch's input starts, if the window still holds it.
    batch_start: Option<usize>,
    /// Whether `data[index - 1]` is still undecided (a literal unless a match starts there).
    byte_pending: bool,
    /// The match found at `index - 1`, as (length, distance); length < MIN_MATCH means none.
    length: usize,
    distance: usize,
    /// The most recent position with each hash, plus one (0: none).
    head: Vec<usize>,
    /// For each position modulo the window, the previous one with its hash, plus one.
    prev: Vec<usize>,
    /// The chain head of the last position hashed, which Go keeps (and may search again)
    /// near the end of the input, where positions are no longer hashed.
    chain_head: Option<usize>,
    /// Literals since the last match (wrapping at 2^16, as Go's counter does).
    since_match: u16,
    /// Code lengths of a Huffman code for the bytes ahead, computed each time the matcher
    /// resumes; they price the literals a match would replace.
    literal_bits: [u8; 256],
    tokens: Tokens,
}

impl<'a> Matcher<'a> {
    fn new(data: &'a [u8]) -> Self {
        Matcher {
            data,
            base: 0,
            window_end: 0,
            index: 0,
            batch_start: Some(0),
            byte_pending: false,
            length: MIN_MATCH - 1,
            distance: 0,
            head: vec![0; 1 << HASH_BITS],
            prev: vec![0; WINDOW],
            chain_head: None,
            since_match: 0,
            literal_bits: [0; 256],
            tokens: Tokens::with_capacity(MAX_BATCH_TOKENS + 1),
        }
    }

    fn slide(&mut self) {
        self.base += WINDOW;
        // The batch's start leaves the window with the first half.
        self.batch_start = self.batch_start.filter(|&s| s >= self.base);
    }

    fn hash(&self, at: usize) -> usize {
        let quad = u32::from_le_bytes([
            self.data[at],
            self.data[at + 1],
            self.data[at + 2],
            self.data[at + 3],
        ]);
        (quad.wrapping_mul(HASH_MUL) >> (32 - HASH_BITS)) as usize
    }

    /// The most recent position hashed like `at`, if any.
    fn latest_like(&self, at: usize) -> Option<usize> {
        self.head[self.hash(at)].checked_sub(1)
    }

    /// Puts `at` at the head of its hash chain; returns the previous head.
    fn insert(&mut self, at: usize) -> Option<usize> {
        let h = self.hash(at);
        let previous = self.head[h];
        self.prev[at % WINDOW] = previous;
        self.head[h] = at + 1;
        previous.checked_sub(1)
    }

    /// Hashes `index` (when 4 bytes are available) and makes its chain the one to search.
    fn hash_index(&mut self, hash_end: usize) {
        if self.index < hash_end {
            self.chain_head = self.insert(self.index);
        }
    }

    fn batch(&mut self, end: usize, last: bool, out: &mut BlockWriter) {
        let raw = self
            .batch_start
            .filter(|&s| s <= end)
            .map(|s| &self.data[s..end]);
        out.write_block(&mut self.tokens, raw, last);
        self.tokens.clear();
        self.batch_start = Some(end);
    }

    fn literal(&mut self, at: usize, last: bool, out: &mut BlockWriter) {
        self.tokens.literal(self.data[at]);
        if self.tokens.len() == MAX_BATCH_TOKENS {
            self.batch(self.index, last, out);
        }
    }

    /// Matches through the window; `last` once all input is in, to drain it completely.
    fn run(&mut self, last: bool, out: &mut BlockWriter) {
        if self.window_end - self.index < MIN_MATCH + MAX_MATCH && !last {
            return;
        }
        if self.window_end != self.index {
            let ahead = &self.data[self.index..self.window_end.min(self.index + MAX_BATCH_TOKENS)];
            let mut counts = [0u32; 256];
            for &b in ahead {
                counts[usize::from(b)] += 1;
            }
            for (bits, code) in self
                .literal_bits
                .iter_mut()
                .zip(huffman::build(&counts, 15))
            {
                *bits = code.len;
            }
        }
        // Positions this close to the end have no 4 bytes to hash.
        let hash_end = self.window_end.saturating_sub(MIN_MATCH - 1);
        loop {
            let lookahead = self.window_end - self.index;
            if lookahead < MIN_MATCH + MAX_MATCH {
                if !last {
                    return;
                }
                if lookahead == 0 {
                    if self.byte_pending {
                        self.tokens.literal(self.data[self.index - 1]);
                        self.byte_pending = false;
                    }
                    if !self.tokens.is_empty() {
                        self.batch(self.index, last, out);
                    }
                    return;
                }
            }
            self.hash_index(hash_end);
            let (prev_length, prev_distance) = (self.length, self.distance);
            self.length = MIN_MATCH - 1;
            self.distance = 0;
            let lowest = self.index.saturating_sub(WINDOW).max(self.base);
            if let Some(candidate) = self.chain_head.filter(|&c| c >= lowest) {
                if lookahead > prev_length && prev_length < LAZY {
                    if let Some((len, dist)) = self.find_match(candidate, lookahead, lowest) {
                        self.length = len;
                        self.distance = dist;
                    }
                }
            }
            if prev_length >= MIN_MATCH && self.length <= prev_length {
                // The match at the previous position is at least as good: take it, or a
                // longer one found by looking where it ends.
                let (len, dist) = self.second_look(
                    prev_length,
                    prev_distance,
                    lookahead,
                    lowest,
                    hash_end,
                    last,
                    out,
                );
                self.tokens.copy(len, dist);
                // Hash the positions the match covers (index - 1 and index already are).
                let end = self.index + len - 1;
                for at in self.index + 1..end.min(hash_end) {
                    self.insert(at);
                }
                self.index = end;
                self.byte_pending = false;
                self.length = MIN_MATCH - 1;
                if self.tokens.len() == MAX_BATCH_TOKENS {
                    self.batch(self.index, last, out);
                }
                self.since_match = 0;
            } else {
                if self.length >= MIN_MATCH {
                    self.since_match = 0;
                }
                if self.byte_pending {
                    self.since_match = self.since_match.wrapping_add(1);
                    self.literal(self.index - 1, last, out);
                    self.index += 1;
                    self.skip_unmatched(hash_end, last, out);
                } else {
                    self.index += 1;
                    self.byte_pending = true;
                }
            }
        }
    }

    /// Long after the last match, Go emits further bytes as literals without searching
    /// (hashing them still), more the longer the drought.
    fn skip_unmatched(&mut self, hash_end: usize, last: bool, out: &mut BlockWriter) {
        let over = i64::from(self.since_match) - CHAIN as i64;
        if over <= 0 {
            return;
        }
        for _ in 0..1 + (over >> 6) {
            if self.index + 1 >= self.window_end {
                break;
            }
            self.literal(self.index - 1, last, out);
            if self.index < hash_end {
                self.chain_head = self.insert(self.index);
            }
            self.index += 1;
        }
        self.literal(self.index - 1, last, out);
        self.byte_pending = false;
    }

    /// Go's second look: the latest position hashed like the 4 bytes at the end of the match
    /// at `index - 1`, lined up so it ends there too, may give a longer match starting
    /// `RECHECK` bytes in; it is then extended back as far as it agrees, and the bytes it
    /// does not cover become literals (moving `index` on).
    #[allow(clippy::too_many_arguments)]
    fn second_look(
        &mut self,
        mut len: usize,
        mut dist: usize,
        lookahead: usize,
        lowest: usize,
        hash_end: usize,
        last: bool,
        out: &mut BlockWriter,
    ) -> (usize, usize) {
        let start = self.index - 1;
        if len >= MAX_MATCH - RECHECK || start + len >= hash_end {
            return (len, dist);
        }
        let Some(aligned) = self
            .latest_like(start + len)
            .and_then(|p| p.checked_sub(len))
        else {
            return (len, dist);
        };
        if start - aligned == dist || aligned <= lowest + RECHECK {
            return (len, dist);
        }
        let end = start + lookahead.min(MAX_MATCH + RECHECK);
        let found = common_prefix(
            &self.data[start + RECHECK..end],
            &self.data[aligned + RECHECK..],
        );
        if found <= len {
            return (len, dist);
        }
        len = found;
        dist = start - aligned;
        for back in (0..RECHECK).rev() {
            if len >= MAX_MATCH || self.data[start + back] != self.data[aligned + back] {
                for at in start..=start + back {
                    self.literal(at, last, out);
                    self.index += 1;
                    self.hash_index(hash_end);
                }
                break;
            }
            len += 1;
        }
        (len, dist)
    }

    /// The match for `index` with the best estimated gain, walking at most CHAIN candidates
    /// back from `candidate`; among equal gains the first (nearest) wins.
    fn find_match(
        &self,
        mut candidate: usize,
        lookahead: usize,
        lowest: usize,
    ) -> Option<(usize, usize)> {
        let pos = self.index;
        let reach = lookahead.min(MAX_MATCH);
        let nice = reach.min(NICE);
        let here = &self.data[pos..pos + reach];
        let mut length = MIN_MATCH - 1;
        let mut best_gain = MIN_GAIN;
        let mut best = None;
        let mut tries = CHAIN;
        loop {
            let there = &self.data[candidate..candidate + reach];
            if there[length] == here[length] {
                let n = common_prefix(there, here);
                if n > length {
                    let distance = pos - candidate;
                    let literal_cost: i64 = here[..n]
                        .iter()
                        .map(|&b| i64::from(self.literal_bits[usize::from(b)]))
                        .sum();
                    let gain = literal_cost
                        - i64::from(DISTANCE_EXTRA[go_distance_code(distance)])
                        - MATCH_COST
                        - i64::from(LENGTH_EXTRA[length_symbol(n as u16)]);
                    if gain > best_gain {
                        length = n;
                        best_gain = gain;
                        best = Some((n, distance));
                        if n >= nice {
                            break;
                        }
                    }
                }
            }
            if candidate <= lowest {
                break;
            }
            // (`next < pos` always holds; it keeps the slices above in bounds regardless.)
            match self.prev[candidate % WINDOW].checked_sub(1) {
                Some(next) if next >= lowest && next < pos => candidate = next,
                _ => break,
            }
            tries -= 1;
            if tries == 0 {
                break;
            }
        }
        best
    }
}

/// The distance code Go prices a candidate with: it looks the distance itself up where the
/// distance minus one belongs, so the price is that of the next distance (and 32768, past
/// the table, wraps to code 14).
fn go_distance_code(distance: usize) -> usize {
    if distance < 256 {
        distance_symbol(distance as u16 + 1)
    } else {
        distance_symbol(((distance >> 7) & 255) as u16 + 1) + 14
    }
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}
