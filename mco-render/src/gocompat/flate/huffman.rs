//! Length-limited Huffman codes built the way Go's `compress/flate` builds them.
//!
//! Go does not use zlib's tree-then-overflow-fixup construction: it counts how many symbols get
//! each length with a lazy boundary package-merge (Katajainen, Moffat and Turpin), over the
//! symbols sorted by frequency and then by value. Optimal length-limited codes are not unique,
//! so the exact order in which that merge prefers leaves over pairs decides the lengths, and
//! the lengths decide the bytes. Canonical codes are then handed out per length in symbol order.

/// One symbol's code: `len` bits, stored reversed so the bit writer can emit it LSB first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Code {
    pub(super) bits: u16,
    pub(super) len: u8,
}

/// The deepest code any of Go's encoders asks for (the literal and distance alphabets).
const LONGEST: usize = 15;

/// Codes for every symbol of `freq` (zero frequency gets no code), no longer than `max_len`.
pub(super) fn build(freq: &[u32], max_len: usize) -> Vec<Code> {
    let mut codes = vec![Code::default(); freq.len()];
    // (symbol, frequency) of the symbols in use, in symbol order.
    let mut used: Vec<(u16, u32)> = freq
        .iter()
        .enumerate()
        .filter(|&(_, &f)| f != 0)
        .map(|(sym, &f)| (sym as u16, f))
        .collect();
    if used.len() <= 2 {
        // One or two symbols: one bit each, in symbol order (a lone symbol still gets a
        // length, as the distance alphabet of a block without matches needs).
        for (i, &(sym, _)) in used.iter().enumerate() {
            codes[usize::from(sym)] = Code {
                bits: i as u16,
                len: 1,
            };
        }
        return codes;
    }
    used.sort_unstable_by_key(|&(sym, f)| (f, sym));
    let weights: Vec<u64> = used.iter().map(|&(_, f)| u64::from(f)).collect();
    let per_length = symbols_per_length(&weights, max_len.min(LONGEST));

    // The most frequent symbols get the shortest codes; within a length, codes ascend with
    // the symbol.
    let mut rest = &mut used[..];
    let mut next = 0u16;
    for (len, &count) in per_length.iter().enumerate() {
        next <<= 1;
        if len == 0 || count == 0 {
            continue;
        }
        let split = rest.len().saturating_sub(count);
        let (shorter_first, chunk) = std::mem::take(&mut rest).split_at_mut(split);
        chunk.sort_unstable_by_key(|&(sym, _)| sym);
        for &(sym, _) in chunk.iter() {
            codes[usize::from(sym)] = Code {
                bits: reverse(next, len as u32),
                len: len as u8,
            };
            next = next.wrapping_add(1);
        }
        rest = shorter_first;
    }
    codes
}

/// Total bits `codes` spend on symbols occurring `freq` times.
pub(super) fn cost(codes: &[Code], freq: &[u32]) -> usize {
    codes
        .iter()
        .zip(freq)
        .map(|(c, &f)| f as usize * usize::from(c.len))
        .sum()
}

/// The fixed literal/length code of RFC 1951 section 3.2.6 (symbols 0..=285).
pub(super) fn fixed_literals() -> Vec<Code> {
    (0u16..286)
        .map(|sym| {
            let (first_code, first_sym, len) = match sym {
                0..=143 => (0x30, 0, 8),
                144..=255 => (0x190, 144, 9),
                256..=279 => (0, 256, 7),
                _ => (0xc0, 280, 8),
            };
            Code {
                bits: reverse(first_code + sym - first_sym, len),
                len: len as u8,
            }
        })
        .collect()
}

/// The fixed distance code: five bits for each of the 30 distance symbols.
pub(super) fn fixed_distances() -> Vec<Code> {
    (0u16..30)
        .map(|sym| Code {
            bits: reverse(sym, 5),
            len: 5,
        })
        .collect()
}

fn reverse(code: u16, len: u32) -> u16 {
    if len == 0 {
        0
    } else {
        code.reverse_bits() >> (16 - len)
    }
}

/// The lazy boundary package-merge: `weights` ascending, at least three of them. Returns, by
/// code length (index 0 unused), how many symbols get that length.
///
/// Each level (1 = the deepest, `max_len` = the root's children) walks a list that merges the
/// leaves with the pairs of the level below; only the last two items of each level are kept,
/// plus, for the last item of a level, how many leaves lie left of its ancestor at each level.
/// At the top, those counts of the last chain give the lengths. On equal weights a pair is
/// taken before a leaf.
fn symbols_per_length(weights: &[u64], max_len: usize) -> Vec<usize> {
    const EXHAUSTED: u64 = u64::MAX;
    let n = weights.len();
    let max_len = max_len.min(n - 1);
    let weight = |i: usize| weights.get(i).copied().unwrap_or(EXHAUSTED);

    #[derive(Clone, Copy)]
    struct Level {
        last: u64,
        next_leaf: u64,
        next_pair: u64,
        needed: i64,
    }
    // Level 0 is a sentinel that never needs anything, so level 1 never takes a pair; the
    // level above the top is only ever marked exhausted.
    let mut levels = vec![
        Level {
            last: 0,
            next_leaf: 0,
            next_pair: EXHAUSTED,
            needed: 0,
        };
        max_len + 2
    ];
    let mut leaves_left = vec![[0usize; LONGEST + 1]; max_len + 1];
    for (depth, level) in levels.iter_mut().enumerate().take(max_len + 1).skip(1) {
        *level = Level {
            last: weight(1),
            next_leaf: weight(2),
            next_pair: if depth == 1 {
                EXHAUSTED
            } else {
                weight(0) + weight(1)
            },
            needed: 0,
        };
        leaves_left[depth][depth] = 2;
    }
    levels[max_len].needed = 2 * n as i64 - 4;

    let mut at = max_len;
    while (1..=max_len).contains(&at) {
        let l = levels[at];
        if l.next_pair == EXHAUSTED && l.next_leaf == EXHAUSTED {
            levels[at].needed = 0;
            levels[at + 1].next_pair = EXHAUSTED;
            at += 1;
            continue;
        }
        let previous = l.last;
        if l.next_leaf < l.next_pair {
            let taken = leaves_left[at][at] + 1;
            leaves_left[at][at] = taken;
            levels[at].last = l.next_leaf;
            levels[at].next_leaf = weight(taken);
        } else {
            levels[at].last = l.next_pair;
            let (below, this) = leaves_left.split_at_mut(at);
            this[0][..at].copy_from_slice(&below[at - 1][..at]);
            levels[at - 1].needed = 2;
        }
        levels[at].needed -= 1;
        if levels[at].needed == 0 {
            if at == max_len {
                break;
            }
            levels[at + 1].next_pair = previous + levels[at].last;
            at += 1;
        } else {
            while levels[at - 1].needed > 0 {
                at -= 1;
            }
        }
    }
    debug_assert_eq!(leaves_left[max_len][max_len], n);

    let top = &leaves_left[max_len];
    let mut per_length = vec![0; max_len + 1];
    for (len, count) in per_length.iter_mut().enumerate().skip(1) {
        let depth = max_len + 1 - len;
        *count = top[depth] - top[depth - 1];
    }
    per_length
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lengths(codes: &[Code]) -> Vec<u8> {
        codes.iter().map(|c| c.len).collect()
    }

    #[test]
    fn optimal_when_unconstrained() {
        // Fibonacci-like weights want a 5-deep tree.
        let codes = build(&[1, 1, 2, 3, 5, 8], 15);
        assert_eq!(lengths(&codes), [5, 5, 4, 3, 2, 1]);
        let kraft: f64 = codes.iter().map(|c| 0.5f64.powi(i32::from(c.len))).sum();
        assert!((kraft - 1.0).abs() < 1e-12);
    }

    #[test]
    fn limited_lengths_stay_complete() {
        let freq: Vec<u32> = (0..19).map(|i| 1 << i.min(18)).collect();
        let codes = build(&freq, 7);
        assert!(codes.iter().all(|c| (1..=7).contains(&c.len)));
        let kraft: f64 = codes.iter().map(|c| 0.5f64.powi(i32::from(c.len))).sum();
        assert!((kraft - 1.0).abs() < 1e-12);
    }

    #[test]
    fn canonical_codes_ascend_with_symbols() {
        let codes = build(&[0, 3, 3, 3, 3], 15);
        assert_eq!(lengths(&codes), [0, 2, 2, 2, 2]);
        let plain: Vec<u16> = codes[1..].iter().map(|c| reverse(c.bits, 2)).collect();
        assert_eq!(plain, [0, 1, 2, 3]);
    }

    #[test]
    fn fixed_codes_follow_the_rfc() {
        let lit = fixed_literals();
        assert_eq!((reverse(lit[0].bits, 8), lit[0].len), (0x30, 8));
        assert_eq!((reverse(lit[256].bits, 7), lit[256].len), (0, 7));
        assert_eq!((reverse(lit[285].bits, 8), lit[285].len), (0xc5, 8));
        assert_eq!(fixed_distances()[3].bits, 0b11000);
    }
}
