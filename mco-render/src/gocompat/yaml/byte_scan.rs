//! Finding the end of a run of bytes eight at a time.
//!
//! The YAML emitter spends most of its time in long runs of ordinary characters (base64 data
//! URLs above all). These helpers test eight bytes per step with word arithmetic and fall back
//! to one byte per step only in the word where the run may end.

/// 0x01 in every byte.
const LO: u64 = 0x0101_0101_0101_0101;
/// 0x80 in every byte.
const HI: u64 = 0x8080_8080_8080_8080;

/// Whether some byte of `x` is below `n` (exact for `n <= 127`).
#[inline]
fn has_less(x: u64, n: u8) -> bool {
    x.wrapping_sub(LO * u64::from(n)) & !x & HI != 0
}

/// Whether some byte of `x` is above `n` (exact for `n <= 127`).
#[inline]
fn has_more(x: u64, n: u8) -> bool {
    (x.wrapping_add(LO * u64::from(127 - n)) | x) & HI != 0
}

/// Whether some byte of `x` equals `b`.
#[inline]
fn has_byte(x: u64, b: u8) -> bool {
    let v = x ^ (LO * u64::from(b));
    v.wrapping_sub(LO) & !v & HI != 0
}

/// A class of bytes a run is made of: a test on one byte and a test on eight that must never
/// accept a word holding a byte the one-byte test rejects.
#[derive(Clone, Copy)]
pub(crate) enum Run {
    /// Printable ASCII but space, `:` and `#` (characters that never change a scalar's style).
    Ordinary,
    /// Anything but space and the bytes that may start a line break (CR, LF, NEL, LS, PS).
    Plain,
    /// Anything but the bytes that may start a line break.
    Literal,
    /// Printable ASCII but space, `"` and `\`.
    DoubleQuoted,
}

impl Run {
    /// Whether every byte of the word belongs to the class (may say no when unsure).
    #[inline]
    fn word(self, x: u64) -> bool {
        match self {
            Run::Ordinary => {
                !has_less(x, 0x21) && !has_more(x, 0x7E) && !has_byte(x, b':') && !has_byte(x, b'#')
            }
            // Line breaks start with CR, LF, 0xC2 or 0xE2: ASCII at 0x21 and above never does.
            Run::Plain => x & HI == 0 && !has_less(x, 0x21),
            Run::Literal => x & HI == 0 && !has_less(x, 0x0E),
            Run::DoubleQuoted => {
                !has_less(x, 0x21)
                    && !has_more(x, 0x7E)
                    && !has_byte(x, b'"')
                    && !has_byte(x, b'\\')
            }
        }
    }
}

/// The length of the longest prefix of `v` whose bytes satisfy `byte`; `class` must accept a
/// word only if `byte` accepts each of its bytes.
#[inline]
pub(crate) fn run_len(v: &[u8], class: Run, byte: impl Fn(u8) -> bool) -> usize {
    let mut i = 0;
    while let Some(chunk) = v.get(i..i + 8) {
        let mut w = [0u8; 8];
        w.copy_from_slice(chunk);
        if !class.word(u64::from_le_bytes(w)) {
            break;
        }
        i += 8;
    }
    i + v[i..].iter().position(|&b| !byte(b)).unwrap_or(v.len() - i)
}

/// Whether every byte of `v` is visible ASCII (0x21..=0x7E: no space, no control, no
/// non-ASCII byte). Checks 32 bytes per step without an early exit inside the step, a form
/// the compiler turns into vector compares.
#[inline]
pub(crate) fn all_visible_ascii(v: &[u8]) -> bool {
    let mut chunks = v.chunks_exact(32);
    for chunk in &mut chunks {
        let mut outside = false;
        for &b in chunk {
            outside |= b.wrapping_sub(0x21) > 0x7E - 0x21;
        }
        if outside {
            return false;
        }
    }
    chunks
        .remainder()
        .iter()
        .all(|&b| b.wrapping_sub(0x21) <= 0x7E - 0x21)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn reference(class: Run, b: u8) -> bool {
        match class {
            Run::Ordinary => (0x21..=0x7E).contains(&b) && b != b':' && b != b'#',
            Run::Plain => !matches!(b, b' ' | b'\n' | b'\r' | 0xC2 | 0xE2),
            Run::Literal => !matches!(b, b'\n' | b'\r' | 0xC2 | 0xE2),
            Run::DoubleQuoted => (0x21..=0x7E).contains(&b) && b != b'"' && b != b'\\',
        }
    }

    const CLASSES: [Run; 4] = [Run::Ordinary, Run::Plain, Run::Literal, Run::DoubleQuoted];

    #[test]
    fn words_never_accept_a_rejected_byte() {
        for class in CLASSES {
            for b in 0..=255u8 {
                for pos in 0..8 {
                    let mut w = *b"AAAAAAAA";
                    w[pos] = b;
                    if class.word(u64::from_le_bytes(w)) {
                        assert!(reference(class, b), "byte {b:#x} at {pos}");
                    }
                }
            }
        }
    }

    proptest! {
        #[test]
        fn all_visible_ascii_is_the_bytewise_test(v in prop::collection::vec(prop_oneof![
            8 => 0x21u8..0x7F,
            1 => any::<u8>(),
        ], 0..100)) {
            let want = v.iter().all(|b| (0x21..=0x7E).contains(b));
            prop_assert_eq!(all_visible_ascii(&v), want);
        }

        #[test]
        fn run_len_is_the_bytewise_run(v in prop::collection::vec(prop_oneof![
            4 => 0x21u8..0x7F,
            1 => any::<u8>(),
        ], 0..64)) {
            for class in CLASSES {
                let want = v.iter().position(|&b| !reference(class, b)).unwrap_or(v.len());
                prop_assert_eq!(run_len(&v, class, |b| reference(class, b)), want);
            }
        }
    }
}
