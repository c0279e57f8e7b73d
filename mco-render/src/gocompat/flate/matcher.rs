//! The LZ77 half of Go's `compress/flate` at level 9: hash chains over 4-byte prefixes, lazy
//! matching, and the points where blocks end.
//!
//! Positions here are offsets into the whole input. Go keeps a 64 KiB window that slides by
//! 32 KiB; what of that shows in the output is kept explicitly: `base`, the input offset of the
//! window's first byte (matches never reach before it), and whether a block's input is still
//! in the window when the block ends (if not, it cannot be stored).

use super::block::Token;

const WINDOW: usize = 1 << 15;
const MIN_MATCH: usize = 4;
const MAX_MATCH: usize = 258;
/// Go refuses 4-byte matches from further back than this.
const FAR_FOR_SHORT: usize = 4096;
const MAX_BLOCK_TOKENS: usize = 1 << 14;
const HASH_BITS: u32 = 17;
const HASH_MUL: u32 = 0x1e35_a7bd;

/// Level 9's search parameters.
const GOOD: usize = 32;
const LAZY: usize = 258;
const NICE: usize = 258;
const CHAIN: usize = 4096;

/// Calls `emit` for each block, in order, with its tokens and (while the window still holds
/// it) the input those tokens stand for.
pub(super) fn tokenize(data: &[u8], mut emit: impl FnMut(&[Token], Option<&[u8]>)) {
    let mut m = Matcher::new(data);
    // Go's writer is given the whole input in one Write: the window fills to 64 KiB, the
    // matcher runs until less than MIN_MATCH + MAX_MATCH bytes are left ahead of it (which is
    // always past the point where the window slides), the window slides by 32 KiB and refills.
    m.window_end = data.len().min(2 * WINDOW);
    while m.window_end < data.len() {
        m.run(false, &mut emit);
        m.slide();
        m.window_end = data.len().min(m.base + 2 * WINDOW);
    }
    m.run(true, &mut emit);
}

struct Matcher<'a> {
    data: &'a [u8],
    /// Input offset of the window's first byte.
    base: usize,
    /// End of the input copied into the window so far.
    window_end: usize,
    /// The next position to look at.
    index: usize,
    /// Where the pending block's input starts, if the window still holds it.
    block_start: Option<usize>,
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
    tokens: Vec<Token>,
}

impl<'a> Matcher<'a> {
    fn new(data: &'a [u8]) -> Self {
        Matcher {
            data,
            base: 0,
            window_end: 0,
            index: 0,
            block_start: Some(0),
            byte_pending: false,
            length: MIN_MATCH - 1,
            distance: 0,
            head: vec![0; 1 << HASH_BITS],
            prev: vec![0; WINDOW],
            chain_head: None,
            tokens: Vec::with_capacity(MAX_BLOCK_TOKENS + 1),
        }
    }

    fn slide(&mut self) {
        self.base += WINDOW;
        // The block's start leaves the window with the first half.
        self.block_start = self.block_start.filter(|&s| s >= self.base);
    }

    fn hash(&self, at: usize) -> usize {
        let quad = u32::from_be_bytes([
            self.data[at],
            self.data[at + 1],
            self.data[at + 2],
            self.data[at + 3],
        ]);
        (quad.wrapping_mul(HASH_MUL) >> (32 - HASH_BITS)) as usize
    }

    /// Puts `at` at the head of its hash chain; returns the previous head.
    fn insert(&mut self, at: usize) -> usize {
        let h = self.hash(at);
        let previous = self.head[h];
        self.prev[at % WINDOW] = previous;
        self.head[h] = at + 1;
        previous
    }

    fn flush(&mut self, end: usize, emit: &mut impl FnMut(&[Token], Option<&[u8]>)) {
        let raw = self
            .block_start
            .filter(|&s| s <= end)
            .map(|s| &self.data[s..end]);
        emit(&self.tokens, raw);
        self.tokens.clear();
        self.block_start = Some(end);
    }

    /// Matches through the window; `last` once all input is in, to drain it completely.
    fn run(&mut self, last: bool, emit: &mut impl FnMut(&[Token], Option<&[u8]>)) {
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
                        self.tokens.push(Token::Literal(self.data[self.index - 1]));
                        self.byte_pending = false;
                    }
                    if !self.tokens.is_empty() {
                        self.flush(self.index, emit);
                    }
                    return;
                }
            }
            if self.index < hash_end {
                let previous = self.insert(self.index);
                self.chain_head = previous.checked_sub(1);
            }
            let (prev_length, prev_distance) = (self.length, self.distance);
            self.length = MIN_MATCH - 1;
            self.distance = 0;
            let lowest = self.index.saturating_sub(WINDOW).max(self.base);
            if let Some(candidate) = self.chain_head.filter(|&c| c >= lowest) {
                if lookahead > prev_length && prev_length < LAZY {
                    if let Some((len, dist)) = self.find_match(candidate, lookahead) {
                        self.length = len;
                        self.distance = dist;
                    }
                }
            }
            if prev_length >= MIN_MATCH && self.length <= prev_length {
                // The match at the previous position is at least as good: take it, and hash
                // the positions it covers (index - 1 and index already are).
                self.tokens.push(Token::Match {
                    length: prev_length as u16,
                    distance: prev_distance as u16,
                });
                let end = self.index + prev_length - 1;
                for at in self.index + 1..end {
                    if at < hash_end {
                        self.insert(at);
                    }
                }
                self.index = end;
                self.byte_pending = false;
                self.length = MIN_MATCH - 1;
                if self.tokens.len() == MAX_BLOCK_TOKENS {
                    self.flush(self.index, emit);
                }
            } else {
                if self.byte_pending {
                    self.tokens.push(Token::Literal(self.data[self.index - 1]));
                    if self.tokens.len() == MAX_BLOCK_TOKENS {
                        self.flush(self.index, emit);
                    }
                }
                self.index += 1;
                self.byte_pending = true;
            }
        }
    }

    /// The longest match for `index` longer than MIN_MATCH - 1, walking at most CHAIN
    /// candidates from `candidate` back; the first of equal lengths wins.
    fn find_match(&self, mut candidate: usize, lookahead: usize) -> Option<(usize, usize)> {
        let pos = self.index;
        let reach = lookahead.min(MAX_MATCH);
        let nice = reach.min(NICE);
        let mut length = MIN_MATCH - 1;
        let mut tries = if length >= GOOD { CHAIN / 4 } else { CHAIN };
        let here = &self.data[pos..pos + reach];
        let mut best = None;
        // Once the chain reaches `pos - WINDOW`, that slot of `prev` already holds `pos`.
        let oldest = pos.checked_sub(WINDOW);
        loop {
            let there = &self.data[candidate..candidate + reach];
            if there[length] == here[length] {
                let n = here.iter().zip(there).take_while(|(a, b)| a == b).count();
                if n > length && (n > MIN_MATCH || pos - candidate <= FAR_FOR_SHORT) {
                    length = n;
                    best = Some((n, pos - candidate));
                    if n >= nice {
                        break;
                    }
                }
            }
            if Some(candidate) == oldest {
                break;
            }
            // (`next < pos` always holds; it keeps the slices above in bounds regardless.)
            match self.prev[candidate % WINDOW].checked_sub(1) {
                Some(next)
                    if next >= self.base && next < pos && oldest.is_none_or(|o| next >= o) =>
                {
                    candidate = next;
                }
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
