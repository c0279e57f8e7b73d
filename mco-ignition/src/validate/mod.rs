//! Validation of spec 3.x configs, as upstream validates them.
//!
//! Three passes, in upstream's order: the per-type rules in a pre-order walk of the config
//! ([`validate`]), duplicate keys in keyed lists ([`duplicates`]), and keys the schema does not
//! know ([`unused_keys`], only when the raw input is at hand). [`correlate`] then adds positions.

pub(crate) mod rules;

pub use rules::SPECIAL_MODE_BITS_WARNING;
pub mod unit;

use crate::config::Config;
use crate::emit;
use crate::path::{JsonPath, Step};
use crate::report::{Position, Report};
use crate::schema::{self, KeyRule, Kind, Obj};
use crate::small_map::{key_eq, SmallGet};
use serde_json::{Map, Value};
use std::borrow::Cow;

/// Runs the per-type rules over a config.
pub fn validate(config: &Config) -> Report {
    let mut r = Report::default();
    let minor = config.version().minor();
    walk(
        &schema::CONFIG,
        config.root(),
        &mut JsonPath::root(),
        minor,
        config.root(),
        &mut r,
    );
    r
}

/// Validates a config without raw input, the way upstream re-validates converted configs:
/// rules and duplicates, no unused keys, no positions.
pub fn validate_without_source(config: &Config) -> Report {
    let mut r = validate(config);
    r.merge(duplicates(config));
    r
}

/// Walks with one path buffer, pushed and popped, so a node costs no allocation.
fn walk(
    obj: &'static Obj,
    m: &Map<String, Value>,
    path: &mut JsonPath,
    minor: u64,
    root: &Map<String, Value>,
    r: &mut Report,
) {
    rules::check(obj, m, path, minor, root, r);
    descend(obj, m, minor, path, |s, cm, path| {
        walk(s, cm, path, minor, root, r)
    });
}

/// Calls `f` on every child object (nested objects and entries of lists of objects) in schema
/// order, with `path` extended to the child for the call.
fn descend<'a>(
    obj: &'static Obj,
    m: &'a Map<String, Value>,
    minor: u64,
    path: &mut JsonPath,
    mut f: impl FnMut(&'static Obj, &'a Map<String, Value>, &mut JsonPath),
) {
    for field in obj.fields_for(minor) {
        match (&field.kind, m.small_get(field.name)) {
            (Kind::Obj(s), Some(Value::Object(cm))) => {
                path.0.push(Step::Key(Cow::Borrowed(field.name)));
                f(s, cm, path);
                path.0.pop();
            }
            (Kind::ObjList(s), Some(Value::Array(items))) => {
                path.0.push(Step::Key(Cow::Borrowed(field.name)));
                for (i, item) in items.iter().enumerate() {
                    if let Value::Object(cm) = item {
                        path.0.push(Step::Index(i));
                        f(s, cm, path);
                        path.0.pop();
                    }
                }
                path.0.pop();
            }
            _ => {}
        }
    }
}

/// The key of a list entry, as upstream computes it for merging and duplicate checks.
pub fn entry_key(rule: KeyRule, v: &Value) -> String {
    entry_key_ref(rule, v).into_owned()
}

/// [`entry_key`] borrowing from the entry when the key is one of its fields.
pub fn entry_key_ref(rule: KeyRule, v: &Value) -> Cow<'_, str> {
    match rule {
        KeyRule::None => Cow::Borrowed(""),
        KeyRule::Field(f) => Cow::Borrowed(v.small_get(f).and_then(Value::as_str).unwrap_or("")),
        KeyRule::Partition => {
            let n = v.small_get("number").and_then(Value::as_i64).unwrap_or(0);
            if n != 0 {
                Cow::Owned(format!("number:{n}"))
            } else if let Some(l) = v.small_get("label").and_then(Value::as_str) {
                Cow::Owned(format!("label:{l}"))
            } else {
                Cow::Borrowed("")
            }
        }
    }
}

/// Finds entries whose key repeats within a list, or within lists that share a key space.
pub fn duplicates(config: &Config) -> Report {
    let mut r = Report::default();
    dups_walk(
        &schema::CONFIG,
        config.root(),
        &mut JsonPath::root(),
        config.version().minor(),
        &mut r,
        &mut DupScratch::default(),
    );
    r
}

/// The entry keys of one key space, each with its position in the walk.
type KeySpace<'a> = Vec<(Cow<'a, str>, usize)>;

/// Buffers of the duplicate walk, reused from one object to the next (an object's lists are
/// done with before the walk descends into its children).
#[derive(Default)]
struct DupScratch<'a> {
    /// Key spaces; only the first `used` are in use for the current object.
    spaces: Vec<(&'static str, KeySpace<'a>)>,
    /// Field name and index of each entry, by position in the walk.
    at: Vec<(&'static str, usize)>,
    /// Positions of repeated entries.
    repeated: Vec<usize>,
}

fn dups_walk<'a>(
    obj: &'static Obj,
    m: &'a Map<String, Value>,
    path: &mut JsonPath,
    minor: u64,
    r: &mut Report,
    scratch: &mut DupScratch<'a>,
) {
    // Entry keys of each key space, with their position in the walk order (fields in schema
    // order, entries in list order). Sorting a space by key then position finds every entry
    // whose key an earlier entry of the same space already had, without hashing.
    let DupScratch {
        spaces,
        at,
        repeated,
    } = scratch;
    for (_, keys) in spaces.iter_mut() {
        keys.clear();
    }
    at.clear();
    repeated.clear();
    let mut used = 0;
    for field in obj.fields_for(minor) {
        let items = match m.small_get(field.name) {
            Some(Value::Array(items)) => items,
            _ => continue,
        };
        if obj.no_dups.iter().any(|n| key_eq(n, field.name)) {
            continue;
        }
        let concat = matches!(field.kind, Kind::StrList(schema::StrListRule::Concat));
        if concat {
            continue;
        }
        let space = if obj.shared_keys.iter().any(|n| key_eq(n, field.name)) {
            "__shared"
        } else {
            field.name
        };
        let seen = match spaces[..used].iter().position(|(s, _)| key_eq(s, space)) {
            Some(p) => &mut spaces[p].1,
            None => {
                if used == spaces.len() {
                    spaces.push((space, Vec::new()));
                } else {
                    spaces[used].0 = space;
                }
                used += 1;
                &mut spaces[used - 1].1
            }
        };
        seen.reserve(items.len());
        at.reserve(items.len());
        for (i, item) in items.iter().enumerate() {
            let key = match &field.kind {
                Kind::ObjList(s) => entry_key_ref(s.key, item),
                _ => Cow::Borrowed(item.as_str().unwrap_or("")),
            };
            seen.push((key, at.len()));
            at.push((field.name, i));
        }
    }
    for (_, keys) in &mut spaces[..used] {
        keys.sort_unstable();
        for w in keys.windows(2) {
            if w[0].0 == w[1].0 {
                repeated.push(w[1].1);
            }
        }
    }
    repeated.sort_unstable();
    for &n in repeated.iter() {
        let (name, i) = at[n];
        r.error(path.key(name).index(i), "duplicate entry defined");
    }
    descend(obj, m, minor, path, |s, cm, path| {
        dups_walk(s, cm, path, minor, r, scratch)
    });
}

/// Warns about keys of the raw input that the version's schema does not know.
pub fn unused_keys(raw: &Value, minor: u64) -> Report {
    let mut r = Report::default();
    if let Value::Object(m) = raw {
        unused_walk(&schema::CONFIG, m, &mut JsonPath::root(), minor, &mut r);
    }
    r
}

fn unused_walk(
    obj: &'static Obj,
    m: &Map<String, Value>,
    path: &mut JsonPath,
    minor: u64,
    r: &mut Report,
) {
    if m.keys().any(|k| obj.field(k, minor).is_none()) {
        let mut keys: Vec<&String> = m.keys().collect();
        keys.sort_unstable();
        for k in keys {
            if obj.field(k, minor).is_none() {
                r.warn(path.key(k), format!("unused key {k}"));
            }
        }
    }
    descend(obj, m, minor, path, |s, cm, path| {
        unused_walk(s, cm, path, minor, r)
    });
}

/// Adds positions to report entries: each entry is placed at the deepest part of its path that
/// exists in the raw input, in the Go-style serialisation of that input.
pub fn correlate(report: &mut Report, raw: &Value) {
    correlate_in(report, raw, emit::Layout::Sorted)
}

/// [`correlate`] for a given serialisation layout.
pub fn correlate_in(report: &mut Report, raw: &Value, layout: emit::Layout) {
    if report.entries.is_empty() {
        return;
    }
    let mut targets = Vec::new();
    for e in &report.entries {
        if let Some(p) = &e.path {
            for n in (0..=p.0.len()).rev() {
                targets.push(JsonPath(p.0[..n].to_vec()));
            }
        }
    }
    let found = emit::go_offsets_in(raw, &targets, layout);
    let mut at = 0;
    for e in &mut report.entries {
        let Some(p) = &e.path else { continue };
        let n = p.0.len() + 1;
        let slice = &found[at..at + n];
        at += n;
        let unused = e.message.starts_with("unused key ");
        if let Some(off) = slice.iter().flatten().next() {
            let mut off = *off;
            if unused {
                if let Some(Step::Key(k)) = p.0.last() {
                    let mut quoted = String::new();
                    crate::gocompat::json::write_go_string(&mut quoted, k);
                    let value_is_composite = matches!(
                        lookup_path(raw, p),
                        Some(Value::Object(_)) | Some(Value::Array(_))
                    );
                    let back = quoted.len() + 1 + usize::from(value_is_composite);
                    off = off.saturating_sub(back);
                }
            }
            e.position = Some(Position {
                line: 1,
                column: off + 1,
            });
        }
    }
}

fn lookup_path<'a>(v: &'a Value, p: &JsonPath) -> Option<&'a Value> {
    let mut cur = v;
    for s in &p.0 {
        cur = match s {
            Step::Key(k) => cur.get(k.as_ref())?,
            Step::Index(i) => cur.get(*i)?,
        };
    }
    Some(cur)
}

#[cfg(test)]
mod dup_tests {
    use crate::error::ParseError;
    use crate::parse::parse_value;
    use crate::report::Severity;
    use serde_json::json;

    /// The walk reuses its buffers from object to object: duplicates in several key spaces,
    /// at several depths and in objects walked after others must all be found.
    #[test]
    fn duplicates_everywhere_are_found() {
        let v = json!({
            "ignition": {"version": "3.5.0"},
            "storage": {
                "files": [{"path": "/a"}, {"path": "/b"}],
                "links": [{"path": "/b", "target": "/c"}],
                "directories": [{"path": "/d"}, {"path": "/d"}]
            },
            "systemd": {"units": [
                {"name": "a.service", "dropins": [{"name": "x.conf"}, {"name": "x.conf"}]},
                {"name": "b.service", "dropins": [{"name": "x.conf"}]},
                {"name": "b.service"}
            ]},
            "passwd": {"users": [{"name": "core"}, {"name": "core"}]}
        });
        let errors: Vec<String> = match parse_value(&v) {
            Err(ParseError::Invalid(r)) => r
                .entries
                .iter()
                .filter(|e| e.severity == Severity::Error && e.message == "duplicate entry defined")
                .filter_map(|e| e.path.as_ref().map(ToString::to_string))
                .collect(),
            _ => Vec::new(),
        };
        let mut errors = errors;
        errors.sort();
        assert_eq!(
            errors,
            [
                "$.passwd.users.1",
                "$.storage.directories.1",
                "$.storage.links.0",
                "$.systemd.units.0.dropins.1",
                "$.systemd.units.2",
            ]
        );
    }
}
