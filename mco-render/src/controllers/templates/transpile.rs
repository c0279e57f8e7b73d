//! Rendered file and unit templates (small YAML documents) to one Ignition config.
//!
//! A file template holds `path`, `mode`, `contents` (`inline` text, or `source` with optional
//! `compression` and `verification.hash`), optional `user`/`group` (`id`, `name`) and
//! `append`; a unit template holds `name`, `enabled`, `mask`, `contents` and `dropins`
//! (`name`, `contents`). Unknown keys are ignored. Inline text becomes a `data:,` URL escaped as
//! upstream's translator does, files always overwrite, and the entries are merged one by one
//! in the order given (a later entry for the same path or unit merges onto the earlier one).

use mco_ignition::merge::merge_into;
use mco_ignition::{Config, SpecVersion};
use serde_json::{json, Map, Value};

/// Copies the keys present in `from` to `to`.
fn copy(from: &Value, to: &mut Map<String, Value>, keys: &[&str]) {
    for k in keys {
        if let Some(v) = from.get(*k).filter(|v| !v.is_null()) {
            to.insert((*k).to_string(), v.clone());
        }
    }
}

fn contents(from: &Value) -> Value {
    let mut c = Map::new();
    copy(from, &mut c, &["source", "compression"]);
    if let Some(h) = from.pointer("/verification/hash").filter(|h| !h.is_null()) {
        c.insert("verification".into(), json!({ "hash": h }));
    }
    if let Some(text) = from.get("inline").and_then(Value::as_str) {
        c.insert(
            "source".into(),
            Value::String(mco_ignition::dataurl::encode_percent(text.as_bytes())),
        );
    }
    Value::Object(c)
}

fn owner(from: &Value) -> Value {
    let mut o = Map::new();
    copy(from, &mut o, &["id", "name"]);
    Value::Object(o)
}

/// The Ignition file entry of a file template.
fn file_entry(doc: &Value) -> Value {
    let mut f = Map::new();
    copy(doc, &mut f, &["path", "mode"]);
    f.insert("overwrite".into(), Value::Bool(true));
    if let Some(c) = doc.get("contents").filter(|c| !c.is_null()) {
        f.insert("contents".into(), contents(c));
    }
    if let Some(a) = doc.get("append").and_then(Value::as_array) {
        f.insert("append".into(), a.iter().map(contents).collect());
    }
    for k in ["user", "group"] {
        if let Some(u) = doc.get(k).filter(|u| !u.is_null()) {
            f.insert(k.into(), owner(u));
        }
    }
    Value::Object(f)
}

/// The Ignition unit entry of a unit template.
fn unit_entry(doc: &Value) -> Value {
    let mut u = Map::new();
    copy(doc, &mut u, &["name", "enabled", "mask", "contents"]);
    if let Some(d) = doc.get("dropins").and_then(Value::as_array) {
        let dropins = d
            .iter()
            .map(|d| {
                let mut m = Map::new();
                copy(d, &mut m, &["name", "contents"]);
                Value::Object(m)
            })
            .collect();
        u.insert("dropins".into(), dropins);
    }
    Value::Object(u)
}

/// Rewrites `mode: 0644` lines as decimal: upstream reads templates as YAML 1.1, where a
/// leading zero means octal, and its templates write modes that way.
fn octal_modes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let indent = body.len() - body.trim_start().len();
        let rewritten = body[indent..]
            .strip_prefix("mode:")
            .map(str::trim)
            .filter(|v| {
                v.len() > 1 && v.starts_with('0') && v.bytes().all(|b| (b'0'..=b'7').contains(&b))
            })
            .and_then(|v| u32::from_str_radix(v, 8).ok());
        match rewritten {
            Some(mode) => {
                out.push_str(&body[..indent]);
                out.push_str(&format!("mode: {mode}"));
                out.push_str(&line[body.len()..]);
            }
            None => out.push_str(line),
        }
    }
    out
}

/// Whether a rendered template describes a file or a unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// Under `files/`.
    File,
    /// Under `units/`.
    Unit,
}

/// Merges the rendered templates, each `(name, text)`, into one spec 3.5 config.
pub fn to_config(entries: &[(EntryKind, &str, &str)]) -> Result<Config, (String, String)> {
    let mut out = Config::empty(SpecVersion::LATEST);
    for (kind, name, text) in entries {
        let fail = |m: String| (name.to_string(), m);
        let doc: Value = serde_yaml_ng::from_str(&octal_modes(text))
            .map_err(|e| fail(format!("failed to unmarshal {kind:?} template: {e}")))?;
        if !doc.is_object() {
            return Err(fail("expected a YAML mapping".into()));
        }
        let raw = match kind {
            EntryKind::File => json!({
                "ignition": {"version": "3.5.0"},
                "storage": {"files": [file_entry(&doc)]},
            }),
            EntryKind::Unit => json!({
                "ignition": {"version": "3.5.0"},
                "systemd": {"units": [unit_entry(&doc)]},
            }),
        };
        let parsed = mco_ignition::parse::parse_value(&raw)
            .map_err(|e| fail(format!("invalid Ignition entry: {e}")))?;
        merge_into(&mut out, parsed.config);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_contents_become_a_percent_data_url() {
        let cfg = to_config(&[(
            EntryKind::File,
            "a.yaml",
            "path: /etc/a.conf\nmode: 0644\ncontents:\n  inline: |\n    x = 1\n",
        )]);
        let Ok(cfg) = cfg else { panic!("{cfg:?}") };
        assert_eq!(
            cfg.to_value(),
            json!({
                "ignition": {"version": "3.5.0"},
                "storage": {"files": [{
                    "path": "/etc/a.conf",
                    "mode": 420,
                    "overwrite": true,
                    "contents": {"source": "data:,x%20%3D%201%0A"},
                }]},
            })
        );
    }

    #[test]
    fn units_with_dropins_and_later_entries_merge() {
        let cfg = to_config(&[
            (
                EntryKind::Unit,
                "u1.yaml",
                "name: a.service\nenabled: true\ncontents: \"[Unit]\\n\"\n",
            ),
            (
                EntryKind::Unit,
                "u2.yaml",
                "name: a.service\ndropins:\n- name: 10-x.conf\n  contents: \"[Service]\\n\"\n",
            ),
        ]);
        let Ok(cfg) = cfg else { panic!("{cfg:?}") };
        assert_eq!(
            cfg.to_value()["systemd"]["units"],
            json!([{
                "name": "a.service",
                "enabled": true,
                "contents": "[Unit]\n",
                "dropins": [{"name": "10-x.conf", "contents": "[Service]\n"}],
            }])
        );
    }

    #[test]
    fn bad_entries_name_the_template() {
        let e = to_config(&[(EntryKind::File, "bad.yaml", "path: relative\n")]).err();
        assert_eq!(e.map(|e| e.0).as_deref(), Some("bad.yaml"));
        assert!(to_config(&[(EntryKind::File, "x.yaml", "- a\n")]).is_err());
    }
}
