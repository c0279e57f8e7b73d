//! Deterministic JSON emission.
//!
//! Upstream stores configs as Go `encoding/json` writes them: compact, object keys sorted
//! bytewise, `<`, `>` and `&` escaped. Report positions ("line 1 col N") are byte offsets in that
//! form, so this module both writes it and locates values inside it.

use crate::path::{JsonPath, Step};
use crate::schema::{Kind, Obj};
use serde_json::Value;
use std::fmt::Write as _;

/// Writes a string as a Go `encoding/json` string literal.
pub fn write_go_string(out: &mut String, s: &str) {
    out.push('"');
    let mut start = 0;
    for (i, c) in s.char_indices() {
        let esc: Option<&str> = match c {
            '"' => Some("\\\""),
            '\\' => Some("\\\\"),
            '\n' => Some("\\n"),
            '\r' => Some("\\r"),
            '\t' => Some("\\t"),
            '\u{8}' => Some("\\b"),
            '\u{c}' => Some("\\f"),
            '<' => Some("\\u003c"),
            '>' => Some("\\u003e"),
            '&' => Some("\\u0026"),
            '\u{2028}' => Some("\\u2028"),
            '\u{2029}' => Some("\\u2029"),
            c if (c as u32) < 0x20 => None,
            _ => continue,
        };
        out.push_str(&s[start..i]);
        match esc {
            Some(e) => out.push_str(e),
            None => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
        }
        start = i + c.len_utf8();
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// How a config was laid out when upstream serialised it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Keys sorted bytewise (objects as the API server stores them).
    Sorted,
    /// Keys in upstream's struct order (configs upstream marshalled itself, such as rendered ones).
    Struct,
}

/// Go's compact, key-sorted serialisation of a JSON value.
pub fn go_compact(value: &Value) -> String {
    let mut out = String::with_capacity(256);
    write_value(&mut out, value, &mut Locator::none());
    out
}

/// Go's compact serialisation of a spec 3.x config with keys in upstream's struct order.
pub fn go_compact_struct(value: &Value) -> String {
    let mut out = String::with_capacity(256);
    let mut loc = Locator::none();
    loc.schema = Some(&crate::schema::CONFIG);
    write_value(&mut out, value, &mut loc);
    out
}

/// Where each requested path starts in [`go_compact`]'s output, as upstream's parser marks it:
/// the first byte of a scalar, one byte past the opening bracket of an object or list. A path
/// ending in a key of an object that holds it (an unknown key) is located at that key.
pub fn go_offsets(value: &Value, targets: &[JsonPath]) -> Vec<Option<usize>> {
    go_offsets_in(value, targets, Layout::Sorted)
}

/// [`go_offsets`] for a given layout.
pub fn go_offsets_in(value: &Value, targets: &[JsonPath], layout: Layout) -> Vec<Option<usize>> {
    let mut loc = Locator {
        targets,
        found: vec![None; targets.len()],
        path: Vec::new(),
        keys: true,
        schema: (layout == Layout::Struct).then_some(&crate::schema::CONFIG),
    };
    let mut out = String::with_capacity(256);
    write_value(&mut out, value, &mut loc);
    loc.found
}

struct Locator<'a> {
    targets: &'a [JsonPath],
    found: Vec<Option<usize>>,
    path: Vec<Step>,
    keys: bool,
    schema: Option<&'static Obj>,
}

impl Locator<'_> {
    fn none() -> Locator<'static> {
        Locator {
            targets: &[],
            found: Vec::new(),
            path: Vec::new(),
            keys: false,
            schema: None,
        }
    }

    fn mark(&mut self, offset: usize) {
        if self.targets.is_empty() {
            return;
        }
        for (i, t) in self.targets.iter().enumerate() {
            if self.found[i].is_none() && t.0 == self.path {
                self.found[i] = Some(offset);
            }
        }
    }
}

fn write_value(out: &mut String, value: &Value, loc: &mut Locator<'_>) {
    match value {
        Value::Null => {
            loc.mark(out.len());
            out.push_str("null")
        }
        Value::Bool(b) => {
            loc.mark(out.len());
            out.push_str(if *b { "true" } else { "false" })
        }
        Value::Number(n) => {
            loc.mark(out.len());
            let _ = write!(out, "{n}");
        }
        Value::String(s) => {
            loc.mark(out.len());
            write_go_string(out, s)
        }
        Value::Array(items) => {
            out.push('[');
            loc.mark(out.len());
            let schema = loc.schema;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if loc.keys {
                    loc.path.push(Step::Index(i));
                }
                loc.schema = schema;
                write_value(out, item, loc);
                if loc.keys {
                    loc.path.pop();
                }
            }
            loc.schema = schema;
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            loc.mark(out.len());
            let schema = loc.schema;
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable();
            if let Some(o) = schema {
                let rank = |k: &str| {
                    o.fields
                        .iter()
                        .position(|f| f.name == k)
                        .unwrap_or(usize::MAX)
                };
                keys.sort_by_key(|k| rank(k));
            }
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if loc.keys {
                    loc.path.push(Step::Key(k.clone().into()));
                }
                write_go_string(out, k);
                out.push(':');
                if let Some(v) = map.get(k) {
                    loc.schema = schema.and_then(|o| child_schema(o, k));
                    write_value(out, v, loc);
                    loc.schema = schema;
                }
                if loc.keys {
                    loc.path.pop();
                }
            }
            out.push('}');
        }
    }
}

fn child_schema(o: &'static Obj, key: &str) -> Option<&'static Obj> {
    o.fields
        .iter()
        .find(|f| f.name == key)
        .and_then(|f| match f.kind {
            Kind::Obj(s) | Kind::ObjList(s) => Some(s),
            _ => None,
        })
}

/// Pretty JSON for people: two-space indent, keys sorted.
pub fn to_pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// Compact JSON without Go's HTML escaping, keys sorted.
pub fn to_compact(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn escapes_like_go() {
        let v = json!({"b": "<a&b>", "a": "x\u{1}\n"});
        assert_eq!(
            go_compact(&v),
            r#"{"a":"x\u0001\n","b":"\u003ca\u0026b\u003e"}"#
        );
    }

    #[test]
    fn locates_values_and_objects() {
        let v = json!({"storage": {"files": [{"mode": 4516, "path": "/x"}]}});
        let s = go_compact(&v);
        let targets = [
            JsonPath::parse_dotted("storage.files.0.mode"),
            JsonPath::parse_dotted("storage.files.0"),
        ];
        let found = go_offsets(&v, &targets);
        let mode = found[0].unwrap_or(0);
        assert_eq!(&s[mode..mode + 4], "4516");
        let obj = found[1].unwrap_or(0);
        assert_eq!(&s[obj - 1..obj + 1], "{\"");
    }
}
