//! Ignition's merge of a child config onto a parent.
//!
//! A set child value wins (a plain field always, a pointer field when present); objects merge
//! field by field; keyed lists merge entry by entry, walking the parent's order, replacing an entry
//! in place when the child has its key in the same list and dropping it when the child has the key
//! in a sibling list of the same key space, then appending the child's new entries in its order;
//! other lists concatenate. Cost is linear in the sizes of the two configs.

use crate::config::Config;
use crate::schema::{self, Field, Kind, Obj, Presence, StrListRule};
use crate::validate::entry_key_ref;
use crate::version::SpecVersion;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

/// Merges `child` onto `parent`. Both must be of the same 3.x version; the result has the
/// child's version.
pub fn merge(parent: &Config, child: &Config) -> Config {
    let version = child.version();
    let root = merge_obj(
        &schema::CONFIG,
        parent.root().clone(),
        child.root(),
        version.minor(),
    );
    Config::from_normalised(version, root)
}

/// Merges `child` onto `parent` in place, consuming the child.
///
/// The parent's tree is moved, not copied, so merging many small children onto one growing
/// parent costs the size of each child plus a walk over the parent's keyed lists.
pub fn merge_into(parent: &mut Config, child: Config) {
    let version: SpecVersion = child.version();
    let root = parent.take_root();
    let merged = merge_obj(&schema::CONFIG, root, child.root(), version.minor());
    *parent = Config::from_normalised(version, merged);
}

pub(crate) fn merge_obj(
    o: &'static Obj,
    mut p: Map<String, Value>,
    c: &Map<String, Value>,
    minor: u64,
) -> Map<String, Value> {
    // Every key of the result is a key of the parent or of the child: one allocation for the
    // map, and the parent's key strings are moved over instead of allocated again.
    let mut out = Map::with_capacity(p.len() + c.len());
    // Lists of one shared key space need the child's keys of every sibling list.
    let mut shared_child_keys: HashMap<&str, HashSet<Cow<'_, str>>> = HashMap::new();
    for name in o.shared_keys {
        if let Some(f) = o.field(name, minor) {
            let keys = child_keys(f, c.get(*name));
            shared_child_keys.insert(name, keys);
        }
    }
    for field in o.fields_for(minor) {
        let (key, pv) = p.remove_entry(field.name).unzip();
        let cv = c.get(field.name);
        let merged = match (&field.kind, pv, cv) {
            (_, None, None) => None,
            (Kind::Obj(s), Some(Value::Object(pm)), Some(Value::Object(cm))) => {
                let m = merge_obj(s, pm, cm, minor);
                (!m.is_empty()).then_some(Value::Object(m))
            }
            (Kind::ObjList(_) | Kind::StrList(_), pv, _) => {
                let siblings = sibling_keys(o, field, &shared_child_keys);
                merge_list(o, field, pv, cv, &siblings, minor)
            }
            (_, Some(pv), None) => match field.presence {
                Presence::OmitZero => None,
                _ => Some(pv),
            },
            (_, _, Some(cv)) => Some(cv.clone()),
        };
        if let Some(v) = merged {
            out.insert(key.unwrap_or_else(|| field.name.to_string()), v);
        }
    }
    out
}

/// An entry's merge key, borrowed from the entry where it can be.
pub(crate) fn item_key<'a>(field: &Field, v: &'a Value) -> Cow<'a, str> {
    match field.kind {
        Kind::ObjList(s) => entry_key_ref(s.key, v),
        _ => Cow::Borrowed(v.as_str().unwrap_or("")),
    }
}

/// The child's keys of the other lists in `field`'s shared key space (none when it has none).
pub(crate) fn sibling_keys<'m, K>(
    owner: &Obj,
    field: &Field,
    shared_child_keys: &'m HashMap<&str, HashSet<K>>,
) -> Vec<&'m HashSet<K>> {
    if !owner.shared_keys.contains(&field.name) {
        return Vec::new();
    }
    owner
        .shared_keys
        .iter()
        .filter(|n| **n != field.name)
        .filter_map(|n| shared_child_keys.get(n))
        .collect()
}

/// Whether a list concatenates instead of merging entries by key.
pub(crate) fn concatenates(owner: &Obj, field: &Field) -> bool {
    owner.no_dups.contains(&field.name) || matches!(field.kind, Kind::StrList(StrListRule::Concat))
}

/// The child's entry merged onto the parent's entry of the same key: field by field for
/// objects, the child's value otherwise.
pub(crate) fn merge_entry(kind: Kind, parent: Value, child: &Value, minor: u64) -> Value {
    match (kind, parent, child) {
        (Kind::ObjList(s), Value::Object(pm), Value::Object(cm)) => {
            Value::Object(merge_obj(s, pm, cm, minor))
        }
        _ => child.clone(),
    }
}

pub(crate) fn child_keys<'a>(field: &Field, v: Option<&'a Value>) -> HashSet<Cow<'a, str>> {
    v.and_then(Value::as_array)
        .map(|items| items.iter().map(|i| item_key(field, i)).collect())
        .unwrap_or_default()
}

pub(crate) fn merge_list(
    owner: &'static Obj,
    field: &'static Field,
    pv: Option<Value>,
    cv: Option<&Value>,
    siblings: &[&HashSet<Cow<'_, str>>],
    minor: u64,
) -> Option<Value> {
    let empty = Vec::new();
    let p = match pv {
        Some(Value::Array(items)) => items,
        _ => Vec::new(),
    };
    let c = cv.and_then(Value::as_array).unwrap_or(&empty);
    let mut out: Vec<Value> = Vec::with_capacity(p.len() + c.len());
    if concatenates(owner, field) {
        out.extend(p);
        out.extend(c.iter().cloned());
    } else {
        let headers = field.name == "httpHeaders";
        let mut child_index: HashMap<Cow<'_, str>, usize> = HashMap::with_capacity(c.len());
        for (i, item) in c.iter().enumerate() {
            child_index.entry(item_key(field, item)).or_insert(i);
        }
        let mut used = vec![false; c.len()];
        for item in p {
            let (found, dropped) = {
                let key = item_key(field, &item);
                let found = child_index.get(&key).copied();
                let dropped = found.is_none() && siblings.iter().any(|s| s.contains(&key));
                (found, dropped)
            };
            if let Some(ci) = found {
                used[ci] = true;
                let child = &c[ci];
                if headers && child.get("value").is_none() {
                    continue;
                }
                out.push(merge_entry(field.kind, item, child, minor));
            } else if !dropped {
                out.push(item);
            }
        }
        for (i, item) in c.iter().enumerate() {
            if used[i] {
                continue;
            }
            let key = item_key(field, item);
            if child_index.get(&key) != Some(&i) {
                // A repeated key inside the child: upstream merges it onto the first.
                if let Some(pos) = out.iter().rposition(|o| item_key(field, o) == key) {
                    let slot = std::mem::take(&mut out[pos]);
                    out[pos] = merge_entry(field.kind, slot, item, minor);
                    continue;
                }
            }
            if headers && item.get("value").is_none() {
                continue;
            }
            out.push(item.clone());
        }
    }
    (!out.is_empty()).then_some(Value::Array(out))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::parse::parse_value;
    use serde_json::json;

    /// The config a test writes as JSON.
    pub(crate) fn cfg(v: Value) -> Config {
        match parse_value(&v) {
            Ok(p) => p.config,
            Err(e) => panic!("test config does not parse: {e:?}"),
        }
    }

    #[test]
    fn keyed_lists_replace_in_place_and_append() {
        let p = cfg(json!({"ignition":{"version":"3.5.0"},"storage":{"files":[
            {"path":"/a","mode":420},{"path":"/b","mode":420}]}}));
        let c = cfg(json!({"ignition":{"version":"3.5.0"},"storage":{"files":[
            {"path":"/c"},{"path":"/a","mode":384}]}}));
        let m = merge(&p, &c).into_value();
        assert_eq!(
            m["storage"]["files"],
            json!([{"path":"/a","mode":384},{"path":"/b","mode":420},{"path":"/c"}])
        );
    }

    #[test]
    fn shared_key_space_drops_parent_entry() {
        let p = cfg(
            json!({"ignition":{"version":"3.5.0"},"storage":{"links":[{"path":"/a","target":"/x"}]}}),
        );
        let c = cfg(json!({"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/a"}]}}));
        let m = merge(&p, &c).into_value();
        assert_eq!(m["storage"].get("links"), None);
        assert_eq!(m["storage"]["files"], json!([{"path":"/a"}]));
    }

    #[test]
    fn append_concatenates() {
        let p = cfg(
            json!({"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/a","append":[{"source":"data:,x"}]}]}}),
        );
        let c = cfg(
            json!({"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/a","append":[{"source":"data:,x"}]}]}}),
        );
        let m = merge(&p, &c).into_value();
        assert_eq!(
            m["storage"]["files"][0]["append"].as_array().map(Vec::len),
            Some(2)
        );
    }
}
