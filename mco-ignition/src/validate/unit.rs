//! Systemd unit contents, parsed as far as validation needs (sections and options).

use crate::gocompat::quote::go_quote;
use std::borrow::Cow;

/// One `Key=Value` option and its section, borrowed from the unit's contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitOption<'a> {
    /// The section name without brackets.
    pub section: &'a str,
    /// The option name.
    pub name: &'a str,
    /// The option value (continuation lines joined; owned only then).
    pub value: Cow<'a, str>,
}

const MAX_LINE: usize = 2048;

fn err(msg: &str) -> String {
    format!("invalid unit content: {msg}")
}

/// Parses unit file contents the way upstream's unit lexer does; the error is the message
/// reported under `contents`. Text before the first section is skipped, comments run to the end
/// of the line (with backslash continuations), and an option needs `=` before its line ends.
pub fn parse_unit(contents: &str) -> Result<Vec<UnitOption<'_>>, String> {
    if contents
        .split('\n')
        .any(|l| l.trim_end_matches('\r').len() >= MAX_LINE)
    {
        return Err(err(&format!("line too long (max {MAX_LINE} bytes)")));
    }
    let b = contents.as_bytes();
    let mut i = 0;
    let mut opts = Vec::new();
    let mut section: Option<&str> = None;
    let to_eol = |i: &mut usize| to_eol(contents, i);
    while i < b.len() {
        let c = contents[i..].chars().next().unwrap_or(' ');
        let clen = c.len_utf8();
        if section.is_some() && c.is_whitespace() {
            i += clen;
            continue;
        }
        if c == '[' {
            i += 1;
            match contents[i..].find(']') {
                Some(end) => {
                    let name = &contents[i..i + end];
                    i += end + 1;
                    let (garbage, _) = to_eol(&mut i);
                    let garbage = garbage.trim();
                    if !garbage.is_empty() {
                        return Err(err(&format!(
                            "found garbage after section name : {}",
                            go_quote(garbage)
                        )));
                    }
                    section = Some(name);
                }
                None => return Err(err("unable to find end of section")),
            }
            continue;
        }
        if c == '#' || c == ';' {
            loop {
                let (line, eof) = to_eol(&mut i);
                if eof || !line.trim_end_matches(' ').ends_with('\\') {
                    break;
                }
            }
            continue;
        }
        let Some(sec) = section else {
            i += clen;
            continue;
        };
        // Option name up to '='.
        let start = i;
        loop {
            if i >= b.len() {
                return Err(err("EOF"));
            }
            match b[i] {
                b'\n' | b'\r' => {
                    return Err(err(
                        "unexpected newline encountered while parsing option name",
                    ))
                }
                b'=' => break,
                _ => i += 1,
            }
        }
        let name = contents[start..i].trim();
        i += 1;
        // Borrowed unless continuation lines are joined.
        let mut value: Cow<'_, str> = Cow::Borrowed("");
        loop {
            let (line, eof) = to_eol(&mut i);
            if line.trim().is_empty() {
                break;
            }
            // Lines joined so far are never blank: an empty value means the first line.
            if value.is_empty() && !line.ends_with('\\') {
                value = Cow::Borrowed(line);
                break;
            }
            let joined = value.to_mut();
            joined.push_str(line);
            if line.ends_with('\\') {
                if !eof {
                    joined.push('\n');
                }
                if eof {
                    break;
                }
                continue;
            }
            break;
        }
        let value = match value {
            Cow::Owned(v) if v.ends_with('\n') => Cow::Owned(format!("{}\n", v.trim())),
            Cow::Owned(v) => Cow::Owned(trim_in_place(v)),
            Cow::Borrowed(v) => Cow::Borrowed(v.trim()),
        };
        opts.push(UnitOption {
            section: sec,
            name,
            value,
        });
    }
    Ok(opts)
}

/// The rest of the line from `*i` (without its `\r\n` or `\n`), moving `*i` past the line
/// break; and whether the line ran to the end of `contents`.
fn to_eol<'a>(contents: &'a str, i: &mut usize) -> (&'a str, bool) {
    let b = contents.as_bytes();
    let start = *i;
    while *i < b.len() && b[*i] != b'\n' {
        *i += 1;
    }
    let eof = *i >= b.len();
    let line = &contents[start..*i];
    if !eof {
        *i += 1;
    }
    (line.strip_suffix('\r').unwrap_or(line), eof)
}

/// `s.trim()`, reusing the string's buffer.
fn trim_in_place(mut s: String) -> String {
    let end = s.trim_end().len();
    s.truncate(end);
    let start = s.len() - s.trim_start().len();
    s.drain(..start);
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The parser as it was when options owned their strings, to check the borrowing one
    /// against.
    fn reference(contents: &str) -> Result<Vec<(String, String, String)>, String> {
        if contents
            .split('\n')
            .any(|l| l.trim_end_matches('\r').len() >= MAX_LINE)
        {
            return Err(err(&format!("line too long (max {MAX_LINE} bytes)")));
        }
        let b = contents.as_bytes();
        let mut i = 0;
        let mut opts = Vec::new();
        let mut section: Option<String> = None;
        let to_eol = |i: &mut usize| -> (String, bool) {
            let start = *i;
            while *i < b.len() && b[*i] != b'\n' {
                *i += 1;
            }
            let eof = *i >= b.len();
            let mut line = &contents[start..*i];
            if !eof {
                *i += 1;
            }
            line = line.strip_suffix('\r').unwrap_or(line);
            (line.to_string(), eof)
        };
        while i < b.len() {
            let c = contents[i..].chars().next().unwrap_or(' ');
            let clen = c.len_utf8();
            if section.is_some() && c.is_whitespace() {
                i += clen;
                continue;
            }
            if c == '[' {
                i += 1;
                match contents[i..].find(']') {
                    Some(end) => {
                        let name = contents[i..i + end].to_string();
                        i += end + 1;
                        let (garbage, _) = to_eol(&mut i);
                        let garbage = garbage.trim();
                        if !garbage.is_empty() {
                            return Err(err(&format!(
                                "found garbage after section name : {}",
                                go_quote(garbage)
                            )));
                        }
                        section = Some(name);
                    }
                    None => return Err(err("unable to find end of section")),
                }
                continue;
            }
            if c == '#' || c == ';' {
                loop {
                    let (line, eof) = to_eol(&mut i);
                    if eof || !line.trim_end_matches(' ').ends_with('\\') {
                        break;
                    }
                }
                continue;
            }
            let Some(sec) = section.clone() else {
                i += clen;
                continue;
            };
            // Option name up to '='.
            let start = i;
            loop {
                if i >= b.len() {
                    return Err(err("EOF"));
                }
                match b[i] {
                    b'\n' | b'\r' => {
                        return Err(err(
                            "unexpected newline encountered while parsing option name",
                        ))
                    }
                    b'=' => break,
                    _ => i += 1,
                }
            }
            let name = contents[start..i].trim().to_string();
            i += 1;
            let mut value = String::new();
            loop {
                let (line, eof) = to_eol(&mut i);
                if line.trim().is_empty() {
                    break;
                }
                value.push_str(&line);
                if line.ends_with('\\') {
                    if !eof {
                        value.push('\n');
                    }
                    if eof {
                        break;
                    }
                    continue;
                }
                break;
            }
            let value = if value.ends_with('\n') {
                format!("{}\n", value.trim())
            } else {
                value.trim().to_string()
            };
            opts.push((sec, name, value));
        }
        Ok(opts)
    }

    proptest! {
        #[test]
        fn borrowing_parser_matches_the_owning_one(parts in prop::collection::vec(
            prop::sample::select(vec![
                "[Unit]", "[Service]", "[Install]", "[X", "]", "\n", "\r\n", "\r", " ", "\t",
                "=", "Key", "Description", "a b", "\\", " \\", "#", ";", "\u{a0}", "\u{3000}",
                "é", "x=y",
            ]),
            0..24,
        )) {
            let text = parts.concat();
            let got = parse_unit(&text).map(|opts| {
                opts.into_iter()
                    .map(|o| (o.section.to_string(), o.name.to_string(), o.value.into_owned()))
                    .collect::<Vec<_>>()
            });
            prop_assert_eq!(got, reference(&text));
        }
    }

    #[test]
    fn trims_in_place_like_trim() {
        for s in [
            "",
            " ",
            "a",
            " a",
            "a ",
            " \t a b \u{a0}",
            "\u{3000}x\u{3000}",
        ] {
            assert_eq!(trim_in_place(s.to_string()), s.trim(), "{s:?}");
        }
    }

    #[test]
    fn parses_sections_and_continuations() {
        let u = "[Unit]\nDescription=x\n[Service]\nExecStart=/bin/a \\\n  --flag\n# c\n";
        let opts = parse_unit(u).unwrap_or_default();
        assert_eq!(opts.len(), 2);
        assert_eq!(opts[1].value, "/bin/a \\\n  --flag");
        assert!(parse_unit("Description=x\n").is_ok_and(|o| o.is_empty()));
        assert!(parse_unit("[Unit\n").is_err());
    }
}
