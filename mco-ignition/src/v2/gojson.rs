//! The byte form upstream sees for a MachineConfig's Ignition config: compact JSON with object
//! keys sorted bytewise and Go `encoding/json` string escaping, plus the byte offsets of every
//! value, used to locate spec 2 validation reports.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde_json::Value;

/// Serialises `v` as compact JSON with keys sorted bytewise and Go's escaping
/// (`<`, `>`, `&`, U+2028 and U+2029 as `\uXXXX`).
pub fn go_compact_sorted(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v, None);
    out
}

/// Where a value sits in the serialisation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PosNode {
    /// Offset of the value's last byte (the closing quote, brace or bracket, or last digit).
    pub end: usize,
    /// Offset just past the closing quote of the value's key, when it is an object member.
    pub key_end: usize,
    /// Children of objects and arrays.
    pub kind: PosKind,
}

/// Children of a [`PosNode`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PosKind {
    /// A string, number, boolean or null.
    Leaf,
    /// Members by key.
    Object(BTreeMap<String, PosNode>),
    /// Elements in order.
    Array(Vec<PosNode>),
}

impl PosNode {
    /// The member at `key`, if this is an object holding it.
    pub fn child(&self, key: &str) -> Option<&PosNode> {
        match &self.kind {
            PosKind::Object(m) => m.get(key),
            _ => None,
        }
    }
}

/// Serialises like [`go_compact_sorted`] and also returns the position tree.
pub fn go_compact_sorted_with_positions(v: &Value) -> (String, PosNode) {
    let mut out = String::new();
    let mut node = PosNode {
        end: 0,
        key_end: 0,
        kind: PosKind::Leaf,
    };
    write_value(&mut out, v, Some(&mut node));
    (out, node)
}

fn write_value(out: &mut String, v: &Value, pos: Option<&mut PosNode>) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            let _ = write!(out, "{n}");
        }
        Value::String(s) => write_go_string(out, s),
        Value::Array(items) => {
            out.push('[');
            let mut kids = pos.is_some().then(Vec::new);
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                match kids.as_mut() {
                    Some(k) => {
                        let mut child = PosNode {
                            end: 0,
                            key_end: 0,
                            kind: PosKind::Leaf,
                        };
                        write_value(out, item, Some(&mut child));
                        k.push(child);
                    }
                    None => write_value(out, item, None),
                }
            }
            out.push(']');
            if let (Some(p), Some(k)) = (pos, kids) {
                p.kind = PosKind::Array(k);
                p.end = out.len() - 1;
            }
            return;
        }
        Value::Object(m) => {
            out.push('{');
            let mut kids = pos.is_some().then(BTreeMap::new);
            // Sort explicitly: the map's own order depends on serde_json's features.
            let mut members: Vec<(&String, &Value)> = m.iter().collect();
            members.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            for (i, (k, item)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_string(out, k);
                let key_end = out.len();
                out.push(':');
                match kids.as_mut() {
                    Some(map) => {
                        let mut child = PosNode {
                            end: 0,
                            key_end,
                            kind: PosKind::Leaf,
                        };
                        write_value(out, item, Some(&mut child));
                        map.insert(k.clone(), child);
                    }
                    None => write_value(out, item, None),
                }
            }
            out.push('}');
            if let (Some(p), Some(k)) = (pos, kids) {
                p.kind = PosKind::Object(k);
                p.end = out.len() - 1;
            }
            return;
        }
    }
    if let Some(p) = pos {
        p.end = out.len() - 1;
    }
}

use crate::emit::write_go_string;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sorts_and_escapes_like_go() {
        let v = json!({"b": "<a&b>", "a": [1, {"y": true, "x": null}], "Z": "\u{1}\n"});
        assert_eq!(
            go_compact_sorted(&v),
            r#"{"Z":"\u0001\n","a":[1,{"x":null,"y":true}],"b":"\u003ca\u0026b\u003e"}"#
        );
    }

    #[test]
    fn records_value_ends() {
        let v = json!({"a": {"b": "xy"}, "c": 123});
        let (s, p) = go_compact_sorted_with_positions(&v);
        assert_eq!(s, r#"{"a":{"b":"xy"},"c":123}"#);
        let b = p.child("a").and_then(|a| a.child("b")).map(|b| b.end);
        assert_eq!(b, Some(s.find("xy\"").map(|i| i + 2).unwrap_or(0)));
        assert_eq!(p.child("c").map(|c| c.end), Some(s.len() - 2));
        assert_eq!(p.end, s.len() - 1);
    }
}
