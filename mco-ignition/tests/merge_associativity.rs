//! Ignition's merge is associative: folding three configs left to right, `(a + b) + c`, gives
//! what merging `a` onto `b + c` gives. The configs share paths, units, users and kernel
//! arguments, so entries replace, drop and append each other.
//!
//! That holds as long as no key moves between the sibling lists of one key space (a path among
//! files, directories and links; a kernel argument between `shouldExist` and `shouldNotExist`),
//! which the configs here respect. When one does, grouping matters, as it does in Ignition: a
//! child's entry of another kind drops the parent's, and `b + c` no longer says that `b`
//! dropped it, so `a + (b + c)` merges `a`'s entry with `c`'s where `(a + b) + c` starts `c`'s
//! afresh (its fields and its place differ). The two cases below pin that; renderers fold left
//! to right, as the MCO does (`merge_fold_equivalence` checks the fold).

use mco_ignition::merge::merge;
use mco_ignition::parse::parse_value;
use mco_ignition::Config;
use proptest::prelude::*;
use serde_json::{json, Value};

const PATHS: [&str; 4] = ["/etc/a", "/etc/b", "/etc/c", "/etc/d"];

fn node() -> impl Strategy<Value = (usize, u8, Option<i64>, bool, u8)> {
    (
        0..PATHS.len(),
        Just(()),
        prop::option::of(0i64..0o777),
        any::<bool>(),
        0u8..3,
    )
        .prop_map(|(p, _, mode, flag, extra)| (p, (p % 3) as u8, mode, flag, extra))
}

fn user() -> impl Strategy<Value = (u8, Vec<u8>, Option<bool>)> {
    (
        0u8..2,
        prop::collection::vec(0u8..3, 0..3),
        prop::option::of(any::<bool>()),
    )
}

/// Configs whose keys never move between sibling lists: a path's kind and a kernel argument's
/// list are fixed by its index.
fn config() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec(node(), 0..6),
        prop::collection::vec((0..3usize, any::<bool>(), any::<bool>()), 0..3),
        prop::collection::vec(user(), 0..2),
        prop::collection::vec(0u8..4, 0..3),
        prop::collection::vec(0u8..4, 0..2),
    )
        .prop_map(|(nodes, units, users, kargs, no_kargs)| {
            let (mut files, mut dirs, mut links) = (Vec::new(), Vec::new(), Vec::new());
            let mut seen = std::collections::HashSet::new();
            for (p, kind, mode, flag, extra) in nodes {
                if !seen.insert(p) {
                    continue;
                }
                let path = PATHS[p];
                match kind {
                    0 => {
                        let mut f = json!({"path": path});
                        if let Some(m) = mode {
                            f["mode"] = json!(m);
                        }
                        if flag {
                            f["contents"] = json!({"source": format!("data:,{p}-{extra}")});
                            f["overwrite"] = json!(extra != 0);
                        }
                        if extra == 2 {
                            f["append"] = json!([{"source": format!("data:,more-{p}")}]);
                        }
                        files.push(f);
                    }
                    1 => dirs.push(json!({"path": path, "mode": mode.unwrap_or(493)})),
                    _ => links
                        .push(json!({"path": path, "target": format!("/x{extra}"), "hard": flag})),
                }
            }
            let mut names = std::collections::HashSet::new();
            let mut us = Vec::new();
            for (n, enabled, dropin) in units {
                if !names.insert(n) {
                    continue;
                }
                let mut u = json!({"name": format!("u{n}.service"), "enabled": enabled});
                if dropin {
                    u["dropins"] = json!([{"name": "x.conf", "contents": format!("[Unit]\n#{n}")}]);
                }
                us.push(u);
            }
            let mut logins = std::collections::HashSet::new();
            let mut people = Vec::new();
            for (n, keys, shell) in users {
                if !logins.insert(n) {
                    continue;
                }
                let keys: Vec<String> = keys.iter().map(|k| format!("ssh-ed25519 K{k}")).collect();
                let mut u = json!({"name": format!("user{n}"), "sshAuthorizedKeys": keys});
                if let Some(s) = shell {
                    u["shell"] = json!(if s { "/bin/bash" } else { "/bin/sh" });
                }
                people.push(u);
            }
            let karg = |k: &u8| format!("k{k}");
            let mut should: Vec<String> = kargs.iter().filter(|k| **k < 2).map(karg).collect();
            should.dedup();
            let mut should_not: Vec<String> = no_kargs
                .iter()
                .filter(|k| **k >= 2)
                .map(karg)
                .filter(|k| !should.contains(k))
                .collect();
            should_not.dedup();
            json!({
                "ignition": {"version": "3.5.0"},
                "kernelArguments": {"shouldExist": should, "shouldNotExist": should_not},
                "passwd": {"users": people},
                "storage": {"files": files, "directories": dirs, "links": links},
                "systemd": {"units": us}
            })
        })
}

fn parsed(raw: &Value) -> Result<Config, TestCaseError> {
    parse_value(raw)
        .map(|p| p.config)
        .map_err(|e| TestCaseError::reject(format!("generated config invalid: {e:?}")))
}

fn text(c: &Config) -> String {
    serde_json::to_string(&c.to_value()).unwrap_or_default()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn merge_is_associative(a in config(), b in config(), c in config()) {
        let (a, b, c) = (parsed(&a)?, parsed(&b)?, parsed(&c)?);
        let left = merge(&merge(&a, &b), &c);
        let right = merge(&a, &merge(&b, &c));
        prop_assert_eq!(text(&left), text(&right));
    }

}

/// A kernel argument dropped by `b` and added again by `c`: `(a + b) + c` appends it after
/// `c`'s others, `a + (b + c)` keeps it where `a` has it.
#[test]
fn a_kernel_argument_dropped_and_added_again_depends_on_grouping() {
    let cfg = |v: Value| {
        parse_value(&json!({"ignition": {"version": "3.5.0"}, "kernelArguments": v}))
            .map(|p| p.config)
            .expect("valid")
    };
    let a = cfg(json!({"shouldExist": ["k3"]}));
    let b = cfg(json!({"shouldNotExist": ["k3"]}));
    let c = cfg(json!({"shouldExist": ["k0", "k3"]}));
    let left = merge(&merge(&a, &b), &c).to_value();
    let right = merge(&a, &merge(&b, &c)).to_value();
    assert_eq!(left["kernelArguments"]["shouldExist"], json!(["k0", "k3"]));
    assert_eq!(right["kernelArguments"]["shouldExist"], json!(["k3", "k0"]));
}

/// A file replaced by a directory in `b` and written again by `c`: `(a + b) + c` is `c`'s file
/// alone, `a + (b + c)` keeps `a`'s mode.
#[test]
fn a_path_that_changes_kind_and_back_depends_on_grouping() {
    let cfg = |v: Value| {
        parse_value(&json!({"ignition": {"version": "3.5.0"}, "storage": v}))
            .map(|p| p.config)
            .expect("valid")
    };
    let a = cfg(json!({"files": [{"path": "/etc/a", "mode": 384}]}));
    let b = cfg(json!({"directories": [{"path": "/etc/a"}]}));
    let c = cfg(json!({"files": [{"path": "/etc/a"}]}));
    let left = merge(&merge(&a, &b), &c).to_value();
    let right = merge(&a, &merge(&b, &c)).to_value();
    assert_eq!(left["storage"]["files"], json!([{"path": "/etc/a"}]));
    assert_eq!(
        right["storage"]["files"],
        json!([{"path": "/etc/a", "mode": 384}])
    );
}
