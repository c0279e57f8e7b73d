//! The byte form upstream sees for a MachineConfig's Ignition config (Go's compact JSON with
//! object keys sorted bytewise, written by [`crate::gocompat::json`]) and the byte offsets of
//! every value in it, used to locate spec 2 validation reports.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::gocompat::json::{self, Format, Observer};

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

/// Serialises `v` as compact JSON with keys sorted bytewise and Go's escaping, and returns the
/// position tree of its values.
pub fn go_compact_sorted_with_positions(v: &Value) -> (String, PosNode) {
    let mut out = String::new();
    let mut tree = Tree::default();
    let format = Format {
        indent: None,
        sort_keys: true,
    };
    json::write_value(&mut out, v, format, &mut tree);
    let root = tree.root.unwrap_or(PosNode {
        end: 0,
        key_end: 0,
        kind: PosKind::Leaf,
    });
    (out, root)
}

/// Builds the [`PosNode`] tree while the text is written.
#[derive(Default)]
struct Tree {
    /// The next value's key and key end, when it is an object member.
    next: Option<(String, usize)>,
    /// The values begun and not yet ended, outermost first, with their keys.
    open: Vec<(Option<String>, PosNode)>,
    root: Option<PosNode>,
}

impl Observer for Tree {
    fn member(&mut self, key: &str, key_end: usize) {
        self.next = Some((key.to_string(), key_end));
    }

    fn begin(&mut self, value: &Value, _: usize) {
        let (key, key_end) = match self.next.take() {
            Some((k, e)) => (Some(k), e),
            None => (None, 0),
        };
        let kind = match value {
            Value::Object(_) => PosKind::Object(BTreeMap::new()),
            Value::Array(_) => PosKind::Array(Vec::new()),
            _ => PosKind::Leaf,
        };
        let node = PosNode {
            end: 0,
            key_end,
            kind,
        };
        self.open.push((key, node));
    }

    fn end(&mut self, last: usize) {
        let Some((key, mut node)) = self.open.pop() else {
            return;
        };
        node.end = last;
        match (self.open.last_mut(), key) {
            (None, _) => self.root = Some(node),
            (Some((_, parent)), key) => match (&mut parent.kind, key) {
                (PosKind::Object(m), Some(k)) => {
                    m.insert(k, node);
                }
                (PosKind::Array(items), _) => items.push(node),
                _ => {}
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sorts_and_escapes_like_go() {
        let v = json!({"b": "<a&b>", "a": [1, {"y": true, "x": null}], "Z": "\u{1}\n"});
        assert_eq!(
            go_compact_sorted_with_positions(&v).0,
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
