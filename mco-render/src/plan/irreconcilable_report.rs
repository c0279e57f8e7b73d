//! What a node reports in its MachineConfigNode's `status.irreconcilableChanges`: the
//! differences between the config it was provisioned with (the MachineConfig the server
//! served it, saved in `/etc/mcs-machine-config-content.json`) and its target rendered config,
//! in the storage sections the daemon cannot apply in place (disks, RAID, filesystems, LUKS).
//!
//! Upstream's daemon (4.20 and later, with the `IrreconcilableMachineConfig` feature gate)
//! reduces both configs to those sections and reports a structural JSON diff of them, one
//! entry per difference. The diff here is computed the same way: objects key by key in
//! bytewise key order, lists by their longest common subsequence (a differing pair of objects
//! or lists at the same place compared inside), and each entry rendered as lines of compact
//! JSON with sorted keys: `- old`, `+ new`, and for a list change the neighbouring elements
//! as context (`  value`, or `[` / `]` at the list's ends).

use mco_ignition::model::{Config, Storage};
use serde_json::{json, Value};

use crate::api::machine_config_node::IrreconcilableChangeDiff;
use crate::gocompat::json::{sorted, to_go_compact};

/// One step of a path: an object key or a list index.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

/// One difference: where, and the lines that show it. `None` in `before`/`after` is a list's
/// start or end.
#[derive(Debug, Clone, Default)]
struct Change {
    path: Vec<Step>,
    before: Vec<Option<Value>>,
    remove: Vec<Value>,
    add: Vec<Value>,
    after: Vec<Option<Value>>,
}

impl Change {
    fn changes_something(&self) -> bool {
        !self.remove.is_empty() || !self.add.is_empty()
    }

    fn field_path(&self) -> String {
        let mut out = String::new();
        for s in &self.path {
            match s {
                Step::Key(k) => {
                    out.push('.');
                    out.push_str(k);
                }
                Step::Index(i) => out.push_str(&format!("[{i}]")),
            }
        }
        out.trim_start_matches(['.', '[', ']']).to_string()
    }

    fn text(&self) -> String {
        let json = |v: &Value| to_go_compact(&sorted(v));
        let mut out = String::new();
        for b in &self.before {
            match b {
                None => out.push_str("[\n"),
                Some(v) => out.push_str(&format!("  {}\n", json(v))),
            }
        }
        for v in &self.remove {
            out.push_str(&format!("- {}\n", json(v)));
        }
        for v in &self.add {
            out.push_str(&format!("+ {}\n", json(v)));
        }
        for a in &self.after {
            match a {
                None => out.push_str("]\n"),
                Some(v) => out.push_str(&format!("  {}\n", json(v))),
            }
        }
        out
    }
}

/// The sections compared, as a MachineConfig holding only them.
fn reduced(config: &Config) -> Value {
    let storage = Storage {
        disks: config.storage.disks.clone(),
        raid: config.storage.raid.clone(),
        filesystems: config.storage.filesystems.clone(),
        luks: config.storage.luks.clone(),
        ..Storage::default()
    };
    let storage = serde_json::to_value(&storage).unwrap_or(Value::Null);
    json!({"spec": {"config": {"storage": storage}}})
}

/// The entries `status.irreconcilableChanges` lists for a node provisioned with `base` whose
/// target config is `target` (empty when the sections are the same).
pub fn irreconcilable_changes(base: &Config, target: &Config) -> Vec<IrreconcilableChangeDiff> {
    diff(&reduced(base), &reduced(target), &[])
        .into_iter()
        .map(|c| IrreconcilableChangeDiff {
            field_path: c.field_path(),
            diff: c.text(),
        })
        .collect()
}

fn with(path: &[Step], step: Step) -> Vec<Step> {
    let mut p = path.to_vec();
    p.push(step);
    p
}

fn diff(a: &Value, b: &Value, path: &[Step]) -> Vec<Change> {
    if a == b {
        return Vec::new();
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().collect();
            keys.sort();
            let mut out = Vec::new();
            for k in keys {
                let step = Step::Key(k.clone());
                match y.get(k) {
                    Some(w) => out.extend(diff(&x[k], w, &with(path, step))),
                    None => out.push(Change {
                        path: with(path, step),
                        remove: vec![x[k].clone()],
                        ..Change::default()
                    }),
                }
            }
            let mut added: Vec<&String> = y.keys().filter(|k| !x.contains_key(*k)).collect();
            added.sort();
            for k in added {
                out.push(Change {
                    path: with(path, Step::Key(k.clone())),
                    add: vec![y[k].clone()],
                    ..Change::default()
                });
            }
            out
        }
        (Value::Array(x), Value::Array(y)) => {
            let common = common_subsequence(x, y);
            list_rest(x, y, path, 0, &common, None)
        }
        _ => vec![Change {
            path: path.to_vec(),
            remove: vec![a.clone()],
            add: vec![b.clone()],
            ..Change::default()
        }],
    }
}

/// The longest common subsequence of two lists (the values, from `a`), ties broken from the
/// ends of the lists backwards, preferring to drop from `a`.
fn common_subsequence(a: &[Value], b: &[Value]) -> Vec<Value> {
    let (n, m) = (a.len(), b.len());
    let mut t = vec![vec![0usize; m + 1]; n + 1];
    for j in 1..=m {
        for i in 1..=n {
            let inc = usize::from(a[i - 1] == b[j - 1]);
            t[i][j] = (t[i - 1][j - 1] + inc).max(t[i - 1][j]).max(t[i][j - 1]);
        }
    }
    let mut out = Vec::with_capacity(t[n][m]);
    let (mut i, mut j) = (n, m);
    while i > 0 && j > 0 {
        if a[i - 1] == b[j - 1] {
            out.push(a[i - 1].clone());
            i -= 1;
            j -= 1;
        } else if t[i - 1][j] >= t[i][j - 1] {
            i -= 1;
        } else {
            j -= 1;
        }
    }
    out.reverse();
    out
}

fn same_container(a: &Value, b: &Value) -> bool {
    matches!(
        (a, b),
        (Value::Object(_), Value::Object(_)) | (Value::Array(_), Value::Array(_))
    )
}

/// The changes from list `a` to list `b` (the rest of the lists under `list`, the first of
/// them at index `index` of the result), `common` their common subsequence, `previous` the
/// element before them (`None`: the list's start).
fn list_rest(
    a: &[Value],
    b: &[Value],
    list: &[Step],
    index: usize,
    common: &[Value],
    previous: Option<&Value>,
) -> Vec<Change> {
    let (mut ai, mut bi, mut ci, mut at) = (0usize, 0usize, 0usize, index);
    let mut d = vec![Change {
        path: with(list, Step::Index(at)),
        before: vec![previous.cloned()],
        ..Change::default()
    }];
    let common_a = |ai: usize| ai < a.len() && common.first() == Some(&a[ai]);
    let common_b = |bi: usize| bi < b.len() && common.first() == Some(&b[bi]);
    let after = |ai: usize, ci: usize| a.get(ai - ci).cloned();
    let have = |d: &[Change]| d.first().is_some_and(Change::changes_something);
    loop {
        if ai == a.len() {
            while bi < b.len() {
                d[0].add.push(b[bi].clone());
                bi += 1;
                at += 2;
            }
            break;
        }
        if bi == b.len() {
            while ai < a.len() {
                d[0].remove.push(a[ai].clone());
                ai += 1;
            }
            break;
        }
        let (ca, cb) = (common_a(ai), common_b(bi));
        if ca && cb {
            ai += 1;
            bi += 1;
            ci += 1;
            at += 1;
            break;
        }
        if ca {
            while !common_b(bi) && bi < b.len() {
                d[0].add.push(b[bi].clone());
                bi += 1;
                at += 1;
            }
            continue;
        }
        if cb {
            while !common_a(ai) && ai < a.len() {
                d[0].remove.push(a[ai].clone());
                ai += 1;
            }
            continue;
        }
        if same_container(&a[ai], &b[bi]) {
            let sub = diff(&a[ai], &b[bi], &with(list, Step::Index(at)));
            if have(&d) {
                d[0].after = vec![after(ai, ci)];
                d.extend(sub);
            } else {
                d = sub;
            }
            ai += 1;
            bi += 1;
            at += 1;
            break;
        }
        d[0].remove.push(a[ai].clone());
        d[0].add.push(b[bi].clone());
        ai += 1;
        bi += 1;
        at += 1;
    }
    if !have(&d) {
        d.clear();
    } else if d[0].path.len() <= list.len() + 1 && d.len() < 2 {
        d[0].after = vec![after(ai, ci)];
    }
    if ai == a.len() && bi == b.len() {
        return d;
    }
    let previous = bi.checked_sub(1).and_then(|i| b.get(i));
    d.extend(list_rest(
        &a[ai..],
        &b[bi..],
        list,
        at,
        &common[ci..],
        previous,
    ));
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use mco_ignition::model::{Disk, Filesystem};

    fn disk(device: &str) -> Disk {
        Disk {
            device: device.into(),
            wipe_table: Some(true),
            ..Disk::default()
        }
    }

    fn texts(base: &Config, target: &Config) -> Vec<(String, String)> {
        irreconcilable_changes(base, target)
            .into_iter()
            .map(|c| (c.field_path, c.diff))
            .collect()
    }

    #[test]
    fn the_same_sections_report_nothing() {
        let mut a = Config::default();
        a.storage.disks.push(disk("/dev/vdb"));
        // Files, units and users are the daemon's: not reported.
        let mut b = a.clone();
        b.storage.files.push(Default::default());
        assert!(irreconcilable_changes(&a, &b).is_empty());
    }

    #[test]
    fn a_list_added_is_one_entry_at_its_key() {
        let a = Config::default();
        let mut b = Config::default();
        b.storage.disks.push(disk("/dev/vdb"));
        assert_eq!(
            texts(&a, &b),
            vec![(
                "spec.config.storage.disks".to_string(),
                "+ [{\"device\":\"/dev/vdb\",\"wipeTable\":true}]\n".to_string()
            )]
        );
        assert_eq!(
            texts(&b, &a),
            vec![(
                "spec.config.storage.disks".to_string(),
                "- [{\"device\":\"/dev/vdb\",\"wipeTable\":true}]\n".to_string()
            )]
        );
    }

    #[test]
    fn a_changed_element_is_compared_inside() {
        let mut a = Config::default();
        a.storage.disks.push(disk("/dev/vdb"));
        let mut b = a.clone();
        b.storage.disks[0].device = "/dev/vdc".into();
        assert_eq!(
            texts(&a, &b),
            vec![(
                "spec.config.storage.disks[0].device".to_string(),
                "- \"/dev/vdb\"\n+ \"/dev/vdc\"\n".to_string()
            )]
        );
    }

    #[test]
    fn an_element_appended_shows_its_neighbours() {
        let mut a = Config::default();
        a.storage.disks.push(disk("/dev/vdb"));
        let mut b = a.clone();
        b.storage.disks.push(disk("/dev/vdc"));
        assert_eq!(
            texts(&a, &b),
            vec![(
                "spec.config.storage.disks[1]".to_string(),
                "  {\"device\":\"/dev/vdb\",\"wipeTable\":true}\n+ {\"device\":\"/dev/vdc\",\"wipeTable\":true}\n]\n".to_string()
            )]
        );
        let mut c = Config::default();
        c.storage.disks.push(disk("/dev/vdc"));
        c.storage.disks.push(disk("/dev/vdb"));
        assert_eq!(
            texts(&a, &c),
            vec![(
                "spec.config.storage.disks[0]".to_string(),
                "[\n+ {\"device\":\"/dev/vdc\",\"wipeTable\":true}\n  {\"device\":\"/dev/vdb\",\"wipeTable\":true}\n".to_string()
            )]
        );
    }

    #[test]
    fn sections_are_reported_in_key_order() {
        let a = Config::default();
        let mut b = Config::default();
        b.storage.filesystems.push(Filesystem {
            device: "/dev/md/data".into(),
            ..Filesystem::default()
        });
        b.storage.disks.push(disk("/dev/vdb"));
        let paths: Vec<String> = texts(&a, &b).into_iter().map(|(p, _)| p).collect();
        assert_eq!(
            paths,
            vec![
                "spec.config.storage.disks",
                "spec.config.storage.filesystems"
            ]
        );
    }

    fn value_diff(a: &str, b: &str) -> Vec<(String, String)> {
        let wrap = |s: &str| -> Value {
            serde_json::from_str(&format!("{{\"spec\":{{\"config\":{{\"storage\":{s}}}}}}}"))
                .unwrap_or(Value::Null)
        };
        diff(&wrap(a), &wrap(b), &[])
            .into_iter()
            .map(|c| (c.field_path(), c.text()))
            .collect()
    }

    /// Lists with several changes, nested lists and Go's escaping, as upstream's diff library
    /// renders them (its output, taken by running it on the same documents).
    #[test]
    fn lists_with_several_changes_match_upstream() {
        let p = |i: usize| format!("spec.config.storage.raid[{i}]");
        assert_eq!(
            value_diff(r#"{"raid":["a","b","c"]}"#, r#"{"raid":["a","x","c","d"]}"#),
            vec![
                (p(1), "  \"a\"\n- \"b\"\n+ \"x\"\n  \"c\"\n".to_string()),
                (p(3), "  \"c\"\n+ \"d\"\n]\n".to_string()),
            ]
        );
        assert_eq!(
            value_diff(r#"{"raid":["a","b","c","d"]}"#, r#"{"raid":["b","d","e"]}"#),
            vec![
                (p(0), "[\n- \"a\"\n  \"b\"\n".to_string()),
                (p(1), "  \"b\"\n- \"c\"\n  \"d\"\n".to_string()),
                (p(2), "  \"d\"\n+ \"e\"\n]\n".to_string()),
            ]
        );
        assert_eq!(
            value_diff(
                r#"{"disks":[{"device":"/dev/vdb","partitions":[{"label":"a","number":1}]}]}"#,
                r#"{"disks":[{"device":"/dev/vdb","partitions":[{"label":"a","number":1},{"label":"b<&>","number":2,"sizeMiB":1024}]}]}"#
            ),
            vec![(
                "spec.config.storage.disks[0].partitions[1]".to_string(),
                "  {\"label\":\"a\",\"number\":1}\n+ {\"label\":\"b\\u003c\\u0026\\u003e\",\"number\":2,\"sizeMiB\":1024}\n]\n".to_string()
            )]
        );
    }
}
