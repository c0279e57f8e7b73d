//! Go's `strconv.Quote` (the `%q` verb), as upstream's error messages print strings.

/// Whether Go's `unicode.IsPrint` holds, approximated with Rust's character classes: control,
/// format, separator (other than the ASCII space) and private-use characters are not printable.
fn printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    let u = c as u32;
    // Format characters (Cf) and private use (Co) that Rust's classes do not flag.
    !matches!(
        u,
        0xAD | 0x600..=0x605
            | 0x61C
            | 0x6DD
            | 0x70F
            | 0x180E
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0xE000..=0xF8FF
            | 0xF0000..=0x10FFFF
    )
}

/// `strconv.Quote(s)`: double quotes; `"` and `\` escaped; `\a \b \f \n \r \t \v`; other
/// non-printable characters as `\xNN`, `\uNNNN` or `\UNNNNNNNN`.
pub(crate) fn go_quote(s: &str) -> String {
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
            c if printable(c) => out.push(c),
            c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
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
