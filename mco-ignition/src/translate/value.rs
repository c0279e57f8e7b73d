//! Small helpers over `serde_json::Value` trees.

use serde_json::{Map, Value};

/// The object at `key` of `v`, if `v` is an object and the member is one.
pub(crate) fn obj<'a>(v: &'a Value, key: &str) -> Option<&'a Map<String, Value>> {
    v.get(key).and_then(Value::as_object)
}

/// The list at `key` of `v`, or an empty slice.
pub(crate) fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// Walks an object path (`["storage", "files"]`) and returns the list there, or an empty slice.
pub(crate) fn list_at<'a>(v: &'a Value, path: &[&str]) -> &'a [Value] {
    let mut cur = v;
    for (i, k) in path.iter().enumerate() {
        if i + 1 == path.len() {
            return list(cur, k);
        }
        match cur.get(*k) {
            Some(next) => cur = next,
            None => return &[],
        }
    }
    &[]
}

/// The string at `key`, if present and a string.
pub(crate) fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// Mutable object at a path, creating nothing; `None` when absent.
pub(crate) fn get_mut_path<'a>(v: &'a mut Value, path: &[&str]) -> Option<&'a mut Value> {
    let mut cur = v;
    for k in path {
        cur = cur.get_mut(*k)?;
    }
    Some(cur)
}

/// Applies `f` to every element of the list at `path`, when there is one.
pub(crate) fn for_each_in(v: &mut Value, path: &[&str], mut f: impl FnMut(&mut Value)) {
    if let Some(Value::Array(items)) = get_mut_path(v, path) {
        for item in items {
            f(item);
        }
    }
}

/// Removes nulls, empty objects and empty lists, recursively (the shape upstream's configs have
/// once empty structs are left out).
pub(crate) fn prune_empty(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for child in m.values_mut() {
                prune_empty(child);
            }
            m.retain(|_, c| !is_empty(c));
        }
        Value::Array(items) => {
            for child in items.iter_mut() {
                prune_empty(child);
            }
        }
        _ => {}
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// Sets `ignition.version`.
pub(crate) fn set_version(v: &mut Value, version: &str) {
    if let Value::Object(root) = v {
        let ign = root
            .entry("ignition")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(ign) = ign {
            ign.insert("version".into(), Value::String(version.into()));
        }
    }
}
