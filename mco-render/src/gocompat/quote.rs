//! Go's `strconv.Quote` (the `%q` verb), as upstream's messages print strings.

/// Whether Go's `strconv.IsPrint` would keep this non-ASCII character unescaped.
///
/// Approximation: control, format, separator-space, private-use and noncharacter code points
/// are escaped; other (assigned or not) characters are kept.
fn go_is_print_non_ascii(c: char) -> bool {
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

/// Quotes a string like Go's `%q` verb.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            ' '..='~' => out.push(c),
            c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if go_is_print_non_ascii(c) => out.push(c),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::go_quote;

    #[test]
    fn quotes_like_strconv() {
        assert_eq!(go_quote("abc"), "\"abc\"");
        assert_eq!(go_quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(go_quote("\t\n\u{1}\u{7f}"), "\"\\t\\n\\x01\\x7f\"");
        assert_eq!(go_quote("é<>&"), "\"é<>&\"");
        assert_eq!(go_quote("\u{a0}\u{200b}"), "\"\\u00a0\\u200b\"");
        assert_eq!(go_quote("\u{f0000}"), "\"\\U000f0000\"");
    }
}
