//! Merging a long sequence of children onto one config, as repeated [`merge_into`] does, in time
//! proportional to the children.
//!
//! [`merge_into`] walks every entry of the parent's keyed lists to find the ones the child
//! replaces, so folding many children onto a growing parent is quadratic. [`MergeFold`] keeps,
//! between steps, an index from entry key to position for each keyed list reached through objects
//! from the root (`storage.files`, `systemd.units`, `passwd.users`...). A step then looks up only
//! the child's keys. Whenever the index cannot reproduce the plain merge exactly (a list with
//! repeated keys, a list taken over from the child as a whole, a change of version) the step
//! merges that list the plain way and the index is rebuilt when next needed, so the result is
//! always the one [`merge_into`] gives.
//!
//! [`merge_into`]: crate::merge::merge_into

use crate::config::Config;
use crate::merge::{child_keys, concatenates, item_key, merge_entry, merge_list, sibling_keys};
use crate::schema::{self, Field, Kind, Obj, Presence};
use crate::small_map::SmallGet;
use crate::version::SpecVersion;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

/// Entry key to position, for one keyed list.
type Index = HashMap<String, usize>;

/// A config that children are merged onto one after another.
#[derive(Debug, Clone)]
pub struct MergeFold {
    config: Config,
    /// Indexes of keyed lists, by dotted path from the root (`storage.files`).
    indexes: HashMap<String, Index>,
    /// Buffers of one list step, reused by the next.
    scratch: ListScratch,
}

/// Per-list buffers of a step: which child entries replaced a parent entry, which parent
/// entries are dropped, which child entries are appended. Empty between uses.
#[derive(Debug, Clone, Default)]
struct ListScratch {
    used: Vec<bool>,
    dead: Vec<usize>,
    appended: Vec<usize>,
}

impl MergeFold {
    /// Starts from `base`.
    pub fn new(base: Config) -> Self {
        MergeFold {
            config: base,
            indexes: HashMap::new(),
            scratch: ListScratch::default(),
        }
    }

    /// The config so far.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Whether the keyed list at a dotted path (`storage.files`) of the config so far holds an
    /// entry with `key`, answered from the index the fold keeps between steps; `None` when it
    /// has no index for that list at this point (the list may hold the key or not).
    pub fn list_has_key(&self, path: &str, key: &str) -> Option<bool> {
        self.indexes.get(path).map(|index| index.contains_key(key))
    }

    /// Ends the fold, giving the merged config.
    pub fn finish(self) -> Config {
        self.config
    }

    /// Merges `child` onto the config so far: the same result as [`crate::merge::merge_into`].
    pub fn merge(&mut self, child: Config) {
        self.merge_with(child, |_, _| {});
    }

    /// Merges `child`, then calls `touched` with the dotted path of the list (`storage.files`)
    /// and the entry, for every entry of a list reached through objects from the root that this
    /// step changed or added (and possibly for some it left alone). Entries it is not called for
    /// are exactly as the previous step left them. `touched` must not change an entry's key.
    pub fn merge_with(&mut self, child: Config, mut touched: impl FnMut(&str, &mut Value)) {
        let version: SpecVersion = child.version();
        if version != self.config.version() {
            self.indexes.clear();
        }
        let root = self.config.take_root();
        let mut child = child;
        let mut child_root = child.take_root();
        let mut path = String::new();
        let merged = self.fold_obj(
            &schema::CONFIG,
            root,
            &mut child_root,
            version.minor(),
            &mut path,
            &mut touched,
        );
        self.config = Config::from_normalised(version, merged);
    }

    /// Changes the config so far in place; the closure must keep it normalised.
    pub fn edit(&mut self, f: impl FnOnce(&mut Map<String, Value>)) {
        self.indexes.clear();
        self.config.edit(f);
    }

    /// Drops the indexes at `path` and below it.
    fn forget(&mut self, path: &str) {
        if self.indexes.is_empty() {
            return;
        }
        self.indexes.retain(|k, _| {
            !(k == path || (k.starts_with(path) && k.as_bytes().get(path.len()) == Some(&b'.')))
        });
    }

    fn fold_obj(
        &mut self,
        o: &'static Obj,
        mut p: Map<String, Value>,
        c: &mut Map<String, Value>,
        minor: u64,
        path: &mut String,
        touched: &mut dyn FnMut(&str, &mut Value),
    ) -> Map<String, Value> {
        // Every key of the result is a key of the parent or of the child (see `merge_obj`).
        let mut out = Map::with_capacity(p.len() + c.len());
        // Owned, so that entries can be moved out of the child below.
        let mut shared_child_keys: HashMap<&str, HashSet<Cow<'static, str>>> = HashMap::new();
        for name in o.shared_keys {
            // A list's child keys only drop entries of the parent's other lists of the space:
            // when the parent has none of those, nothing reads them.
            let read = o.shared_keys.iter().any(|other| {
                other != name
                    && matches!(p.small_get(other), Some(Value::Array(a)) if !a.is_empty())
            });
            if !read {
                continue;
            }
            if let Some(f) = o.field(name, minor) {
                let keys = child_keys(f, c.get(*name))
                    .into_iter()
                    .map(|k| Cow::Owned(k.into_owned()))
                    .collect();
                shared_child_keys.insert(name, keys);
            }
        }
        for field in o.fields_for(minor) {
            let (key, pv) = p.remove_entry(field.name).unzip();
            let cv = c.get_mut(field.name);
            let len = path.len();
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(field.name);
            let merged = match (&field.kind, pv, cv) {
                (_, None, None) => None,
                (Kind::Obj(s), Some(Value::Object(pm)), Some(Value::Object(cm))) => {
                    let m = self.fold_obj(s, pm, cm, minor, path, touched);
                    if m.is_empty() {
                        self.forget(path);
                        None
                    } else {
                        Some(Value::Object(m))
                    }
                }
                (Kind::ObjList(_) | Kind::StrList(_), pv, cv) => {
                    let siblings = sibling_keys(o, field, &shared_child_keys);
                    self.fold_list(o, field, pv, cv, &siblings, minor, path, touched)
                }
                (_, Some(pv), None) => match field.presence {
                    Presence::OmitZero => {
                        self.forget(path);
                        None
                    }
                    _ => Some(pv),
                },
                (kind, _, Some(cv)) => {
                    self.forget(path);
                    let mut v = std::mem::take(cv);
                    if let (Kind::Obj(s), Value::Object(m)) = (kind, &mut v) {
                        touch_all(s, m, minor, path, touched);
                    }
                    Some(v)
                }
            };
            path.truncate(len);
            if let Some(v) = merged {
                out.insert(key.unwrap_or_else(|| field.name.to_string()), v);
            }
        }
        out
    }

    #[allow(clippy::too_many_arguments)]
    fn fold_list(
        &mut self,
        owner: &'static Obj,
        field: &'static Field,
        pv: Option<Value>,
        cv: Option<&mut Value>,
        siblings: &[&HashSet<Cow<'_, str>>],
        minor: u64,
        path: &str,
        touched: &mut dyn FnMut(&str, &mut Value),
    ) -> Option<Value> {
        let mut p = match pv {
            Some(Value::Array(items)) if !concatenates(owner, field) => items,
            other => {
                let cv = cv.as_deref();
                return self.plain_list(owner, field, other, cv, siblings, minor, path, touched);
            }
        };
        // Entries the child adds, moved out of it once its keys are no longer borrowed.
        let ListScratch {
            mut used,
            mut dead,
            mut appended,
        } = std::mem::take(&mut self.scratch);
        used.clear();
        dead.clear();
        appended.clear();
        let mut index = {
            let cr = cv.as_deref();
            let c: &[Value] = cr.and_then(Value::as_array).map_or(&[], Vec::as_slice);
            let mut child_index: HashMap<Cow<'_, str>, usize> = HashMap::with_capacity(c.len());
            for (i, item) in c.iter().enumerate() {
                if child_index.insert(item_key(field, item), i).is_some() {
                    // Repeated keys in the child: only the plain merge knows what to do.
                    let pv = Some(Value::Array(p));
                    return self.plain_list(owner, field, pv, cr, siblings, minor, path, touched);
                }
            }
            let mut index = match self.indexes.remove(path) {
                Some(index) => index,
                None => match build_index(field, &p) {
                    Some(index) => index,
                    None => {
                        let pv = Some(Value::Array(p));
                        return self
                            .plain_list(owner, field, pv, cr, siblings, minor, path, touched);
                    }
                },
            };
            let headers = field.name == "httpHeaders";
            used.resize(c.len(), false);
            for (i, item) in c.iter().enumerate() {
                let Some(&pos) = index.get(item_key(field, item).as_ref()) else {
                    continue;
                };
                used[i] = true;
                if headers && item.get("value").is_none() {
                    dead.push(pos);
                    continue;
                }
                let slot = std::mem::take(&mut p[pos]);
                p[pos] = merge_entry(field.kind, slot, item, minor);
                touched(path, &mut p[pos]);
            }
            for keys in siblings {
                for k in keys.iter() {
                    if child_index.contains_key(k) {
                        continue;
                    }
                    if let Some(&pos) = index.get(k.as_ref()) {
                        dead.push(pos);
                    }
                }
            }
            if !dead.is_empty() {
                let mut keep = vec![true; p.len()];
                for &d in &dead {
                    keep[d] = false;
                }
                let mut flags = keep.into_iter();
                p.retain(|_| flags.next().unwrap_or(true));
                index = build_index(field, &p).unwrap_or_default();
            }
            for (i, item) in c.iter().enumerate() {
                if !(used[i] || (headers && item.get("value").is_none())) {
                    appended.push(i);
                }
            }
            index
        };
        if let Some(Value::Array(c)) = cv {
            for &i in &appended {
                let item = std::mem::take(&mut c[i]);
                index.insert(item_key(field, &item).into_owned(), p.len());
                p.push(item);
                if let Some(last) = p.last_mut() {
                    touched(path, last);
                }
            }
        }
        self.scratch = ListScratch {
            used,
            dead,
            appended,
        };
        if p.is_empty() {
            return None;
        }
        self.indexes.insert(path.to_string(), index);
        Some(Value::Array(p))
    }

    /// The plain merge of one list; every entry of the result counts as touched.
    #[allow(clippy::too_many_arguments)]
    fn plain_list(
        &mut self,
        owner: &'static Obj,
        field: &'static Field,
        pv: Option<Value>,
        cv: Option<&Value>,
        siblings: &[&HashSet<Cow<'_, str>>],
        minor: u64,
        path: &str,
        touched: &mut dyn FnMut(&str, &mut Value),
    ) -> Option<Value> {
        self.forget(path);
        let mut merged = merge_list(owner, field, pv, cv, siblings, minor);
        if let Some(Value::Array(items)) = &mut merged {
            for item in items {
                touched(path, item);
            }
        }
        merged
    }
}

/// Key to position for a list, or `None` when a key repeats.
fn build_index(field: &Field, items: &[Value]) -> Option<Index> {
    let mut index = Index::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        if index
            .insert(item_key(field, item).into_owned(), i)
            .is_some()
        {
            return None;
        }
    }
    Some(index)
}

/// Calls `touched` on every entry of every list reached through objects below `m`.
fn touch_all(
    o: &'static Obj,
    m: &mut Map<String, Value>,
    minor: u64,
    path: &mut String,
    touched: &mut dyn FnMut(&str, &mut Value),
) {
    for field in o.fields_for(minor) {
        let Some(v) = m.get_mut(field.name) else {
            continue;
        };
        let len = path.len();
        path.push('.');
        path.push_str(field.name);
        match (&field.kind, v) {
            (Kind::Obj(s), Value::Object(cm)) => touch_all(s, cm, minor, path, touched),
            (Kind::ObjList(_) | Kind::StrList(_), Value::Array(items)) => {
                for item in items {
                    touched(path, item);
                }
            }
            _ => {}
        }
        path.truncate(len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::merge_into;
    use crate::merge::tests::cfg;
    use serde_json::json;

    fn fold_matches_plain(configs: Vec<Value>) {
        let mut configs = configs.into_iter().map(cfg);
        let Some(base) = configs.next() else { return };
        let mut plain = base.clone();
        let mut fold = MergeFold::new(base);
        for c in configs {
            merge_into(&mut plain, c.clone());
            fold.merge(c);
            assert_eq!(
                serde_json::to_string(&fold.config().to_value()).ok(),
                serde_json::to_string(&plain.to_value()).ok()
            );
        }
    }

    #[test]
    fn replaces_in_place_appends_and_drops_across_steps() {
        fold_matches_plain(vec![
            json!({"ignition":{"version":"3.5.0"},"storage":{"files":[
                {"path":"/a","mode":420},{"path":"/b","mode":420},{"path":"/l"}]}}),
            json!({"ignition":{"version":"3.5.0"},"storage":{"files":[
                {"path":"/c"},{"path":"/a","mode":384}]}}),
            json!({"ignition":{"version":"3.5.0"},"storage":{"links":[{"path":"/b","target":"/x"}]}}),
            json!({"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/b"},{"path":"/d"}],
                "directories":[{"path":"/l"}]}}),
            json!({"ignition":{"version":"3.5.0"}}),
            json!({"ignition":{"version":"3.5.0"},"systemd":{"units":[{"name":"a.service",
                "dropins":[{"name":"x.conf","contents":"[Unit]"}]}]}}),
            json!({"ignition":{"version":"3.5.0"},"systemd":{"units":[{"name":"a.service",
                "enabled":true}]},"storage":{"files":[{"path":"/a","append":[{"source":"data:,x"}]}]}}),
        ]);
    }

    #[test]
    fn touched_sees_every_changed_entry() {
        let base = cfg(json!({"ignition":{"version":"3.5.0"},"storage":{"files":[
            {"path":"/a"},{"path":"/b"}]}}));
        let child = cfg(json!({"ignition":{"version":"3.5.0"},"storage":{"files":[
            {"path":"/c"},{"path":"/a","mode":384}]}}));
        let mut fold = MergeFold::new(base);
        fold.merge(child.clone());
        let mut seen = Vec::new();
        fold.merge_with(child, |p, e| {
            seen.push(format!(
                "{p}:{}",
                e.get("path").and_then(Value::as_str).unwrap_or("")
            ))
        });
        seen.sort();
        assert_eq!(seen, vec!["storage.files:/a", "storage.files:/c"]);
    }
}
