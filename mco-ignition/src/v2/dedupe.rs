//! Upstream MCO's pre-pass over a 2.2 config before converting it to spec 3, which allows no
//! duplicates: files are de-duplicated by path (the last wins), units by name (the last wins and
//! gains the dropins of earlier ones it lacks), all users must be `core` and collapse into one
//! whose SSH keys are the newest user's followed by the older ones', de-duplicated.
//!
//! Upstream walks the lists backwards and keeps that order, so files and units come out in
//! reverse order of their last occurrence.

use serde_json::{Map, Value};

/// The pre-pass; `Err` holds the offending user name.
pub fn dedupe(cfg: &Value) -> Result<Value, String> {
    let mut out = cfg.clone();
    let files = list_at(cfg, "storage", "files");
    let units = list_at(cfg, "systemd", "units");
    let users = list_at(cfg, "passwd", "users");

    let mut seen = std::collections::HashSet::new();
    let mut out_files = Vec::new();
    for f in files.iter().rev() {
        let path = f
            .get("path")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if seen.insert(path) {
            out_files.push(f.clone());
        }
    }

    let mut names = std::collections::HashSet::new();
    let mut out_units: Vec<Value> = Vec::new();
    for u in units.iter().rev() {
        let name = u
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if !names.insert(name.clone()) {
            let extra: Vec<Value> = u
                .get("dropins")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for target in out_units
                .iter_mut()
                .filter(|o| o.get("name").and_then(Value::as_str).unwrap_or("") == name)
            {
                for d in &extra {
                    let dname = d.get("name").and_then(Value::as_str).unwrap_or("");
                    let existing =
                        target
                            .get("dropins")
                            .and_then(Value::as_array)
                            .is_some_and(|ds| {
                                ds.iter().any(|x| {
                                    x.get("name").and_then(Value::as_str).unwrap_or("") == dname
                                })
                            });
                    if !existing {
                        if let Value::Object(t) = target {
                            let ds = t
                                .entry("dropins")
                                .or_insert_with(|| Value::Array(Vec::new()));
                            if let Value::Array(ds) = ds {
                                ds.push(d.clone());
                            }
                        }
                    }
                }
            }
            continue;
        }
        out_units.push(u.clone());
    }

    let mut out_user = None;
    if let Some(last) = users.last() {
        let name_of = |u: &Value| {
            u.get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        if name_of(last) != "core" {
            return Err(name_of(last));
        }
        let mut user = last.clone();
        let mut keys: Vec<Value> = list(last, "sshAuthorizedKeys");
        for u in users.iter().rev().skip(1) {
            if name_of(u) != "core" {
                return Err(name_of(u));
            }
            keys.extend(list(u, "sshAuthorizedKeys"));
        }
        let mut seen = std::collections::HashSet::new();
        let keys: Vec<Value> = keys
            .into_iter()
            .filter(|k| seen.insert(k.as_str().unwrap_or("").to_string()))
            .collect();
        if let Value::Object(m) = &mut user {
            if keys.is_empty() {
                m.remove("sshAuthorizedKeys");
            } else {
                m.insert("sshAuthorizedKeys".into(), Value::Array(keys));
            }
        }
        out_user = Some(user);
    }

    set_list(&mut out, "storage", "files", out_files);
    set_list(&mut out, "systemd", "units", out_units);
    if let Some(u) = out_user {
        set_list(&mut out, "passwd", "users", vec![u]);
    }
    Ok(out)
}

fn list(v: &Value, key: &str) -> Vec<Value> {
    v.get(key)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn list_at(v: &Value, a: &str, b: &str) -> Vec<Value> {
    v.get(a).map(|x| list(x, b)).unwrap_or_default()
}

fn set_list(v: &mut Value, a: &str, b: &str, items: Vec<Value>) {
    let Value::Object(root) = v else { return };
    if items.is_empty() {
        if let Some(Value::Object(sec)) = root.get_mut(a) {
            sec.remove(b);
        }
        return;
    }
    let sec = root.entry(a).or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(sec) = sec {
        sec.insert(b.into(), Value::Array(items));
    }
}
