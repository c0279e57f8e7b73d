//! Deterministic JSON emission.
//!
//! Upstream stores configs as Go `encoding/json` writes them: compact, object keys sorted
//! bytewise, `<`, `>` and `&` escaped. Report positions ("line 1 col N") are byte offsets in that
//! form, so this module both writes it and locates values inside it. The text itself is
//! [`crate::gocompat::json`]'s; this module adds upstream's struct order and the locations.

use crate::gocompat::json::{self, Format, Observer};
use crate::path::{JsonPath, Step};
use crate::schema::{Kind, Obj};
use serde_json::Value;

/// How a config was laid out when upstream serialised it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Keys sorted bytewise (objects as the API server stores them).
    Sorted,
    /// Keys in upstream's struct order (configs upstream marshalled itself, such as rendered ones).
    Struct,
}

const SORTED: Format<'static> = Format {
    indent: None,
    sort_keys: true,
};

/// Go's compact, key-sorted serialisation of a JSON value.
pub fn go_compact(value: &Value) -> String {
    json::to_go_compact_sorted(value)
}

/// Go's compact serialisation of a spec 3.x config with keys in upstream's struct order.
pub fn go_compact_struct(value: &Value) -> String {
    let mut out = String::with_capacity(256);
    json::write_value(&mut out, value, SORTED, &mut StructOrder::new());
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
        order: (layout == Layout::Struct).then(StructOrder::new),
    };
    let mut out = String::with_capacity(256);
    json::write_value(&mut out, value, SORTED, &mut loc);
    loc.found
}

/// Puts each object's members in upstream's struct order, following the schema down the tree;
/// members the schema does not know stay sorted after the rest.
struct StructOrder {
    /// The schema of each object or list entered, the innermost last (`None` below an unknown key).
    schemas: Vec<Option<&'static Obj>>,
}

impl StructOrder {
    fn new() -> Self {
        StructOrder {
            schemas: vec![Some(&crate::schema::CONFIG)],
        }
    }

    fn current(&self) -> Option<&'static Obj> {
        self.schemas.last().copied().flatten()
    }
}

impl Observer for StructOrder {
    fn reorder(&mut self, members: &mut [(&String, &Value)]) {
        if let Some(o) = self.current() {
            let rank = |k: &str| {
                o.fields
                    .iter()
                    .position(|f| f.name == k)
                    .unwrap_or(usize::MAX)
            };
            members.sort_by_key(|(k, _)| rank(k));
        }
    }

    fn member(&mut self, key: &str, _: usize) {
        let child = self.current().and_then(|o| child_schema(o, key));
        self.schemas.push(child);
    }

    fn element(&mut self, _: usize) {
        // A list's entries share the list's schema (its entries' struct).
        self.schemas.push(self.current());
    }

    fn leave(&mut self) {
        self.schemas.pop();
    }
}

/// Finds where target paths start, following the path of the value being written.
struct Locator<'a> {
    targets: &'a [JsonPath],
    found: Vec<Option<usize>>,
    path: Vec<Step>,
    order: Option<StructOrder>,
}

impl Observer for Locator<'_> {
    fn reorder(&mut self, members: &mut [(&String, &Value)]) {
        if let Some(o) = &mut self.order {
            o.reorder(members);
        }
    }

    fn member(&mut self, key: &str, key_end: usize) {
        self.path.push(Step::Key(key.to_string().into()));
        if let Some(o) = &mut self.order {
            o.member(key, key_end);
        }
    }

    fn element(&mut self, index: usize) {
        self.path.push(Step::Index(index));
        if let Some(o) = &mut self.order {
            o.element(index);
        }
    }

    fn begin(&mut self, value: &Value, at: usize) {
        let offset = match value {
            Value::Array(_) | Value::Object(_) => at + 1,
            _ => at,
        };
        for (found, target) in self.found.iter_mut().zip(self.targets) {
            if found.is_none() && target.0 == self.path {
                *found = Some(offset);
            }
        }
    }

    fn leave(&mut self) {
        self.path.pop();
        if let Some(o) = &mut self.order {
            o.leave();
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
