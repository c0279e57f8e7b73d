//! JSON text as Go's `encoding/json` writes it.
//!
//! Strings are escaped as Go escapes them: `"`, `\` and the controls, with `\b`, `\f`, `\n`,
//! `\r`, `\t` by name and the others as `\u00XX`; `<`, `>`, `&`, U+2028 and U+2029 as `\uXXXX`
//! (Go's HTML-safe default); every other character as it is. Values are written compact
//! (`json.Marshal`) or indented (`json.MarshalIndent` with an empty prefix), with object keys
//! sorted bytewise (Go's order for maps) or in the value's own order (Go writes struct fields in
//! declaration order, which callers reproduce when they build the value). An [`Observer`] sees
//! where each value lands in the text, for callers that locate values in it.

use serde_json::Value;
use std::fmt::Write as _;

const LOWER_HEX: &[u8; 16] = b"0123456789abcdef";

/// Bytes that end a run copied as it is: the controls, `"`, `\`, `<`, `>`, `&`, and 0xE2 (the
/// first byte of U+2028 and U+2029; other characters starting with it are copied).
const STOPS: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = true;
        b += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t[b'<' as usize] = true;
    t[b'>' as usize] = true;
    t[b'&' as usize] = true;
    t[0xE2] = true;
    t
};

/// Appends `s` as a Go `encoding/json` string literal, quotes included.
pub fn write_go_string(out: &mut String, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push('"');
    // `start..i` is the run not yet copied. Every stop is an ASCII byte or the first byte of a
    // character, and runs end just past one, so both ends are character boundaries.
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if !STOPS[b as usize] {
            i += 1;
            continue;
        }
        let (escape, len) = match b {
            b'"' => ("\\\"", 1),
            b'\\' => ("\\\\", 1),
            b'\n' => ("\\n", 1),
            b'\r' => ("\\r", 1),
            b'\t' => ("\\t", 1),
            0x08 => ("\\b", 1),
            0x0C => ("\\f", 1),
            b'<' => ("\\u003c", 1),
            b'>' => ("\\u003e", 1),
            b'&' => ("\\u0026", 1),
            0xE2 => match (bytes.get(i + 1), bytes.get(i + 2)) {
                (Some(0x80), Some(0xA8)) => ("\\u2028", 3),
                (Some(0x80), Some(0xA9)) => ("\\u2029", 3),
                _ => {
                    i += 1;
                    continue;
                }
            },
            _ => ("", 1),
        };
        out.push_str(&s[start..i]);
        if escape.is_empty() {
            out.push_str("\\u00");
            out.push(char::from(LOWER_HEX[usize::from(b >> 4)]));
            out.push(char::from(LOWER_HEX[usize::from(b & 0xF)]));
        } else {
            out.push_str(escape);
        }
        i += len;
        start = i;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// `s` as a Go `encoding/json` string literal, quotes included.
pub fn go_json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    write_go_string(&mut out, s);
    out
}

/// How [`write_value`] lays a value out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Format<'a> {
    /// `json.MarshalIndent`'s indent (one level), or `None` for compact text.
    pub indent: Option<&'a str>,
    /// Object keys sorted bytewise (as Go writes maps) instead of in the value's own order.
    pub sort_keys: bool,
}

/// Told where [`write_value`] puts each value, in the order it writes them. Every method does
/// nothing unless implemented; `()` is the observer that wants nothing.
pub trait Observer {
    /// An object's members, once sorted (only with [`Format::sort_keys`]), to be written in the
    /// order the slice ends up in.
    fn reorder(&mut self, _members: &mut [(&String, &Value)]) {}
    /// An object member's key has been written; `key_end` is the offset just past its closing
    /// quote. Its value comes next.
    fn member(&mut self, _key: &str, _key_end: usize) {}
    /// Array element `index` comes next.
    fn element(&mut self, _index: usize) {}
    /// `value` starts at offset `at`, its first byte.
    fn begin(&mut self, _value: &Value, _at: usize) {}
    /// The value begun last ends at offset `last`, its last byte.
    fn end(&mut self, _last: usize) {}
    /// Done with the member or element announced last.
    fn leave(&mut self) {}
}

impl Observer for () {}

/// Appends `value` as Go writes it in `format`, telling `observer` where each value goes.
pub fn write_value<O: Observer + ?Sized>(
    out: &mut String,
    value: &Value,
    format: Format<'_>,
    observer: &mut O,
) {
    write(out, value, format, 0, observer);
}

/// Compact Go JSON (`json.Marshal`), keys in the value's own order.
pub fn to_go_compact(value: &Value) -> String {
    to_string(value, Format::default())
}

/// Compact Go JSON with keys sorted bytewise at every level (`json.Marshal` of maps, and how the
/// API server stores free-form JSON).
pub fn to_go_compact_sorted(value: &Value) -> String {
    to_string(
        value,
        Format {
            indent: None,
            sort_keys: true,
        },
    )
}

/// Go `json.MarshalIndent(v, "", indent)`: keys in the value's own order, empty objects and
/// lists written as `{}` and `[]`, no trailing newline.
pub fn to_go_indented(value: &Value, indent: &str) -> String {
    to_string(
        value,
        Format {
            indent: Some(indent),
            sort_keys: false,
        },
    )
}

fn to_string(value: &Value, format: Format<'_>) -> String {
    let mut out = String::with_capacity(256);
    write(&mut out, value, format, 0, &mut ());
    out
}

fn newline(out: &mut String, indent: Option<&str>, depth: usize) {
    if let Some(indent) = indent {
        out.push('\n');
        for _ in 0..depth {
            out.push_str(indent);
        }
    }
}

fn write<O: Observer + ?Sized>(
    out: &mut String,
    value: &Value,
    format: Format<'_>,
    depth: usize,
    observer: &mut O,
) {
    observer.begin(value, out.len());
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            let _ = write!(out, "{n}");
        }
        Value::String(s) => write_go_string(out, s),
        Value::Array(items) => {
            out.push('[');
            if !items.is_empty() {
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    newline(out, format.indent, depth + 1);
                    observer.element(i);
                    write(out, item, format, depth + 1, observer);
                    observer.leave();
                }
                newline(out, format.indent, depth);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            if !map.is_empty() {
                if format.sort_keys {
                    let mut members: Vec<(&String, &Value)> = map.iter().collect();
                    members.sort_unstable_by(|a, b| a.0.cmp(b.0));
                    observer.reorder(&mut members);
                    for (i, (k, v)) in members.into_iter().enumerate() {
                        write_member(out, i, k, v, format, depth, observer);
                    }
                } else {
                    for (i, (k, v)) in map.iter().enumerate() {
                        write_member(out, i, k, v, format, depth, observer);
                    }
                }
                newline(out, format.indent, depth);
            }
            out.push('}');
        }
    }
    observer.end(out.len().saturating_sub(1));
}

fn write_member<O: Observer + ?Sized>(
    out: &mut String,
    i: usize,
    key: &str,
    value: &Value,
    format: Format<'_>,
    depth: usize,
    observer: &mut O,
) {
    if i > 0 {
        out.push(',');
    }
    newline(out, format.indent, depth + 1);
    write_go_string(out, key);
    observer.member(key, out.len());
    out.push(':');
    if format.indent.is_some() {
        out.push(' ');
    }
    write(out, value, format, depth + 1, observer);
    observer.leave();
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The escaper as one `match` on characters, to check the byte-level one against.
    fn reference(s: &str) -> String {
        let mut out = String::from("\"");
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                    out.push_str(&format!("\\u{:04x}", c as u32))
                }
                c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }

    #[test]
    fn escapes_html_characters_like_go() {
        assert_eq!(go_json_string("<a&b>"), r#""\u003ca\u0026b\u003e""#);
        assert_eq!(go_json_string("a\u{2028}b\u{2029}"), r#""a\u2028b\u2029""#);
    }

    #[test]
    fn escapes_controls_like_go() {
        assert_eq!(go_json_string("\"\\/"), r#""\"\\/""#);
        assert_eq!(go_json_string("\n\r\t\u{8}\u{c}"), r#""\n\r\t\b\f""#);
        assert_eq!(
            go_json_string("\0\u{1}\u{7}\u{b}\u{1b}\u{1f}"),
            r#""\u0000\u0001\u0007\u000b\u001b\u001f""#
        );
        // DEL, C1 controls and other non-ASCII text are written as they are.
        assert_eq!(go_json_string("\u{7f}\u{85}é☺"), "\"\u{7f}\u{85}é☺\"");
    }

    #[test]
    fn keeps_other_characters_starting_with_byte_e2() {
        // U+2027, U+202A, U+20AC and U+2600 share the first byte of U+2028.
        let s = "\u{2027}\u{202a}€☀\u{2028}";
        assert_eq!(go_json_string(s), "\"\u{2027}\u{202a}€☀\\u2028\"");
        assert_eq!(go_json_string("\u{e2}"), "\"\u{e2}\"");
    }

    #[test]
    fn byte_escaper_matches_character_escaper() {
        let pieces = [
            "a",
            "é",
            "\u{2028}",
            "\u{2029}",
            "\u{2027}",
            "€",
            "<",
            "&",
            "\"",
            "\\",
            "\n",
            "\u{1}",
            "\u{7f}",
            "\u{1F600}",
            "",
        ];
        for a in pieces {
            for b in pieces {
                for c in pieces {
                    let s = format!("{a}{b}{c}");
                    assert_eq!(go_json_string(&s), reference(&s), "{s:?}");
                }
            }
        }
    }

    #[test]
    fn compact_keeps_the_values_order() {
        let v = json!({"b": "<&>", "a": [1, {}], "c": [], "d": {"z": null, "y": 1.5}});
        assert_eq!(
            to_go_compact(&v),
            r#"{"b":"\u003c\u0026\u003e","a":[1,{}],"c":[],"d":{"z":null,"y":1.5}}"#
        );
    }

    #[test]
    fn compact_sorted_sorts_every_level_bytewise() {
        let v = json!({"b": "<a&b>", "a": [1, {"y": true, "x": null}], "Z": "\u{1}\n", "é": 0});
        assert_eq!(
            to_go_compact_sorted(&v),
            r#"{"Z":"\u0001\n","a":[1,{"x":null,"y":true}],"b":"\u003ca\u0026b\u003e","é":0}"#
        );
    }

    #[test]
    fn indents_like_marshal_indent() {
        let v = json!({"k": {"x": [true, null]}, "e": {}, "l": []});
        assert_eq!(
            to_go_indented(&v, "    "),
            "{\n    \"k\": {\n        \"x\": [\n            true,\n            null\n        ]\n    },\n    \"e\": {},\n    \"l\": []\n}"
        );
        assert_eq!(to_go_indented(&json!("x"), "\t"), "\"x\"");
    }

    #[derive(Default)]
    struct Spans(Vec<String>);

    impl Observer for Spans {
        fn reorder(&mut self, members: &mut [(&String, &Value)]) {
            members.reverse();
        }
        fn member(&mut self, key: &str, key_end: usize) {
            self.0.push(format!("key {key} ..{key_end}"));
        }
        fn element(&mut self, index: usize) {
            self.0.push(format!("element {index}"));
        }
        fn begin(&mut self, _: &Value, at: usize) {
            self.0.push(format!("begin {at}"));
        }
        fn end(&mut self, last: usize) {
            self.0.push(format!("end {last}"));
        }
        fn leave(&mut self) {
            self.0.push("leave".into());
        }
    }

    #[test]
    fn observer_sees_every_value_and_may_reorder() {
        let v = json!({"a": 1, "b": ["x"]});
        let mut spans = Spans::default();
        let mut out = String::new();
        let format = Format {
            indent: None,
            sort_keys: true,
        };
        write_value(&mut out, &v, format, &mut spans);
        assert_eq!(out, r#"{"b":["x"],"a":1}"#);
        assert_eq!(
            spans.0,
            [
                "begin 0",
                "key b ..4",
                "begin 5",
                "element 0",
                "begin 6",
                "end 8",
                "leave",
                "end 9",
                "leave",
                "key a ..14",
                "begin 15",
                "end 15",
                "leave",
                "end 16",
            ]
        );
    }
}
