//! Go's quoting of strings in messages: `strconv.Quote` and `strconv.QuoteRune` (what the `%q`
//! verb prints for a string and for a rune), and the `time` package's own, simpler quoting.
//!
//! A `&str` is valid UTF-8, so Go's `\x` escapes of invalid bytes never arise here.

const LOWER_HEX: &[u8; 16] = b"0123456789abcdef";

/// Whether Go's `strconv.IsPrint` would keep this non-ASCII character unescaped.
///
/// Approximation: control, format, separator-space, private-use and noncharacter code points
/// are escaped; other (assigned or not) characters are kept.
fn is_print_non_ascii(c: char) -> bool {
    let u = c as u32;
    !(matches!(u,
        0x80..=0xA0
        | 0xAD
        | 0x600..=0x605
        | 0x61C
        | 0x6DD
        | 0x70F
        | 0x180E
        | 0x1680
        | 0x2000..=0x200F
        | 0x2028..=0x202F
        | 0x205F..=0x2064
        | 0x2066..=0x206F
        | 0x3000
        | 0xD800..=0xF8FF
        | 0xFEFF
        | 0xFFF9..=0xFFFB
        | 0xFFFE..=0xFFFF
        | 0x110BD
        | 0x1D173..=0x1D17A
        | 0xE0001
        | 0xE0020..=0xE007F
        | 0xF0000..=0x10FFFF)
        || (u & 0xFFFE) == 0xFFFE)
}

/// Appends `\` and `prefix` followed by the low `digits` hex digits of `v`, lower case.
fn push_hex(out: &mut String, prefix: char, v: u32, digits: u32) {
    out.push('\\');
    out.push(prefix);
    for shift in (0..digits).rev() {
        out.push(char::from(LOWER_HEX[(v >> (shift * 4)) as usize & 0xF]));
    }
}

/// Go's `appendEscapedRune`: one character inside a literal delimited by `quote`.
fn push_escaped(out: &mut String, c: char, quote: char) {
    if c == quote || c == '\\' {
        out.push('\\');
        out.push(c);
        return;
    }
    let printable = match c {
        ' '..='~' => true,
        '\0'..='\u{7f}' => false,
        c => is_print_non_ascii(c),
    };
    if printable {
        out.push(c);
        return;
    }
    match c {
        '\u{7}' => out.push_str("\\a"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{b}' => out.push_str("\\v"),
        '\0'..='\u{7f}' => push_hex(out, 'x', c as u32, 2),
        '\u{80}'..='\u{ffff}' => push_hex(out, 'u', c as u32, 4),
        c => push_hex(out, 'U', c as u32, 8),
    }
}

/// Quotes a string like Go's `strconv.Quote` (the `%q` verb on a string): double quotes,
/// backslash escapes for `"`, `\` and everything `strconv.IsPrint` refuses.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        push_escaped(&mut out, c, '"');
    }
    out.push('"');
    out
}

/// Quotes a character like Go's `strconv.QuoteRune` (the `%q` verb on a rune): single quotes,
/// `'` escaped and `"` not.
pub fn go_quote_rune(c: char) -> String {
    let mut out = String::with_capacity(8);
    out.push('\'');
    push_escaped(&mut out, c, '\'');
    out.push('\'');
    out
}

/// Quotes a string like the `time` package's private `quote` (in `time.ParseDuration`'s
/// errors): `"` and `\` backslashed, controls and every byte of a non-ASCII character as `\xNN`,
/// everything else (DEL included) as it is.
pub fn time_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='\u{7f}' => out.push(c),
            c => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    push_hex(&mut out, 'x', u32::from(b), 2);
                }
            }
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_keeps_printable_text() {
        assert_eq!(go_quote(""), r#""""#);
        assert_eq!(go_quote("abc"), r#""abc""#);
        assert_eq!(go_quote("é<>&'"), r#""é<>&'""#);
        assert_eq!(go_quote("日本語 ☺ \u{1F600}"), "\"日本語 ☺ \u{1F600}\"");
        assert_eq!(go_quote("\u{FFFD}"), "\"\u{FFFD}\"");
    }

    #[test]
    fn quote_backslashes_quote_and_backslash() {
        assert_eq!(go_quote("a\"b\\c"), r#""a\"b\\c""#);
    }

    #[test]
    fn quote_names_the_c_escapes() {
        assert_eq!(
            go_quote("\u{7}\u{8}\u{c}\n\r\t\u{b}"),
            r#""\a\b\f\n\r\t\v""#
        );
    }

    #[test]
    fn quote_writes_other_controls_in_hex() {
        assert_eq!(
            go_quote("\0\u{1}\u{1b}\u{1f}\u{7f}"),
            r#""\x00\x01\x1b\x1f\x7f""#
        );
        // C1 controls are not ASCII: Go writes them as \u.
        assert_eq!(go_quote("\u{80}\u{85}\u{9f}"), r#""\u0080\u0085\u009f""#);
    }

    #[test]
    fn quote_escapes_non_printable_unicode() {
        // No-break space, soft hyphen, zero-width space, line and paragraph separators, BOM.
        assert_eq!(
            go_quote("\u{a0}\u{ad}\u{200b}\u{2028}\u{2029}\u{feff}"),
            r#""\u00a0\u00ad\u200b\u2028\u2029\ufeff""#
        );
        // Private use and noncharacters; beyond the BMP as \U.
        assert_eq!(go_quote("\u{e000}\u{fffe}"), r#""\ue000\ufffe""#);
        assert_eq!(go_quote("\u{f0000}\u{1fffe}"), r#""\U000f0000\U0001fffe""#);
        assert_eq!(go_quote("\u{e0001}"), r#""\U000e0001""#);
    }

    #[test]
    fn quote_rune_uses_single_quotes() {
        assert_eq!(go_quote_rune('a'), "'a'");
        assert_eq!(go_quote_rune('\''), r"'\''");
        assert_eq!(go_quote_rune('"'), r#"'"'"#);
        assert_eq!(go_quote_rune('\\'), r"'\\'");
        assert_eq!(go_quote_rune('\n'), r"'\n'");
        assert_eq!(go_quote_rune('\u{7}'), r"'\a'");
        assert_eq!(go_quote_rune('\u{1}'), r"'\x01'");
        assert_eq!(go_quote_rune('☺'), "'☺'");
        assert_eq!(go_quote_rune('\u{2028}'), r"'\u2028'");
    }

    #[test]
    fn time_quote_hex_escapes_bytes() {
        assert_eq!(time_quote("1d"), r#""1d""#);
        assert_eq!(time_quote("a\"b\\"), r#""a\"b\\""#);
        assert_eq!(time_quote("\n\t\u{7f}"), "\"\\x0a\\x09\u{7f}\"");
        assert_eq!(time_quote("1µs"), r#""1\xc2\xb5s""#);
        assert_eq!(time_quote("\u{FFFD}"), r#""\xef\xbf\xbd""#);
    }
}
