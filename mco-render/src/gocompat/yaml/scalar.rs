//! Character classes and scalar analysis of upstream's YAML emitter
//! (gopkg.in/yaml.v2 v2.4.0, a port of libyaml).
//!
//! The analysis decides which scalar styles a string may use: plain, single
//! quoted, double quoted or literal block. All tests work on UTF-8 bytes the
//! way the emitter does (for example, only characters up to U+FFFF count as
//! printable, so a 4-byte character forces double quotes).

use super::byte_scan::{run_len, Run};

/// Length of the UTF-8 sequence starting with `b` (1 for a stray byte).
pub(crate) fn width(b: u8) -> usize {
    if b & 0x80 == 0 {
        1
    } else if b & 0xE0 == 0xC0 {
        2
    } else if b & 0xF0 == 0xE0 {
        3
    } else if b & 0xF8 == 0xF0 {
        4
    } else {
        1
    }
}

fn at(v: &[u8], i: usize) -> u8 {
    v.get(i).copied().unwrap_or(0)
}

/// Printable as the emitter defines it: LF, ASCII 0x20..0x7E, and the BMP
/// from U+00A0 except surrogates, U+FEFF, U+FFFE and U+FFFF.
pub(crate) fn is_printable(v: &[u8], i: usize) -> bool {
    let b = at(v, i);
    let b1 = at(v, i + 1);
    let b2 = at(v, i + 2);
    b == 0x0A
        || (0x20..=0x7E).contains(&b)
        || (b == 0xC2 && b1 >= 0xA0)
        || (b > 0xC2 && b < 0xED)
        || (b == 0xED && b1 < 0xA0)
        || b == 0xEE
        || (b == 0xEF && !(b1 == 0xBB && b2 == 0xBF) && !(b1 == 0xBF && (b2 == 0xBE || b2 == 0xBF)))
}

/// A space (not a tab).
pub(crate) fn is_space(v: &[u8], i: usize) -> bool {
    at(v, i) == b' '
}

/// Space or tab.
pub(crate) fn is_blank(v: &[u8], i: usize) -> bool {
    matches!(at(v, i), b' ' | b'\t')
}

/// CR, LF, NEL (U+0085), LS (U+2028) or PS (U+2029).
pub(crate) fn is_break(v: &[u8], i: usize) -> bool {
    let b = at(v, i);
    b == b'\r'
        || b == b'\n'
        || (b == 0xC2 && at(v, i + 1) == 0x85)
        || (b == 0xE2 && at(v, i + 1) == 0x80 && matches!(at(v, i + 2), 0xA8 | 0xA9))
}

/// Blank, break, or NUL.
pub(crate) fn is_blankz(v: &[u8], i: usize) -> bool {
    is_blank(v, i) || is_break(v, i) || at(v, i) == 0
}

/// Printable ASCII other than space, `:` and `#`: after the first position
/// such a character only resets the neighbour flags of [`analyze`].
const ORDINARY: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0x21;
    while c <= 0x7E {
        t[c] = c != b':' as usize && c != b'#' as usize;
        c += 1;
    }
    t
};

/// Which styles the emitter allows for one scalar.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Analysis {
    /// Contains a line break character.
    pub multiline: bool,
    /// May be written plain in block context.
    pub block_plain_allowed: bool,
    /// May be written single-quoted.
    pub single_quoted_allowed: bool,
    /// May be written as a literal or folded block scalar.
    pub block_allowed: bool,
}

/// Analyses `value` like the emitter does before choosing a style.
pub(crate) fn analyze(value: &[u8]) -> Analysis {
    if value.is_empty() {
        return Analysis {
            multiline: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    let mut block_indicators = value.starts_with(b"---") || value.starts_with(b"...");
    let mut line_breaks = false;
    let mut special = false;
    let (mut leading_space, mut leading_break) = (false, false);
    let (mut trailing_space, mut trailing_break) = (false, false);
    let (mut break_space, mut space_break) = (false, false);
    let (mut previous_space, mut previous_break) = (false, false);
    let mut preceded_by_whitespace = true;

    let mut i = 0;
    while i < value.len() {
        let c = value[i];
        // Fast path: a run of ordinary printable ASCII characters after the
        // first affects nothing but the neighbour flags.
        if i > 0 && ORDINARY[usize::from(c)] {
            let run = run_len(&value[i..], Run::Ordinary, |b| ORDINARY[usize::from(b)]);
            previous_space = false;
            previous_break = false;
            preceded_by_whitespace = false;
            i += run;
            continue;
        }
        let w = width(value[i]);
        let followed_by_whitespace = i + w >= value.len() || is_blank(value, i + w);
        if i == 0 {
            match c {
                b'#' | b',' | b'[' | b']' | b'{' | b'}' | b'&' | b'*' | b'!' | b'|' | b'>'
                | b'\'' | b'"' | b'%' | b'@' | b'`' => block_indicators = true,
                b'?' | b':' | b'-' if followed_by_whitespace => block_indicators = true,
                _ => {}
            }
        } else {
            match c {
                b':' if followed_by_whitespace => block_indicators = true,
                b'#' if preceded_by_whitespace => block_indicators = true,
                _ => {}
            }
        }
        if !is_printable(value, i) {
            special = true;
        }
        if is_space(value, i) {
            if i == 0 {
                leading_space = true;
            }
            if i + w == value.len() {
                trailing_space = true;
            }
            if previous_break {
                break_space = true;
            }
            previous_space = true;
            previous_break = false;
        } else if is_break(value, i) {
            line_breaks = true;
            if i == 0 {
                leading_break = true;
            }
            if i + w == value.len() {
                trailing_break = true;
            }
            if previous_space {
                space_break = true;
            }
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_whitespace = is_blankz(value, i);
        i += w;
    }

    let mut a = Analysis {
        multiline: line_breaks,
        block_plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.block_plain_allowed = false;
    }
    if trailing_space {
        a.block_allowed = false;
    }
    if break_space {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
    }
    if space_break || special {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
        a.block_allowed = false;
    }
    if line_breaks || block_indicators {
        a.block_plain_allowed = false;
    }
    a
}
